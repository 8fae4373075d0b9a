package op

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// overOp computes OVER aggregations (plan.Over): every call over the same
// frame of each partition's rows in order of the ORDER BY column, ties
// broken by row identity (RowMeta.ID, then the source offset), so replays
// and any parallelism order the same rows alike. Input rows arrive hashed
// on the PARTITION BY values (Meta.Key).
//
// Over an append-only input a row waits (pending, in one heap by order)
// until the watermark passes its time plus the allowed lateness; then it
// joins its partition's frame and leaves with the calls' results over it,
// in (time, id) order, stamped with the watermark before that advance (it
// is on time downstream). A row whose time is behind the watermark (the
// larger of its own and the operator's) is late: dropped and counted. The
// operator forwards wm - allowed_lateness. State is bounded by the frame:
// ROWS N keeps the last N rows of each partition; RANGE N the rows within
// N ms of the watermark (a queue in emission order drops them as the
// watermark passes, and a partition left with no rows is dropped);
// UNBOUNDED PRECEDING only the running accumulators.
//
// Over an updating input each partition holds its current rows, sorted;
// a change (an added row, or one taken back: Delete, Before) marks the
// range of rows whose frames it changes, and at the barrier those rows'
// results are recomputed and the changed ones emitted: an Upsert (after
// the Before of the old one), and a Delete of the last row emitted for a
// row taken back. The output is keyed on the input row's identity
// (RowMeta.ID: the upstream aggregation's key).
//
// Exact arithmetic: BIGINT sums (SUM, AVG) are kept in 128 bits, so
// sliding them never overflows on the way and AVG is exact until the
// division; SUM fails the query when the frame's sum leaves BIGINT, as
// SUM does. DOUBLE sums and MIN/MAX are recomputed from the frame's rows,
// left to right, when a row left the frame since (a sum maintained by
// subtraction drifts).
//
// Checkpoints (overstate.go) write a record per held row when it comes
// and delete it when it goes, and per append-only partition a small record
// (the last row emitted, UNBOUNDED accumulators); StateBytes and StateRows
// are kept by adds where rows come and go.
type overOp struct {
	spec     *plan.Over
	output   []Eval
	counters *Counters
	parts    map[string]*overPart
	peak     int
	// argInt: per call, its argument is BIGINT (exact 128-bit sums).
	argInt []bool
	// Append-only: rows waiting for the watermark, and (RANGE frames)
	// the rows of every frame in emission order, dropped as the watermark
	// passes them.
	pending []*overRow
	queue   []*overRow
	qhead   int
	ready   []*overRow // scratch: the rows an advance releases
	probe   overRow    // scratch: a change's sort key
	wm      int64
	gen     uint64 // RANGE: the peer group being computed
	// Updating: the partitions changed since the last barrier.
	dirty []*overPart
	// Since the last snapshot: partitions changed, and the keys of the
	// partitions dropped whose records a snapshot wrote.
	changed []*overPart
	removed []string
	// The rows changed since the last snapshot (added; updating: a new
	// row emitted for them), and the records of rows let go.
	changedRows []*overRow
	removedRows []string
	held        int // the rows held: pending and in frames, or the partitions' (updating)
	post        plan.Row
	res         []plan.Value
	slab        []plan.Value
	buf         []byte
	scratch     []byte
	bytes       int64
}

var (
	_ Operator = (*overOp)(nil)
	_ Stateful = (*overOp)(nil)
)

// overRow is one input row an OVER aggregation holds.
type overRow struct {
	ord  plan.Value // the ORDER BY value
	id   string     // RowMeta.ID
	off  int64      // RowMeta.Offset
	row  plan.Row
	part *overPart
	out  plan.Row // updating: the row last emitted for it, or nil
	gone bool     // let go: it left its frame, or was taken back
	// in changedRows; a snapshot wrote its record.
	isChanged, persisted bool
}

