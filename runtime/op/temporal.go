package op

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// temporalJoin is the stream-to-table join (plan.TemporalJoin): a stream
// row (left, side 0) joins the version of its key in a PRIMARY KEY table
// (right, side 1: rows with Meta.Op Upsert or Delete; Insert counts as an
// upsert). Inputs arrive hash-partitioned on the join key, encoded in
// Meta.Key by the exchange (equal values encode equally on both sides). A
// NULL key column never matches; a left row that cannot match (NULL key,
// or NULL time for AS OF) is dropped by INNER and emitted at once with
// NULL right columns by LEFT. Output rows are the left columns, then the
// right ones (Op Insert); Meta.Offset is the left row's offset, Meta.Key
// the join key, Meta.ID the row id (left id or offset, version id or
// offset or -1 when padded) as for the interval join. A LEFT join pads a
// left row with no version, a delete version, or a version failing the
// residual.
//
// Latest (no AS OF): the table state is the latest row per key in arrival
// order (a delete removes it) and a left row joins it at once; there is no
// left state. The forwarded watermark is the left one: the table side
// delays nothing.
//
// AS OF. Versions of a key are ordered by (time, seq), time the row's
// RightTime (a row with a NULL time is dropped) and seq the arrival order,
// so of two versions with equal times the later-arriving one wins. A left
// row l joins the newest version with time <= l.time, none when that is a
// delete.
//
//   - Waiting. Watermarks follow window.Late: a row at exactly the
//     watermark is on time. A version at l.time may arrive while the right
//     watermark is <= l.time, so l waits until the right watermark passes
//     l.time (rightWM > l.time, or the end of input) and then joins; a
//     left row that arrives with rightWM > l.time joins at once. Waiting
//     rows are released in (time, key, seq) order.
//   - Pruning. Every lookup still to come is at a time >= bound =
//     min(leftWM, rightWM) (on-time left rows are >= leftWM; waiting ones
//     are >= rightWM), so a key keeps only its newest version at or before
//     the bound (the base) and the versions after it. A delete base is
//     dropped too: a lookup finding nothing older means none just as well,
//     and an on-time version arriving later has time >= rightWM >= the
//     base's time (equal: it arrived later, so it wins either way). A late
//     version (time < rightWM) is applied to what is held: it becomes the
//     base only if nothing newer at or before the bound is held. Once the
//     left input has ended and nothing waits, every version is dropped.
//   - Forwarded watermark: min(leftWM, rightWM). Every row emitted later
//     has left time >= it (an arriving row >= leftWM, a waiting one >=
//     rightWM), so a downstream window over the stream's time never sees a
//     join row as late. A version's time is older than its left row's and
//     is not covered. Output rows carry Meta.WM = the watermark forwarded
//     before them.
//
// Late left rows (time < leftWM) are joined, at once or after waiting,
// with what the table state holds: the version they need may have been
// pruned.
//
// State: waiting left rows in a heap by (time, key, seq); versions per key
// in (time, seq) order, with a heap of prune triggers (see queuePrune).
// The checkpoint is the interval join's (joinCkpt): a record per waiting
// row (side 0) and per version (side 1, a delete version flagged, without
// its row; in latest mode with time 0), and the side watermarks.
type temporalJoin struct {
	spec *plan.TemporalJoin
	// Side watermarks, and the watermark forwarded (and stamped on output).
	wm    [2]int64
	outWM int64
	seq   uint64
	// rightIdle: the table side's source is idle; rows do not wait for it.
	rightIdle bool
	// AS OF: left rows waiting for the right watermark to pass their time.
	waiting expiryHeap
	// Versions by key, in (time, seq) order; latest mode: one per key.
	versions  map[string][]*joinRow
	nversions int
	peak      int // len(versions) at its largest (shrink)
	// bytes estimates the heap the waiting rows and versions take
	// (StateBytes).
	bytes int64
	// AS OF: prune triggers, by (time, key, seq) (see queuePrune).
	prunes expiryHeap
	joinOutput
	joinCkpt
}

var _ TwoInput = (*temporalJoin)(nil)

