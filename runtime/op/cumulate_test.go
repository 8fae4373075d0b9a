package op

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// cumSpec is CUMULATE(ts, step, size) over rows [ts, k, v] grouped by k:
// COUNT(*), COUNT(DISTINCT v), SUM(v), MIN(v), MAX(v), with HAVING MAX(v)
// < 50 when having (a window's row passes, then fails as its maximum
// grows: changes mode deletes it).
func cumSpec(step, size, lateness int64, mode plan.EmitMode, having bool) *plan.Aggregate {
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	ts, v := plan.Column{Name: "ts", Type: plan.TypeTimestamp}, plan.Column{Name: "v", Type: plan.TypeBigint}
	a := &plan.Aggregate{Windowed: true, Window: plan.WindowSpec{Kind: plan.Cumulate, Slide: step, Size: size}, Keys: []int{1},
		Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggCountDistinct, Arg: 2, T: plan.TypeBigint},
			{Fn: plan.AggSum, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggMin, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggMax, Arg: 2, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeBigint), col(3, plan.TypeBigint),
			col(4, plan.TypeBigint), col(5, plan.TypeBigint), col(6, plan.TypeBigint), col(7, plan.TypeBigint)},
		Out:      plan.Schema{ts, ts, v, v, v, v, v, v},
		EmitMode: mode, AllowedLateness: lateness}
	if having {
		a.Having = &plan.Call{Fn: "<", T: plan.TypeBoolean, Args: []plan.Expr{col(7, plan.TypeBigint), &plan.Const{V: plan.Int(50)}}}
	}
	return a
}

// cumRow is one input row with the watermark before it; del: it takes
// back an earlier row (an updating input's delete).
type cumRow struct {
	row plan.Row // ts, k, v
	wm  int64
	del bool
}

// cumOracle computes the final rows of cumSpec from scratch: for every
// cumulative window [s, s+j*step) and key, the rows with s <= ts < s+j*step
// that were not late for it (its end + lateness above the row's
// watermark), less the deletes not late for it, aggregated; a window
// without rows, or failing HAVING, has no row.
func cumOracle(rows []cumRow, step, size, lateness int64, having bool) (map[string]string, int64) {
	type wk struct {
		w window.Window
		k int64
	}
	in := map[wk][]int64{}
	late := int64(0)
	for _, r := range rows {
		ts := r.row[0].I
		dropped := false
		s := window.Tumble(ts, size).Start
		for j := int64(1); j*step <= size; j++ {
			w := window.Window{Start: s, End: s + j*step}
			if !w.Contains(ts) {
				continue
			}
			if w.End+lateness <= r.wm {
				dropped = true
				continue
			}
			x := wk{w, r.row[1].I}
			if r.del {
				i := slices.Index(in[x], r.row[2].I)
				in[x] = slices.Delete(in[x], i, i+1)
				continue
			}
			in[x] = append(in[x], r.row[2].I)
		}
		if dropped {
			late++
		}
	}
	out := map[string]string{}
	for x, vs := range in {
		if len(vs) == 0 {
			continue
		}
		sum, lo, hi := int64(0), int64(math.MaxInt64), int64(math.MinInt64)
		seen := map[int64]bool{}
		for _, v := range vs {
			sum, lo, hi = sum+v, min(lo, v), max(hi, v)
			seen[v] = true
		}
		if having && hi >= 50 {
			continue
		}
		row := plan.Row{plan.Time(x.w.Start), plan.Time(x.w.End), plan.Int(x.k), plan.Int(int64(len(vs))), plan.Int(int64(len(seen))), plan.Int(sum), plan.Int(lo), plan.Int(hi)}
		key := string(value.AppendValue(value.AppendValue(value.AppendValue(nil, plan.Time(x.w.Start)), plan.Time(x.w.End)), plan.Int(x.k)))
		out[key] = fmt.Sprint(row)
	}
	return out, late
}

// cumRows makes n rows of a few keys: time rising, with disorder up to
// disorder ms (past watermark delay + lateness: some rows are late for
// some windows, some for all); each row's watermark is the greatest time
// before it less delay.
func cumRows(rng *rand.Rand, n int, delay, disorder int64) []cumRow {
	var rows []cumRow
	ts, maxTS := int64(1000), int64(math.MinInt64)
	for range n {
		ts += rng.Int64N(6)
		t := ts - rng.Int64N(disorder+1)
		wm := int64(window.NoWatermark)
		if maxTS != math.MinInt64 {
			wm = maxTS - delay
		}
		rows = append(rows, cumRow{plan.Row{plan.Time(t), plan.Int(rng.Int64N(4)), plan.Int(rng.Int64N(60))}, wm, false})
		maxTS = max(maxTS, t)
	}
	return rows
}