// overPart is one partition's state.
type overPart struct {
	key string
	f   overFrame
	// append-only: how many of its rows are pending, and the sort key of
	// the last row emitted (rows up to it are in the frame, the others
	// pending: what a checkpoint records of it besides its rows).
	npending int
	mark     overRow
	hasMark  bool
	// updating: its rows, sorted; the changes since the last barrier span
	// the sort keys lo..hi; gone holds the rows last emitted for the ids
	// taken back meanwhile (a Delete each, unless added back).
	rows    []*overRow
	lo, hi  overRow
	changes bool
	gone    map[string]plan.Row
	// flags: in dirty, in changed, a snapshot wrote its record; gen: the
	// RANGE peer group its results (cur) are of.
	isDirty, isChanged, persisted bool
	gen                           uint64
	cur                           []plan.Value
}

// overFrame is the rows of a frame and the calls' accumulators over
// them (an UNBOUNDED frame keeps no rows: only its accumulators).
type overFrame struct {
	rows []*overRow
	head int
	accs []overAcc
	last *overRow
}

// overAcc is one call's accumulator over a frame.
type overAcc struct {
	n     int64
	lo    uint64 // a BIGINT sum in 128 bits: hi:lo, two's complement
	hi    int64
	f     float64
	v     plan.Value // MIN/MAX; an UNBOUNDED frame's FIRST_VALUE
	has   bool       // FIRST_VALUE captured
	stale bool       // f or v must be recomputed from the frame's rows
}

// overRowCost is a held row's fixed heap cost: its overRow and the
// pointers to it (frame or partition list, heap or queue).
var overRowCost = allocSize(int(unsafe.Sizeof(overRow{}))) + 16

const overPartCost = 160

func newOver(spec *plan.Over, env *Env, c *Counters) (*overOp, error) {
	for _, p := range spec.Partition {
		if p < 0 || p >= len(spec.In) {
			return nil, fmt.Errorf("over: partition column %d of %d", p, len(spec.In))
		}
	}
	if spec.Order < 0 || spec.Order >= len(spec.In) {
		return nil, fmt.Errorf("over: order column %d of %d", spec.Order, len(spec.In))
	}
	o := &overOp{spec: spec, counters: c, parts: map[string]*overPart{}, wm: window.NoWatermark,
		post: make(plan.Row, len(spec.In)+len(spec.Calls)), res: make([]plan.Value, len(spec.Calls)), argInt: make([]bool, len(spec.Calls))}
	for i, call := range spec.Calls {
		if call.Fn != plan.OverCountStar && (call.Arg < 0 || call.Arg >= len(spec.In)) {
			return nil, fmt.Errorf("over: call %s: argument column %d of %d", call, call.Arg, len(spec.In))
		}
		o.argInt[i] = call.Arg >= 0 && spec.In[call.Arg].Type == plan.TypeBigint
	}
	var err error
	if o.output, err = CompileAll(spec.Output, env); err != nil {
		return nil, err
	}
	return o, nil
}

// compareRows is the order of a partition's rows: ORDER BY value, then
// identity.
func compareRows(a, b *overRow) int {
	if c := value.CompareNullsFirst(a.ord, b.ord); c != 0 {
		return c
	}
	if c := cmp.Compare(a.id, b.id); c != 0 {
		return c
	}
	return cmp.Compare(a.off, b.off)
}

func rowsBefore(a, b *overRow) bool { return compareRows(a, b) < 0 }

func (o *overOp) part(key string) *overPart {
	p := o.parts[key]
	if p == nil {
		p = &overPart{key: key, f: overFrame{accs: make([]overAcc, len(o.spec.Calls))}}
		o.parts[key] = p
		o.peak = max(o.peak, len(o.parts))
		o.bytes += int64(overPartCost + allocSize(len(key)))
	}
	return p
}

func (o *overOp) rowCost(r *overRow) int64 {
	n := overRowCost + allocSize(len(r.row)*int(unsafe.Sizeof(plan.Value{}))) + allocSize(len(r.id))
	for _, v := range r.row {
		n += len(v.S)
	}
	return int64(n) // r.out is counted where it is set and dropped
}

// outCost is what a kept emitted row takes.
func outCost(r plan.Row) int64 {
	return int64(allocSize(len(r) * int(unsafe.Sizeof(plan.Value{}))))
}

