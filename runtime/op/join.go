package op

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"unsafe"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// intervalJoin is the interval join (plan.IntervalJoin): left row l and
// right row r match when their join keys are equal and
//
//	r.time + Lower <= l.time <= r.time + Upper
//
// (both bounds inclusive) and Residual holds on the joined row. Inputs
// arrive hash-partitioned on the join key, encoded in Meta.Key by the
// exchange (equal values encode equally on both sides); a NULL key column
// or a NULL time never matches. Output rows (left columns, then right
// columns; Op Insert) are emitted as soon as the second row of a pair
// arrives, so Barrier has nothing to do. A LEFT join emits a left row that
// never matched once, with NULL right columns: at once when it cannot
// match at all (NULL key or time, or it arrives already expired), else
// when it expires.
//
// Watermarks. A watermark wm of a side promises that its later rows have
// time >= wm (a row with time < wm is late), as window.Late assumes.
//
//   - Expiry. A left row can still be matched by a right row r with
//     r.time >= rightWM only while rightWM <= l.time - Lower: it expires
//     when rightWM > l.time - Lower. A right row expires when
//     leftWM > r.time + Upper. The equal case is kept: a row at exactly
//     the other side's watermark is on time and may still match. Watermark
//     math.MaxInt64 (end of input) expires everything.
//   - Rows that arrive already expired on the other side's watermark (they
//     are late on their own side) are still joined with what the other
//     side holds, then dropped (LEFT: emitted padded if unmatched).
//   - Forwarded watermark. Every row this operator may still emit, for
//     on-time input, has left time >= min(leftWM, rightWM + Lower)
//     (arriving left rows are >= leftWM; a held left row is unexpired, so
//     l.time >= rightWM + Lower: this covers both a later match and a LEFT
//     join's NULL-padded row) and, when matched, right time >=
//     min(rightWM, leftWM - Upper) (symmetrically). The join forwards the
//     minimum of the two, min(leftWM - max(Upper, 0), rightWM + min(Lower,
//     0)) (saturating; math.MaxInt64 and NoWatermark stay themselves), for
//     INNER and LEFT alike, so a downstream window over either side's time
//     never sees a join row as late. min(leftWM, rightWM) would not do even
//     for INNER: with Lower < 0 a held left row older than both watermarks
//     can still match an arriving right row.
//   - Output rows carry Meta.WM = the watermark forwarded before them
//     (rows emitted by a watermark advance are stamped with the previous
//     one, which is <= their times; the new one may not be).
//
// Row ids. Meta.Offset is the left row's offset; Meta.ID is the
// deterministic row id value.AppendValue(left) value.AppendValue(right), where a side
// is its input's ID when set (a join feeding a join), else its offset, and
// the right side of a NULL-padded row is -1. Meta.Key is the join key.
//
// State, per side: rows by join key, each key's rows ordered by (time,
// seq), and a heap of rows by expiry bound, so a watermark advance costs
// O(log n) per expired row. seq numbers rows in arrival order. The
// checkpoint is incremental (see Snapshot).
type intervalJoin struct {
	spec     *plan.IntervalJoin
	counters *Counters
	side     [2]joinSide
	// Side watermarks, and the watermark forwarded (and stamped on output).
	wm    [2]int64
	outWM int64
	seq   uint64
	// bytes estimates the heap the held rows take (StateBytes).
	bytes int64
	joinOutput
	// Checkpoint bookkeeping: rows to write (new, or newly matched),
	// records to delete (persisted rows that expired).
	joinCkpt
}

var _ TwoInput = (*intervalJoin)(nil)

const (
	sideLeft  = 0
	sideRight = 1
	// wmRecord is the first byte of the watermark record's key (row
	// records start with their side, 0 or 1).
	wmRecord = 2
)