// cumRetractRows is cumRows with deletes: about one row in four takes
// back an earlier row not yet taken back (same values, its own
// watermark).
func cumRetractRows(rng *rand.Rand, n int, delay, disorder int64) []cumRow {
	var out []cumRow
	var live []int
	for _, r := range cumRows(rng, n, delay, disorder) {
		if len(live) > 0 && rng.IntN(4) == 0 {
			i := rng.IntN(len(live))
			out = append(out, cumRow{row: slices.Clone(out[live[i]].row), wm: r.wm, del: true})
			live = slices.Delete(live, i, i+1)
			continue
		}
		live = append(live, len(out))
		out = append(out, r)
	}
	return out
}

// TestCumulateOracle runs random, disordered rows through CUMULATE
// aggregations of COUNT(*), COUNT(DISTINCT), SUM, MIN and MAX (with and
// without HAVING, both emit modes, with allowed lateness) at changing
// parallelism: checkpoints (bases and deltas of each task's records),
// restores from them at 1, 2 or 3 tasks (each owning its keys' groups,
// the restored watermark forwarded first, the rows after the checkpoint
// fed again), watermarks between batches. The final rows must be the
// oracle's, computed per cumulative window from scratch, and the late
// rows counted as it counts them; once every window closed no state is
// left.
func TestCumulateOracle(t *testing.T) {
	type cfg struct {
		step, size, lateness int64
		mode                 plan.EmitMode
		having, retract      bool
	}
	var cfgs []cfg
	for _, mode := range []plan.EmitMode{plan.EmitOnWindowClose, plan.EmitChanges} {
		cfgs = append(cfgs, cfg{10, 60, 0, mode, false, false}, cfg{7, 35, 12, mode, true, false}, cfg{25, 25, 5, mode, false, false}, cfg{3, 90, 4, mode, true, false},
			cfg{10, 60, 0, mode, false, true}, cfg{7, 35, 12, mode, true, true}, cfg{3, 90, 4, mode, false, true})
	}
	for ci, c := range cfgs {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%d-%d-%d-mode%d-having%v-retract%v/seed%d", c.step, c.size, c.lateness, c.mode, c.having, c.retract, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(ci)))
				rows := cumRows(rng, 2500, 20, 45)
				spec := cumSpec(c.step, c.size, c.lateness, c.mode, c.having)
				if c.retract {
					rows = cumRetractRows(rng, 2500, 20, 45)
					spec.Retract, spec.RowCount = true, 0 // COUNT(*) is aggregate 0
				}
				want, wantLate := cumOracle(rows, c.step, c.size, c.lateness, c.having)
				got, late := runCumulate(t, rng, spec, rows)
				if late != wantLate {
					t.Errorf("late rows %d, want %d", late, wantLate)
				}
				if !maps.Equal(got, want) {
					n := 0
					for k, v := range want {
						if got[k] != v && n < 10 {
							t.Errorf("window %x: got %q, want %q", k, got[k], v)
							n++
						}
					}
					for k, v := range got {
						if _, ok := want[k]; !ok && n < 20 {
							t.Errorf("window %x: got %q, not in the oracle", k, v)
							n++
						}
					}
					t.Fatalf("%d rows, want %d", len(got), len(want))
				}
			})
		}
	}
}

