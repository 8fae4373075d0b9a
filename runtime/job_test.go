package runtime

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/window"
)

// bidGraph is the plan of
//
//	SELECT window_start, window_end, auction, COUNT(*), MAX(price), SUM(price)
//	FROM bid GROUP BY <win>, auction
//
// over a bounded Nexmark bid table, written out by hand so this package's
// test does not depend on the planner.
func bidGraph(events int, win plan.WindowSpec, mode plan.EmitMode, par int) *plan.Graph {
	cols := nexmark.Columns(nexmark.Bid)
	dt := cols.Index("date_time")
	src := &plan.Source{Table: "bid", TableID: 1, Engine: "nexmark", Schema: cols, EventTime: dt, WatermarkDelay: 0,
		Attrs: map[string]string{"kind": "bid", "events": fmt.Sprint(events)}}
	ts := &plan.ColRef{Index: dt, Name: "date_time", T: plan.TypeTimestamp}
	auction := &plan.ColRef{Index: cols.Index("auction"), Name: "auction", T: plan.TypeBigint}
	price := &plan.ColRef{Index: cols.Index("price"), Name: "price", T: plan.TypeBigint}
	calcOut := plan.Schema{{Name: "_time", Type: plan.TypeTimestamp}, {Name: "auction", Type: plan.TypeBigint}, {Name: "price", Type: plan.TypeBigint}}
	ws, we := plan.Column{Name: "window_start", Type: plan.TypeTimestamp}, plan.Column{Name: "window_end", Type: plan.TypeTimestamp}
	out := plan.Schema{ws, we, calcOut[1], {Name: "n", Type: plan.TypeBigint}, {Name: "hi", Type: plan.TypeBigint}, {Name: "sum", Type: plan.TypeBigint}}
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	win.TimeCol = 0
	agg := &plan.Aggregate{Windowed: true, Session: win.Kind == plan.Session, Window: win, Keys: []int{1},
		Aggs:   []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggMax, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggSum, Arg: 2, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeBigint), col(3, plan.TypeBigint), col(4, plan.TypeBigint), col(5, plan.TypeBigint)},
		Out:    out, EmitMode: mode}
	return &plan.Graph{
		Options: plan.Options{EmitMode: mode, Parallelism: par, CheckpointInterval: 50, EmitInterval: 10},
		Key:     plan.KeyWindowGroup, Out: out,
		Vertices: []*plan.Vertex{
			{ID: 0, Parallelism: 1, Ops: []plan.Op{src, &plan.Calc{Project: []plan.Expr{ts, auction, price}, Out: calcOut}}},
			{ID: 1, Parallelism: par, Inputs: []plan.Edge{{From: 0, Partition: plan.Hash, KeyCols: []int{1}}},
				Ops: []plan.Op{agg, &plan.Sink{Kind: plan.SinkResults, Name: "t", Key: plan.KeyWindowGroup}}},
		},
	}
}

type aggRow struct{ n, hi, sum int64 }

// naive computes the same query straight from the generator.
func naive(events int, win plan.WindowSpec) map[string]aggRow {
	g := nexmark.New(nexmark.Config{})
	cols := nexmark.Columns(nexmark.Bid)
	n := nexmark.Count(nexmark.Bid, uint64(events))
	out := map[string]aggRow{}
	type sess struct {
		w        window.Window
		n, hi, s int64
	}
	sessions := map[int64][]sess{}
	for i := uint64(0); i < n; i++ {
		r := g.Fill(nexmark.Bid, i, nil, nil)
		ts, a, p := r[cols.Index("date_time")].I, r[cols.Index("auction")].I, r[cols.Index("price")].I
		var wins []window.Window
		switch win.Kind {
		case plan.Tumble:
			wins = []window.Window{window.Tumble(ts, win.Size)}
		case plan.Hop:
			wins = window.Hop(ts, win.Slide, win.Size, nil)
		case plan.Session:
			// Event times are monotone here, so nothing is late and no
			// session closes before it stops growing.
			list := sessions[a]
			cur := sess{w: window.Window{Start: ts, End: ts + win.Gap}, n: 1, hi: p, s: p}
			if k := len(list) - 1; k >= 0 && ts < list[k].w.End {
				cur = list[k]
				cur.w.End = max(cur.w.End, ts+win.Gap)
				cur.n, cur.hi, cur.s = cur.n+1, max(cur.hi, p), cur.s+p
				list = list[:k]
			}
			sessions[a] = append(list, cur)
			continue
		}
		for _, w := range wins {
			k := fmt.Sprint(w.Start, w.End, a)
			o := out[k]
			out[k] = aggRow{o.n + 1, max(o.hi, p), o.sum + p}
		}
	}
	for a, list := range sessions {
		for _, s := range list {
			out[fmt.Sprint(s.w.Start, s.w.End, a)] = aggRow{s.n, s.hi, s.s}
		}
	}
	return out
}