// joinRow is one held input row.
type joinRow struct {
	key     string // the encoded join key (Meta.Key)
	time    int64
	seq     uint64
	row     plan.Row
	offset  int64
	id      string // the input's Meta.ID
	matched bool   // LEFT: it has been emitted with a match
	deleted bool   // a table's delete version (temporal join); row is nil
	// Checkpoint bookkeeping: written by some snapshot; queued in dirty;
	// dropped (expired, released or pruned).
	persisted, dirty, dead bool
	side                   uint8 // sideLeft, sideRight (beside the flags: the struct stays 96 bytes)
	// matches: a changelog LEFT join's left row: the right rows it is
	// joined with now (derived on restore).
	matches int32
}

// joinSide holds one input's rows.
type joinSide struct {
	keys    map[string][]*joinRow // each ordered by (time, seq)
	peak    int                   // len(keys) at its largest (shrink)
	expires expiryHeap
	n       int
}

func newIntervalJoin(spec *plan.IntervalJoin, env *Env, c *Counters) (*intervalJoin, error) {
	if len(spec.LeftKeys) != len(spec.RightKeys) {
		return nil, fmt.Errorf("interval join: %d left keys, %d right keys", len(spec.LeftKeys), len(spec.RightKeys))
	}
	out, err := newJoinOutput(spec.Left, spec.Right, spec.Residual, env, "interval join")
	if err != nil {
		return nil, err
	}
	j := &intervalJoin{spec: spec, counters: c, joinOutput: out, joinCkpt: newJoinCkpt(),
		wm:    [2]int64{window.NoWatermark, window.NoWatermark},
		outWM: window.NoWatermark}
	for s := range j.side {
		j.side[s].keys = map[string][]*joinRow{}
	}
	return j, nil
}

// Process is the single-input entry point; a join takes two.
func (j *intervalJoin) Process(*Batch, Emitter) error {
	return fmt.Errorf("interval join: rows must arrive through ProcessSide")
}

func (j *intervalJoin) ProcessSide(side int, b *Batch, out Emitter) error {
	return processSide(side, b, out, j.left, j.right)
}

// processSide feeds a batch of one side's rows to a join's left or right
// handler and emits what they produced.
func processSide(side int, b *Batch, out Emitter, left, right func(plan.Row, *RowMeta, *Batch)) error {
	if side != sideLeft && side != sideRight {
		return fmt.Errorf("join: no side %d", side)
	}
	handle := left
	if side == sideRight {
		handle = right
	}
	res := &Batch{}
	for i, r := range b.Rows {
		handle(r, &b.Meta[i], res)
	}
	return emitIfAny(res, out)
}

// joinable reports whether r can match at all: no NULL key column, no
// NULL time (timeCol < 0: no time column).
func joinable(r plan.Row, keys []int, timeCol int) bool {
	if timeCol >= 0 && r[timeCol].IsNull() {
		return false
	}
	for _, c := range keys {
		if r[c].IsNull() {
			return false
		}
	}
	return true
}

func (j *intervalJoin) left(r plan.Row, m *RowMeta, res *Batch) {
	if !joinable(r, j.spec.LeftKeys, j.spec.LeftTime) {
		if j.spec.Kind == plan.LeftJoin {
			j.emitPadded(r, m.Offset, m.ID, m.Key, j.outWM, res)
		}
		return
	}
	t := r[j.spec.LeftTime].I
	matched := false
	// Right rows with t - Upper <= r.time <= t - Lower; the saturated range
	// is a superset, matches() is exact.
	rows := j.side[sideRight].keys[m.Key]
	lo, hi := window.SatSub(t, j.spec.Upper), window.SatSub(t, j.spec.Lower)
	for k := sort.Search(len(rows), func(i int) bool { return rows[i].time >= lo }); k < len(rows) && rows[k].time <= hi; k++ {
		rr := rows[k]
		if !j.matches(t, rr.time) {
			continue
		}
		if j.emitPair(r, m.Offset, m.ID, rr.row, rr.offset, rr.id, m.Key, j.outWM, res) {
			matched = true
		}
	}
	if expired(window.SatSub(t, j.spec.Lower), j.wm[sideRight]) {
		// Nothing more can match it.
		if !matched && j.spec.Kind == plan.LeftJoin {
			j.emitPadded(r, m.Offset, m.ID, m.Key, j.outWM, res)
		}
		return
	}
	j.store(sideLeft, &joinRow{key: m.Key, time: t, row: slices.Clone(r), offset: m.Offset, id: m.ID, matched: matched})
}