func newTemporalJoin(spec *plan.TemporalJoin, env *Env, _ *Counters) (*temporalJoin, error) {
	if len(spec.LeftKeys) != len(spec.RightKeys) || len(spec.LeftKeys) == 0 {
		return nil, fmt.Errorf("temporal join: %d left keys, %d right keys", len(spec.LeftKeys), len(spec.RightKeys))
	}
	if spec.AsOf && (spec.LeftTime < 0 || spec.RightTime < 0) {
		return nil, fmt.Errorf("temporal join AS OF: left time column %d, right time column %d", spec.LeftTime, spec.RightTime)
	}
	out, err := newJoinOutput(spec.Left, spec.Right, spec.Residual, env, "temporal join")
	if err != nil {
		return nil, err
	}
	return &temporalJoin{spec: spec, joinOutput: out, joinCkpt: newJoinCkpt(),
		wm:       [2]int64{window.NoWatermark, window.NoWatermark},
		outWM:    window.NoWatermark,
		versions: map[string][]*joinRow{}}, nil
}

// Process is the single-input entry point; a join takes two.
func (j *temporalJoin) Process(*Batch, Emitter) error {
	return fmt.Errorf("temporal join: rows must arrive through ProcessSide")
}

func (j *temporalJoin) ProcessSide(side int, b *Batch, out Emitter) error {
	return processSide(side, b, out, j.left, func(r plan.Row, m *RowMeta, _ *Batch) { j.right(r, m) })
}

// timeCol is side's time column, -1 in latest mode.
func (j *temporalJoin) timeCol(side int) int {
	switch {
	case !j.spec.AsOf:
		return -1
	case side == sideLeft:
		return j.spec.LeftTime
	default:
		return j.spec.RightTime
	}
}

func (j *temporalJoin) left(r plan.Row, m *RowMeta, res *Batch) {
	if !joinable(r, j.spec.LeftKeys, j.timeCol(sideLeft)) {
		if j.spec.Kind == plan.LeftJoin {
			j.emitPadded(r, m.Offset, m.ID, m.Key, j.outWM, res)
		}
		return
	}
	if !j.spec.AsOf {
		var v *joinRow
		if vs := j.versions[m.Key]; len(vs) > 0 {
			v = vs[0]
		}
		j.join(r, m.Offset, m.ID, m.Key, v, res)
		return
	}
	t := r[j.spec.LeftTime].I
	if j.rightIdle || expired(t, j.wm[sideRight]) {
		j.join(r, m.Offset, m.ID, m.Key, j.versionAt(m.Key, t), res)
		return
	}
	j.seq++
	lr := &joinRow{side: sideLeft, key: m.Key, time: t, seq: j.seq, row: slices.Clone(r), offset: m.Offset, id: m.ID}
	j.waiting.push(expiryItem{bound: t, row: lr})
	j.bytes += heldCost(lr)
	j.markDirty(lr)
}

// join emits left row l with version v (nil: none), or padded (LEFT) when
// there is none, it is a delete, or the residual fails.
func (j *temporalJoin) join(l plan.Row, lOff int64, lID, key string, v *joinRow, res *Batch) {
	if v != nil && !v.deleted && j.emitPair(l, lOff, lID, v.row, v.offset, v.id, key, j.outWM, res) {
		return
	}
	if j.spec.Kind == plan.LeftJoin {
		j.emitPadded(l, lOff, lID, key, j.outWM, res)
	}
}

// versionAt is the newest version of key with time <= t (nil: none held).
func (j *temporalJoin) versionAt(key string, t int64) *joinRow {
	vs := j.versions[key]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].time > t }) - 1
	if i < 0 {
		return nil
	}
	return vs[i]
}

func (j *temporalJoin) right(r plan.Row, m *RowMeta) {
	if !joinable(r, j.spec.RightKeys, j.timeCol(sideRight)) {
		return
	}
	v := &joinRow{side: sideRight, key: m.Key, offset: m.Offset, id: m.ID, deleted: m.Op == Delete}
	if !v.deleted {
		v.row = slices.Clone(r)
	}
	if !j.spec.AsOf {
		if vs := j.versions[m.Key]; len(vs) > 0 {
			j.dropVersion(vs[0])
			j.dropKey(m.Key)
		}
		if !v.deleted {
			j.storeVersion(v, nil, 0)
		}
		j.prune()
		return
	}
	v.time = r[j.spec.RightTime].I
	vs := j.versions[m.Key]
	// After every version of equal or smaller time: (time, seq) order.
	k := sort.Search(len(vs), func(i int) bool { return vs[i].time > v.time })
	vs = j.storeVersion(v, vs, k)
	if k <= 1 {
		j.queuePrune(vs)
	}
	j.prune()
}