func (o *overOp) markChanged(p *overPart) {
	if p.isChanged {
		return
	}
	p.isChanged = true
	if len(o.changed) > 2*len(o.parts)+1024 {
		// Without snapshots (checkpoints off) nothing drains the list:
		// dropping the partitions gone keeps it within the live ones.
		o.changed = slices.DeleteFunc(o.changed, func(q *overPart) bool { return o.parts[q.key] != q })
	}
	o.changed = append(o.changed, p)
}

// dropPart removes an empty partition.
func (o *overOp) dropPart(p *overPart) {
	if o.parts[p.key] != p {
		return
	}
	delete(o.parts, p.key)
	o.bytes -= int64(overPartCost + allocSize(len(p.key)))
	if p.persisted {
		o.removed = append(o.removed, p.key)
		p.persisted = false
	}
	if shrink(len(o.parts), &o.peak) {
		o.parts = rebuilt(o.parts)
	}
}

func (o *overOp) Process(b *Batch, out Emitter) error {
	if o.spec.Updating {
		return o.processChanges(b)
	}
	res := &Batch{}
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if m.WM > o.wm {
			if err := o.advance(m.WM, res); err != nil {
				return err
			}
		}
		t := r[o.spec.Order]
		if t.IsNull() {
			continue // no time: in no frame
		}
		if o.final(t.I, o.wm) {
			o.counters.late(m, t.I)
			continue
		}
		p := o.part(m.Key)
		hr := &overRow{ord: t, id: m.ID, off: m.Offset, row: slices.Clone(r), part: p}
		p.npending++
		o.pending = heapPush(o.pending, hr, rowsBefore)
		o.held++
		o.bytes += o.rowCost(hr)
		o.markChanged(p)
		o.markRow(hr)
	}
	return emitIfAny(res, out)
}

// final reports whether no row of time t may come any more at watermark
// wm: t plus the allowed lateness is behind it.
func (o *overOp) final(t, wm int64) bool {
	return window.Late(window.Window{Start: t, End: t + 1}, o.spec.AllowedLateness, wm)
}

// forward is the watermark forwarded for input watermark wm.
func (o *overOp) forward(wm int64) int64 {
	return window.HoldBack(wm, o.spec.AllowedLateness)
}

// advance moves the watermark to wm: the pending rows it makes final
// leave, in order, with their results; RANGE frames drop the rows no
// later row's frame holds.
func (o *overOp) advance(wm int64, res *Batch) error {
	stamp := o.forward(o.wm)
	o.wm = wm
	ready := o.ready[:0]
	for len(o.pending) > 0 && o.final(o.pending[0].ord.I, wm) {
		var r *overRow
		r, o.pending = heapPop(o.pending, rowsBefore)
		ready = append(ready, r)
	}
	defer func() {
		clear(ready) // drop the pointers: emitted rows can be collected
		o.ready = ready[:0]
	}()
	fr := o.spec.Frame
	for i := 0; i < len(ready); {
		j := i + 1
		if fr.Unit == plan.FrameRange {
			// A peer group: the rows of one time, whose frames hold each
			// other.
			for j < len(ready) && ready[j].ord.I == ready[i].ord.I {
				j++
			}
		}
		o.gen++
		for _, r := range ready[i:j] {
			p := r.part
			p.npending--
			o.push(&p.f, r)
			if fr.Unit == plan.FrameRange && !fr.Unbounded {
				o.queue = append(o.queue, r)
			}
		}
		for _, r := range ready[i:j] {
			p := r.part
			if p.gen != o.gen {
				p.gen = o.gen
				o.evict(&p.f, r)
				if p.cur == nil {
					p.cur = make([]plan.Value, len(o.spec.Calls))
				}
				if err := o.results(&p.f, p.cur); err != nil {
					return err
				}
			}
			res.Append(o.emitRow(r, p.cur), RowMeta{Offset: r.off, ID: r.id, Key: p.key, Op: Insert, WM: stamp})
			p.mark, p.hasMark = overRow{ord: r.ord, id: r.id, off: r.off}, true
			if fr.Unit == plan.FrameRows && !fr.Unbounded && int64(len(p.f.rows)-p.f.head) > fr.N {
				o.popFront(&p.f) // the next row's frame holds the N before it
			}
			if fr.Unbounded { // in no frame: the accumulators have it
				o.bytes -= o.rowCost(r)
				o.held--
				o.dropRow(r)
			}
		}
		i = j
	}
	if fr.Unit == plan.FrameRange && !fr.Unbounded {
		o.expire(wm)
	}
	for _, r := range ready {
		if p := r.part; p.npending == 0 && len(p.f.rows) == p.f.head && fr.Unit == plan.FrameRange && !fr.Unbounded {
			o.dropPart(p)
		} else {
			o.markChanged(p)
		}
	}
	return nil
}