func (j *intervalJoin) right(r plan.Row, m *RowMeta, res *Batch) {
	if !joinable(r, j.spec.RightKeys, j.spec.RightTime) {
		return
	}
	t := r[j.spec.RightTime].I
	// Left rows with t + Lower <= l.time <= t + Upper.
	rows := j.side[sideLeft].keys[m.Key]
	lo, hi := window.SatAdd(t, j.spec.Lower), window.SatAdd(t, j.spec.Upper)
	for k := sort.Search(len(rows), func(i int) bool { return rows[i].time >= lo }); k < len(rows) && rows[k].time <= hi; k++ {
		lr := rows[k]
		if !j.matches(lr.time, t) {
			continue
		}
		if j.emitPair(lr.row, lr.offset, lr.id, r, m.Offset, m.ID, m.Key, j.outWM, res) && !lr.matched && j.spec.Kind == plan.LeftJoin {
			lr.matched = true
			j.markDirty(lr)
		}
	}
	if expired(window.SatAdd(t, j.spec.Upper), j.wm[sideLeft]) {
		return
	}
	j.store(sideRight, &joinRow{key: m.Key, time: t, row: slices.Clone(r), offset: m.Offset, id: m.ID})
}

// matches is the exact interval test r + Lower <= l <= r + Upper, without
// overflow.
func (j *intervalJoin) matches(l, r int64) bool {
	return addLE(r, j.spec.Lower, l) && addGE(r, j.spec.Upper, l)
}

// addLE reports a + b <= c in exact arithmetic.
func addLE(a, b, c int64) bool {
	if b > 0 && a > math.MaxInt64-b {
		return false // a + b > MaxInt64 >= c
	}
	if b < 0 && a < math.MinInt64-b {
		return true // a + b < MinInt64 <= c
	}
	return a+b <= c
}

// addGE reports a + b >= c in exact arithmetic.
func addGE(a, b, c int64) bool {
	if b > 0 && a > math.MaxInt64-b {
		return true
	}
	if b < 0 && a < math.MinInt64-b {
		return false
	}
	return a+b >= c
}

// expired reports whether a row whose bound (left: time - Lower, right:
// time + Upper) is bound can no longer match, given the other side's
// watermark wm: wm > bound, and everything at the end of input.
func expired(bound, wm int64) bool {
	return wm == math.MaxInt64 || wm > bound
}

// shiftWM moves a watermark by d, saturating; the end of input and "no
// watermark yet" stay what they are.
func shiftWM(wm, d int64) int64 {
	if wm == math.MaxInt64 || wm == window.NoWatermark {
		return wm
	}
	return window.SatAdd(wm, d)
}

// forward is the watermark the join may forward (see the type comment).
func (j *intervalJoin) forward() int64 {
	return min(shiftWM(j.wm[sideLeft], -max(j.spec.Upper, 0)), shiftWM(j.wm[sideRight], min(j.spec.Lower, 0)))
}

// joinOutput makes a join's output rows: the left columns, then the right
// ones, Op Insert, Meta.Offset the left row's, Meta.Key the join key,
// Meta.ID the row id (rowID). Shared by the interval and temporal joins.
type joinOutput struct {
	nl, nr   int
	residual Eval // nil: none
	slab     []plan.Value
	keyBuf   []byte
}

func newJoinOutput(left, right plan.Schema, residual plan.Expr, env *Env, what string) (joinOutput, error) {
	o := joinOutput{nl: len(left), nr: len(right)}
	if residual != nil {
		var err error
		if o.residual, err = Compile(residual, env); err != nil {
			return o, fmt.Errorf("%s residual: %w", what, err)
		}
	}
	return o, nil
}

