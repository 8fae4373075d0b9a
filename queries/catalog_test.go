package queries

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

func openEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// TestPlanningHoldsNoLock: while a statement is planned and prepared (a
// look at an external system, here a wait), other requests run; when the
// catalog changes under it, it is planned again against the new catalog.
func TestPlanningHoldsNoLock(t *testing.T) {
	e := openEngine(t)
	exec(t, e, `CREATE TABLE t (k BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	rec := viewRecord{Name: "v", SQL: "CREATE VIEW v AS SELECT k, COUNT(*) AS n FROM t GROUP BY k"}
	release := make(chan struct{})
	preparing := make(chan struct{})
	done := make(chan error, 1)
	plans := 0
	go func() {
		done <- e.planned("CREATE VIEW v", rec, func(*plan.Graph) error {
			plans++
			if plans == 1 {
				close(preparing)
				<-release
			}
			return nil
		}, func(*plan.Graph) error { return nil })
	}()
	<-preparing
	// The catalog serves and changes meanwhile: t is dropped and made
	// again (a new table of the same name).
	exec(t, e, "SHOW TABLES")
	exec(t, e, "DROP TABLE t")
	exec(t, e, `CREATE TABLE t (k BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	if err := e.Health(); err != nil {
		t.Fatalf("healthz while a statement is planned: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if plans != 2 {
		t.Fatalf("planned %d times, want 2: the first planning read a table that was dropped and made again", plans)
	}

	// A table dropped under the planning: the second planning refuses it.
	plans = 0
	err := e.planned("CREATE VIEW v", rec, func(*plan.Graph) error {
		if plans++; plans == 1 {
			exec(t, e, "DROP TABLE t")
		}
		return nil
	}, func(*plan.Graph) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "t") {
		t.Fatalf("planning over a table dropped meanwhile: %v, want the unknown table", err)
	}
}

// TestHealthSeesAHeldLock: /healthz reports an engine whose catalog lock
// is held (nobody should hold it while waiting), naming the holder.
func TestHealthSeesAHeldLock(t *testing.T) {
	e := openEngine(t)
	if err := e.Health(); err != nil {
		t.Fatalf("healthy engine: %v", err)
	}
	e.wlock("DROP VIEW stuck")
	err := e.Health()
	e.wunlock()
	if err == nil || !strings.Contains(err.Error(), "DROP VIEW stuck") {
		t.Fatalf("lock held: %v, want an error naming its holder", err)
	}
	if err := e.Health(); err != nil {
		t.Fatalf("lock released: %v", err)
	}
	e.Close(context.Background())
	if err := e.Health(); err == nil || !strings.Contains(err.Error(), "store") {
		t.Fatalf("closed stores: %v, want an error naming the store", err)
	}
}