// expire drops from RANGE frames the rows older than any later row's
// frame: later rows are at least wm - allowed_lateness.
func (o *overOp) expire(wm int64) {
	limit := window.SatAdd(o.forward(wm), -o.spec.Frame.N)
	for o.qhead < len(o.queue) && o.queue[o.qhead].ord.I < limit {
		r := o.queue[o.qhead]
		o.queue[o.qhead] = nil
		o.qhead++
		if r.gone {
			continue
		}
		p := r.part
		o.popFront(&p.f)
		o.markChanged(p)
		if p.npending == 0 && len(p.f.rows) == p.f.head {
			o.dropPart(p)
		}
	}
	if o.qhead > 1024 && 2*o.qhead > len(o.queue) {
		o.queue = slices.Clip(o.queue[:copy(o.queue, o.queue[o.qhead:])])
		o.qhead = 0
	}
}

// emitRow computes the output row of r with results vals.
func (o *overOp) emitRow(r *overRow, vals []plan.Value) plan.Row {
	copy(o.post, r.row)
	copy(o.post[len(o.spec.In):], vals)
	if len(o.slab) < len(o.output) {
		o.slab = make([]plan.Value, len(o.output)*64)
	}
	row := plan.Row(o.slab[:len(o.output):len(o.output)])
	o.slab = o.slab[len(o.output):]
	for i, e := range o.output {
		row[i] = e(o.post)
	}
	return row
}

// push adds r to frame f (the current row, or a peer of it).
func (o *overOp) push(f *overFrame, r *overRow) {
	if !o.spec.Frame.Unbounded {
		f.rows = append(f.rows, r)
	}
	f.last = r
	for i, c := range o.spec.Calls {
		a := &f.accs[i]
		if c.Fn == plan.OverCountStar {
			a.n++
			continue
		}
		v := r.row[c.Arg]
		switch c.Fn {
		case plan.OverFirstValue:
			if !a.has {
				a.v, a.has = v, true
			}
			continue
		case plan.OverLastValue:
			continue
		}
		if v.IsNull() {
			continue
		}
		a.n++
		switch c.Fn {
		case plan.OverSum, plan.OverAvg:
			if o.argInt[i] {
				a.add128(v.I)
			} else if !a.stale {
				a.f += funcs.ToFloat(v)
			}
		case plan.OverMin, plan.OverMax:
			if !a.stale && better(c.Fn, v, a.v) {
				a.v = v
			}
		}
	}
}

// popFront takes the frame's first row out.
func (o *overOp) popFront(f *overFrame) {
	r := f.rows[f.head]
	f.rows[f.head] = nil
	f.head++
	if !o.spec.Updating { // (an updating input's frames are built at the barrier, of the partition's rows)
		o.held--
		o.bytes -= o.rowCost(r)
		o.dropRow(r)
	}
	if f.head > 32 && 2*f.head > len(f.rows) {
		n := copy(f.rows, f.rows[f.head:])
		clear(f.rows[n:])
		f.rows, f.head = f.rows[:n], 0
	}
	for i, c := range o.spec.Calls {
		a := &f.accs[i]
		if c.Fn == plan.OverCountStar {
			a.n--
			continue
		}
		if c.Fn == plan.OverFirstValue || c.Fn == plan.OverLastValue {
			continue
		}
		v := r.row[c.Arg]
		if v.IsNull() {
			continue
		}
		a.n--
		switch c.Fn {
		case plan.OverSum, plan.OverAvg:
			if o.argInt[i] {
				a.add128Neg(v.I)
			} else if a.n == 0 {
				a.f, a.stale = 0, false
			} else {
				a.stale = true
			}
		case plan.OverMin, plan.OverMax:
			if a.n == 0 {
				a.v, a.stale = plan.Null, false
			} else if !a.stale && value.Compare(v, a.v) == 0 {
				a.stale = true
			}
		}
	}
}