// rowID is the deterministic id of an output row.
func (j *joinOutput) rowID(lOff int64, lID string, rOff int64, rID string, padded bool) string {
	b := j.keyBuf[:0]
	b = appendIdent(b, lOff, lID)
	if padded {
		b = value.AppendValue(b, plan.Int(-1))
	} else {
		b = appendIdent(b, rOff, rID)
	}
	j.keyBuf = b
	return string(b)
}

func appendIdent(b []byte, off int64, id string) []byte {
	if id != "" {
		return value.AppendValue(b, plan.Str(id))
	}
	return value.AppendValue(b, plan.Int(off))
}

// emitPair appends l ++ r, stamped with wm, when the residual holds, and
// reports whether it did.
func (j *joinOutput) emitPair(l plan.Row, lOff int64, lID string, r plan.Row, rOff int64, rID string, key string, wm int64, res *Batch) bool {
	p := j.next()
	copy(p, l)
	copy(p[j.nl:], r)
	if j.residual != nil && !j.residual(p).True() {
		return false // p is not taken: the next pair reuses it
	}
	j.slab = j.slab[len(p):]
	res.Append(p, RowMeta{Offset: lOff, WM: wm, Key: key, Op: Insert, ID: j.rowID(lOff, lID, rOff, rID, false)})
	return true
}

// next is the next output row of the slab (output rows are carved from
// one allocation per few hundred); the caller takes it by advancing slab.
func (j *joinOutput) next() plan.Row {
	w := j.nl + j.nr
	if len(j.slab) < w {
		j.slab = make([]plan.Value, w*256)
	}
	return plan.Row(j.slab[:w:w])
}

// emitPadded appends l ++ NULLs (LEFT join, no match), stamped with wm.
func (j *joinOutput) emitPadded(l plan.Row, lOff int64, lID string, key string, wm int64, res *Batch) {
	res.Append(j.padRow(l), RowMeta{Offset: lOff, WM: wm, Key: key, Op: Insert, ID: j.rowID(lOff, lID, 0, "", true)})
}

// padRow is l ++ NULLs, a row of its own.
func (j *joinOutput) padRow(l plan.Row) plan.Row {
	row := make(plan.Row, j.nl+j.nr)
	copy(row, l)
	return row
}

// store holds a row until it expires.
func (j *intervalJoin) store(side int, jr *joinRow) {
	j.seq++
	jr.seq, jr.side = j.seq, uint8(side)
	s := &j.side[side]
	rows := s.keys[jr.key]
	// After every row of equal or smaller time: (time, seq) order.
	j.bytes += s.hold(jr, sort.Search(len(rows), func(i int) bool { return rows[i].time > jr.time }))
	s.expires.push(expiryItem{bound: j.bound(side, jr.time), row: jr})
	j.markDirty(jr)
}

// hold puts jr among its key's rows at index k and returns the heap bytes
// it adds (StateBytes).
func (s *joinSide) hold(jr *joinRow, k int) int64 {
	rows := s.keys[jr.key]
	grown := heldCost(jr)
	if rows == nil {
		grown += keyRowsCost
	}
	s.keys[jr.key] = slices.Insert(rows, k, jr)
	s.peak = max(s.peak, len(s.keys))
	s.n++
	return grown
}

// unhold takes jr, rows[k] of its key, out of the side and returns the
// heap bytes it frees; a key left without rows goes (the map is rebuilt
// when it has shrunk to a quarter of its peak).
func (s *joinSide) unhold(jr *joinRow, k int) int64 {
	freed := heldCost(jr)
	rows := removeRow(s.keys[jr.key], k)
	if len(rows) == 0 {
		delete(s.keys, jr.key)
		freed += keyRowsCost
		if shrink(len(s.keys), &s.peak) {
			s.keys = rebuilt(s.keys)
		}
	} else {
		s.keys[jr.key] = rows
	}
	s.n--
	return freed
}

