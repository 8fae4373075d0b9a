package op

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// topN is ROW_NUMBER, RANK or DENSE_RANK over partitions, filtered to the
// ranks up to a limit (plan.TopN). Meta.Key is the encoded partition (set
// by the hash exchange on the partition columns).
//
// A partition's rows are kept in order: the ORDER BY columns, then the
// row's id (Meta.ID, else its offset), so that replays and every
// parallelism rank tied rows alike. An append-only input keeps only the
// rows within the limit (a row beyond it can never come back); an
// updating one keeps every row (taking back a top row brings the next one
// up) and takes a row back by its values and id.
//
// Modes (plan.TopNMode):
//   - updating: the partitions changed in an epoch are compared at the
//     barrier with what was last emitted for them, and the difference is
//     emitted: ROW_NUMBER by position (a rank whose row changed is the old
//     row (Before) and the new one (Upsert) on key (partition, rank), or on
//     the partition for N = 1), RANK and DENSE_RANK by row (a row leaving
//     is a Delete, a row entering an Upsert, a row whose rank moved both,
//     on key (partition, row id)). Each key changes once per epoch.
//   - dedup: a partition's first row by event time is held until the
//     watermark (less the allowed lateness) passes it, emitted as an
//     insert, and the watermark forwarded after it; the partition then
//     drops every row until its key expires (TTL past the row's time).
//   - window: a partition (one window's) is emitted whole, as inserts, when
//     the watermark reaches its window_end.
//
// State: one record per partition, keyed by its encoded key: its rows
// (and dedup's done flag and time). Snapshots are taken after the
// barrier's emission, so what was emitted is what the rows rank as:
// restoring recomputes it.
type topN struct {
	spec     *plan.TopN
	counters *Counters
	parts    map[string]*tnPart
	peak     int
	dirty    []*tnPart // updating: changed since the last barrier
	changed  []*tnPart // since the last snapshot, in the order they first changed
	due      []*tnPart // dedup: candidates by time; window: partitions by end
	expiry   []*tnPart // dedup with a TTL: done keys by time
	free     []*tnRow  // released rows nothing refers to, for reuse
	gone     []string  // updating: records of written rows released since the last snapshot
	held     int       // rows and done keys held
	bytes    int64
	wm       int64
	outWM    int64
	keyBuf   []byte
	buf      []byte
	probeOrd []plan.Value
	slab     []plan.Value
}

var (
	_ Operator = (*topN)(nil)
	_ Stateful = (*topN)(nil)
)

// tnRow is a kept row and its identity. The row is kept encoded: its
// output columns (spec.Keep) then its ORDER BY values, one string
// (value.AppendValue's encodings after a count), which the collector
// does not trace; ord are the ORDER BY values, decoded in place (their
// strings are substrings of enc), and so are the output rows emitted.
type tnRow struct {
	enc    string
	ord    []plan.Value
	ordBuf [2]plan.Value // ord's room for one or two ORDER BY columns
	id     string
	off    int64
	// rank: the rank it was last emitted with (0: not emitted); now: its
	// rank at this barrier (0: not among the top).
	rank, now int64
	kept      bool // among its partition's rows
	// written: its record (updating mode: one per row) is in the state.
	written bool
}

type tnPart struct {
	key     string
	rows    []*tnRow // in order
	emitted []*tnRow // updating: what was last emitted, in rank order
	// rankKeys: the output keys of ranks 1, 2, ... (ROW_NUMBER, N > 1).
	rankKeys []string
	dirty    bool
	// dedup: done, the first row was emitted; time is its (or the
	// candidate's) event time. window: time is window_end.
	done bool
	time int64
	gone bool // dropped: heap entries for it are stale
	// changed: in topN.changed (written, or deleted when gone, at the next
	// snapshot).
	changed bool
	// row1, emit1: the room of rows and emitted for a partition of one row.
	row1, emit1 [1]*tnRow
}

// markChanged lists p for the next snapshot.
func (t *topN) markChanged(p *tnPart) {
	if !p.changed {
		p.changed = true
		t.changed = append(t.changed, p)
	}
}

// tnProbe is an incoming row as a search target: its ORDER BY values
// and identity.
type tnProbe struct {
	ord []plan.Value
	id  string
	off int64
}

const (
	tnPartCost = 160 // a partition: its struct, map entry and slices' headers
	tnRowCost  = 96  // a kept row: its struct and pointer
)

