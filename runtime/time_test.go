package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
)

// memReader is an in-memory source the test appends rows to.
type memReader struct {
	plainReader
	mu    sync.Mutex
	rows  []plan.Row
	off   int64
	ready chan struct{}
}

func (r *memReader) add(rows ...plan.Row) {
	r.mu.Lock()
	r.rows = append(r.rows, rows...)
	close(r.ready)
	r.ready = make(chan struct{})
	r.mu.Unlock()
}

func (r *memReader) Poll(_ int64, max int, b *op.Batch) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for ; n < max && r.off < int64(len(r.rows)); n++ {
		b.Append(r.rows[r.off], op.RowMeta{Offset: r.off})
		r.off++
	}
	return n, nil
}
func (r *memReader) Offset() int64 { r.mu.Lock(); defer r.mu.Unlock(); return r.off }
func (r *memReader) Available(int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.rows))
}
func (r *memReader) Ready() <-chan struct{} { r.mu.Lock(); defer r.mu.Unlock(); return r.ready }
func (r *memReader) Done() bool             { return false }

// countGraph: SELECT window_start, window_end, COUNT(*) FROM t GROUP BY
// TUMBLE(<ts or PROCTIME()>, '1s'), emitted on window close.
func countGraph(src *plan.Source, proc bool) *plan.Graph {
	win := plan.WindowSpec{Kind: plan.Tumble, Size: 1000, Slide: 1000, ProcTime: proc}
	var t plan.Expr = &plan.ColRef{Index: 0, Name: "ts", T: plan.TypeTimestamp}
	if proc {
		t = &plan.Call{Fn: "proctime", T: plan.TypeTimestamp}
		src.ProcTime = true
	}
	ws := plan.Column{Name: "window_start", Type: plan.TypeTimestamp}
	we := plan.Column{Name: "window_end", Type: plan.TypeTimestamp}
	out := plan.Schema{ws, we, {Name: "n", Type: plan.TypeBigint}}
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	agg := &plan.Aggregate{Windowed: true, Window: win, Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeBigint)}, Out: out, EmitMode: plan.EmitOnWindowClose}
	return &plan.Graph{Options: plan.Options{EmitMode: plan.EmitOnWindowClose, Parallelism: 1, CheckpointInterval: 100, EmitInterval: 50},
		Key: plan.KeyWindowGroup, Out: out,
		Vertices: []*plan.Vertex{
			{ID: 0, Parallelism: 1, Ops: []plan.Op{src, &plan.Calc{Project: []plan.Expr{t}, Out: plan.Schema{{Name: "_time", Type: plan.TypeTimestamp}}}}},
			{ID: 1, Parallelism: 1, Inputs: []plan.Edge{{From: 0, Partition: plan.Hash}},
				Ops: []plan.Op{agg, &plan.Sink{Kind: plan.SinkResults, Name: "t", Key: plan.KeyWindowGroup}}},
		}}
}