// bound is a held row's expiry bound: it expires once the other side's
// watermark is above it.
func (j *intervalJoin) bound(side int, t int64) int64 {
	if side == sideLeft {
		return window.SatSub(t, j.spec.Lower)
	}
	return window.SatAdd(t, j.spec.Upper)
}

// advance moves side's watermark to wm and expires the other side's rows
// it passes (a LEFT join emits the unmatched left ones).
func (j *intervalJoin) advance(side int, wm int64, res *Batch) {
	if wm <= j.wm[side] {
		return
	}
	j.wm[side] = wm
	other := 1 - side
	s := &j.side[other]
	for len(s.expires) > 0 && expired(s.expires[0].bound, wm) {
		jr := s.expires.pop()
		if other == sideLeft && j.spec.Kind == plan.LeftJoin && !jr.matched {
			j.emitPadded(jr.row, jr.offset, jr.id, jr.key, j.outWM, res)
		}
		j.drop(jr)
	}
}

// drop removes an expired row. The heap pops in (bound, key, seq) order,
// which within a key is the rows' (time, seq) order: the row is the first
// of its key.
func (j *intervalJoin) drop(jr *joinRow) {
	s := &j.side[jr.side]
	rows := s.keys[jr.key]
	k := 0
	if len(rows) == 0 || rows[0] != jr {
		k = -1
		for i, r := range rows {
			if r == jr {
				k = i
				break
			}
		}
		if k < 0 {
			panic("interval join: expired row not held")
		}
	}
	j.bytes -= s.unhold(jr, k)
	j.dropped(jr)
}

// removeRow removes rows[k] from a key's held rows, the first in O(1) (rows
// expire in order); a list fallen to a quarter of its array moves to a
// smaller one.
func removeRow(rows []*joinRow, k int) []*joinRow {
	if k == 0 {
		rows[0] = nil
		rows = rows[1:]
	} else {
		copy(rows[k:], rows[k+1:])
		rows[len(rows)-1] = nil
		rows = rows[:len(rows)-1]
	}
	if cap(rows) > 64 && 4*len(rows) < cap(rows) {
		rows = slices.Clone(rows)
	}
	return rows
}

// Heap costs of held rows (StateBytes), in bytes: a joinRow (96) with its
// entries in its key's list and in a heap (8 and 16, with their slack),
// and a key's entry in its side's map. Checked against runtime.MemStats by
// TestStateBytes.
const (
	heldRowCost = 96 + 12 + 24
	keyRowsCost = 48
)

// heldCost is what a held row takes on the heap: the fixed part, its
// values (copied when it is stored, so it pins no batch), their strings,
// its key and id.
func heldCost(jr *joinRow) int64 {
	n := heldRowCost + allocSize(len(jr.row)*int(unsafe.Sizeof(plan.Value{}))) + allocSize(len(jr.key)) + allocSize(len(jr.id))
	for _, v := range jr.row {
		if v.K == plan.TypeVarchar {
			n += allocSize(len(v.S))
		}
	}
	return int64(n)
}

// sided is a join whose sides' watermarks advance separately.
type sided interface {
	advance(side int, wm int64, res *Batch)
	release(res *Batch, out Emitter) (int64, error)
}

// watermarkSides advances the given sides to wm and emits what that
// releases; it returns the watermark to forward.
func watermarkSides(j sided, sides []int, wm int64, out Emitter) (int64, error) {
	res := &Batch{}
	for _, side := range sides {
		if side != sideLeft && side != sideRight {
			fw, _ := j.release(res, out)
			return fw, fmt.Errorf("join: no side %d", side)
		}
		j.advance(side, wm, res)
	}
	return j.release(res, out)
}

func (j *intervalJoin) WatermarkSide(side int, wm int64, out Emitter) (int64, error) {
	return watermarkSides(j, []int{side}, wm, out)
}

