package queries

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streamsql/streamsql/state"
)

// TestNothingAcknowledgedBeforeSync holds and fails the stores' syncs and
// shows that neither an ingest (the 200) nor a checkpoint (complete, its
// results committed) is acknowledged before the sync it depends on.
func TestNothingAcknowledgedBeforeSync(t *testing.T) {
	rec := &state.SyncRecorder{}
	ctx := context.Background()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, WrapSync: rec.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http; CREATE TABLE u (k BIGINT NOT NULL) ENGINE=http;
		CREATE VIEW a AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
	l, _ := e.meta.Log(e.tables["t"].ID)

	// Ingest: no answer and nothing visible while the sync is held.
	started, release := rec.HoldNext()
	done := make(chan error, 1)
	go func() {
		_, err := e.Ingest(ctx, "t", `{"k": 1}`, "")
		done <- err
	}()
	<-started
	select {
	case err := <-done:
		t.Fatalf("ingest answered (%v) while its sync was still running", err)
	default:
	}
	if l.End() != 0 {
		t.Fatalf("rows visible (end %d) before their sync returned", l.End())
	}
	release()
	if err := <-done; err != nil || l.End() != 1 {
		t.Fatalf("after the sync: err %v, end %d", err, l.End())
	}

	// A failed sync answers with an error and appends nothing.
	lu, _ := e.meta.Log(e.tables["u"].ID)
	rec.FailNext(errors.New("disk on fire"))
	if _, err := e.Ingest(ctx, "u", `{"k": 1}`, ""); err == nil || lu.End() != 0 {
		t.Fatalf("ingest with a failed sync: err %v, end %d", err, lu.End())
	}

	// Checkpoint: not complete, results not committed, while the marker's
	// sync is held.
	v := e.views["a"]
	before := v.Results.Committed()
	started, release = rec.HoldNext()
	go func() {
		_, err := e.Checkpoint(ctx, "a")
		done <- err
	}()
	<-started
	select {
	case err := <-done:
		t.Fatalf("checkpoint completed (%v) while its sync was still running", err)
	default:
	}
	if v.Results.Committed() != before {
		t.Fatal("results committed before the marker's sync returned")
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v.Results.Committed() == before || count(t, e, "a") != 1 {
		t.Fatalf("after the sync: committed %d (was %d), count %d", v.Results.Committed(), before, count(t, e, "a"))
	}

	// A failed marker sync fails the checkpoint and commits nothing.
	before = v.Results.Committed()
	ingest(t, e, "t", `{"k": 1}`)
	rec.FailNext(errors.New("disk on fire"))
	if _, err := e.Checkpoint(ctx, "a"); err == nil {
		t.Fatal("checkpoint with a failed sync succeeded")
	}
	if v.Results.Committed() != before {
		t.Fatal("results committed by a checkpoint whose sync failed")
	}
	if _, err := e.Checkpoint(ctx, "a"); err != nil || count(t, e, "a") != 2 {
		t.Fatalf("the next checkpoint: err %v, count %d (want 2)", err, count(t, e, "a"))
	}
}