func newTopN(spec *plan.TopN, c *Counters) (*topN, error) {
	if spec.Limit < 1 {
		return nil, fmt.Errorf("topn: limit %d", spec.Limit)
	}
	if len(spec.Keep) != len(spec.Out) || spec.RankAt < 0 || spec.RankAt >= len(spec.Out) {
		return nil, fmt.Errorf("topn: %d kept columns, %d output columns, rank at %d", len(spec.Keep), len(spec.Out), spec.RankAt)
	}
	return &topN{spec: spec, counters: c, parts: map[string]*tnPart{},
		wm: window.NoWatermark, outWM: window.NoWatermark}, nil
}

// cmpOrder orders two rows by their ORDER BY values: NULL first
// ascending, last descending.
func (t *topN) cmpOrder(a, b []plan.Value) int {
	for i, k := range t.spec.Order {
		x, y := a[i], b[i]
		var c int
		switch {
		case x.IsNull() && y.IsNull():
		case x.IsNull():
			c = -1
		case y.IsNull():
			c = 1
		default:
			c = value.Compare(x, y)
		}
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func (t *topN) cmpProbe(r *tnRow, p tnProbe) int {
	if c := t.cmpOrder(r.ord, p.ord); c != 0 {
		return c
	}
	// A row's identity: its id (an updating input's key, a join's pair:
	// encoded values, compared as values, so a join's pairs rank by their
	// sides' ids), else its offset.
	if r.id != "" || p.id != "" {
		return value.CompareKeys(KeyBytes(r.id), KeyBytes(p.id), true)
	}
	return cmp.Compare(r.off, p.off)
}

func (t *topN) part(key string) *tnPart {
	p := t.parts[key]
	if p == nil {
		p = &tnPart{key: key}
		p.rows, p.emitted = p.row1[:0:1], p.emit1[:0:1]
		t.parts[key] = p
		t.peak = max(t.peak, len(t.parts))
		t.bytes += int64(tnPartCost + allocSize(len(key)))
	}
	return p
}

// drop forgets partition p.
func (t *topN) drop(p *tnPart) {
	if p.gone {
		return
	}
	p.gone = true
	delete(t.parts, p.key)
	t.markChanged(p)
	t.bytes -= int64(tnPartCost + allocSize(len(p.key)))
	if shrink(len(t.parts), &t.peak) {
		t.parts = rebuilt(t.parts)
	}
}

// rowBytes is what kept row x takes: its struct, its encoding and its
// ORDER BY values beyond the two it has room for.
func rowBytes(x *tnRow) int64 {
	n := int64(tnRowCost + allocSize(len(x.enc)) + len(x.id))
	if cap(x.ord) > len(x.ordBuf) {
		n += int64(allocSize(cap(x.ord) * int(unsafe.Sizeof(plan.Value{}))))
	}
	return n
}

// probe is row r as a search target (its ORDER BY values in a scratch
// slice, valid until the next probe).
func (t *topN) probe(r plan.Row, m *RowMeta) tnProbe {
	t.probeOrd = t.probeOrd[:0]
	for _, k := range t.spec.Order {
		t.probeOrd = append(t.probeOrd, r[k.Col])
	}
	return tnProbe{ord: t.probeOrd, id: m.ID, off: m.Offset}
}

// keep makes a kept, encoded copy of row r, reusing a released row's
// struct when there is one.
func (t *topN) keep(r plan.Row, m *RowMeta) *tnRow {
	b := binary.AppendUvarint(t.buf[:0], uint64(len(t.spec.Keep)+len(t.spec.Order)))
	for _, c := range t.spec.Keep {
		b = value.AppendValue(b, r[c])
	}
	at := len(b)
	for _, k := range t.spec.Order {
		b = value.AppendValue(b, r[k.Col])
	}
	t.buf = b
	var x *tnRow
	if n := len(t.free); n > 0 {
		x = t.free[n-1]
		t.free[n-1] = nil
		t.free = t.free[:n-1]
		*x = tnRow{}
	} else {
		x = &tnRow{}
	}
	x.enc, x.id, x.off, x.kept = string(b), m.ID, m.Offset, true
	if err := x.decodeOrd(at, len(t.spec.Order)); err != nil {
		panic("topn: a row it encoded does not decode: " + err.Error())
	}
	t.held++
	t.bytes += rowBytes(x)
	return x
}

// decodeOrd decodes the n ORDER BY values at byte at of enc, in place.
func (x *tnRow) decodeOrd(at, n int) error {
	x.ord = x.ordBuf[:0]
	if n > len(x.ordBuf) {
		x.ord = make([]plan.Value, 0, n)
	}
	rest := x.enc[at:]
	for range n {
		v, r, err := value.DecodeValueIn(rest)
		if err != nil {
			return err
		}
		x.ord, rest = append(x.ord, v), r
	}
	if rest != "" {
		return fmt.Errorf("%d bytes after the ORDER BY values", len(rest))
	}
	return nil
}

// release forgets a kept row; its memory is reused once nothing refers
// to it (it is not among what was last emitted).
func (t *topN) release(p *tnPart, r *tnRow) {
	t.held--
	t.bytes -= rowBytes(r)
	r.kept = false
	if r.written {
		// Its record goes at the next snapshot.
		t.gone = append(t.gone, t.rowKey(p, r))
		r.written = false
	}
	if r.rank == 0 {
		t.recycle(r)
	}
}

// maxFree bounds the released rows kept for reuse.
const maxFree = 1024

func (t *topN) recycle(r *tnRow) {
	if len(t.free) < maxFree {
		*r = tnRow{} // drop the strings it holds
		t.free = append(t.free, r)
	}
}

func (t *topN) touch(p *tnPart) {
	if !p.dirty {
		p.dirty = true
		t.dirty = append(t.dirty, p)
	}
	t.markChanged(p)
}

// assign sets now to the rank of each row in order, up to the first
// beyond the limit, and returns how many are within it.
func (t *topN) assign(rows []*tnRow) int {
	var rank int64
	for i, r := range rows {
		switch {
		case t.spec.Fn == plan.RowNumber || i == 0:
			rank = int64(i + 1)
		case t.cmpOrder(rows[i-1].ord, r.ord) == 0:
			// tied: the rank stays
		case t.spec.Fn == plan.Rank:
			rank = int64(i + 1)
		default:
			rank++
		}
		if rank > t.spec.Limit {
			return i
		}
		r.now = rank
	}
	return len(rows)
}

// insert adds row r at pos in p's order; over an append-only input only
// when it ranks within the limit, and the rows it pushes out are dropped.
func (t *topN) insert(p *tnPart, pos int, r plan.Row, m *RowMeta) bool {
	if !t.spec.Retract && t.spec.Fn == plan.RowNumber && int64(pos) >= t.spec.Limit {
		return false
	}
	p.rows = slices.Insert(p.rows, pos, t.keep(r, m))
	if t.spec.Retract {
		return true
	}
	n := t.assign(p.rows)
	if n <= pos {
		// Ranked beyond the limit (RANK, DENSE_RANK): not kept after all.
		t.release(p, p.rows[pos])
		p.rows = slices.Delete(p.rows, pos, pos+1)
		return false
	}
	for _, x := range p.rows[n:] {
		t.release(p, x)
	}
	clear(p.rows[n:])
	p.rows = p.rows[:n]
	return true
}

func (t *topN) Process(b *Batch, out Emitter) error {
	res := &Batch{}
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if t.spec.Mode != plan.TopNUpdating && m.WM > t.wm {
			t.advance(m.WM, res)
		}
		switch t.spec.Mode {
		case plan.TopNDedup:
			t.dedup(r, m)
			continue
		case plan.TopNWindow:
			end := r[t.spec.TimeCol]
			if end.IsNull() {
				continue
			}
			if end.I <= t.wm {
				t.counters.late(m, end.I-1)
				continue
			}
			p := t.parts[m.Key]
			if p == nil {
				p = t.part(m.Key)
				p.time = end.I
				t.due = heapPush(t.due, p, earlier)
			}
			pos, _ := slices.BinarySearchFunc(p.rows, t.probe(r, m), t.cmpProbe)
			if t.insert(p, pos, r, m) {
				t.markChanged(p)
			}
			continue
		}
		p := t.part(m.Key)
		pos, found := slices.BinarySearchFunc(p.rows, t.probe(r, m), t.cmpProbe)
		if m.Op.Retracts() {
			if found {
				t.release(p, p.rows[pos])
				p.rows = slices.Delete(p.rows, pos, pos+1)
				t.touch(p)
			} else if len(p.rows) == 0 && len(p.emitted) == 0 && !p.dirty {
				t.drop(p)
			}
			continue
		}
		if found {
			// The same row again (an upsert without its old row): the new
			// values replace it.
			t.release(p, p.rows[pos])
			p.rows = slices.Delete(p.rows, pos, pos+1)
			t.touch(p)
		}
		if t.insert(p, pos, r, m) {
			t.touch(p)
		} else if len(p.rows) == 0 && len(p.emitted) == 0 && !p.dirty {
			t.drop(p)
		}
	}
	return emitIfAny(res, out)
}

// dedup takes row r of an append-only input: the candidate of its
// partition when it is earlier than the one held.
func (t *topN) dedup(r plan.Row, m *RowMeta) {
	ts := r[t.spec.TimeCol]
	if ts.IsNull() {
		return // no time: never first
	}
	p := t.parts[m.Key]
	if p != nil && p.done {
		return // the partition's first row was emitted
	}
	if ts.I < t.forward(t.wm) {
		t.counters.late(m, ts.I)
		return
	}
	probe := t.probe(r, m)
	if p == nil {
		p = t.part(m.Key)
	} else if t.cmpProbe(p.rows[0], probe) <= 0 {
		return // not earlier than the candidate
	} else {
		t.release(p, p.rows[0])
		p.rows = p.rows[:0]
	}
	p.rows = append(p.rows, t.keep(r, m))
	p.time = ts.I
	t.due = heapPush(t.due, p, earlier)
	t.markChanged(p)
}

// earlier orders partitions by time (dedup's candidates, windows' ends).
func earlier(a, b *tnPart) bool { return a.time < b.time }

// forward is the watermark forwarded for input watermark wm: dedup holds
// it back by the allowed lateness, as a window aggregation does.
func (t *topN) forward(wm int64) int64 {
	if t.spec.Mode != plan.TopNDedup {
		return wm
	}
	return window.HoldBack(wm, t.spec.AllowedLateness)
}

// advance moves the watermark to wm and emits what it completes: dedup's
// candidates before it (less the lateness), windows that end by it.
func (t *topN) advance(wm int64, res *Batch) {
	if wm <= t.wm {
		return
	}
	// Rows emitted now carry the watermark forwarded before: downstream
	// they are on time.
	t.outWM = t.forward(t.wm)
	t.wm = wm
	thr := t.forward(wm)
	for len(t.due) > 0 {
		p := t.due[0]
		if p.gone || p.done || len(p.rows) == 0 {
			_, t.due = heapPop(t.due, earlier)
			continue
		}
		if t.spec.Mode == plan.TopNDedup {
			if p.time >= thr {
				break
			}
			_, t.due = heapPop(t.due, earlier)
			if p.rows[0].ord[0].I != p.time {
				continue // a stale entry of a replaced candidate
			}
			c := p.rows[0]
			res.Append(t.output(c, 1), RowMeta{Offset: c.off, ID: c.id, Key: p.key, Op: Insert, WM: t.outWM})
			t.release(p, c)
			p.rows, p.done = nil, true
			t.held++ // the done key
			t.markChanged(p)
			if t.spec.TTL > 0 {
				t.expiry = heapPush(t.expiry, p, earlier)
			}
			continue
		}
		if p.time > wm {
			break
		}
		_, t.due = heapPop(t.due, earlier)
		n := t.assign(p.rows)
		for _, r := range p.rows[:n] {
			t.keyBuf = append(append(t.keyBuf[:0], p.key...), rowIDKey(t.buf[:0], r)...)
			res.Append(t.output(r, r.now), RowMeta{Offset: r.off, ID: string(t.keyBuf), Key: p.key, Op: Insert, WM: t.outWM})
		}
		for _, r := range p.rows {
			t.release(p, r)
		}
		t.drop(p)
	}
	for len(t.expiry) > 0 && t.expiry[0].time+t.spec.TTL < thr {
		var p *tnPart
		p, t.expiry = heapPop(t.expiry, earlier)
		if !p.gone {
			t.held--
			t.drop(p)
		}
	}
}

// rowIDKey appends row r's id as a key value: its ID, else its offset.
func rowIDKey(buf []byte, r *tnRow) []byte {
	if r.id != "" {
		return value.AppendValue(buf, plan.Str(r.id))
	}
	return value.AppendValue(buf, plan.Int(r.off))
}

// output is row r's output row with its rank, carved from the slab.
func (t *topN) output(r *tnRow, rank int64) plan.Row {
	n := len(t.spec.Out)
	if len(t.slab) < n {
		t.slab = make([]plan.Value, n*64)
	}
	row := plan.Row(t.slab[:n:n])
	t.slab = t.slab[n:]
	rest := r.enc
	if _, k := binary.Uvarint(KeyBytes(rest)); k > 0 {
		rest = rest[k:]
	}
	for i := range row {
		var err error
		if row[i], rest, err = value.DecodeValueIn(rest); err != nil {
			panic("topn: a kept row does not decode: " + err.Error())
		}
	}
	row[t.spec.RankAt] = plan.Int(rank)
	return row
}

func (t *topN) Watermark(wm int64, out Emitter) (int64, error) {
	if t.spec.Mode == plan.TopNUpdating {
		t.wm = max(t.wm, wm)
		return wm, nil
	}
	res := &Batch{}
	t.advance(wm, res)
	if err := emitIfAny(res, out); err != nil {
		return wm, err
	}
	return t.forward(t.wm), nil
}

// Barrier emits the changes of the partitions changed since the last.
func (t *topN) Barrier(_ Barrier, out Emitter) error {
	if len(t.dirty) == 0 {
		return nil
	}
	// Most changes are an update: the old row and the new one.
	n := 2 * len(t.dirty)
	res := &Batch{Rows: make([]plan.Row, 0, n), Meta: make([]RowMeta, 0, n)}
	for _, p := range t.dirty {
		p.dirty = false
		t.diff(p, res)
		if len(p.rows) == 0 {
			t.drop(p)
		}
	}
	clear(t.dirty)
	t.dirty = t.dirty[:0]
	return emitIfAny(res, out)
}

// diff emits what changed in p's top rows since they were last emitted.
func (t *topN) diff(p *tnPart, res *Batch) {
	for _, r := range p.emitted {
		r.now = 0
	}
	n := t.assign(p.rows)
	top := p.rows[:n]
	emit := func(r *tnRow, rank int64, op Op) {
		k := p.key
		switch {
		case t.spec.KeyByRank():
			// Each rank's key is made once per partition.
			for int64(len(p.rankKeys)) < rank {
				t.keyBuf = value.AppendValue(append(t.keyBuf[:0], p.key...), plan.Int(int64(len(p.rankKeys)+1)))
				p.rankKeys = append(p.rankKeys, string(t.keyBuf))
			}
			k = p.rankKeys[rank-1]
		case t.spec.Fn != plan.RowNumber:
			t.keyBuf = rowIDKey(append(t.keyBuf[:0], p.key...), r)
			k = string(t.keyBuf)
		}
		res.Append(t.output(r, rank), RowMeta{Offset: r.off, Key: k, ID: k, Op: op, WM: t.wm})
	}
	if t.spec.Fn == plan.RowNumber {
		// By position: each rank's row.
		for i := range max(n, len(p.emitted)) {
			var old, cur *tnRow
			if i < len(p.emitted) {
				old = p.emitted[i]
			}
			if i < n {
				cur = top[i]
			}
			rank := int64(i + 1)
			switch {
			case old == cur:
			case cur == nil:
				emit(old, rank, Delete)
			case old == nil:
				emit(cur, rank, Upsert)
			default:
				emit(old, rank, Before)
				emit(cur, rank, Upsert)
			}
		}
	} else {
		// By row: the rows that left, then those that entered or moved.
		for _, r := range p.emitted {
			if r.now == 0 {
				emit(r, r.rank, Delete)
			}
		}
		for _, r := range top {
			switch {
			case r.rank == 0:
				emit(r, r.now, Upsert)
			case r.rank != r.now:
				emit(r, r.rank, Before)
				emit(r, r.now, Upsert)
			}
		}
	}
	for _, r := range top {
		r.now = -r.now // marks the rows still emitted
	}
	for _, r := range p.emitted {
		if r.now >= 0 {
			r.rank = 0
			if !r.kept {
				t.recycle(r)
			}
		}
	}
	for _, r := range top {
		r.now = -r.now
		r.rank = r.now
	}
	clear(p.emitted)
	p.emitted = append(p.emitted[:0], top...)
}

func (t *topN) StateRows() int    { return t.held }
func (t *topN) StateBytes() int64 { return t.bytes }

// Snapshot writes the partitions changed since the last snapshot (deletes
// for those gone), or every partition (a full snapshot).
func (t *topN) Snapshot(w StateWriter) error {
	if t.spec.Mode == plan.TopNUpdating {
		return t.snapshotRows(w)
	}
	if w.Full() {
		for _, p := range t.parts {
			w.Put(KeyBytes(p.key), t.encode(p))
		}
	} else {
		// In the order they changed: a partition dropped, then made again
		// under its key, is deleted before it is written.
		for _, p := range t.changed {
			if p.gone {
				w.Delete(KeyBytes(p.key))
			} else {
				w.Put(KeyBytes(p.key), t.encode(p))
			}
		}
	}
	for _, p := range t.changed {
		p.changed = false
	}
	clear(t.changed)
	t.changed = t.changed[:0]
	return nil
}

// encode is a partition's record: flags (1: done), time, the number of
// rows, then each row's encoding, offset and id, each length-prefixed.
func (t *topN) encode(p *tnPart) []byte {
	b := t.buf[:0]
	var flags byte
	if p.done {
		flags = 1
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, p.time)
	b = binary.AppendUvarint(b, uint64(len(p.rows)))
	for _, r := range p.rows {
		b = appendRowRecord(b, r)
	}
	t.buf = b
	return b
}

// appendRowRecord appends row r's record: its encoding, offset and id,
// the first and last length-prefixed.
func appendRowRecord(b []byte, r *tnRow) []byte {
	b = binary.AppendUvarint(b, uint64(len(r.enc)))
	b = append(b, r.enc...)
	b = binary.AppendVarint(b, r.off)
	b = binary.AppendUvarint(b, uint64(len(r.id)))
	return append(b, r.id...)
}

// readRowRecord reads appendRowRecord's record from the front of v and
// returns the rest.
func (t *topN) readRowRecord(v []byte) (*tnRow, []byte, error) {
	l, n := binary.Uvarint(v)
	if n <= 0 || l > uint64(len(v)-n) {
		return nil, nil, fmt.Errorf("bad row length")
	}
	r := &tnRow{enc: string(v[n : n+int(l)])}
	if err := r.decodeEnc(len(t.spec.Keep), len(t.spec.Order)); err != nil {
		return nil, nil, err
	}
	v = v[n+int(l):]
	if r.off, n = binary.Varint(v); n <= 0 {
		return nil, nil, fmt.Errorf("bad offset")
	}
	v = v[n:]
	if l, n = binary.Uvarint(v); n <= 0 || l > uint64(len(v)-n) {
		return nil, nil, fmt.Errorf("bad id")
	}
	r.id = string(v[n : n+int(l)])
	return r, v[n+int(l):], nil
}

// decodeTopN reads a partition's record (encode's).
func (t *topN) decodeTopN(v []byte) (done bool, time int64, rows []*tnRow, err error) {
	if len(v) < 1 || v[0] > 1 {
		return false, 0, nil, fmt.Errorf("bad flags")
	}
	done, v = v[0] == 1, v[1:]
	var n int
	if time, n = binary.Varint(v); n <= 0 {
		return false, 0, nil, fmt.Errorf("bad time")
	}
	v = v[n:]
	count, n := binary.Uvarint(v)
	if n <= 0 || count > uint64(len(v)) {
		return false, 0, nil, fmt.Errorf("bad row count")
	}
	v = v[n:]
	for range count {
		var r *tnRow
		if r, v, err = t.readRowRecord(v); err != nil {
			return false, 0, nil, err
		}
		rows = append(rows, r)
	}
	if len(v) != 0 {
		return false, 0, nil, fmt.Errorf("%d bytes after the rows", len(v))
	}
	return done, time, rows, nil
}

// decodeEnc checks x's encoding (keep output values, then the ORDER BY
// values) and decodes its ORDER BY values.
func (x *tnRow) decodeEnc(keep, order int) error {
	w, err := value.RowWidth(KeyBytes(x.enc))
	if err != nil {
		return err
	}
	if w != keep+order {
		return fmt.Errorf("a row of %d values, want %d", w, keep+order)
	}
	_, k := binary.Uvarint(KeyBytes(x.enc))
	rest := x.enc[k:]
	for range keep {
		if _, rest, err = value.DecodeValueIn(rest); err != nil {
			return err
		}
	}
	return x.decodeOrd(len(x.enc)-len(rest), order)
}

// Restore loads the partitions this task owns. What was emitted of each
// is what its rows rank as (snapshots follow the barrier's emission).
func (t *topN) Restore(r StateReader) error {
	if t.spec.Mode == plan.TopNUpdating {
		return t.restoreRows(r)
	}
	return r.Scan(func(k, v []byte) error {
		if !r.Owns(string(k)) {
			return nil
		}
		done, time, rows, err := t.decodeTopN(v)
		if err != nil {
			return fmt.Errorf("topn state of partition %x: %w", k, err)
		}
		p := t.part(string(k))
		p.done, p.time, p.rows = done, time, rows
		for _, x := range rows {
			t.held++
			t.bytes += rowBytes(x)
		}
		switch {
		case done:
			t.held++
			if t.spec.TTL > 0 {
				t.expiry = heapPush(t.expiry, p, earlier)
			}
		case t.spec.Mode != plan.TopNUpdating:
			t.due = heapPush(t.due, p, earlier)
		default:
			n := t.assign(rows)
			for _, x := range rows[:n] {
				x.rank = x.now
			}
			p.emitted = append(p.emitted, rows[:n]...)
		}
		return nil
	})
}

// snapshotRows is the updating mode's snapshot: one record per kept row,
// keyed by its partition's key and its id (rowKey), valued by its
// encoding, offset and id, written once when the row is kept and deleted
// when it leaves, so a change to a partition of N rows writes the rows
// that entered and deletes the ones that left, not the N. Deletes come
// first: a row released and another of the same identity kept since the
// last snapshot are a delete and then a put of the same key.
func (t *topN) snapshotRows(w StateWriter) error {
	full := w.Full()
	if !full {
		for _, k := range t.gone {
			w.Delete(KeyBytes(k))
		}
	}
	clear(t.gone)
	t.gone = t.gone[:0]
	write := func(p *tnPart) {
		for _, r := range p.rows {
			if full || !r.written {
				t.buf = appendRowRecord(t.buf[:0], r)
				w.Put(KeyBytes(t.rowKey(p, r)), t.buf)
				r.written = true
			}
		}
	}
	if full {
		for _, p := range t.parts {
			write(p)
		}
	} else {
		for _, p := range t.changed {
			if !p.gone {
				write(p)
			}
		}
	}
	for _, p := range t.changed {
		p.changed = false
	}
	clear(t.changed)
	t.changed = t.changed[:0]
	return nil
}

// rowKey is row r's record key: its partition's key, then its id as a key
// value (rowIDKey).
func (t *topN) rowKey(p *tnPart, r *tnRow) string {
	t.keyBuf = rowIDKey(append(t.keyBuf[:0], p.key...), r)
	return string(t.keyBuf)
}

// splitRowKey is a row record key's partition key: the values of the
// PARTITION BY columns before the row's id.
func (t *topN) splitRowKey(k []byte) (string, error) {
	key := string(k)
	rest := key
	for i := range len(t.spec.Partition) {
		var err error
		if _, rest, err = value.DecodeValueIn(rest); err != nil {
			return "", fmt.Errorf("partition value %d: %w", i, err)
		}
	}
	part := key[:len(key)-len(rest)]
	if _, after, err := value.DecodeValueIn(rest); err != nil || after != "" {
		return "", fmt.Errorf("not one row id after the partition")
	}
	return part, nil
}

// restoreRows is the updating mode's Restore: the rows of each partition
// this task owns, put back in order; what was emitted is what they rank
// as.
func (t *topN) restoreRows(r StateReader) error {
	err := r.Scan(func(k, v []byte) error {
		pk, err := t.splitRowKey(k)
		if err != nil {
			return fmt.Errorf("topn state record %x: %w", k, err)
		}
		if !r.Owns(pk) {
			return nil
		}
		x, rest, err := t.readRowRecord(v)
		if err == nil && len(rest) > 0 {
			err = fmt.Errorf("%d bytes after the row", len(rest))
		}
		if err != nil {
			return fmt.Errorf("topn state record %x: %w", k, err)
		}
		p := t.part(pk)
		x.kept, x.written = true, true
		p.rows = append(p.rows, x)
		t.held++
		t.bytes += rowBytes(x)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range t.parts {
		slices.SortFunc(p.rows, func(a, b *tnRow) int { return t.cmpProbe(a, tnProbe{ord: b.ord, id: b.id, off: b.off}) })
		n := t.assign(p.rows)
		for _, x := range p.rows[:n] {
			x.rank = x.now
		}
		p.emitted = append(p.emitted[:0], p.rows[:n]...)
	}
	return nil
}