// TestJobMatchesNaive runs whole jobs (tasks, exchange, barriers,
// checkpoints into a versioned store) over a bounded generator and compares
// the committed results with a naive evaluation, for every window kind,
// both emit modes and parallelism 1 and 2.
func TestJobMatchesNaive(t *testing.T) {
	const events = 20000
	wins := map[string]plan.WindowSpec{
		"tumble":  {Kind: plan.Tumble, Size: 100, Slide: 100},
		"hop":     {Kind: plan.Hop, Size: 300, Slide: 70},
		"session": {Kind: plan.Session, Gap: 40},
	}
	for name, win := range wins {
		want := naive(events, win)
		for _, mode := range []plan.EmitMode{plan.EmitChanges, plan.EmitOnWindowClose} {
			for _, par := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/%s/p%d", name, mode, par), func(t *testing.T) {
					job, res := runToEnd(t, bidGraph(events, win, mode, par), 7)
					checkNaive(t, res, want)
					if st := job.Status(); st.RowsIn != int64(nexmark.Count(nexmark.Bid, events)) || st.LastCheckpoint == 0 {
						t.Fatalf("status %+v", st)
					}
				})
			}
		}
	}
}

// runToEnd runs g (a bidGraph over a bounded generator) as query qid on
// an in-memory store until its input ends, then checkpoints it. The job
// stops when the test ends.
func runToEnd(t *testing.T, g *plan.Graph, qid uint64) (*Job, *Results) {
	t.Helper()
	store := state.NewMemVersioned()
	res := NewResults(store, qid)
	job, err := Start(g, Deps{Store: store, Reader: NewNexmarkReader}, StartOptions{QueryID: qid, Name: "t", Results: res})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Stop() })
	select {
	case <-job.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("job did not finish")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := job.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	return job, res
}

// TestResultsRetention: once a bounded stream ends (watermark +inf), every
// window is older than any retention, so the committed results are empty;
// the same query without retention keeps them (TestJobMatchesNaive).
func TestResultsRetention(t *testing.T) {
	for _, par := range []int{1, 2} {
		g := bidGraph(5000, plan.WindowSpec{Kind: plan.Tumble, Size: 100, Slide: 100}, plan.EmitChanges, par)
		g.Options.ResultsRetention = 1000
		store := state.NewMemVersioned()
		res := NewResults(store, 9)
		job, err := Start(g, Deps{Store: store, Reader: NewNexmarkReader}, StartOptions{QueryID: 9, Name: "t", Results: res})
		if err != nil {
			t.Fatal(err)
		}
		<-job.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := job.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		rows, err := res.Rows(true)
		job.Stop()
		if err != nil || len(rows) != 0 || job.Status().RowsOut == 0 {
			t.Fatalf("p%d: %d rows left after retention (err %v, rows out %d)", par, len(rows), err, job.Status().RowsOut)
		}
	}
}

