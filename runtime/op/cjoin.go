package op

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// changelogJoin is the regular join of updating inputs (plan.ChangelogJoin).
// Inputs arrive hash-partitioned on the join key (Meta.Key). A row added
// on one side is joined with the other side's held rows of its key, each
// pair emitted as an Upsert; a row taken back (Delete, Before) takes its
// pairs back, each a Delete carrying the joined row. A LEFT join's left row
// is joined with NULLs while it has no pair: that row is emitted when it
// comes without one, deleted when its first pair comes, and emitted again
// when its last pair goes (matches counts them).
//
// Row identity: a row is its input's RowMeta.ID (an updating input's key:
// aggregations and Normalize set it) or, append-only, its offset. An output
// row's Meta.Key and Meta.ID are the pair's (joinOutput.rowID, the right id
// -1 for a NULL-padded row), so a keyed sink applies each pair on its own
// key.
//
// State: both sides' held rows by join key (joinRow, the interval join's
// records and checkpoint, joinCkpt). An updating side's rows leave when
// taken back; an append-only side's expire when the join's watermark (the
// lower of the sides') is more than TTL past their time. The watermark
// forwarded is the join's: every output is emitted at once.
type changelogJoin struct {
	spec     *plan.ChangelogJoin
	counters *Counters
	joinOutput
	joinCkpt
	side  [2]joinSide
	seq   uint64
	wm    [2]int64
	bytes int64
	ids   []byte
}

var (
	_ TwoInput = (*changelogJoin)(nil)
	_ Stateful = (*changelogJoin)(nil)
)

func newChangelogJoin(spec *plan.ChangelogJoin, env *Env, c *Counters) (*changelogJoin, error) {
	if len(spec.LeftKeys) != len(spec.RightKeys) {
		return nil, fmt.Errorf("changelog join: %d left keys, %d right keys", len(spec.LeftKeys), len(spec.RightKeys))
	}
	out, err := newJoinOutput(spec.Left, spec.Right, spec.Residual, env, "changelog join")
	if err != nil {
		return nil, err
	}
	j := &changelogJoin{spec: spec, counters: c, joinOutput: out, joinCkpt: newJoinCkpt(),
		wm: [2]int64{window.NoWatermark, window.NoWatermark}}
	for s := range j.side {
		j.side[s].keys = map[string][]*joinRow{}
	}
	return j, nil
}

func (j *changelogJoin) Process(*Batch, Emitter) error {
	return fmt.Errorf("changelog join: rows must arrive through ProcessSide")
}

func (j *changelogJoin) ProcessSide(side int, b *Batch, out Emitter) error {
	if side != sideLeft && side != sideRight {
		return fmt.Errorf("changelog join: no side %d", side)
	}
	res := &Batch{}
	// Output rows carry the join's watermark (the lower of the sides'),
	// not their input row's producer's.
	wm := min(j.wm[sideLeft], j.wm[sideRight])
	keys := j.spec.LeftKeys
	if side == sideRight {
		keys = j.spec.RightKeys
	}
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if !joinable(r, keys, -1) {
			// A NULL key joins nothing; a LEFT join's left row stands alone.
			if side == sideLeft && j.spec.Kind == plan.LeftJoin {
				j.padded(r, m, wm, m.Op.Retracts(), res)
			}
			continue
		}
		if m.Op.Retracts() {
			if err := j.take(side, r, m, wm, res); err != nil {
				return err
			}
			continue
		}
		j.add(side, r, m, wm, res)
	}
	return emitIfAny(res, out)
}

// add holds row r of side and emits its pairs.
func (j *changelogJoin) add(side int, r plan.Row, m *RowMeta, wm int64, res *Batch) {
	jr := &joinRow{key: m.Key, row: slices.Clone(r), offset: m.Offset, id: m.ID}
	if t := j.spec.Time[side]; t >= 0 && !r[t].IsNull() {
		jr.time = r[t].I
	}
	n := j.pairs(side, jr, wm, false, res)
	if side == sideLeft && j.spec.Kind == plan.LeftJoin {
		jr.matches = int32(n)
		if n == 0 {
			j.emitPaddedOp(jr, wm, Upsert, res)
		}
	}
	j.store(side, jr)
}

// take takes back row r of side (its held row of the same identity) and
// its pairs.
func (j *changelogJoin) take(side int, r plan.Row, m *RowMeta, wm int64, res *Batch) error {
	rows := j.side[side].keys[m.Key]
	k := slices.IndexFunc(rows, func(jr *joinRow) bool {
		if m.ID != "" {
			return jr.id == m.ID // an updating input's row: its key
		}
		return jr.id == "" && jr.offset == m.Offset
	})
	if k < 0 {
		return fmt.Errorf("changelog join: %w (%s side, id %x)", errUnmatchedRetraction, sideName(side), m.ID)
	}
	jr := rows[k]
	j.pairs(side, jr, wm, true, res)
	if side == sideLeft && j.spec.Kind == plan.LeftJoin && jr.matches == 0 {
		j.emitPaddedOp(jr, wm, Delete, res)
	}
	j.remove(jr, k)
	return nil
}

