package queries

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJoinStateShrinks streams rows into an interval join, then rows far
// past the join bounds on both sides: the join's held rows drop back to
// what the new rows need, instead of growing with the input.
func TestJoinStateShrinks(t *testing.T) {
	ctx := context.Background()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	exec(t, e, `CREATE TABLE b (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE TABLE a (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE VIEW j AS SELECT /*+ SET_VAR(parallelism=2) */ b.k, a.ts FROM b JOIN a ON b.k = a.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 SECOND`)
	rows := func(from, n int) string {
		var s strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&s, `{"k": %d, "ts": %d}`+"\n", i%50, int64(i)*10)
		}
		return s.String()
	}
	state := func() int64 {
		if _, err := e.Checkpoint(ctx, ""); err != nil {
			t.Fatal(err)
		}
		q, err := e.Query("j")
		if err != nil {
			t.Fatal(err)
		}
		return q.StateSize["rows"]
	}
	sizes := []int64{}
	for round := 0; round < 5; round++ {
		ingest(t, e, "a", rows(round*2000, 2000))
		ingest(t, e, "b", rows(round*2000, 2000))
		sizes = append(sizes, state())
	}
	// Each round moves both watermarks 20 s on; the bound is 1 s, so only
	// about the last second of rows (100 per side) may be held.
	for i, n := range sizes {
		if n > 400 {
			t.Fatalf("round %d: %d rows held (sizes %v); expiry does not keep up", i, n, sizes)
		}
	}
	if sizes[0] == 0 {
		t.Fatal("no state at all: the test does not exercise the join")
	}
	t.Logf("held join rows after each round of 4000 rows: %v", sizes)
}
