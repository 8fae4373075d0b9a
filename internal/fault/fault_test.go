package fault

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	got := parse(" checkpoint.after_marker@3, ingest.after_sync ,,x@0")
	want := map[string]int{"checkpoint.after_marker": 3, "ingest.after_sync": 1, "x@0": 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if parse("") != nil {
		t.Fatal("empty spec arms nothing")
	}
}

func TestInertPointDoesNothing(t *testing.T) {
	armed = map[string]int{"other": 1}
	defer func() { armed = nil }()
	for i := 0; i < 3; i++ {
		Point("not.armed")
	}
}