// storeVersion inserts v at index k of its key's versions vs and returns
// the new list.
func (j *temporalJoin) storeVersion(v *joinRow, vs []*joinRow, k int) []*joinRow {
	j.seq++
	v.seq = j.seq
	if len(vs) == 0 {
		j.bytes += keyRowsCost
	}
	vs = append(vs, nil)
	copy(vs[k+1:], vs[k:])
	vs[k] = v
	j.versions[v.key] = vs
	j.peak = max(j.peak, len(j.versions))
	j.nversions++
	j.bytes += heldCost(v)
	j.markDirty(v)
	return vs
}

func (j *temporalJoin) dropVersion(v *joinRow) {
	j.nversions--
	j.bytes -= heldCost(v)
	j.dropped(v)
}

// dropKey removes a key whose versions were all dropped.
func (j *temporalJoin) dropKey(key string) {
	delete(j.versions, key)
	j.bytes -= keyRowsCost
	if shrink(len(j.versions), &j.peak) {
		j.versions = rebuilt(j.versions)
	}
}

// joinWaiting joins a waiting row that the table side's watermark passed (or
// that an idle table side no longer holds back) and drops it.
func (j *temporalJoin) joinWaiting(lr *joinRow, res *Batch) {
	j.join(lr.row, lr.offset, lr.id, lr.key, j.versionAt(lr.key, lr.time), res)
	j.bytes -= heldCost(lr)
	j.dropped(lr)
}

// queuePrune pushes the prune trigger of a key's versions vs: the version
// whose time is the smallest bound at which pruning the key removes
// something (its first version if that is a delete, else its second).
//
// The invariant: a key with a trigger has a live heap entry at or below
// the trigger's time. A trigger changes only when a version is inserted at
// index 0 or 1, or when pruning removes versions, and both push the new
// one. Entries of dropped versions are skipped; an entry whose pruning
// removes nothing (its version moved up by an insert, and the key's
// current trigger has its own entry) pushes nothing, so duplicates do not
// multiply.
func (j *temporalJoin) queuePrune(vs []*joinRow) {
	switch {
	case len(vs) == 0:
	case vs[0].deleted:
		j.prunes.push(expiryItem{bound: vs[0].time, row: vs[0]})
	case len(vs) > 1:
		j.prunes.push(expiryItem{bound: vs[1].time, row: vs[1]})
	}
}

// bound is the time every lookup still to come is at or after (see the
// type comment).
func (j *temporalJoin) bound() int64 { return min(j.wm[sideLeft], j.wm[sideRight]) }

// prune drops the versions no lookup can need any more.
func (j *temporalJoin) prune() {
	if j.wm[sideLeft] == math.MaxInt64 && len(j.waiting) == 0 {
		// The left input has ended and nothing waits: no lookup is to come.
		for key, vs := range j.versions {
			for _, v := range vs {
				j.dropVersion(v)
			}
			delete(j.versions, key)
			j.bytes -= keyRowsCost
		}
		j.versions, j.peak = map[string][]*joinRow{}, 0
		clear(j.prunes)
		j.prunes = j.prunes[:0]
		return
	}
	bound := j.bound()
	for len(j.prunes) > 0 && j.prunes[0].bound <= bound {
		v := j.prunes.pop()
		if !v.dead {
			j.pruneKey(v.key, bound)
		}
	}
}

// pruneKey drops the versions of key before its newest one at or before
// bound (the base), and the base when it is a delete.
func (j *temporalJoin) pruneKey(key string, bound int64) {
	vs := j.versions[key]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].time > bound }) - 1
	if i < 0 {
		return
	}
	n := i
	if vs[i].deleted {
		n = i + 1
	}
	if n == 0 {
		return
	}
	for _, v := range vs[:n] {
		j.dropVersion(v)
	}
	rest := copy(vs, vs[n:])
	clear(vs[rest:])
	vs = vs[:rest]
	if len(vs) == 0 {
		j.dropKey(key)
		return
	}
	j.versions[key] = vs
	j.queuePrune(vs)
}