// Watermark advances both sides (the end of input: math.MaxInt64).
func (j *intervalJoin) Watermark(wm int64, out Emitter) (int64, error) {
	return watermarkSides(j, []int{sideLeft, sideRight}, wm, out)
}

// release emits what a watermark advance produced (stamped with the
// previous forwarded watermark), then moves the forwarded one.
func (j *intervalJoin) release(res *Batch, out Emitter) (int64, error) {
	if err := emitIfAny(res, out); err != nil {
		return j.outWM, err
	}
	j.outWM = max(j.outWM, j.forward())
	return j.outWM, nil
}

// Barrier: output is immediate, nothing waits for the barrier.
func (j *intervalJoin) Barrier(Barrier, Emitter) error { return nil }

// StateRows is the number of rows held (both sides).
func (j *intervalJoin) StateRows() int { return j.side[sideLeft].n + j.side[sideRight].n }

// StateBytes estimates the heap the held rows take.
func (j *intervalJoin) StateBytes() int64 { return j.bytes }

// A join's checkpointed state (the interval join's and the temporal
// join's): one record per held row, keyed by
//
//	side(1 byte: 0 left, 1 right) uvarint(len(key)) key varint(time) uvarint(seq)
//
// valued
//
//	flags(1: matched, 2: deleted) varint(offset) uvarint(len(id)) id value.AppendRow(row)
//
// written when the row is stored or changes (an interval LEFT join's row
// first matched) and deleted when it is dropped; and the side watermarks,
// in a record keyed by the byte 2 (followed by nothing), valued
// value.AppendValue(leftWM) value.AppendValue(rightWM), written when they moved. Every
// task of the join writes that same record with the same value: at an
// aligned barrier each task has consumed the same broadcast watermark
// messages of every input channel, so the side watermarks agree. Restore
// still takes the minimum over every record under the byte 2, so records
// per task (a suffix after the 2) would work unchanged; a watermark lower
// than the real one is always safe (rows are held longer), a higher one is
// not. Indexes (key lists, heaps) are derived on Restore. Records are keyed
// by the join key, so a task restores the rows of the keys it owns.

// joinCkpt is the incremental checkpoint of a join's held rows: since the
// last snapshot, the rows to write (new or changed) and the record keys to
// delete (persisted rows since dropped); the watermarks as last written.
type joinCkpt struct {
	dirty     []*joinRow
	deadDirty int // rows in dirty that were dropped
	removed   [][]byte
	writtenWM [2]int64
}

func newJoinCkpt() joinCkpt {
	return joinCkpt{writtenWM: [2]int64{window.NoWatermark, window.NoWatermark}}
}

// markDirty queues a held row for the next snapshot.
func (c *joinCkpt) markDirty(jr *joinRow) {
	if !jr.dirty {
		jr.dirty = true
		c.dirty = append(c.dirty, jr)
	}
}

// dropped records that a held row is gone: its record, if written, is
// deleted at the next snapshot.
func (c *joinCkpt) dropped(jr *joinRow) {
	jr.dead = true
	jr.row = nil
	if jr.persisted {
		c.removed = append(c.removed, rowRecordKey(nil, jr))
	}
	if jr.dirty {
		// Without checkpoints nothing drains the dirty list: compact it
		// when it is mostly dropped rows.
		c.deadDirty++
		if c.deadDirty > 1024 && 2*c.deadDirty > len(c.dirty) {
			live := c.dirty[:0]
			for _, d := range c.dirty {
				if d.dead {
					d.dirty = false
				} else {
					live = append(live, d)
				}
			}
			clear(c.dirty[len(live):])
			c.dirty, c.deadDirty = live, 0
		}
	}
}

func sideName(side int) string {
	if side == sideLeft {
		return "left"
	}
	return "right"
}

func rowRecordKey(buf []byte, jr *joinRow) []byte {
	buf = append(buf, byte(jr.side))
	buf = binary.AppendUvarint(buf, uint64(len(jr.key)))
	buf = append(buf, jr.key...)
	buf = binary.AppendVarint(buf, jr.time)
	return binary.AppendUvarint(buf, jr.seq)
}

