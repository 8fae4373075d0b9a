package queries

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime"
)

// TestAppendOnlyResultsLifecycle: an append-only view's results (stored
// in blocks) read the same while it runs, once stopped and after a
// restart while stopped, and after it resumes; dropping the view removes
// everything it stored.
func TestAppendOnlyResultsLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := Config{DataDir: dir, CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "{\"k\": %d}\n", i)
		}
		return b.String()
	}
	want := func(what string, e *Engine, committed bool, n int) {
		t.Helper()
		_, got, err := e.Results("v", committed)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != n {
			t.Fatalf("%s: %d rows, want %d", what, len(got), n)
		}
		seen := map[int64]bool{}
		for _, r := range got {
			if seen[r[0].I] || r[0].I < 0 || r[0].I >= int64(n) {
				t.Fatalf("%s: row k=%d twice or unexpected", what, r[0].I)
			}
			seen[r[0].I] = true
		}
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http;
		CREATE VIEW v AS SELECT k FROM t`)
	ingest(t, e, "t", rows(0, 10))
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	want("running", e, true, 10)
	if _, err := e.StopQuery(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	want("stopped: committed", e, true, 10)
	want("stopped: latest", e, false, 10)
	e.Close(ctx)

	e, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	want("stopped, after a restart: committed", e, true, 10)
	want("stopped, after a restart: latest", e, false, 10)
	if _, err := e.ResumeQuery("v"); err != nil {
		t.Fatal(err)
	}
	ingest(t, e, "t", rows(10, 15))
	if _, err := e.Checkpoint(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	want("resumed", e, true, 15)

	id := e.views["v"].Record.ID
	exec(t, e, `DROP VIEW v`)
	left := 0
	err = e.store.Scan(runtime.QueryPrefix(id), math.MaxUint64, func(k, _ []byte) error {
		left++
		return nil
	})
	if err != nil || left != 0 {
		t.Fatalf("after DROP VIEW: %d keys left under the query's prefix (err %v)", left, err)
	}
}