// advance moves side's watermark to wm: the right one releases the
// waiting left rows it passes; then versions are pruned.
func (j *temporalJoin) advance(side int, wm int64, res *Batch) {
	if wm <= j.wm[side] {
		return
	}
	j.wm[side] = wm
	if side == sideRight {
		for len(j.waiting) > 0 && expired(j.waiting[0].bound, wm) {
			j.joinWaiting(j.waiting.pop(), res)
		}
	}
	j.prune()
}

func (j *temporalJoin) WatermarkSide(side int, wm int64, out Emitter) (int64, error) {
	return watermarkSides(j, []int{side}, wm, out)
}

// Watermark advances both sides (the end of input: math.MaxInt64).
func (j *temporalJoin) Watermark(wm int64, out Emitter) (int64, error) {
	return watermarkSides(j, []int{sideLeft, sideRight}, wm, out)
}

// forward is the watermark the join may forward (see the type comment).
// While the table side is idle nothing waits for it.
func (j *temporalJoin) forward() int64 {
	if !j.spec.AsOf || j.rightIdle {
		return j.wm[sideLeft]
	}
	return j.bound()
}

// SideIdle: when the table side goes idle, the stream rows waiting for it
// are joined at once with the versions held (docs/sql.md: an idle table side does
// not hold them back), and new ones too until it is active again.
func (j *temporalJoin) SideIdle(side int, idle bool, out Emitter) (int64, error) {
	if side != sideRight || !j.spec.AsOf {
		return j.outWM, nil
	}
	j.rightIdle = idle
	res := &Batch{}
	if idle {
		for len(j.waiting) > 0 {
			j.joinWaiting(j.waiting.pop(), res)
		}
	}
	return j.release(res, out)
}

// release emits what a watermark advance produced (stamped with the
// previous forwarded watermark), then moves the forwarded one.
func (j *temporalJoin) release(res *Batch, out Emitter) (int64, error) {
	if err := emitIfAny(res, out); err != nil {
		return j.outWM, err
	}
	j.outWM = max(j.outWM, j.forward())
	return j.outWM, nil
}

// Barrier: output is immediate or released by watermarks.
func (j *temporalJoin) Barrier(Barrier, Emitter) error { return nil }

// StateRows is the number of waiting left rows and versions held.
func (j *temporalJoin) StateRows() int { return len(j.waiting) + j.nversions }

// StateBytes estimates the heap the waiting rows and versions take.
func (j *temporalJoin) StateBytes() int64 { return j.bytes }

// Snapshot writes what changed since the last snapshot (see joinCkpt).
func (j *temporalJoin) Snapshot(w StateWriter) error {
	j.snapshot(w, j.wm, func(fn func(*joinRow)) {
		for _, it := range j.waiting {
			fn(it.row)
		}
		for _, vs := range j.versions {
			for _, jr := range vs {
				fn(jr)
			}
		}
	})
	return nil
}

// Restore loads the waiting rows and versions whose key this task owns and
// the side watermarks, and rebuilds the version lists and heaps.
func (j *temporalJoin) Restore(r StateReader) error {
	width := [2]int{len(j.spec.Left), len(j.spec.Right)}
	wm, ok, err := j.restoreRecords(r, "temporal join", width, [2]bool{sideRight: true}, func(jr *joinRow) {
		j.bytes += heldCost(jr)
		if jr.side == sideLeft {
			j.waiting = append(j.waiting, expiryItem{bound: jr.time, row: jr})
		} else {
			if j.versions[jr.key] == nil {
				j.bytes += keyRowsCost
			}
			j.versions[jr.key] = append(j.versions[jr.key], jr)
			j.peak = max(j.peak, len(j.versions))
			j.nversions++
		}
		j.seq = max(j.seq, jr.seq)
	})
	if err != nil {
		return err
	}
	if ok {
		j.wm = wm
	}
	j.waiting.init()
	for _, vs := range j.versions {
		sortRows(vs)
		if j.spec.AsOf {
			j.queuePrune(vs)
		}
	}
	j.prune()
	j.outWM = j.forward()
	return nil
}