func encodeJoinRow(jr *joinRow) []byte {
	flags := byte(0)
	if jr.matched {
		flags |= 1
	}
	if jr.deleted {
		flags |= 2
	}
	buf := []byte{flags}
	buf = binary.AppendVarint(buf, jr.offset)
	buf = binary.AppendUvarint(buf, uint64(len(jr.id)))
	buf = append(buf, jr.id...)
	return value.AppendRow(buf, jr.row)
}

func decodeRowRecord(k, v []byte) (int, *joinRow, error) {
	if len(k) < 1 || k[0] > sideRight {
		return 0, nil, fmt.Errorf("bad side")
	}
	side := int(k[0])
	k = k[1:]
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) < n {
		return 0, nil, fmt.Errorf("bad key length")
	}
	jr := &joinRow{side: uint8(side), key: string(k[w : w+int(n)]), persisted: true}
	k = k[w+int(n):]
	if jr.time, w = binary.Varint(k); w <= 0 {
		return 0, nil, fmt.Errorf("bad time")
	}
	k = k[w:]
	if jr.seq, w = binary.Uvarint(k); w <= 0 || w != len(k) {
		return 0, nil, fmt.Errorf("bad sequence number")
	}
	if len(v) < 1 {
		return 0, nil, fmt.Errorf("empty value")
	}
	jr.matched = v[0]&1 != 0
	jr.deleted = v[0]&2 != 0
	v = v[1:]
	if jr.offset, w = binary.Varint(v); w <= 0 {
		return 0, nil, fmt.Errorf("bad offset")
	}
	v = v[w:]
	n, w = binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return 0, nil, fmt.Errorf("bad id length")
	}
	jr.id = string(v[w : w+int(n)])
	var err error
	if jr.row, err = value.DecodeRow(v[w+int(n):]); err != nil {
		return 0, nil, err
	}
	if jr.deleted {
		jr.row = nil
	}
	return side, jr, nil
}

// snapshot deletes the records of the rows dropped and writes the rows
// stored or changed since the last snapshot, and the side watermarks wm
// when they moved.
//
// A full snapshot writes every held row instead (all calls fn for each).
func (c *joinCkpt) snapshot(w StateWriter, wm [2]int64, all func(fn func(*joinRow))) {
	full := w.Full()
	if !full {
		for _, k := range c.removed {
			w.Delete(k)
		}
	}
	c.removed = c.removed[:0]
	for _, jr := range c.dirty {
		jr.dirty = false
		if jr.dead || full {
			continue
		}
		w.Put(rowRecordKey(nil, jr), encodeJoinRow(jr))
		jr.persisted = true
	}
	clear(c.dirty)
	c.dirty, c.deadDirty = c.dirty[:0], 0
	if full {
		all(func(jr *joinRow) {
			if !jr.dead {
				w.Put(rowRecordKey(nil, jr), encodeJoinRow(jr))
				jr.persisted = true
			}
		})
	}
	if wm != c.writtenWM || full {
		v := value.AppendValue(nil, plan.Int(wm[sideLeft]))
		v = value.AppendValue(v, plan.Int(wm[sideRight]))
		w.Put([]byte{wmRecord}, v)
		c.writtenWM = wm
	}
}

