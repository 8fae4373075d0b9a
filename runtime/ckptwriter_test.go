package runtime

import (
	"errors"
	"testing"

	"github.com/streamsql/streamsql/state"
)

// TestCkptWriterKeeps: a checkpoint's writes that fail (half written) go
// with the next checkpoint, the operators' and the sink's alike, under
// their keys, but for those the next one writes again; the sink's kept
// bytes count again in the statistics; once written nothing is kept.
func TestCkptWriterKeeps(t *testing.T) {
	store := &partialStore{Versioned: state.NewMemVersioned()}
	w := ckptWriter{store: store}
	kv := func(k, v string) state.KV { return state.KV{Key: []byte(k), Value: []byte(v)} }
	store.failNext = true
	if _, err := w.write(1, []state.KV{kv("o/a", "1"), kv("o/b", "1")}, []state.KV{kv("r/x", "1")}); !errors.Is(err, errInjected) {
		t.Fatalf("checkpoint 1: %v, want the injected failure", err)
	}
	// Checkpoint 2 writes o/b again: the kept o/b is superseded.
	retried, err := w.write(2, []state.KV{kv("o/b", "2")}, []state.KV{kv("r/y", "2")})
	if err != nil {
		t.Fatal(err)
	}
	if retried != len("r/x")+len("1") {
		t.Fatalf("retried %d sink bytes, want %d", retried, len("r/x1"))
	}
	want := map[string]string{"o/a": "1", "o/b": "2", "r/x": "1", "r/y": "2"}
	for k, v := range want {
		got, err := store.Get([]byte(k), 2)
		if err != nil || string(got) != v {
			t.Errorf("%s at 2: %q (%v), want %q", k, got, err, v)
		}
	}
	if len(w.kept)+len(w.keptSink) != 0 {
		t.Fatalf("%d writes still kept after a write that succeeded", len(w.kept)+len(w.keptSink))
	}
	if retried, err := w.write(3, nil, nil); err != nil || retried != 0 {
		t.Fatalf("an empty checkpoint: retried %d, %v", retried, err)
	}
}
