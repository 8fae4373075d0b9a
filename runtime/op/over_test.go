package op

import (
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// The OVER aggregation against a naive oracle: random inputs (late rows,
// ties, NULLs, updates that move rows between partitions), watermarks,
// barriers, checkpoints and restores (a restore replays the input after
// its checkpoint, as a restarted query's sources do); the oracle computes
// every row's frame from scratch, from what the frame means.

// overIn is the input schema of the tests: partition, BIGINT, DOUBLE,
// time.
var overIn = plan.Schema{
	{Name: "k", Type: plan.TypeBigint}, {Name: "v", Type: plan.TypeBigint},
	{Name: "d", Type: plan.TypeDouble}, {Name: "ts", Type: plan.TypeTimestamp},
}

// overSpec is an Over of every call over frame fr, its output the row
// and the calls' results.
func overSpec(fr plan.OverFrame, updating bool, lateness int64) *plan.Over {
	calls := []plan.OverCall{
		{Fn: plan.OverCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.OverCount, Arg: 1, T: plan.TypeBigint},
		{Fn: plan.OverSum, Arg: 1, T: plan.TypeBigint}, {Fn: plan.OverAvg, Arg: 1, T: plan.TypeDouble},
		{Fn: plan.OverSum, Arg: 2, T: plan.TypeDouble}, {Fn: plan.OverAvg, Arg: 2, T: plan.TypeDouble},
		{Fn: plan.OverMin, Arg: 1, T: plan.TypeBigint}, {Fn: plan.OverMax, Arg: 2, T: plan.TypeDouble},
		{Fn: plan.OverFirstValue, Arg: 1, T: plan.TypeBigint}, {Fn: plan.OverLastValue, Arg: 2, T: plan.TypeDouble},
	}
	spec := &plan.Over{Partition: []int{0}, Order: 3, Frame: fr, Calls: calls, Updating: updating, AllowedLateness: lateness, In: overIn}
	for i := range len(overIn) + len(calls) {
		t := plan.TypeBigint
		if i < len(overIn) {
			t = overIn[i].Type
		} else {
			t = calls[i-len(overIn)].T
		}
		spec.Output = append(spec.Output, &plan.ColRef{Index: i, Name: fmt.Sprint("c", i), T: t})
		spec.Out = append(spec.Out, plan.Column{Name: fmt.Sprint("c", i), Type: t})
	}
	return spec
}

var overFrames = []plan.OverFrame{
	{Unit: plan.FrameRows, N: 0}, {Unit: plan.FrameRows, N: 2}, {Unit: plan.FrameRows, Unbounded: true},
	{Unit: plan.FrameRange, N: 0}, {Unit: plan.FrameRange, N: 2000}, {Unit: plan.FrameRange, Unbounded: true},
}

// naiveFrame is the values of row i's frame among rows (sorted).
func naiveFrame(fr plan.OverFrame, rows []plan.Row, i int) []plan.Row {
	if fr.Unit == plan.FrameRows {
		if fr.Unbounded {
			return rows[:i+1]
		}
		return rows[max(0, i-int(fr.N)) : i+1]
	}
	var out []plan.Row
	t := rows[i][3]
	for _, r := range rows {
		u := r[3]
		in := false
		switch {
		case fr.Unbounded:
			in = value.CompareNullsFirst(u, t) <= 0
		case t.IsNull() || u.IsNull():
			in = t.IsNull() && u.IsNull()
		default:
			in = u.I <= t.I && u.I >= t.I-fr.N
		}
		if in {
			out = append(out, r)
		}
	}
	return out
}

// naiveCalls is overSpec's calls over a frame, computed from scratch.
func naiveCalls(frame []plan.Row) []plan.Value {
	var n, nv, nd, sum int64
	var dsum float64
	lo, hi := plan.Null, plan.Null
	for _, r := range frame {
		n++
		if v := r[1]; !v.IsNull() {
			nv++
			sum += v.I
			if lo.IsNull() || v.I < lo.I {
				lo = v
			}
		}
		if d := r[2]; !d.IsNull() {
			nd++
			dsum += d.F()
			if hi.IsNull() || d.F() > hi.F() {
				hi = d
			}
		}
	}
	out := []plan.Value{plan.Int(n), plan.Int(nv), plan.Null, plan.Null, plan.Null, plan.Null, lo, hi, frame[0][1], frame[len(frame)-1][2]}
	if nv > 0 {
		out[2], out[3] = plan.Int(sum), plan.Float(float64(sum)/float64(nv))
	}
	if nd > 0 {
		out[4], out[5] = plan.Float(dsum), plan.Float(dsum/float64(nd))
	}
	return out
}

func fmtOverRow(r plan.Row) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = v.String()
		if v.K == plan.TypeDouble {
			parts[i] = fmt.Sprintf("%v", v.F()) // every digit
		}
	}
	return strings.Join(parts, "|")
}