// evict takes out of f the rows before cur's frame.
func (o *overOp) evict(f *overFrame, cur *overRow) {
	fr := o.spec.Frame
	if fr.Unbounded {
		return
	}
	if fr.Unit == plan.FrameRows {
		for int64(len(f.rows)-f.head) > fr.N+1 {
			o.popFront(f)
		}
		return
	}
	for f.head < len(f.rows) {
		first := f.rows[f.head].ord
		switch {
		case cur.ord.IsNull():
			return // a NULL row's frame is its NULL peers, which come first
		case first.IsNull():
		case first.I >= window.SatAdd(cur.ord.I, -fr.N):
			return
		}
		o.popFront(f)
	}
}

// results computes every call over frame f into dst.
func (o *overOp) results(f *overFrame, dst []plan.Value) error {
	for i, c := range o.spec.Calls {
		a := &f.accs[i]
		switch c.Fn {
		case plan.OverCountStar, plan.OverCount:
			dst[i] = plan.Int(a.n)
			continue
		case plan.OverFirstValue:
			if o.spec.Frame.Unbounded {
				dst[i] = a.v
			} else {
				dst[i] = f.rows[f.head].row[c.Arg]
			}
			continue
		case plan.OverLastValue:
			dst[i] = f.last.row[c.Arg]
			continue
		}
		if a.n == 0 {
			dst[i] = plan.Null
			continue
		}
		if a.stale {
			o.recompute(f, i, c)
		}
		switch c.Fn {
		case plan.OverSum:
			if o.argInt[i] {
				s, ok := a.int64()
				if !ok {
					return errOverflow
				}
				dst[i] = plan.Int(s)
			} else {
				dst[i] = plan.Float(a.f)
			}
		case plan.OverAvg:
			if o.argInt[i] {
				dst[i] = plan.Float(a.float() / float64(a.n))
			} else {
				dst[i] = plan.Float(a.f / float64(a.n))
			}
		default:
			dst[i] = funcs.Cast(a.v, c.T)
		}
	}
	return nil
}

// recompute sets call i's DOUBLE sum or MIN/MAX from the frame's rows,
// left to right.
func (o *overOp) recompute(f *overFrame, i int, c plan.OverCall) {
	a := &f.accs[i]
	a.f, a.v, a.stale = 0, plan.Null, false
	for _, r := range f.rows[f.head:] {
		v := r.row[c.Arg]
		if v.IsNull() {
			continue
		}
		switch c.Fn {
		case plan.OverSum, plan.OverAvg:
			a.f += funcs.ToFloat(v)
		default:
			if better(c.Fn, v, a.v) {
				a.v = v
			}
		}
	}
}

// better reports whether v replaces cur as the MIN (MAX) so far.
func better(fn plan.OverFn, v, cur plan.Value) bool {
	if cur.IsNull() {
		return true
	}
	c := value.Compare(v, cur)
	return c != 0 && (c < 0) == (fn == plan.OverMin)
}

func (a *overAcc) add128(v int64) {
	var carry uint64
	a.lo, carry = bits.Add64(a.lo, uint64(v), 0)
	a.hi += v>>63 + int64(carry)
}

func (a *overAcc) add128Neg(v int64) {
	var borrow uint64
	a.lo, borrow = bits.Sub64(a.lo, uint64(v), 0)
	a.hi -= v>>63 + int64(borrow)
}