// restoreRecords reads a join's records: it calls row for each row whose
// key this task owns, and returns the side watermarks (the minimum over
// the watermark records; ok false when there is none). A held row must
// have its side's width (the join concatenates rows by position); only
// the sides marked in deletes hold delete versions (no row).
func (c *joinCkpt) restoreRecords(r StateReader, what string, width [2]int, deletes [2]bool, row func(jr *joinRow)) (wm [2]int64, ok bool, err error) {
	wm = [2]int64{math.MaxInt64, math.MaxInt64}
	err = r.Scan(func(k, v []byte) error {
		if len(k) > 0 && k[0] == wmRecord {
			l, rest, err := value.DecodeValue(v)
			if err != nil {
				return fmt.Errorf("%s watermark record: %w", what, err)
			}
			rr, _, err := value.DecodeValue(rest)
			if err != nil {
				return fmt.Errorf("%s watermark record: %w", what, err)
			}
			wm[sideLeft], wm[sideRight] = min(wm[sideLeft], l.I), min(wm[sideRight], rr.I)
			ok = true
			return nil
		}
		side, jr, err := decodeRowRecord(k, v)
		if err != nil {
			return fmt.Errorf("%s state record %x: %w", what, k, err)
		}
		switch {
		case jr.deleted && !deletes[side]:
			return fmt.Errorf("%s state record %x: a delete version on the %s side", what, k, sideName(side))
		case !jr.deleted && len(jr.row) != width[side]:
			return fmt.Errorf("%s state record %x: a row of %d columns on the %s side, which has %d", what, k, len(jr.row), sideName(side), width[side])
		}
		if r.Owns(jr.key) {
			row(jr)
		}
		return nil
	})
	if err != nil || !ok {
		return [2]int64{window.NoWatermark, window.NoWatermark}, false, err
	}
	c.writtenWM = wm
	return wm, true, nil
}

// Snapshot writes what changed since the last snapshot (see joinCkpt).
func (j *intervalJoin) Snapshot(w StateWriter) error {
	j.snapshot(w, j.wm, heldRows(&j.side))
	return nil
}

// heldRows calls fn for every row both sides hold (a full snapshot).
func heldRows(sides *[2]joinSide) func(fn func(*joinRow)) {
	return func(fn func(*joinRow)) {
		for s := range sides {
			for _, rows := range sides[s].keys {
				for _, jr := range rows {
					fn(jr)
				}
			}
		}
	}
}

// Restore loads the rows whose key this task owns and the side watermarks
// (the minimum over the watermark records), and rebuilds the key lists
// and expiry heaps.
func (j *intervalJoin) Restore(r StateReader) error {
	width := [2]int{len(j.spec.Left), len(j.spec.Right)}
	wm, ok, err := j.restoreRecords(r, "interval join", width, [2]bool{}, func(jr *joinRow) {
		s := &j.side[jr.side]
		j.bytes += s.hold(jr, len(s.keys[jr.key])) // sorted below
		s.expires = append(s.expires, expiryItem{bound: j.bound(int(jr.side), jr.time), row: jr})
		j.seq = max(j.seq, jr.seq)
	})
	if err != nil {
		return err
	}
	for s := range j.side {
		for _, rows := range j.side[s].keys {
			sortRows(rows)
		}
		j.side[s].expires.init()
	}
	if ok {
		j.wm = wm
	}
	j.outWM = j.forward()
	return nil
}

// sortRows orders a key's rows by (time, seq).
func sortRows(rows []*joinRow) {
	sort.Slice(rows, func(a, b int) bool {
		if rows[a].time != rows[b].time {
			return rows[a].time < rows[b].time
		}
		return rows[a].seq < rows[b].seq
	})
}

type expiryItem struct {
	bound int64
	row   *joinRow
}

// expiryHeap orders held rows by expiry bound, then key, then seq: a
// deterministic order, and within a key the rows' list order.
type expiryHeap []expiryItem

func expiresBefore(x, y expiryItem) bool {
	if x.bound != y.bound {
		return x.bound < y.bound
	}
	if x.row.key != y.row.key {
		return x.row.key < y.row.key
	}
	return x.row.seq < y.row.seq
}

func (h *expiryHeap) push(it expiryItem) { *h = heapPush(*h, it, expiresBefore) }

// pop removes the first item and returns its row.
func (h *expiryHeap) pop() *joinRow {
	it, rest := heapPop(*h, expiresBefore)
	*h = rest
	return it.row
}

func (h expiryHeap) init() { heapInit(h, expiresBefore) }
