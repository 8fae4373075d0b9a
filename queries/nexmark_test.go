package queries

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/window"
)

// runExample runs an example query as a view over bounded Nexmark tables
// until the input ends, and returns its committed results as strings (one
// per row, columns joined by |), sorted.
func runExample(t *testing.T, example string, events int, par int) []string {
	t.Helper()
	rows, _ := runExampleOver(t, BenchTables(int64(events)), example, par)
	return rows
}

// runExampleOver is runExample over the given CREATE TABLE statements; it
// also returns the job's final status.
func runExampleOver(t *testing.T, tables, example string, par int) ([]string, runtime.Status) {
	t.Helper()
	e := openNexmark(t, t.TempDir())
	defer closeEngine(t, context.Background(), e)
	createExample(t, e, tables, example, par)
	return finishView(t, e)
}

// openNexmark opens an engine on dir with checkpoints frequent enough
// that a bounded run of a second or two takes many of them.
func openNexmark(t *testing.T, dir string) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, CheckpointInterval: 100 * time.Millisecond, EmitInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// closeEngine closes e, failing the test rather than hanging the whole
// test binary until its timeout if Close does not return: it has
// deadlocked before (Close held e.mu while waiting for the maintenance
// loop, which was waiting for e.mu).
func closeEngine(t *testing.T, ctx context.Context, e *Engine) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		e.Close(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Errorf("Engine.Close did not return within 60 s")
	}
}

// createExample creates the tables (CREATE TABLE statements) and view v
// running example at parallelism par.
func createExample(t *testing.T, e *Engine, tables, example string, par int) {
	t.Helper()
	ex, err := exampleQuery(example)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteExampleFiles(e.cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	exec(t, e, tables+";\n"+ex.Setup)
	// SET rather than a hint: some examples already carry one. An
	// example that is an INSERT (q10) is its SELECT here.
	exec(t, e, fmt.Sprintf("SET parallelism = %d;\nCREATE VIEW v AS %s", par, ex.Select))
}

// finishView waits until view v has read all its bounded input, takes a
// last checkpoint (committing what the end of input released) and returns
// the committed results as runExample does, and the job's status.
func finishView(t *testing.T, e *Engine) ([]string, runtime.Status) {
	t.Helper()
	rows, st := finishViewRows(t, e)
	var out []string
	for _, r := range rows {
		parts := make([]string, len(r))
		for i, v := range r {
			parts[i] = fmt.Sprint(JSONValue(v))
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out, st
}

// finishViewRows is finishView's rows as the results hold them.
func finishViewRows(t *testing.T, e *Engine) ([]plan.Row, runtime.Status) {
	t.Helper()
	ctx := context.Background()
	e.mu.RLock()
	job := e.views["v"].Job
	e.mu.RUnlock()
	select {
	case <-job.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the query did not finish its bounded input")
	}
	if _, err := e.Checkpoint(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	st := job.Status()
	if st.Err != nil {
		t.Fatalf("the query failed: %v", st.Err)
	}
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	return rows, st
}

type bid struct{ auction, bidder, price, ts int64 }

func bids(events int) []bid {
	g := nexmark.New(nexmark.Config{})
	n := nexmark.Count(nexmark.Bid, uint64(events))
	out := make([]bid, n)
	for i := range out {
		r := g.Fill(nexmark.Bid, uint64(i), nil, nil)
		out[i] = bid{r[nexmark.BidAuction].I, r[nexmark.BidBidder].I, r[nexmark.BidPrice].I, r[nexmark.BidDateTime].I}
	}
	return out
}

func ts(ms int64) string { return plan.FormatTime(ms) }

// TestNexmarkQ7 checks the full q7 (a tumbling MAX joined back to the
// bids) against a direct computation from the generator.
func TestNexmarkQ7(t *testing.T) {
	const events = 60000
	var want []string
	max := map[int64]int64{}
	all := bids(events)
	for _, b := range all {
		w := window.Tumble(b.ts, 10000)
		if b.price > max[w.End] {
			max[w.End] = b.price
		}
	}
	for _, b := range all {
		if b.price == max[window.Tumble(b.ts, 10000).End] {
			want = append(want, fmt.Sprintf("%d|%d|%d|%s", b.auction, b.price, b.bidder, ts(b.ts)))
		}
	}
	sort.Strings(want)
	for _, par := range []int{1, 2} {
		got := runExample(t, "q7", events, par)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("p%d: %d rows, want %d\ngot  %v\nwant %v", par, len(got), len(want), got, want)
		}
	}
}

// TestNexmarkQ5 checks the full q5 (hot items: HOP counts per auction,
// the per-window maximum, the join keeping the hottest auctions).
func TestNexmarkQ5(t *testing.T) {
	const events = 30000
	counts := map[window.Window]map[int64]int64{}
	for _, b := range bids(events) {
		for _, w := range window.Hop(b.ts, 2000, 10000, nil) {
			if counts[w] == nil {
				counts[w] = map[int64]int64{}
			}
			counts[w][b.auction]++
		}
	}
	var want []string
	for w, per := range counts {
		var max int64
		for _, n := range per {
			if n > max {
				max = n
			}
		}
		for a, n := range per {
			if n >= max {
				want = append(want, fmt.Sprintf("%d|%d|%s|%s", a, n, ts(w.Start), ts(w.End)))
			}
		}
	}
	sort.Strings(want)
	for _, par := range []int{1, 2} {
		got := runExample(t, "q5", events, par)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("p%d: %d rows, want %d\ngot  %v\nwant %v", par, len(got), len(want), got, want)
		}
	}
}