// runFor starts the graph on a memReader inside a synctest bubble, feeds
// rows, lets fake time pass, checkpoints and returns the committed windows.
func runFor(t *testing.T, g *plan.Graph, feed func(r *memReader)) map[int64]int64 {
	rd := &memReader{ready: make(chan struct{})}
	store := state.NewMemVersioned()
	res := NewResults(store, 1)
	deps := Deps{Store: store, Reader: func(*plan.Source, SourcePosition, []bool) (Reader, error) { return rd, nil }}
	job, err := Start(g, deps, StartOptions{QueryID: 1, Name: "t", Results: res})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Stop()
	feed(rd)
	if _, err := job.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := res.Rows(true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for _, r := range rows {
		got[r[0].I] = r[2].I
	}
	return got
}

func row(ts int64) plan.Row { return plan.Row{plan.Time(ts)} }

// TestIdleAdvance: with idle_timeout, a source with no new rows stops
// holding the watermark back; it advances with the (fake) wall clock from
// where it stood, so the last window closes on quiet input. Without it,
// the window stays open.
func TestIdleAdvance(t *testing.T) {
	for _, idle := range []int64{0, 1000} {
		synctest.Test(t, func(t *testing.T) {
			src := &plan.Source{Table: "t", Engine: "mem", Schema: plan.Schema{{Name: "ts", Type: plan.TypeTimestamp}}, EventTime: 0, IdleTimeout: idle}
			got := runFor(t, countGraph(src, false), func(r *memReader) {
				r.add(row(100), row(200), row(1500))
				time.Sleep(5 * time.Second) // fake time: 1s idle timeout + the rest of window [1000, 2000)
				synctest.Wait()
			})
			if got[0] != 2 {
				t.Fatalf("idle=%d: window [0,1000) = %d, want 2 (closed by the row at 1500)", idle, got[0])
			}
			if idle > 0 && got[1000] != 1 {
				t.Fatalf("idle=%d: window [1000,2000) = %d, want 1 (closed by the idle advance)", idle, got[1000])
			}
			if idle == 0 && len(got) != 1 {
				t.Fatalf("idle=0: %v: no idle advance may close window [1000,2000)", got)
			}
		})
	}
}

// TestProcTimeWindows: processing-time windows take the (fake) wall clock
// of the task that reads the row and close as it passes their end.
func TestProcTimeWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &plan.Source{Table: "t", Engine: "mem", Schema: plan.Schema{{Name: "ts", Type: plan.TypeTimestamp}}, EventTime: -1}
		start := time.Now().UnixMilli()
		got := runFor(t, countGraph(src, true), func(r *memReader) {
			r.add(row(0), row(0), row(0))
			synctest.Wait()
			time.Sleep(3 * time.Second)
			r.add(row(0))
			synctest.Wait()
			time.Sleep(3 * time.Second)
			synctest.Wait()
		})
		total := int64(0)
		for ws, n := range got {
			if ws < start-start%1000 {
				t.Fatalf("window %d before the start %d", ws, start)
			}
			total += n
		}
		if total != 4 || len(got) != 2 {
			t.Fatalf("windows %v: want 4 rows in 2 windows 3s apart", got)
		}
	})
}

// holdingReader is a memReader that says it holds input (as the Kafka
// reader holds records while a schema registry cannot be asked).
type holdingReader struct {
	*memReader
	held atomic.Bool
}

func (r *holdingReader) Holding() bool { return r.held.Load() }

// TestIdleNotWhileHolding: a reader holding input is not idle: the
// watermark does not move on with the clock past what it holds, so the
// rows it hands out later are on time (without the check, the idle advance
// closes window [1000, 2000) and the row at 1700 comes late).
func TestIdleNotWhileHolding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &plan.Source{Table: "t", Engine: "mem", Schema: plan.Schema{{Name: "ts", Type: plan.TypeTimestamp}}, EventTime: 0, IdleTimeout: 1000}
		rd := &holdingReader{memReader: &memReader{ready: make(chan struct{})}}
		store := state.NewMemVersioned()
		res := NewResults(store, 1)
		deps := Deps{Store: store, Reader: func(*plan.Source, SourcePosition, []bool) (Reader, error) { return rd, nil }}
		job, err := Start(countGraph(src, false), deps, StartOptions{QueryID: 1, Name: "t", Results: res})
		if err != nil {
			t.Fatal(err)
		}
		defer job.Stop()
		rd.add(row(100), row(200), row(1500))
		rd.held.Store(true)
		time.Sleep(5 * time.Second) // fake time: well past the idle timeout
		synctest.Wait()
		rd.add(row(1700))
		rd.held.Store(false)
		time.Sleep(5 * time.Second) // now idle: window [1000, 2000) closes
		synctest.Wait()
		if _, err := job.Checkpoint(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows, err := res.Rows(true)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]int64{}
		for _, r := range rows {
			got[r[0].I] = r[2].I
		}
		if got[0] != 2 || got[1000] != 2 {
			t.Fatalf("windows %v, want [0,1000) = 2 and [1000,2000) = 2 (the row at 1700 on time)", got)
		}
	})
}