// TestRestoreMatchesNaive stops a job part-way (after a checkpoint, with
// rows processed after it that the checkpoint does not cover), starts a new
// job on the same store — at another parallelism — and checks that the
// results after the rest of the input equal a naive evaluation: state and
// source positions were restored, nothing lost, nothing counted twice.
func TestRestoreMatchesNaive(t *testing.T) {
	const events = 20000
	all := bidRows(events)
	n := len(all)
	for name, win := range map[string]plan.WindowSpec{
		"tumble":  {Kind: plan.Tumble, Size: 100, Slide: 100},
		"hop":     {Kind: plan.Hop, Size: 300, Slide: 70},
		"session": {Kind: plan.Session, Gap: 40},
	} {
		// In a synctest bubble: the wait for the rows after a checkpoint
		// to be processed sleeps in fake time, which passes only once
		// every goroutine of the job is blocked.
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				want := naive(events, win)
				store := state.NewMemVersioned()
				run := func(par int, rows []plan.Row, checkpointAt int) {
					job, res, rd := startMem(t, store, bidGraph(events, win, plan.EmitChanges, par))
					ctx := context.Background()
					rd.add(rows[:checkpointAt]...)
					if _, err := job.Checkpoint(ctx); err != nil {
						t.Fatal(err)
					}
					rd.add(rows[checkpointAt:]...)
					if checkpointAt < len(rows) && len(rows) < n {
						// Let the rows after the checkpoint be processed, then
						// stop without a checkpoint: a crash's worth of work lost.
						for job.Status().Offsets["bid"] < int64(len(rows)) {
							time.Sleep(time.Millisecond)
						}
						job.Stop()
						return
					}
					if _, err := job.Checkpoint(ctx); err != nil {
						t.Fatal(err)
					}
					job.Stop()
					checkNaive(t, res, want)
					if st := job.Status(); st.RowsIn != int64(n) {
						t.Fatalf("rows_in %d, want %d", st.RowsIn, n)
					}
				}
				run(1, all[:n*2/3], n/3) // checkpoint at 1/3, stop at 2/3
				run(2, all, n/2)         // resume from 1/3 at parallelism 2
			})
		})
	}
}

// TestRestartChains restarts a job several times, alternating
// parallelism, each time after a checkpoint and some uncheckpointed work:
// the state logs of each run supersede the last ones' (statelog.go) and
// the final results still equal a naive evaluation.
func TestRestartChains(t *testing.T) {
	const events = 12000
	all := bidRows(events)
	n := len(all)
	for name, win := range map[string]plan.WindowSpec{
		"hop":     {Kind: plan.Hop, Size: 300, Slide: 70},
		"session": {Kind: plan.Session, Gap: 40},
	} {
		// In a synctest bubble, as in TestRestoreMatchesNaive.
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				want := naive(events, win)
				store := state.NewMemVersioned()
				// Each step: parallelism, checkpoints at (the first writes a
				// base, the second a delta), stop at (n: finish).
				steps := [][4]int{{1, n / 8, n / 6, n / 4}, {2, n / 3, n * 2 / 5, n / 2}, {1, n / 2, n * 3 / 5, n * 2 / 3}, {2, n * 3 / 4, n * 3 / 4, n * 4 / 5}, {1, n * 5 / 6, n * 9 / 10, n}}
				for _, st := range steps {
					par, ckptAt, ckpt2, stopAt := st[0], st[1], st[2], st[3]
					job, res, rd := startMem(t, store, bidGraph(events, win, plan.EmitChanges, par))
					ctx := context.Background()
					// The reader holds the rows by offset and reads from the
					// restored one.
					rd.add(all[:ckptAt]...)
					if _, err := job.Checkpoint(ctx); err != nil {
						t.Fatal(err)
					}
					rd.add(all[ckptAt:ckpt2]...)
					if _, err := job.Checkpoint(ctx); err != nil {
						t.Fatal(err)
					}
					rd.add(all[ckpt2:stopAt]...)
					if stopAt < n {
						for job.Status().Offsets["bid"] < int64(stopAt) {
							time.Sleep(time.Millisecond)
						}
						job.Stop()
						continue
					}
					if _, err := job.Checkpoint(ctx); err != nil {
						t.Fatal(err)
					}
					job.Stop()
					checkNaive(t, res, want)
				}
			})
		})
	}
}

// TestLatestAtEndWithoutCheckpoints: with checkpoints off, the latest
// results of a bounded stream hold every row once the input ends (the end
// publishes what no barrier followed).
func TestLatestAtEndWithoutCheckpoints(t *testing.T) {
	win := plan.WindowSpec{Kind: plan.Hop, Size: 300, Slide: 70}
	for _, par := range []int{1, 2} {
		g := bidGraph(20000, win, plan.EmitChanges, par)
		g.Options.CheckpointInterval, g.Options.EmitInterval = 0, 3_600_000
		store := state.NewMemVersioned()
		res := NewResults(store, 8)
		job, err := Start(g, Deps{Store: store, Reader: NewNexmarkReader}, StartOptions{QueryID: 8, Name: "t", Results: res})
		if err != nil {
			t.Fatal(err)
		}
		<-job.Done()
		job.Stop()
		checkRows(t, res, false, naive(20000, win))
	}
}