// runCumulate feeds rows to spec's operators and returns the final rows
// and the late rows counted (those after the last restore, plus those
// counted up to its checkpoint).
func runCumulate(t *testing.T, rng *rand.Rand, spec *plan.Aggregate, rows []cumRow) (map[string]string, int64) {
	t.Helper()
	type task struct {
		a   *cumAgg
		c   *Counters
		log []byte // the records since the task's last base
	}
	newTasks := func(n int) []*task {
		ts := make([]*task, n)
		for i := range ts {
			c := &Counters{}
			a, err := newCumAgg(spec, &Env{}, c)
			if err != nil {
				t.Fatal(err)
			}
			ts[i] = &task{a: a, c: c}
		}
		return ts
	}
	lateOf := func(ts []*task) int64 {
		n := int64(0)
		for _, x := range ts {
			n += x.c.LateRows
		}
		return n
	}
	tasks := newTasks(1)
	got := upserts{}
	// As of the last checkpoint: the rows fed, the results, the late rows,
	// the watermark, and the tasks' logs.
	var (
		at     int
		gotAt  = upserts{}
		lateAt int64
		wmAt   = int64(window.NoWatermark)
		logsAt [][]byte
	)
	lateBase := int64(0) // late rows counted by tasks before the last restore
	wm := int64(window.NoWatermark)
	for i := 0; i < len(rows); {
		bs := make([]*Batch, len(tasks))
		for j := range bs {
			bs[j] = &Batch{}
		}
		for range 1 + rng.IntN(20) {
			if i == len(rows) {
				break
			}
			r := rows[i]
			key := string(value.AppendValue(nil, r.row[1]))
			op := Insert
			if r.del {
				op = Delete
			}
			bs[value.HashKey(key)%uint64(len(tasks))].Append(slices.Clone(r.row), RowMeta{Key: key, WM: r.wm, Offset: int64(i), Op: op})
			wm = max(wm, r.wm)
			i++
		}
		for j, x := range tasks {
			if err := x.a.Process(bs[j], got); err != nil {
				t.Fatal(err)
			}
		}
		if i < len(rows) && rng.IntN(3) == 0 {
			// The watermark before the next row, to every task.
			wm = max(wm, rows[i].wm)
			for _, x := range tasks {
				if _, err := x.a.Watermark(wm, got); err != nil {
					t.Fatal(err)
				}
			}
		}
		if rng.IntN(4) > 0 {
			continue
		}
		for _, x := range tasks {
			if err := x.a.Barrier(Barrier{CheckpointID: 1}, got); err != nil {
				t.Fatal(err)
			}
			w := &LogWriter{all: rng.IntN(5) == 0 || x.log == nil}
			if err := x.a.Snapshot(w); err != nil {
				t.Fatal(err)
			}
			if w.all {
				x.log = nil
			}
			x.log = append(x.log, slices.Concat(w.Close()...)...)
		}
		at, gotAt, lateAt, wmAt = i, maps.Clone(got), lateBase+lateOf(tasks), wm
		logsAt = logsAt[:0]
		for _, x := range tasks {
			logsAt = append(logsAt, slices.Clone(x.log))
		}
		if rng.IntN(3) > 0 {
			continue
		}
		// Restart from the checkpoint at 1 to 3 tasks: each restores the
		// groups it owns from every old task's records, takes the
		// restored watermark, and the rows after the checkpoint come
		// again.
		all := memState{kv: map[string][]byte{}}
		for _, l := range logsAt {
			r, err := blockReader(l)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range r.keys {
				if _, dup := all.kv[k]; dup {
					t.Fatalf("record %x in two tasks' logs", k)
				}
				all.kv[k] = r.vals[k]
			}
		}
		tasks = newTasks(1 + rng.IntN(3))
		got = maps.Clone(gotAt)
		for j, x := range tasks {
			if err := x.a.Restore(memStateReader{st: &all, subtask: j, parallel: len(tasks)}); err != nil {
				t.Fatalf("restore after row %d: %v", at, err)
			}
			// The source's watermark at the checkpoint: windows a task
			// had closed by then are not emitted again (a task that had
			// not seen it closes its windows now, for the first time).
			seen := keysSeen{}
			if _, err := x.a.Watermark(wmAt, emitters{got, seen}); err != nil {
				t.Fatal(err)
			}
			for k := range seen {
				if _, ok := gotAt[k]; ok && spec.EmitMode == plan.EmitOnWindowClose {
					t.Fatalf("window %x emitted again after the restore", k)
				}
			}
		}
		i, lateBase, wm = at, lateAt, wmAt
	}
	for _, x := range tasks {
		if _, err := x.a.Watermark(math.MaxInt64, got); err != nil {
			t.Fatal(err)
		}
		if err := x.a.Barrier(Barrier{}, got); err != nil {
			t.Fatal(err)
		}
		a := x.a
		if a.StateRows() != 0 || len(a.wins) != 0 || len(a.keys) != 0 || len(a.order) != 0 || a.bytes != 0 {
			t.Fatalf("after every window closed: %d groups, %d windows, %d keys, %d in the close order, %d bytes", a.StateRows(), len(a.wins), len(a.keys), len(a.order), a.bytes)
		}
	}
	return got, lateBase + lateOf(tasks)
}

// keysSeen records the upsert keys emitted.
type keysSeen map[string]bool