// pairs emits jr's pairs with the other side's held rows (taken back:
// deletes), keeping the left rows' match counts of a LEFT join, and
// returns how many there were.
func (j *changelogJoin) pairs(side int, jr *joinRow, wm int64, back bool, res *Batch) int {
	n := 0
	op := Upsert
	if back {
		op = Delete
	}
	var alone []*joinRow // LEFT: left rows whose last pair this takes back
	for _, o := range j.side[1-side].keys[jr.key] {
		l, r := jr, o
		if side == sideRight {
			l, r = o, jr
		}
		p := j.next()
		copy(p, l.row)
		copy(p[j.nl:], r.row)
		if j.residual != nil && !j.residual(p).True() {
			continue
		}
		j.slab = j.slab[len(p):]
		n++
		if side == sideRight && j.spec.Kind == plan.LeftJoin {
			// The right row comes or goes: the left row's padded row goes
			// with its first pair and comes back after its last.
			switch {
			case !back && l.matches == 0:
				j.emitPaddedOp(l, wm, Delete, res)
			case back && l.matches == 1:
				alone = append(alone, l)
			}
			if back {
				l.matches-- // derived on restore: not written
			} else {
				l.matches++
			}
		}
		id := j.rowID(l.offset, l.id, r.offset, r.id, false)
		res.Append(p, RowMeta{Offset: l.offset, WM: wm, Key: id, ID: id, Op: op})
	}
	for _, l := range alone {
		j.emitPaddedOp(l, wm, Upsert, res)
	}
	return n
}

// padded emits a LEFT join's left row that cannot join (a NULL key), or
// takes it back.
func (j *changelogJoin) padded(r plan.Row, m *RowMeta, wm int64, back bool, res *Batch) {
	op := Upsert
	if back {
		op = Delete
	}
	j.emitPaddedOp(&joinRow{row: r, offset: m.Offset, id: m.ID}, wm, op, res)
}

// emitPaddedOp appends l ++ NULLs as op.
func (j *changelogJoin) emitPaddedOp(l *joinRow, wm int64, op Op, res *Batch) {
	id := j.rowID(l.offset, l.id, 0, "", true)
	res.Append(j.padRow(l.row), RowMeta{Offset: l.offset, WM: wm, Key: id, ID: id, Op: op})
}

// store holds jr on side; an append-only side's row with its expiry.
func (j *changelogJoin) store(side int, jr *joinRow) {
	j.seq++
	jr.seq, jr.side = j.seq, uint8(side)
	s := &j.side[side]
	j.bytes += s.hold(jr, len(s.keys[jr.key]))
	if !j.spec.Updating[side] {
		s.expires.push(expiryItem{bound: window.SatAdd(jr.time, j.spec.TTL), row: jr})
	}
	j.markDirty(jr)
}

// remove drops held row jr, rows[k] of its key.
func (j *changelogJoin) remove(jr *joinRow, k int) {
	j.bytes -= j.side[jr.side].unhold(jr, k)
	j.dropped(jr)
}

// WatermarkSide moves a side's watermark; the join's, the lower of the
// two, expires the append-only sides' rows it is more than TTL past. The
// pairs they made stay (state_ttl bounds state, not results).
func (j *changelogJoin) WatermarkSide(side int, wm int64, _ Emitter) (int64, error) {
	j.wm[side] = max(j.wm[side], wm)
	jw := min(j.wm[sideLeft], j.wm[sideRight])
	for s := range j.side {
		sd := &j.side[s]
		for len(sd.expires) > 0 {
			top := sd.expires[0]
			if !top.row.dead && !expired(top.bound, jw) {
				break
			}
			sd.expires.pop()
			if top.row.dead {
				continue // taken back before it expired
			}
			k := slices.Index(sd.keys[top.row.key], top.row)
			if k < 0 {
				panic("changelog join: expired row not held")
			}
			j.remove(top.row, k)
		}
	}
	return jw, nil
}

func (j *changelogJoin) Watermark(wm int64, _ Emitter) (int64, error) { return wm, nil }
func (j *changelogJoin) Barrier(Barrier, Emitter) error               { return nil }

// StateRows is the number of held rows.
func (j *changelogJoin) StateRows() int { return j.side[0].n + j.side[1].n }

// StateBytes estimates the heap the held rows take.
func (j *changelogJoin) StateBytes() int64 { return j.bytes }

// Snapshot writes what changed since the last snapshot (joinCkpt).
func (j *changelogJoin) Snapshot(w StateWriter) error {
	j.snapshot(w, j.wm, heldRows(&j.side))
	return nil
}

// Restore loads the rows whose key this task owns, in their order, and
// counts a LEFT join's left rows' pairs again.
func (j *changelogJoin) Restore(r StateReader) error {
	width := [2]int{len(j.spec.Left), len(j.spec.Right)}
	var rows []*joinRow
	wm, ok, err := j.restoreRecords(r, "changelog join", width, [2]bool{}, func(jr *joinRow) { rows = append(rows, jr) })
	if err != nil {
		return err
	}
	slices.SortFunc(rows, func(x, y *joinRow) int { return cmp.Compare(x.seq, y.seq) })
	for _, jr := range rows {
		j.seq = jr.seq - 1 // store numbers it as it was
		j.store(int(jr.side), jr)
		jr.dirty = false
	}
	clear(j.joinCkpt.dirty)
	j.joinCkpt.dirty = j.joinCkpt.dirty[:0]
	if j.spec.Kind == plan.LeftJoin {
		for _, l := range rows {
			if l.side != sideLeft {
				continue
			}
			for _, o := range j.side[sideRight].keys[l.key] {
				p := j.next()
				copy(p, l.row)
				copy(p[j.nl:], o.row)
				if j.residual == nil || j.residual(p).True() {
					l.matches++
				}
			}
		}
	}
	if ok {
		j.wm = wm
	}
	return nil
}