// overEvent is one step of a test's input: a batch, a watermark, or a
// barrier (ckpt: a checkpoint).
type overEvent struct {
	batch *Batch
	wm    int64
	isWM  bool
	ckpt  uint64
}

// overHarness runs events through an Over operator, checkpointing and
// restoring it.
type overHarness struct {
	t     *testing.T
	spec  *plan.Over
	op    *overOp
	c     Counters
	out   []string // append-only: every row emitted
	table map[string]string
	// logs: the records written up to each checkpoint.
	logs  []overLog
	based bool
}

type overLog struct {
	id    uint64
	at    int // the events before it
	state map[string][]byte
	out   []string
	table map[string]string
	late  int64
}

func (h *overHarness) build() {
	op, err := newOver(h.spec, &Env{}, &h.c)
	if err != nil {
		h.t.Fatal(err)
	}
	h.op = op
}

func (h *overHarness) Emit(b *Batch) error {
	for i, r := range b.Rows {
		m := b.Meta[i]
		switch m.Op {
		case Insert:
			h.out = append(h.out, fmtOverRow(r))
		case Upsert:
			h.table[m.Key] = fmtOverRow(r)
		case Before, Delete:
			if got, ok := h.table[m.Key]; !ok || got != fmtOverRow(r) {
				return fmt.Errorf("%v of key %x takes back %s; the table has %q", m.Op, m.Key, fmtOverRow(r), got)
			}
			if m.Op == Delete {
				delete(h.table, m.Key)
			}
		}
	}
	return nil
}

func (h *overHarness) run(events []overEvent, rng *rand.Rand) {
	h.build()
	h.table = map[string]string{}
	restores := 0
	for i := 0; i < len(events); i++ {
		e := events[i]
		var err error
		switch {
		case e.batch != nil:
			b := &Batch{Rows: slices.Clone(e.batch.Rows), Meta: slices.Clone(e.batch.Meta)}
			err = h.op.Process(b, h)
		case e.isWM:
			_, err = h.op.Watermark(e.wm, h)
		default:
			err = h.op.Barrier(Barrier{CheckpointID: e.ckpt}, h)
			if err == nil && e.ckpt > 0 {
				h.checkpoint(e.ckpt, i+1)
			}
		}
		if err != nil {
			h.t.Fatalf("event %d: %v", i, err)
		}
		if len(h.logs) > 0 && restores < 3 && rng.IntN(20) == 0 {
			// A crash: back to the last checkpoint, whose input is
			// replayed.
			restores++
			l := h.logs[len(h.logs)-1]
			h.build()
			if err := h.op.Restore(scriptReader{keys: sortedKeys(l.state), kv: l.state}); err != nil {
				h.t.Fatalf("restore at %d: %v", l.id, err)
			}
			h.out = slices.Clone(l.out)
			h.table = cloneMap(l.table)
			h.c.LateRows = l.late
			i = l.at - 1
		}
	}
}