func (s keysSeen) Emit(b *Batch) error {
	for _, m := range b.Meta {
		s[m.Key] = true
	}
	return nil
}

// emitters emits to each of its emitters.
type emitters []Emitter

func (es emitters) Emit(b *Batch) error {
	for _, e := range es {
		if err := e.Emit(b); err != nil {
			return err
		}
	}
	return nil
}

// TestCumulateSharesState: in order, a group holds its run and the pane
// being filled, whatever the number of windows; closing window k of a max
// window reads that state, not a copy per window.
func TestCumulateSharesState(t *testing.T) {
	spec := cumSpec(10, 1000, 0, plan.EmitOnWindowClose, false)
	a, err := newCumAgg(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	key := string(value.AppendValue(nil, plan.Int(1)))
	for ts := int64(0); ts < 1000; ts++ {
		b := &Batch{}
		b.Append(plan.Row{plan.Time(ts), plan.Int(1), plan.Int(ts % 50)}, RowMeta{Key: key, WM: ts - 1})
		if err := a.Process(b, nopEmitter{}); err != nil {
			t.Fatal(err)
		}
		g := a.keys[key].groups[0]
		// The pane being filled, and at a step's start the one before,
		// until the watermark closes its window.
		if len(a.keys[key].groups) != 1 || len(g.panes) > 2 || a.StateRows() != 1 {
			t.Fatalf("at %d: %d groups for the key, %d panes; want 1 and at most 2", ts, len(a.keys[key].groups), len(g.panes))
		}
	}
}

// fuzzCumSpec is FuzzCumulateState's aggregation: which's bit 0 the emit
// mode, bit 1 an updating input (bags).
func fuzzCumSpec(which uint8) *plan.Aggregate {
	spec := cumSpec(10, 40, 5, plan.EmitMode(which%2), true)
	if which&2 != 0 {
		spec.Retract, spec.RowCount = true, 0
	}
	return spec
}

// FuzzCumulateState restores a CUMULATE aggregation from any block of
// records: real snapshots round-trip (restored, they snapshot to the same
// records), and every input either fails with an error or restores to
// an operator that runs (rows, every window closed) without panicking.
func FuzzCumulateState(f *testing.F) {
	for which := range uint8(4) {
		spec := fuzzCumSpec(which)
		a, err := newCumAgg(spec, &Env{}, &Counters{})
		if err != nil {
			f.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, uint64(which)))
		rows := cumRows(rng, 60, 5, 15)
		if spec.Retract {
			rows = cumRetractRows(rng, 60, 5, 15)
		}
		for i, r := range rows {
			b := &Batch{}
			op := Insert
			if r.del {
				op = Delete
			}
			b.Append(r.row, RowMeta{Key: string(value.AppendValue(nil, r.row[1])), WM: r.wm, Op: op})
			if err := a.Process(b, nopEmitter{}); err != nil {
				f.Fatal(err)
			}
			if i%20 == 19 {
				if err := a.Barrier(Barrier{}, nopEmitter{}); err != nil {
					f.Fatal(err)
				}
				block, _ := snapshotBlock(f, a)
				f.Add(which, block)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, block []byte) {
		t0 := time.Now()
		spec := fuzzCumSpec(which)
		r, err := blockReader(block)
		if err != nil {
			return
		}
		a, err := newCumAgg(spec, &Env{}, &Counters{})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Restore(r); err != nil {
			return
		}
		b1, recs := snapshotBlock(t, a)
		if len(recs) != len(r.keys) {
			t.Fatalf("restored %d records, snapshot %d", len(r.keys), len(recs))
		}
		for _, k := range r.keys {
			if recs[k] != string(r.vals[k]) {
				t.Fatalf("record %x: restored %x, snapshot %x", k, r.vals[k], recs[k])
			}
		}
		r2, err := blockReader(b1)
		if err != nil {
			t.Fatal(err)
		}
		a2, _ := newCumAgg(spec, &Env{}, &Counters{})
		if err := a2.Restore(r2); err != nil {
			t.Fatalf("own snapshot does not restore: %v", err)
		}
		e := &countEmitter{width: len(spec.Out)}
		for key := range a2.keys {
			for _, g := range a2.keys[key].groups {
				b := &Batch{}
				b.Append(plan.Row{plan.Time(g.win.start + 39), plan.Int(1), plan.Int(3)}, RowMeta{Key: key, WM: g.win.start})
				_ = a2.Process(b, e)
			}
		}
		if err := a2.Barrier(Barrier{}, e); err != nil && err != errOverflow {
			t.Fatal(err)
		}
		if _, err := a2.Watermark(math.MaxInt64, e); err != nil && err != errOverflow {
			t.Fatal(err)
		}
		if e.bad != "" {
			t.Fatal(e.bad)
		}
		if d := time.Since(t0); d > 500*time.Millisecond {
			t.Fatalf("SLOW %v", d)
		}
	})
}

// TestCumulateStateBytes: StateBytes (kept by integer adds) is within
// 0.5x to 2x of the heap a CUMULATE state takes (runtime.MemStats, as
// TestStateBytes checks the other operators), for 50,000 groups each with
// run and two panes (COUNT(DISTINCT) sets of a few members), and returns
// to zero once every window closed.
func TestCumulateStateBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a state of tens of MB")
	}
	var before, after goruntime.MemStats
	readHeap(&before)
	a, err := newCumAgg(cumSpec(10, 100, 0, plan.EmitOnWindowClose, false), &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{1, 2, 11, 12, 25, 26, 27} {
		b := &Batch{}
		for i := range 50_000 {
			k := plan.Int(int64(i))
			b.Append(plan.Row{plan.Time(at), k, plan.Int(at * int64(i))}, RowMeta{Key: string(value.AppendValue(nil, k)), WM: 10})
		}
		if err := a.Process(b, nopEmitter{}); err != nil {
			t.Fatal(err)
		}
	}
	readHeap(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	ratio := float64(a.StateBytes()) / float64(grown)
	t.Logf("%d groups: estimate %d bytes, heap grew %d bytes (%.2fx)", a.StateRows(), a.StateBytes(), grown, ratio)
	if ratio < 0.5 || ratio > 2 {
		t.Errorf("StateBytes %d is %.2fx the heap the state took (%d bytes), want 0.5x to 2x", a.StateBytes(), ratio, grown)
	}
	if _, err := a.Watermark(1<<62, nopEmitter{}); err != nil {
		t.Fatal(err)
	}
	if a.StateBytes() != 0 || a.StateRows() != 0 {
		t.Errorf("every window closed: %d groups, StateBytes %d", a.StateRows(), a.StateBytes())
	}
	goruntime.KeepAlive(a)
}

// benchWindows feeds op a stream of rows of 5000 keys, 1000 rows per 100
// ms of event time (a watermark 1 s behind), with a barrier after each
// batch of 1000 rows: ns per row, allocations per row.
func benchWindows(b *testing.B, op Operator) {
	b.ReportAllocs()
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = string(value.AppendValue(nil, plan.Int(int64(i))))
	}
	rows := 0
	bt := &Batch{Rows: make([]plan.Row, 1000), Meta: make([]RowMeta, 1000)}
	for i := 0; b.Loop(); i++ {
		ts := int64(i) * 100
		for j := range bt.Rows {
			k := (i*7919 + j*31) % len(keys)
			bt.Rows[j] = plan.Row{plan.Time(ts + int64(j%100)), plan.Int(int64(k)), plan.Int(int64(j))}
			bt.Meta[j] = RowMeta{Key: keys[k], WM: ts - 1000}
		}
		if err := op.Process(bt, nopEmitter{}); err != nil {
			b.Fatal(err)
		}
		if err := op.Barrier(Barrier{}, nopEmitter{}); err != nil {
			b.Fatal(err)
		}
		rows += len(bt.Rows)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
}

// BenchmarkCumulate is CUMULATE(ts, 2s, 10s) per key with COUNT(*),
// COUNT(DISTINCT), SUM, MIN, MAX in changes mode; BenchmarkCumulateTumble
// the same aggregation over TUMBLE(ts, 10s) (the max windows alone), its
// baseline. go test -run X -bench Cumulate ./runtime/op
func BenchmarkCumulate(b *testing.B) {
	a, err := newCumAgg(cumSpec(2000, 10000, 0, plan.EmitChanges, false), &Env{}, &Counters{})
	if err != nil {
		b.Fatal(err)
	}
	benchWindows(b, a)
}

func BenchmarkCumulateTumble(b *testing.B) {
	spec := cumSpec(2000, 10000, 0, plan.EmitChanges, false)
	spec.Window = plan.WindowSpec{Kind: plan.Tumble, Size: 10000, Slide: 10000}
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		b.Fatal(err)
	}
	benchWindows(b, a)
}
