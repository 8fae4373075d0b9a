package queries

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/state"
)

// TestCorruptStateFailsTheQuery: a query whose checkpointed state does not
// decode fails at restart with an error naming the operator, checkpoint
// and record; the server and its other queries go on.
func TestCorruptStateFailsTheQuery(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := Config{DataDir: dir, CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http;
		CREATE VIEW counts AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;
		CREATE VIEW copy AS SELECT k FROM t`)
	ingest(t, e, "t", "{\"k\": 1}\n{\"k\": 2}\n{\"k\": 1}\n")
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	qid := e.views["counts"].Record.ID
	e.Close(ctx)

	// Overwrite the operators' state blocks at the checkpoint with one
	// record (a put of key "x", empty value): a block that decodes, holding
	// no aggregation group.
	store, err := state.OpenVersioned(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	ck, ok := runtime.LastCheckpointOf(store, qid)
	if !ok {
		t.Fatal("no checkpoint")
	}
	var bad []state.KV
	err = store.Scan(append(runtime.QueryPrefix(qid), "/o/"...), ck.ID, func(k, _ []byte) error {
		bad = append(bad, state.KV{Key: append([]byte(nil), k...), Value: []byte{1, 1, 'x', 0}})
		return nil
	})
	if err != nil || len(bad) == 0 {
		t.Fatalf("%d state blocks, %v", len(bad), err)
	}
	if err := store.Write(ck.ID, bad); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	e, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	select {
	case <-e.views["counts"].Job.Done():
	case <-time.After(time.Minute):
		t.Fatal("the query with corrupt state did not stop")
	}
	q, err := e.Query("counts")
	if err != nil {
		t.Fatal(err)
	}
	if q.State != runtime.StateFailed || !strings.Contains(q.Error, "restore operator 0 at checkpoint") || !strings.Contains(q.Error, "aggregation state key 78") {
		t.Fatalf("query %s: %q", q.State, q.Error)
	}
	ingest(t, e, "t", "{\"k\": 3}\n")
	if _, err := e.Checkpoint(ctx, "copy"); err != nil {
		t.Fatal(err)
	}
	if _, rows, err := e.Results("copy", true); err != nil || len(rows) != 4 {
		t.Fatalf("the other query has %d rows (%v), want 4", len(rows), err)
	}
	exec(t, e, `CREATE VIEW again AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
}