// bidRows is the bid table of a bounded generator of events events.
func bidRows(events int) []plan.Row {
	g := nexmark.New(nexmark.Config{})
	all := make([]plan.Row, nexmark.Count(nexmark.Bid, uint64(events)))
	for i := range all {
		all[i] = g.Fill(nexmark.Bid, uint64(i), nil, nil)
	}
	return all
}

// startMem starts g (a bidGraph) as query 3 on store, its bid source an
// in-memory reader that holds rows by offset and reads from the restored
// one.
func startMem(t *testing.T, store state.Versioned, g *plan.Graph) (*Job, *Results, *memReader) {
	t.Helper()
	g.Vertices[0].Ops[0].(*plan.Source).Engine = "mem"
	var rd *memReader
	deps := Deps{Store: store, Reader: func(_ *plan.Source, at SourcePosition, _ []bool) (Reader, error) {
		rd = &memReader{ready: make(chan struct{}), off: at.Offset}
		return rd, nil
	}}
	res := NewResults(store, 3)
	job, err := Start(g, deps, StartOptions{QueryID: 3, Name: "t", Results: res})
	if err != nil {
		t.Fatal(err)
	}
	return job, res, rd
}

// checkNaive compares committed results of bidGraph with naive's.
func checkNaive(t *testing.T, res *Results, want map[string]aggRow) {
	t.Helper()
	checkRows(t, res, true, want)
}

// checkRows compares results of bidGraph (committed or latest) with
// naive's.
func checkRows(t *testing.T, res *Results, committed bool, want map[string]aggRow) {
	t.Helper()
	rows, err := res.Rows(committed)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]aggRow{}
	for _, r := range rows {
		got[fmt.Sprint(r[0].I, r[1].I, r[2].I)] = aggRow{r[3].I, r[4].I, r[5].I}
	}
	if len(got) != len(want) {
		t.Fatalf("%d result rows, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("window %s: got %+v, want %+v", k, got[k], w)
		}
	}
}

// TestSourceColumns: a source followed by a projecting Calc reads only the
// columns the Calc refers to and its event time; a filter-only Calc (rows
// pass on as they are) reads them all.
func TestSourceColumns(t *testing.T) {
	cols := nexmark.Columns(nexmark.Bid)
	src := &plan.Source{Schema: cols, EventTime: cols.Index("date_time")}
	ref := func(name string) plan.Expr {
		return &plan.ColRef{Index: cols.Index(name), Name: name, T: cols[cols.Index(name)].Type}
	}
	filter := &plan.Call{Fn: ">", Args: []plan.Expr{ref("price"), &plan.Const{V: plan.Int(10)}}, T: plan.TypeBoolean}
	got := sourceColumns([]plan.Op{src, &plan.Calc{Filter: filter, Project: []plan.Expr{ref("auction")}}}, src)
	var names []string
	for i, u := range got {
		if u {
			names = append(names, cols[i].Name)
		}
	}
	if fmt.Sprint(names) != "[auction price date_time]" {
		t.Errorf("projecting calc: reads %v, want [auction price date_time]", names)
	}
	if got := sourceColumns([]plan.Op{src, &plan.Calc{Filter: filter}}, src); got != nil {
		t.Errorf("filter-only calc: reads %v, want all (nil)", got)
	}
	// The generator leaves skipped columns NULL and fills the others.
	g := nexmark.New(nexmark.Config{})
	full := g.Fill(nexmark.Bid, 7, nil, nil)
	part := g.Fill(nexmark.Bid, 7, []int{nexmark.BidAuction, nexmark.Skip, nexmark.BidDateTime}, nil)
	if part[0] != full[nexmark.BidAuction] || !part[1].IsNull() || part[2] != full[nexmark.BidDateTime] {
		t.Errorf("fill with a skipped column: %v, full row %v", part, full)
	}
}