// int64 is the 128-bit sum, if it fits BIGINT.
func (a *overAcc) int64() (int64, bool) {
	s := int64(a.lo)
	return s, a.hi == s>>63
}

// float is the 128-bit sum as a DOUBLE.
func (a *overAcc) float() float64 {
	if s, ok := a.int64(); ok {
		return float64(s)
	}
	return float64(a.hi)*math.Exp2(64) + float64(a.lo)
}

func (o *overOp) Watermark(wm int64, out Emitter) (int64, error) {
	if o.spec.Updating {
		o.wm = max(o.wm, wm)
		return wm, nil
	}
	if wm > o.wm {
		res := &Batch{}
		if err := o.advance(wm, res); err != nil {
			return wm, err
		}
		if err := emitIfAny(res, out); err != nil {
			return wm, err
		}
	}
	return o.forward(o.wm), nil
}

// processChanges applies an updating input's changes to the partitions'
// rows; the barrier emits what they change.
func (o *overOp) processChanges(b *Batch) error {
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if m.ID == "" {
			return fmt.Errorf("over: a change without its row's identity (RowMeta.ID)")
		}
		o.wm = max(o.wm, m.WM)
		p := o.part(m.Key)
		key := &o.probe // the row's sort key (a field: nothing allocated per row)
		*key = overRow{ord: r[o.spec.Order], id: m.ID}
		k, found := slices.BinarySearchFunc(p.rows, key, compareRows)
		if m.Op.Retracts() {
			if !found {
				if len(p.rows) == 0 {
					o.dropPart(p)
				}
				return fmt.Errorf("over: %w (id %x)", errUnmatchedRetraction, m.ID)
			}
			hr := p.rows[k]
			o.held--
			p.rows = slices.Delete(p.rows, k, k+1)
			o.bytes -= o.rowCost(hr)
			o.dropRow(hr)
			if hr.out != nil {
				if p.gone == nil {
					p.gone = map[string]plan.Row{}
				}
				p.gone[hr.id] = hr.out
			}
		} else {
			if found {
				return fmt.Errorf("over: an updating input added row %x twice", m.ID)
			}
			hr := &overRow{ord: key.ord, id: m.ID, row: slices.Clone(r), part: p}
			if old, ok := p.gone[m.ID]; ok {
				hr.out = old
				delete(p.gone, m.ID)
			}
			p.rows = slices.Insert(p.rows, k, hr)
			o.held++
			o.bytes += o.rowCost(hr)
			o.markRow(hr)
		}
		if !p.changes || compareRows(key, &p.lo) < 0 {
			p.lo = *key
		}
		if !p.changes || compareRows(key, &p.hi) > 0 {
			p.hi = *key
		}
		p.changes = true
		if !p.isDirty {
			p.isDirty = true
			o.dirty = append(o.dirty, p)
		}
	}
	return nil
}

// dropRow marks a row the operator lets go (it left its frame, or was
// taken back) and queues the delete of its record.
func (o *overOp) dropRow(r *overRow) {
	r.gone = true
	if r.persisted {
		o.removedRows = append(o.removedRows, string(o.rowKey(r.part.key, r)))
		r.persisted = false
	}
}

// markRow queues a row for the next snapshot (a new row, or an updating
// input's row emitted anew).
func (o *overOp) markRow(r *overRow) {
	if r.isChanged {
		return
	}
	r.isChanged = true
	if len(o.changedRows) > 2*o.held+1024 {
		o.changedRows = slices.DeleteFunc(o.changedRows, func(r *overRow) bool { return r.gone }) // as markChanged
	}
	o.changedRows = append(o.changedRows, r)
}

func (o *overOp) Barrier(_ Barrier, out Emitter) error {
	if len(o.dirty) == 0 {
		return nil
	}
	res := &Batch{}
	// The deletes first: a row that moved to another partition of this
	// task is deleted before it is added there.
	for _, p := range o.dirty {
		ids := make([]string, 0, len(p.gone))
		for id := range p.gone {
			ids = append(ids, id)
		}
		slices.Sort(ids) // a deterministic order
		for _, id := range ids {
			old := p.gone[id]
			res.Append(old, RowMeta{Key: id, ID: id, Op: Delete, WM: o.wm})
			o.bytes -= outCost(old)
		}
		p.gone = nil
	}
	for _, p := range o.dirty {
		if err := o.refresh(p, res); err != nil {
			return err
		}
	}
	clear(o.dirty)
	o.dirty = o.dirty[:0]
	return emitIfAny(res, out)
}