func sortedKeys(m map[string][]byte) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkpoint snapshots the operator (a base at first and now and then,
// else a delta applied to the last state) and keeps what a restore needs.
func (h *overHarness) checkpoint(id uint64, at int) {
	base := !h.based || id%3 == 0
	h.based = true
	w := NewLogWriter(base, nil)
	if err := h.op.Snapshot(&w); err != nil {
		h.t.Fatal(err)
	}
	state := map[string][]byte{}
	if !base {
		state = cloneMap(h.logs[len(h.logs)-1].state)
	}
	for _, blk := range w.Close() {
		err := LogRecords(blk, func(put bool, k, v []byte) error {
			if put {
				state[string(k)] = slices.Clone(v)
			} else {
				delete(state, string(k))
			}
			return nil
		})
		if err != nil {
			h.t.Fatal(err)
		}
	}
	h.logs = append(h.logs, overLog{id: id, at: at, state: state, out: slices.Clone(h.out), table: cloneMap(h.table), late: h.c.LateRows})
}

// TestOverMatchesNaive: over an append-only input, every on-time row is
// emitted once with its frame's results, the late ones are counted, and
// a partition's rows leave in order; restores change nothing.
func TestOverMatchesNaive(t *testing.T) {
	for seed := range uint64(60) {
		fr := overFrames[seed%uint64(len(overFrames))]
		lateness := int64(0)
		if seed%4 == 3 {
			lateness = 1000
		}
		t.Run(fmt.Sprintf("%d/%s/L%d", seed, fr, lateness), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			var events []overEvent
			var srcWM, opWM int64 = window.NoWatermark, window.NoWatermark
			var maxTS int64
			var ontime []plan.Row
			late := int64(0)
			off := int64(0)
			var ckpt uint64
			for range 40 + rng.IntN(60) {
				switch x := rng.IntN(10); {
				case x < 6:
					b := &Batch{}
					for range 1 + rng.IntN(5) {
						ts := maxTS - 3000 + rng.Int64N(5000)
						if rng.IntN(3) == 0 {
							ts = ts / 1000 * 1000 // ties
						}
						maxTS = max(maxTS, ts)
						r := plan.Row{plan.Int(rng.Int64N(3)), plan.Int(rng.Int64N(20) - 5), plan.Float(float64(rng.IntN(100)) / 10), plan.Time(ts)}
						if rng.IntN(6) == 0 {
							r[1] = plan.Null
						}
						if rng.IntN(6) == 0 {
							r[2] = plan.Null
						}
						m := RowMeta{Offset: off, WM: srcWM, Key: string(value.EncodeKey(nil, r, []int{0}))}
						off++
						b.Append(r, m)
						opWM = max(opWM, srcWM)
						if opWM != window.NoWatermark && ts+lateness < opWM {
							late++
						} else {
							ontime = append(ontime, r)
						}
						if rng.IntN(3) == 0 {
							srcWM = max(srcWM, maxTS-1000)
						}
					}
					events = append(events, overEvent{batch: b})
				case x < 8:
					srcWM = max(srcWM, maxTS-rng.Int64N(1500))
					opWM = max(opWM, srcWM)
					events = append(events, overEvent{wm: srcWM, isWM: true})
				default:
					id := uint64(0)
					if rng.IntN(2) == 0 {
						ckpt++
						id = ckpt
					}
					events = append(events, overEvent{ckpt: id})
				}
			}
			events = append(events, overEvent{wm: maxTS + 10000, isWM: true})
			h := &overHarness{t: t, spec: overSpec(fr, false, lateness)}
			h.run(events, rng)

			// The oracle: each partition's on-time rows by (time, offset),
			// each row's frame from scratch.
			byKey := map[int64][]plan.Row{}
			for _, r := range ontime {
				byKey[r[0].I] = append(byKey[r[0].I], r)
			}
			var want []string
			for _, rows := range byKey {
				slices.SortStableFunc(rows, func(a, b plan.Row) int { return value.CompareNullsFirst(a[3], b[3]) })
				for i, r := range rows {
					want = append(want, fmtOverRow(append(slices.Clone(r), naiveCalls(naiveFrame(fr, rows, i))...)))
				}
			}
			got := slices.Clone(h.out)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows, want %d\n%s", len(got), len(want), firstOverDiff(got, want))
			}
			if h.c.LateRows != late {
				t.Errorf("%d late rows, want %d", h.c.LateRows, late)
			}
			n := 0
			for _, p := range h.op.parts {
				n += len(p.f.rows) - p.f.head
			}
			if n+len(h.op.pending) != h.op.StateRows() {
				t.Errorf("StateRows %d, the partitions hold %d", h.op.StateRows(), n+len(h.op.pending))
			}
			if n := h.op.StateRows(); fr.Unbounded && n != 0 {
				t.Errorf("an UNBOUNDED frame holds %d rows once all are out", n)
			}
			if n := h.op.StateRows(); fr.Unit == plan.FrameRows && !fr.Unbounded && n > 3*int(fr.N) {
				t.Errorf("ROWS %d PRECEDING holds %d rows over 3 partitions", fr.N, n)
			}
			if n := h.op.StateRows(); fr.Unit == plan.FrameRange && !fr.Unbounded && n != 0 {
				t.Errorf("a RANGE frame holds %d rows once the watermark is past them all", n)
			}
			// Each partition's rows leave in event-time order.
			last := map[string]string{}
			for _, line := range h.out {
				f := strings.Split(line, "|")
				if prev, ok := last[f[0]]; ok && prev > f[3] && len(prev) == len(f[3]) {
					t.Fatalf("partition %s: %s after %s", f[0], f[3], prev)
				}
				last[f[0]] = f[3]
			}
		})
	}
}

func firstOverDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got  %s\nwant %s", got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return "extra " + got[len(want)]
	}
	if len(want) > len(got) {
		return "missing " + want[len(got)]
	}
	return ""
}

// TestOverChangesMatchNaive: over an updating input, the results table
// (upserts and deletes by the input's key) equals every current row with
// its frame's results from scratch, after each barrier; restores change
// nothing.
func TestOverChangesMatchNaive(t *testing.T) {
	for seed := range uint64(60) {
		fr := overFrames[seed%uint64(len(overFrames))]
		t.Run(fmt.Sprintf("%d/%s", seed, fr), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			cur := map[int64]plan.Row{} // by id: the input's current rows
			idKey := func(id int64) string { return string(value.AppendValue(nil, plan.Int(id))) }
			var events []overEvent
			var ckpt uint64
			newRow := func() plan.Row {
				r := plan.Row{plan.Int(rng.Int64N(3)), plan.Int(rng.Int64N(20) - 5), plan.Float(float64(rng.IntN(100)) / 10), plan.Time(rng.Int64N(8) * 1000)}
				if rng.IntN(8) == 0 {
					r[1] = plan.Null
				}
				if rng.IntN(8) == 0 {
					r[3] = plan.Null
				}
				return r
			}
			for range 30 + rng.IntN(60) {
				if rng.IntN(4) == 0 {
					id := uint64(0)
					if rng.IntN(2) == 0 {
						ckpt++
						id = ckpt
					}
					events = append(events, overEvent{ckpt: id})
					continue
				}
				b := &Batch{}
				for range 1 + rng.IntN(4) {
					id := rng.Int64N(12)
					old, had := cur[id]
					meta := func(r plan.Row, op Op) RowMeta {
						return RowMeta{Key: string(value.EncodeKey(nil, r, []int{0})), ID: idKey(id), Op: op}
					}
					switch {
					case had && rng.IntN(3) == 0:
						b.Append(old, meta(old, Delete))
						delete(cur, id)
					case had:
						r := newRow()
						b.Append(old, meta(old, Before))
						b.Append(r, meta(r, Upsert))
						cur[id] = r
					default:
						r := newRow()
						b.Append(r, meta(r, Upsert))
						cur[id] = r
					}
				}
				events = append(events, overEvent{batch: b})
			}
			events = append(events, overEvent{})
			h := &overHarness{t: t, spec: overSpec(fr, true, 0)}
			h.run(events, rng)

			type held struct {
				id  string
				row plan.Row
			}
			byKey := map[int64][]held{}
			for id, r := range cur {
				byKey[r[0].I] = append(byKey[r[0].I], held{idKey(id), r})
			}
			want := map[string]string{}
			for _, hs := range byKey {
				slices.SortFunc(hs, func(a, b held) int {
					if c := value.CompareNullsFirst(a.row[3], b.row[3]); c != 0 {
						return c
					}
					return strings.Compare(a.id, b.id)
				})
				rows := make([]plan.Row, len(hs))
				for i := range hs {
					rows[i] = hs[i].row
				}
				for i, x := range hs {
					want[x.id] = fmtOverRow(append(slices.Clone(x.row), naiveCalls(naiveFrame(fr, rows, i))...))
				}
			}
			for id, w := range want {
				if g := h.table[id]; g != w {
					t.Fatalf("id %x: %q, want %q", id, g, w)
				}
			}
			for id, g := range h.table {
				if _, ok := want[id]; !ok {
					t.Fatalf("id %x: %q, which the input no longer has", id, g)
				}
			}
			if n := h.op.StateRows(); n != len(cur) || h.op.held != len(cur) {
				t.Errorf("%d rows held (counted %d), the input has %d", n, h.op.held, len(cur))
			}
		})
	}
}

