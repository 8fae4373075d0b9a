package queries

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime"
)

// TestAtMostOnceView: a view whose built-in results are at_most_once
// (SET_VAR, and SET for another) through a crash after changes it
// published and had not checkpointed. The restart restores the
// checkpoint and drops the replay of what was published (counted in
// skipped_changes); the view with the default delivery publishes it again.
// EXPLAIN and GET /v1/queries show the delivery; SET delivery =
// 'at_least_once' is refused; a restart keeps a SET's choice; DROP VIEW
// deletes the recorded source positions.
func TestAtMostOnceView(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := Config{DataDir: dir, CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE VIEW amo AS SELECT /*+ SET_VAR(delivery='at_most_once') */ k, COUNT(*) AS n FROM t GROUP BY k;
		CREATE VIEW dflt AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;
		SET delivery = 'at_most_once';
		CREATE VIEW rows_amo AS SELECT k, ts FROM t`)
	_, err = e.Exec(ctx, "SET delivery = 'at_least_once'")
	var qe *Error
	if !errors.As(err, &qe) || qe.Status != 422 || !strings.Contains(err.Error(), "already are at-least-once") {
		t.Fatalf("SET delivery = 'at_least_once': %v, want a 422 saying why", err)
	}
	views := []string{"amo", "dflt", "rows_amo"}
	delivery := map[string]string{"amo": "at_most_once", "dflt": "exactly_once", "rows_amo": "at_most_once"}
	checkShown := func(when string) {
		t.Helper()
		for _, n := range views {
			q, err := e.Query(n)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := q.Sinks["results"].(map[string]any)
			if res["delivery"] != delivery[n] || !strings.Contains(q.Plan, "delivery="+delivery[n]) {
				t.Errorf("%s: %s: sinks.results %v, plan %q: want delivery %s", when, n, res, q.Plan, delivery[n])
			}
			if _, has := res["skipped_changes"]; has != (delivery[n] == "at_most_once") {
				t.Errorf("%s: %s: sinks.results %v: skipped_changes only for at_most_once", when, n, res)
			}
		}
	}
	checkShown("created")

	ingestKeys(t, e, 0, 20)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	// Published, not checkpointed: the crash rolls these back.
	ingestKeys(t, e, 20, 40)
	waitFor(t, "every view published keys 20..39", func() bool {
		for _, n := range views {
			_, rows, err := e.Results(n, false)
			if err != nil || len(rows) != 40 {
				return false
			}
		}
		return true
	})
	ids := map[string]uint64{}
	e.mu.RLock()
	for _, n := range views {
		ids[n] = e.views[n].Record.ID
	}
	e.mu.RUnlock()
	if kvs, err := e.meta.ListCatalog(runtime.AtMostOnceKey(ids["amo"])); err != nil || len(kvs) != 1 {
		t.Fatalf("the recorded source positions of amo: %v, %v", kvs, err)
	}
	if kvs, err := e.meta.ListCatalog(runtime.AtMostOnceKey(ids["dflt"])); err != nil || len(kvs) != 0 {
		t.Fatalf("a default view records source positions: %v, %v", kvs, err)
	}
	// The crash: the jobs stop without a final checkpoint.
	e.mu.RLock()
	for _, n := range views {
		e.views[n].Job.Stop()
	}
	e.mu.RUnlock()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	closeEngine(t, cancelled, e)

	e, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeEngine(t, ctx, e)
	streams := map[string]*ChangeStream{}
	for _, n := range views {
		if streams[n], err = e.Changes(n, ChangesOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The checkpoint's flush reads the replay (20..39) through the sinks.
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	checkShown("restarted")
	for _, n := range views {
		q, err := e.Query(n)
		if err != nil {
			t.Fatal(err)
		}
		res := q.Sinks["results"].(map[string]any)
		_, latest, err := e.Results(n, false)
		if err != nil {
			t.Fatal(err)
		}
		want, skipped := 40, any(nil)
		if delivery[n] == "at_most_once" {
			// The replay of 20..39 is dropped; the results are the
			// checkpoint's.
			want, skipped = 20, int64(20)
		}
		if len(latest) != want || res["skipped_changes"] != skipped {
			t.Errorf("%s after the restart: %d latest rows, skipped_changes %v; want %d, %v", n, len(latest), res["skipped_changes"], want, skipped)
		}
	}
	// New rows are published as before.
	ingestKeys(t, e, 40, 50)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"amo", "rows_amo"} {
		got := map[float64]int{}
		for _, c := range readChanges(t, streams[n], 10) {
			got[c.Row["k"].(float64)]++
		}
		for k := 40; k < 50; k++ {
			if got[float64(k)] != 1 || len(got) != 10 {
				t.Errorf("%s: after the restart the reader got %v, want keys 40..49 once each", n, got)
				break
			}
		}
	}
	_, committed, err := e.Results("amo", true)
	if err != nil || len(committed) != 30 {
		t.Fatalf("amo committed rows: %d (%v), want 30: the checkpoint's 20 and the 10 after the restart", len(committed), err)
	}

	exec(t, e, "DROP VIEW amo; DROP VIEW rows_amo")
	for _, n := range []string{"amo", "rows_amo"} {
		if kvs, err := e.meta.ListCatalog(runtime.AtMostOnceKey(ids[n])); err != nil || len(kvs) != 0 {
			t.Errorf("%s dropped: its recorded source positions remain: %v, %v", n, kvs, err)
		}
	}
}
