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
	Arm("other", "")
	defer Arm("", "")
	for i := 0; i < 3; i++ {
		Point("not.armed")
	}
}

// TestNotArmedWithoutArm: importing the package arms nothing, whatever
// the environment says; ArmFromEnv reads it.
func TestNotArmedWithoutArm(t *testing.T) {
	t.Setenv("STREAMSQL_FAULT", "some.point@2")
	t.Setenv("STREAMSQL_SPIN", "")
	if armed != nil || spin != nil || Armed("some.point") {
		t.Fatal("armed before ArmFromEnv")
	}
	ArmFromEnv()
	defer Arm("", "")
	if !Armed("some.point") || armed["some.point"] != 2 {
		t.Fatalf("after ArmFromEnv: %v", armed)
	}
}