// TestOverRefusals: what fails the query.
func TestOverRefusals(t *testing.T) {
	// A BIGINT SUM out of range fails the query, as SUM does; its AVG
	// does not (128-bit sums).
	spec := overSpec(plan.OverFrame{Unit: plan.FrameRows, N: 1}, false, 0)
	op, err := newOver(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	b := &Batch{}
	for i, v := range []int64{1 << 62, 1 << 62} {
		b.Append(plan.Row{plan.Int(0), plan.Int(v), plan.Null, plan.Time(int64(i))}, RowMeta{Offset: int64(i), Key: "k"})
	}
	if err := op.Process(b, emitFunc(func(*Batch) error { return nil })); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Watermark(10, emitFunc(func(*Batch) error { return nil })); !errors.Is(err, errOverflow) {
		t.Errorf("SUM over 2^63: %v, want %v", err, errOverflow)
	}
	avg := &overAcc{}
	avg.add128(1 << 62)
	avg.add128(1 << 62)
	avg.add128(1 << 62)
	avg.add128Neg(1 << 62)
	if f := avg.float(); f != float64(1<<63) {
		t.Errorf("128-bit sum %v, want 2^63", f)
	}
	// Taking back a row the operator does not hold fails the query.
	up, err := newOver(overSpec(plan.OverFrame{Unit: plan.FrameRows, N: 1}, true, 0), &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	del := &Batch{}
	del.Append(plan.Row{plan.Int(0), plan.Int(1), plan.Null, plan.Time(1)}, RowMeta{Key: "k", ID: "x", Op: Delete})
	if err := up.Process(del, nil); !errors.Is(err, errUnmatchedRetraction) {
		t.Errorf("an unmatched retraction: %v", err)
	}
}

// TestOverStateBytes: the OVER aggregation's StateBytes is within 0.5x to
// 2x of the heap its state takes (pending rows, frames, an updating
// input's rows with their emitted rows), and returns to zero once a RANGE
// frame's rows are all behind the watermark.
func TestOverStateBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds states of tens of MB")
	}
	build := func(t *testing.T, spec *plan.Over, fill func(*overOp)) *overOp {
		var before, after goruntime.MemStats
		readHeap(&before)
		op, err := newOver(spec, &Env{}, &Counters{})
		if err != nil {
			t.Fatal(err)
		}
		fill(op)
		readHeap(&after)
		grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		ratio := float64(op.StateBytes()) / float64(grown)
		t.Logf("%d rows: estimate %d bytes, heap grew %d (%.2fx)", op.StateRows(), op.StateBytes(), grown, ratio)
		if ratio < 0.5 || ratio > 2 {
			t.Errorf("StateBytes %d is %.2fx the heap the state took (%d bytes)", op.StateBytes(), ratio, grown)
		}
		return op
	}
	rows := func(op *overOp, n, parts int, ts func(i int) int64, updating bool) {
		for i := 0; i < n; i += 1000 {
			b := &Batch{}
			for j := i; j < i+1000; j++ {
				r := plan.Row{plan.Int(int64(j % parts)), plan.Int(int64(j)), plan.Float(float64(j)), plan.Time(ts(j))}
				m := RowMeta{Offset: int64(j), Key: string(value.AppendValue(nil, r[0]))}
				if updating {
					m.ID, m.Op = string(value.AppendValue(nil, plan.Int(int64(j)))), Upsert
				}
				b.Append(r, m)
			}
			if err := op.Process(b, nopEmitter{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("pending", func(t *testing.T) {
		build(t, overSpec(plan.OverFrame{Unit: plan.FrameRows, N: 100}, false, 0), func(op *overOp) {
			rows(op, 200_000, 1000, func(i int) int64 { return int64(i) }, false)
		})
	})
	t.Run("range frames", func(t *testing.T) {
		op := build(t, overSpec(plan.OverFrame{Unit: plan.FrameRange, N: 1 << 40}, false, 0), func(op *overOp) {
			rows(op, 200_000, 1000, func(i int) int64 { return int64(i) }, false)
			if _, err := op.Watermark(1<<30, nopEmitter{}); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := op.Watermark(1<<42, nopEmitter{}); err != nil {
			t.Fatal(err)
		}
		if op.StateRows() != 0 || op.StateBytes() != 0 {
			t.Errorf("every row behind the watermark: %d rows, StateBytes %d", op.StateRows(), op.StateBytes())
		}
	})
	t.Run("updating", func(t *testing.T) {
		build(t, overSpec(plan.OverFrame{Unit: plan.FrameRows, N: 3}, true, 0), func(op *overOp) {
			rows(op, 200_000, 1000, func(i int) int64 { return int64(i) }, true)
			if err := op.Barrier(Barrier{}, nopEmitter{}); err != nil {
				t.Fatal(err)
			}
		})
	})
}