// refresh emits what a partition's changes since the last barrier change
// of its rows' results: the rows from the first changed one to the last
// whose frame may hold a change.
func (o *overOp) refresh(p *overPart, res *Batch) error {
	p.isDirty = false
	if !p.changes {
		return nil
	}
	p.changes = false
	fr := o.spec.Frame
	rows := p.rows
	byOrd := func(v plan.Value) int { // the first row ordered at or after v
		i, _ := slices.BinarySearchFunc(rows, v, func(r *overRow, v plan.Value) int { return value.CompareNullsFirst(r.ord, v) })
		return i
	}
	afterOrd := func(v plan.Value) int { // the first row ordered after v
		return firstAfter(rows, func(r *overRow) bool { return value.CompareNullsFirst(r.ord, v) > 0 })
	}
	var from, end, start int // rows[from:end] are recomputed, fed from rows[start]
	switch {
	case fr.Unit == plan.FrameRows:
		from, _ = slices.BinarySearchFunc(rows, &p.lo, compareRows)
		end = len(rows)
		if !fr.Unbounded {
			after := firstAfter(rows, func(r *overRow) bool { return compareRows(r, &p.hi) > 0 })
			end = min(len(rows), after+int(fr.N))
			start = max(0, from-int(fr.N))
		}
	default:
		from, end = byOrd(p.lo.ord), len(rows)
		if !fr.Unbounded {
			if !p.hi.ord.IsNull() {
				end = afterOrd(plan.Time(window.SatAdd(p.hi.ord.I, fr.N)))
			} else {
				end = afterOrd(plan.Null)
			}
			if from < len(rows) && !rows[from].ord.IsNull() {
				start = byOrd(plan.Time(window.SatAdd(rows[from].ord.I, -fr.N)))
			} else {
				start = byOrd(plan.Null)
			}
			start = min(start, from)
		}
	}
	f := overFrame{accs: make([]overAcc, len(o.spec.Calls))}
	for i := start; i < end; {
		j := i + 1
		if fr.Unit == plan.FrameRange {
			for j < end && value.CompareNullsFirst(rows[j].ord, rows[i].ord) == 0 {
				j++
			}
		}
		for _, r := range rows[i:j] {
			o.push(&f, r)
		}
		if j <= from {
			if fr.Unit == plan.FrameRows {
				o.evict(&f, rows[i])
			}
			i = j
			continue
		}
		o.evict(&f, rows[i])
		if err := o.results(&f, o.res); err != nil {
			return err
		}
		for _, r := range rows[i:j] {
			row := o.emitRow(r, o.res)
			if r.out != nil && slices.EqualFunc(r.out, row, func(x, y plan.Value) bool { return x == y }) {
				continue
			}
			if r.out != nil {
				res.Append(r.out, RowMeta{Key: r.id, ID: r.id, Op: Before, WM: o.wm})
			} else {
				o.bytes += outCost(row)
			}
			res.Append(row, RowMeta{Key: r.id, ID: r.id, Op: Upsert, WM: o.wm})
			r.out = row
			o.markRow(r)
		}
		i = j
	}
	if len(p.rows) == 0 {
		o.dropPart(p)
	}
	return nil
}

// firstAfter is the first index of rows for which after holds (after is
// false then true along rows).
func firstAfter(rows []*overRow, after func(*overRow) bool) int {
	lo, hi := 0, len(rows)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if after(rows[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// StateRows is the rows held: pending and in frames, or (updating) the
// partitions' rows.
func (o *overOp) StateRows() int { return o.held }

// StateBytes estimates the heap the held rows and partitions take.
func (o *overOp) StateBytes() int64 { return o.bytes }
