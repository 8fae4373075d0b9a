package queries

import (
	"strings"
	"testing"
	"time"
)

// TestCheckpointBelowEmitInterval: a checkpoint rides on a barrier, and
// barriers go out every emit interval, so a server whose checkpoint
// interval is shorter than its emit interval is refused at Open, naming
// both, rather than checkpointing at the emit interval; with the emit
// interval lowered to match it opens.
func TestCheckpointBelowEmitInterval(t *testing.T) {
	_, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "checkpoint interval 100ms is shorter than the emit interval 200ms") || !strings.Contains(err.Error(), "--emit-interval") {
		t.Fatalf("Open with a 100ms checkpoint interval and the default emit interval: %v", err)
	}
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: 100 * time.Millisecond, EmitInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	closeEngine(t, t.Context(), e)
}
