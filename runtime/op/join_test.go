package op

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// Both inputs are (k BIGINT, ts TIMESTAMP, v BIGINT), joined on k with
// bounds on ts.
var (
	joinLeftSchema  = plan.Schema{{Name: "k", Type: plan.TypeBigint}, {Name: "ts", Type: plan.TypeTimestamp}, {Name: "v", Type: plan.TypeBigint}}
	joinRightSchema = plan.Schema{{Name: "k", Type: plan.TypeBigint}, {Name: "ts", Type: plan.TypeTimestamp}, {Name: "w", Type: plan.TypeBigint}}
)

func joinSpec(kind plan.JoinKind, lower, upper int64, residual plan.Expr) *plan.IntervalJoin {
	return &plan.IntervalJoin{Kind: kind, LeftKeys: []int{0}, RightKeys: []int{0}, LeftTime: 1, RightTime: 1,
		Lower: lower, Upper: upper, Residual: residual, Left: joinLeftSchema, Right: joinRightSchema,
		Out: append(append(plan.Schema{}, joinLeftSchema...), joinRightSchema...)}
}

// residualVLessW is l.v < r.w over the output row.
func residualVLessW() plan.Expr {
	return &plan.Call{Fn: "<", T: plan.TypeBoolean, Args: []plan.Expr{
		&plan.ColRef{Index: 2, Name: "v", T: plan.TypeBigint}, &plan.ColRef{Index: 5, Name: "w", T: plan.TypeBigint}}}
}

// residualSumMod3 is (l.v + r.w) % 3 <> 0.
func residualSumMod3() plan.Expr {
	sum := &plan.Call{Fn: "+", T: plan.TypeBigint, Args: []plan.Expr{
		&plan.ColRef{Index: 2, Name: "v", T: plan.TypeBigint}, &plan.ColRef{Index: 5, Name: "w", T: plan.TypeBigint}}}
	mod := &plan.Call{Fn: "%", T: plan.TypeBigint, Args: []plan.Expr{sum, &plan.Const{V: plan.Int(3)}}}
	return &plan.Call{Fn: "<>", T: plan.TypeBoolean, Args: []plan.Expr{mod, &plan.Const{V: plan.Int(0)}}}
}

// jr builds an input row; NULL key or time with the null* values.
func jr(k, ts, v int64) plan.Row { return plan.Row{plan.Int(k), plan.Time(ts), plan.Int(v)} }

const nullInt = math.MinInt64 + 7 // marks a NULL in jr arguments

func jrn(k, ts, v int64) plan.Row {
	r := jr(k, ts, v)
	if k == nullInt {
		r[0] = plan.Null
	}
	if ts == nullInt {
		r[1] = plan.Null
	}
	return r
}

// fmtJoinRow renders an output row as "k,ts,v|k,ts,w" (times as numbers).
func fmtJoinRow(r plan.Row) string {
	var b strings.Builder
	for i, v := range r {
		if i == 3 {
			b.WriteByte('|')
		} else if i > 0 {
			b.WriteByte(',')
		}
		switch v.K {
		case plan.TypeNull:
			b.WriteString("N")
		default:
			b.WriteString(strconv.FormatInt(v.I, 10))
		}
	}
	return b.String()
}

type joinCollector struct {
	rows []plan.Row
	meta []RowMeta
}

func (c *joinCollector) Emit(b *Batch) error {
	if b.Len() == 0 {
		return fmt.Errorf("empty batch emitted")
	}
	c.rows = append(c.rows, b.Rows...)
	c.meta = append(c.meta, b.Meta...)
	return nil
}

// joinDriver feeds an operator and checks every call's output against the
// watermark forwarded before it: rows are stamped with it and, inputs
// being on time, none is older than it on either side's time.
// sideDriver drives a two-input join operator directly, checking every
// output row: stamped with the forwarded watermark, an insert with a row
// id, and (on-time input) no time column behind the forwarded watermark.
type sideDriver struct {
	t       *testing.T
	op      TwoInput
	keys    [2][]int // join key columns of each side
	out     joinCollector
	fw      int64
	checked int
	// onTime: the input respects its watermarks (the time checks apply).
	onTime   bool
	timeCols []int                 // output time columns checked against fw
	extra    func(r plan.Row) bool // a driver's own row check (false: fail)
}

func newSideDriver(t *testing.T, op TwoInput, left, right []int, timeCols ...int) sideDriver {
	return sideDriver{t: t, op: op, keys: [2][]int{left, right}, fw: window.NoWatermark, onTime: true, timeCols: timeCols}
}

// restoreOp restores the operator and takes the watermark it forwards.
func (d *sideDriver) restoreOp(r StateReader, outWM *int64) {
	d.t.Helper()
	if err := d.op.Restore(r); err != nil {
		d.t.Fatalf("restore: %v", err)
	}
	d.fw = *outWM
}

func (d *sideDriver) send(side int, off int64, r plan.Row, op Op) {
	d.t.Helper()
	b := &Batch{}
	b.Append(r, RowMeta{Offset: off, Key: string(value.EncodeKey(nil, r, d.keys[side])), Op: op})
	if err := d.op.ProcessSide(side, b, &d.out); err != nil {
		d.t.Fatal(err)
	}
	d.check()
}

func (d *sideDriver) wm(side int, wm int64) {
	d.t.Helper()
	fw, err := d.op.WatermarkSide(side, wm, &d.out)
	if err != nil {
		d.t.Fatal(err)
	}
	d.check()
	d.forwarded(fw)
}

func (d *sideDriver) both(wm int64) {
	d.t.Helper()
	fw, err := d.op.Watermark(wm, &d.out)
	if err != nil {
		d.t.Fatal(err)
	}
	d.check()
	d.forwarded(fw)
}

func (d *sideDriver) forwarded(fw int64) {
	d.t.Helper()
	if fw < d.fw {
		d.t.Fatalf("forwarded watermark went back from %d to %d", d.fw, fw)
	}
	d.fw = fw
}

func (d *sideDriver) check() {
	d.t.Helper()
	for i := d.checked; i < len(d.out.rows); i++ {
		r, m := d.out.rows[i], d.out.meta[i]
		if m.WM != d.fw {
			d.t.Fatalf("row %s stamped WM %d, forwarded %d", fmtJoinRow(r), m.WM, d.fw)
		}
		if m.Op != Insert || m.ID == "" {
			d.t.Fatalf("row %s: op %d id %q", fmtJoinRow(r), m.Op, m.ID)
		}
		if d.extra != nil && !d.extra(r) {
			d.t.Fatalf("row %s fails the driver's check", fmtJoinRow(r))
		}
		if !d.onTime {
			continue
		}
		for _, c := range d.timeCols {
			if !r[c].IsNull() && r[c].I < d.fw {
				d.t.Fatalf("row %s emitted with time %d behind the forwarded watermark %d", fmtJoinRow(r), r[c].I, d.fw)
			}
		}
	}
	d.checked = len(d.out.rows)
}

// since returns the rows emitted from index i on, rendered and sorted.
func (d *sideDriver) since(i int) []string {
	var s []string
	for _, r := range d.out.rows[i:] {
		s = append(s, fmtJoinRow(r))
	}
	sort.Strings(s)
	return s
}

// joinDriver drives an interval join (output time columns 1 and 4).
type joinDriver struct {
	sideDriver
	j *intervalJoin
}

func newJoinDriver(t *testing.T, spec *plan.IntervalJoin) *joinDriver {
	t.Helper()
	j, err := newIntervalJoin(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	return &joinDriver{sideDriver: newSideDriver(t, j, spec.LeftKeys, spec.RightKeys, 1, 4), j: j}
}

func (d *joinDriver) restore(r StateReader) { d.t.Helper(); d.restoreOp(r, &d.j.outWM) }

func (d *joinDriver) row(side int, off int64, r plan.Row) { d.t.Helper(); d.send(side, off, r, Insert) }

func sorted(s ...string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	if len(s) == 0 {
		return nil
	}
	return s
}

func wantRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 {
		got = nil
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// The hand-made case: bids (left) within 10ms after their auction (right).
func TestIntervalJoinInnerAndLeft(t *testing.T) {
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			d := newJoinDriver(t, joinSpec(kind, 0, 10, nil))
			d.row(sideRight, 0, jr(1, 100, 7))
			d.row(sideRight, 1, jr(2, 100, 8))
			d.row(sideLeft, 0, jr(1, 105, 1)) // match
			d.row(sideLeft, 1, jr(1, 111, 2)) // 111 > 100+10
			d.row(sideLeft, 2, jr(1, 110, 3)) // upper bound, inclusive
			d.row(sideLeft, 3, jr(1, 100, 4)) // lower bound, inclusive
			d.row(sideLeft, 4, jr(1, 99, 5))  // 99 < 100
			d.row(sideLeft, 5, jr(2, 50, 6))  // other key, too early
			d.row(sideLeft, 6, jr(3, 100, 7)) // no such key
			matched := []string{"1,105,1|1,100,7", "1,110,3|1,100,7", "1,100,4|1,100,7"}
			wantRows(t, "immediate output", d.since(0), sorted(matched...))
			// A right row arriving later matches the held left rows.
			d.row(sideRight, 2, jr(1, 101, 10))
			wantRows(t, "late right row", d.since(3), sorted("1,105,1|1,101,10", "1,111,2|1,101,10", "1,110,3|1,101,10"))
			n := len(d.out.rows)
			d.both(math.MaxInt64)
			var padded []string
			if kind == plan.LeftJoin {
				padded = sorted("1,99,5|N,N,N", "2,50,6|N,N,N", "3,100,7|N,N,N")
			}
			wantRows(t, "at end", d.since(n), padded)
			if d.j.StateRows() != 0 || d.fw != math.MaxInt64 {
				t.Fatalf("at end: %d rows held, forwarded %d", d.j.StateRows(), d.fw)
			}
			// Offset: the left row's (v = offset+1); ID: (left offset,
			// right offset or -1); Key: the join key.
			for i, m := range d.out.meta {
				r := d.out.rows[i]
				rOff := int64(-1) // padded
				if !r[5].IsNull() {
					rOff = map[int64]int64{7: 0, 8: 1, 10: 2}[r[5].I] // w -> right offset
				}
				id := string(value.AppendValue(value.AppendValue(nil, plan.Int(r[2].I-1)), plan.Int(rOff)))
				if m.Offset != r[2].I-1 || m.ID != id || m.Key != string(value.EncodeKey(nil, r, []int{0})) {
					t.Fatalf("row %s: offset %d id %x key %x", fmtJoinRow(r), m.Offset, m.ID, m.Key)
				}
			}
		})
	}
}

// Bounds are inclusive at both ends, also with a negative lower bound,
// whichever side arrives first.
func TestIntervalJoinBounds(t *testing.T) {
	for _, rightFirst := range []bool{true, false} {
		d := newJoinDriver(t, joinSpec(plan.InnerJoin, -3, 2, nil)) // r-3 <= l <= r+2
		left := []int64{95, 96, 97, 100, 102, 103}
		if rightFirst {
			d.row(sideRight, 0, jr(1, 100, 0))
		}
		for i, ts := range left {
			d.row(sideLeft, int64(i), jr(1, ts, ts))
		}
		if !rightFirst {
			d.row(sideRight, 0, jr(1, 100, 0))
		}
		wantRows(t, fmt.Sprintf("right first %v", rightFirst), d.since(0),
			sorted("1,97,97|1,100,0", "1,100,100|1,100,0", "1,102,102|1,100,0"))
	}
	// An empty interval (Lower > Upper) matches nothing.
	d := newJoinDriver(t, joinSpec(plan.InnerJoin, 1, 0, nil))
	d.row(sideRight, 0, jr(1, 100, 0))
	for ts := int64(95); ts <= 105; ts++ {
		d.row(sideLeft, ts, jr(1, ts, ts))
	}
	wantRows(t, "empty interval", d.since(0), nil)
}

func TestIntervalJoinNulls(t *testing.T) {
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin} {
		d := newJoinDriver(t, joinSpec(kind, -10, 10, nil))
		d.row(sideRight, 0, jrn(nullInt, 100, 1))
		d.row(sideRight, 1, jrn(1, nullInt, 2))
		if d.j.StateRows() != 0 {
			t.Fatalf("%s: right rows with NULL key or time held", kind)
		}
		d.row(sideRight, 2, jr(1, 100, 3))
		d.row(sideLeft, 0, jrn(nullInt, 100, 4))
		d.row(sideLeft, 1, jrn(1, nullInt, 5))
		var want []string
		if kind == plan.LeftJoin {
			// Emitted at once: they can never match.
			want = sorted("N,100,4|N,N,N", "1,N,5|N,N,N")
		}
		wantRows(t, kind.String()+" NULL left rows", d.since(0), want)
		if d.j.StateRows() != 1 {
			t.Fatalf("%s: %d rows held, want the one right row", kind, d.j.StateRows())
		}
		n := len(d.out.rows)
		d.both(math.MaxInt64)
		wantRows(t, kind.String()+" at end", d.since(n), nil)
	}
}

func TestIntervalJoinResidual(t *testing.T) {
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin} {
		d := newJoinDriver(t, joinSpec(kind, 0, 10, residualVLessW()))
		d.row(sideRight, 0, jr(1, 100, 5))
		d.row(sideLeft, 0, jr(1, 101, 4))  // 4 < 5
		d.row(sideLeft, 1, jr(1, 102, 5))  // 5 < 5 fails
		d.row(sideRight, 1, jr(1, 100, 6)) // matches both held rows: 4 < 6, 5 < 6
		d.row(sideLeft, 2, jr(1, 103, 9))  // fails against both
		d.both(math.MaxInt64)
		want := []string{"1,101,4|1,100,5", "1,101,4|1,100,6", "1,102,5|1,100,6"}
		if kind == plan.LeftJoin {
			want = append(want, "1,103,9|N,N,N")
		}
		wantRows(t, kind.String(), d.since(0), sorted(want...))
	}
}

// State is dropped exactly when the other side's watermark passes the
// bound, and a row arriving already expired is still joined.
func TestIntervalJoinExpiry(t *testing.T) {
	d := newJoinDriver(t, joinSpec(plan.InnerJoin, 0, 10, nil)) // r <= l <= r+10
	d.row(sideLeft, 0, jr(1, 100, 0))                           // held until rightWM > 100
	d.row(sideRight, 0, jr(1, 100, 0))                          // held until leftWM > 110
	d.row(sideRight, 1, jr(2, 50, 0))
	if n := d.j.StateRows(); n != 3 {
		t.Fatalf("%d rows held, want 3", n)
	}
	d.wm(sideRight, 100)
	if n := d.j.StateRows(); n != 3 {
		t.Fatalf("right watermark 100: %d rows held, want 3 (a right row at 100 may still come)", n)
	}
	d.wm(sideRight, 101)
	if n := d.j.StateRows(); n != 2 {
		t.Fatalf("right watermark 101: %d rows held, want 2", n)
	}
	d.wm(sideLeft, 60)
	if n := d.j.StateRows(); n != 2 {
		t.Fatalf("left watermark 60: %d rows held, want 2 (a left row at 60 may still come)", n)
	}
	d.wm(sideLeft, 61)
	if n := d.j.StateRows(); n != 1 {
		t.Fatalf("left watermark 61: %d rows held, want 1", n)
	}
	d.wm(sideLeft, 110)
	if n := d.j.StateRows(); n != 1 {
		t.Fatalf("left watermark 110: %d rows held, want 1", n)
	}
	// Late on the left (and expired on arrival): joined with the right row
	// still held, not kept.
	d.onTime = false
	n := len(d.out.rows)
	d.row(sideLeft, 1, jr(1, 100, 1))
	wantRows(t, "late left row", d.since(n), sorted("1,100,1|1,100,0"))
	if n := d.j.StateRows(); n != 1 {
		t.Fatalf("after the late row: %d rows held, want 1", n)
	}
	d.wm(sideLeft, 111)
	if n := d.j.StateRows(); n != 0 {
		t.Fatalf("left watermark 111: %d rows held, want 0", n)
	}
	for s := range d.j.side {
		if len(d.j.side[s].keys) != 0 || len(d.j.side[s].expires) != 0 {
			t.Fatalf("side %d: %d keys, %d heap entries left", s, len(d.j.side[s].keys), len(d.j.side[s].expires))
		}
	}
}

// A LEFT join emits an unmatched row when the right watermark passes
// l.time - Lower, stamped with the watermark forwarded before it, which
// never passed the row's time.
func TestIntervalJoinLeftNullTiming(t *testing.T) {
	d := newJoinDriver(t, joinSpec(plan.LeftJoin, -5, 5, nil)) // r-5 <= l <= r+5
	d.row(sideLeft, 0, jr(1, 100, 0))
	d.wm(sideLeft, 1000)
	d.wm(sideRight, 105)
	if len(d.out.rows) != 0 {
		t.Fatalf("emitted %q before the right watermark passed 105", d.since(0))
	}
	if d.fw > 100 {
		t.Fatalf("forwarded %d while a row at 100 may still be emitted", d.fw)
	}
	if d.fw != 100 {
		t.Fatalf("forwarded %d, want min(1000-5, 105-5) = 100", d.fw)
	}
	d.wm(sideRight, 106)
	wantRows(t, "padded", d.since(0), sorted("1,100,0|N,N,N"))
	if d.out.meta[0].WM != 100 || d.fw != 101 {
		t.Fatalf("padded row stamped %d (want 100), forwarded %d (want 101)", d.out.meta[0].WM, d.fw)
	}
	// A left row arriving already expired is emitted at once.
	d.onTime = false
	d.row(sideLeft, 1, jr(1, 90, 1))
	wantRows(t, "expired on arrival", d.since(1), sorted("1,90,1|N,N,N"))
	// A row that matched is not padded.
	d.onTime = true
	d.row(sideLeft, 2, jr(2, 1000, 2))
	d.row(sideRight, 0, jr(2, 1003, 3))
	n := len(d.out.rows)
	d.both(math.MaxInt64)
	wantRows(t, "at end", d.since(n), nil)
}

// For INNER too, min(leftWM, rightWM) would be too far: with Lower < 0 a
// held left row older than both watermarks still matches.
func TestIntervalJoinInnerHoldBack(t *testing.T) {
	d := newJoinDriver(t, joinSpec(plan.InnerJoin, -10, 0, nil)) // r-10 <= l <= r
	d.row(sideLeft, 0, jr(1, 100, 0))
	d.wm(sideLeft, 200)
	d.wm(sideRight, 105) // l still held: 105 <= 100+10
	if d.fw != 95 {
		t.Fatalf("forwarded %d, want min(200, 105-10) = 95", d.fw)
	}
	d.row(sideRight, 0, jr(1, 108, 0)) // checked: 100 >= 95
	wantRows(t, "match", d.since(0), sorted("1,100,0|1,108,0"))
	// Symmetric: Upper > 0 holds back by the right time.
	d = newJoinDriver(t, joinSpec(plan.InnerJoin, 0, 10, nil)) // r <= l <= r+10
	d.row(sideRight, 0, jr(1, 100, 0))
	d.wm(sideRight, 200)
	d.wm(sideLeft, 105)
	if d.fw != 95 {
		t.Fatalf("forwarded %d, want min(105-10, 200) = 95", d.fw)
	}
	d.row(sideLeft, 0, jr(1, 106, 0))
	wantRows(t, "match", d.since(0), sorted("1,106,0|1,100,0"))
}

// memState is a checkpoint store: it applies snapshots in order.
type memState struct {
	kv         map[string][]byte
	badDeletes int  // deletes of keys never written
	full       bool // snapshots into it are full ones
}

func (m *memState) Full() bool { return m.full }

func (m *memState) Put(k, v []byte) { m.kv[string(k)] = append([]byte(nil), v...) }
func (m *memState) Delete(k []byte) {
	if _, ok := m.kv[string(k)]; !ok {
		m.badDeletes++
	}
	delete(m.kv, string(k))
}

func (m *memState) rowRecords() int {
	n := 0
	for k := range m.kv {
		if k[0] != wmRecord {
			n++
		}
	}
	return n
}

// memStateReader reads a memState as task subtask of parallel.
type memStateReader struct {
	st                *memState
	subtask, parallel int
}

func (r memStateReader) Scan(fn func(k, v []byte) error) error {
	keys := make([]string, 0, len(r.st.kv))
	for k := range r.st.kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := fn([]byte(k), r.st.kv[k]); err != nil {
			return err
		}
	}
	return nil
}

func (r memStateReader) Owns(key string) bool {
	// The task's rule (runtime's stateReader.Owns): the hash exchange
	// routes a key to subtask HashKey(key) mod parallelism.
	return r.parallel <= 1 || int(value.HashKey(key)%uint64(r.parallel)) == r.subtask
}

// joinEvent is one step of a join's input: a row of a side, a side's
// watermark, or (side -1) a watermark of both sides.
type joinEvent struct {
	side int
	off  int64
	row  plan.Row
	wm   int64
}

func (d *joinDriver) apply(e joinEvent) {
	d.t.Helper()
	switch {
	case e.side < 0:
		d.both(e.wm)
	case e.row == nil:
		d.wm(e.side, e.wm)
	default:
		d.row(e.side, e.off, e.row)
	}
}

// genSide makes one side's events: rows with bounded disorder, some NULL
// keys and times, and watermarks that never pass a later row (on time).
func genSide(rng *rand.Rand, side, n int) (rows []plan.Row, evs []joinEvent) {
	t := int64(1000)
	for i := 0; i < n; i++ {
		t += rng.Int64N(6)
		k, ts := rng.Int64N(4), t-rng.Int64N(15)
		if rng.IntN(25) == 0 {
			k = nullInt
		}
		if rng.IntN(30) == 0 {
			ts = nullInt
		}
		rows = append(rows, jrn(k, ts, rng.Int64N(100)))
	}
	wm := int64(window.NoWatermark)
	for i, r := range rows {
		evs = append(evs, joinEvent{side: side, off: int64(i), row: r})
		if rng.IntN(3) != 0 {
			continue
		}
		lo := int64(math.MaxInt64)
		for _, f := range rows[i+1:] {
			if !f[1].IsNull() {
				lo = min(lo, f[1].I)
			}
		}
		if lo == math.MaxInt64 {
			continue
		}
		if next := lo - rng.Int64N(4); next > wm {
			wm = next
			evs = append(evs, joinEvent{side: side, row: nil, wm: wm})
		}
	}
	return rows, evs
}

// naiveJoin is the nested-loop join of the rows.
func naiveJoin(t *testing.T, spec *plan.IntervalJoin, left, right []plan.Row) []string {
	var res Eval
	if spec.Residual != nil {
		var err error
		if res, err = Compile(spec.Residual, &Env{}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, l := range left {
		matched := false
		for _, r := range right {
			if l[0].IsNull() || r[0].IsNull() || l[1].IsNull() || r[1].IsNull() || l[0].I != r[0].I {
				continue
			}
			if !(r[1].I+spec.Lower <= l[1].I && l[1].I <= r[1].I+spec.Upper) {
				continue
			}
			row := append(append(plan.Row{}, l...), r...)
			if res != nil && !res(row).True() {
				continue
			}
			matched = true
			out = append(out, fmtJoinRow(row))
		}
		if !matched && spec.Kind == plan.LeftJoin {
			out = append(out, fmtJoinRow(append(append(plan.Row{}, l...), plan.Null, plan.Null, plan.Null)))
		}
	}
	sort.Strings(out)
	return out
}

// Random inputs on both sides, interleaved at random, against a nested-loop
// join; halfway through, a checkpoint (after several incremental ones) is
// restored at parallelism 1 or 2 and the restored operators finish the
// input.
func TestIntervalJoinProperty(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		kind := plan.InnerJoin
		if seed%2 == 0 {
			kind = plan.LeftJoin
		}
		lower := rng.Int64N(31) - 20
		upper := lower + rng.Int64N(31)
		if rng.IntN(15) == 0 {
			upper = lower - 1 - rng.Int64N(3)
		}
		var residual plan.Expr
		if rng.IntN(3) == 0 {
			residual = residualSumMod3()
		}
		spec := joinSpec(kind, lower, upper, residual)
		left, levs := genSide(rng, sideLeft, rng.IntN(60))
		right, revs := genSide(rng, sideRight, rng.IntN(60))
		var evs []joinEvent
		for len(levs)+len(revs) > 0 {
			if len(revs) == 0 || len(levs) > 0 && rng.IntN(2) == 0 {
				evs, levs = append(evs, levs[0]), levs[1:]
			} else {
				evs, revs = append(evs, revs[0]), revs[1:]
			}
		}
		evs = append(evs, joinEvent{side: -1, wm: math.MaxInt64})
		want := naiveJoin(t, spec, left, right)
		name := fmt.Sprintf("seed %d %s [%d,%d] residual %v", seed, kind, lower, upper, residual != nil)

		// Uninterrupted, with incremental snapshots along the way.
		d := newJoinDriver(t, spec)
		st := &memState{kv: map[string][]byte{}}
		cut := rng.IntN(len(evs))
		var atCut int
		for i, e := range evs {
			if i == cut {
				atCut = len(d.out.rows)
				break
			}
			d.apply(e)
			if rng.IntN(8) == 0 {
				if err := d.j.Snapshot(st); err != nil {
					t.Fatal(err)
				}
				if st.rowRecords() != d.j.StateRows() || st.badDeletes != 0 {
					t.Fatalf("%s: store holds %d rows (%d bad deletes), operator %d", name, st.rowRecords(), st.badDeletes, d.j.StateRows())
				}
			}
		}
		if err := d.j.Snapshot(st); err != nil {
			t.Fatal(err)
		}
		if st.rowRecords() != d.j.StateRows() || st.badDeletes != 0 {
			t.Fatalf("%s: store holds %d rows (%d bad deletes), operator %d", name, st.rowRecords(), st.badDeletes, d.j.StateRows())
		}
		for _, e := range evs[cut:] {
			d.apply(e)
		}
		got := d.since(0)
		wantRows(t, name, got, want)
		if d.j.StateRows() != 0 || d.fw != math.MaxInt64 {
			t.Fatalf("%s: at end %d rows held, forwarded %d", name, d.j.StateRows(), d.fw)
		}
		uniqueIDs(t, name, d.out.meta)

		// Restored at the cut, at parallelism 1 or 2.
		par := 1 + int(seed%3)%2
		var restored []string
		for _, r := range d.out.rows[:atCut] {
			restored = append(restored, fmtJoinRow(r))
		}
		held := 0
		for sub := 0; sub < par; sub++ {
			rd := newJoinDriver(t, spec)
			rd.restore(memStateReader{st: st, subtask: sub, parallel: par})
			held += rd.j.StateRows()
			if rd.j.wm != recordedWM(st) {
				t.Fatalf("%s: restored watermarks %v", name, rd.j.wm)
			}
			for _, e := range evs[cut:] {
				if e.row != nil && par > 1 {
					keys := spec.LeftKeys
					if e.side == sideRight {
						keys = spec.RightKeys
					}
					if !(memStateReader{subtask: sub, parallel: par}).Owns(string(value.EncodeKey(nil, e.row, keys))) {
						continue
					}
				}
				rd.apply(e)
			}
			for _, r := range rd.out.rows {
				restored = append(restored, fmtJoinRow(r))
			}
			if rd.j.StateRows() != 0 {
				t.Fatalf("%s: restored task %d holds %d rows at end", name, sub, rd.j.StateRows())
			}
		}
		if held != st.rowRecords() {
			t.Fatalf("%s: restored %d rows of %d", name, held, st.rowRecords())
		}
		sort.Strings(restored)
		wantRows(t, name+fmt.Sprintf(" restored at parallelism %d after event %d", par, cut), restored, want)
	}
}

// recordedWM is the side watermarks recorded in st.
func recordedWM(st *memState) [2]int64 {
	v, ok := st.kv[string([]byte{wmRecord})]
	if !ok {
		return [2]int64{window.NoWatermark, window.NoWatermark}
	}
	l, rest, _ := value.DecodeValue(v)
	r, _, _ := value.DecodeValue(rest)
	return [2]int64{l.I, r.I}
}

// A hand-made round trip: the matched flag, the watermarks and the
// sequence numbers survive, and a restored LEFT join pads exactly the rows
// the uninterrupted one pads. Records are per key: at parallelism 2 each
// task restores only the keys it owns.
func TestIntervalJoinSnapshotRestore(t *testing.T) {
	spec := joinSpec(plan.LeftJoin, -5, 5, residualVLessW()) // r-5 <= l <= r+5 and l.v < r.w
	before := func(d *joinDriver) {
		for k := int64(0); k < 8; k++ {
			d.row(sideLeft, 3*k, jr(k, 100, 1))   // matched now, by nothing later
			d.row(sideLeft, 3*k+1, jr(k, 101, 9)) // residual fails now, matched later
			d.row(sideRight, k, jr(k, 99, 5))
		}
		d.wm(sideLeft, 100)
		d.wm(sideRight, 95)
	}
	after := func(d *joinDriver, owns func(string) bool) {
		for k := int64(0); k < 8; k++ {
			r := jr(k, 106, 10)
			if owns(string(value.EncodeKey(nil, r, []int{0}))) {
				d.row(sideRight, 100+k, r)             // matches l@101 only
				d.row(sideLeft, 100+k, jr(k, 103, 0))  // matches both right rows
				d.row(sideLeft, 200+k, jr(k, 200, 50)) // never matches
			}
		}
		d.wm(sideRight, 103)
		d.both(math.MaxInt64)
	}
	all := func(string) bool { return true }
	full := newJoinDriver(t, spec)
	before(full)
	cutFW := full.fw
	st := &memState{kv: map[string][]byte{}}
	if err := full.j.Snapshot(st); err != nil {
		t.Fatal(err)
	}
	cut := len(full.out.rows)
	if st.rowRecords() != 24 || cutFW != 90 {
		t.Fatalf("%d row records (want 24), forwarding %d (want 90)", st.rowRecords(), cutFW)
	}
	after(full, all)
	want := full.since(0)
	if n := strings.Count(strings.Join(want, " "), "N,N,N"); n != 8 {
		t.Fatalf("%d padded rows, want 8: %q", n, want)
	}

	for _, par := range []int{1, 2} {
		var got []string
		for _, r := range full.out.rows[:cut] {
			got = append(got, fmtJoinRow(r))
		}
		total := 0
		for sub := 0; sub < par; sub++ {
			rd := newJoinDriver(t, spec)
			r := memStateReader{st: st, subtask: sub, parallel: par}
			rd.restore(r)
			if rd.j.wm != [2]int64{100, 95} || rd.j.outWM != cutFW {
				t.Fatalf("restored watermarks %v, forwarding %d", rd.j.wm, rd.j.outWM)
			}
			for s := range rd.j.side {
				for key := range rd.j.side[s].keys {
					if !r.Owns(key) {
						t.Fatalf("parallelism %d task %d restored key %x it does not own", par, sub, key)
					}
				}
			}
			total += rd.j.StateRows()
			if rd.j.StateRows() > 0 && rd.j.seq < 3 {
				t.Fatalf("sequence %d not restored", rd.j.seq)
			}
			// A restored row is not written again unless it changes.
			st2 := &memState{kv: map[string][]byte{}}
			if err := rd.j.Snapshot(st2); err != nil || len(st2.kv) != 0 {
				t.Fatalf("snapshot right after restore wrote %d records (%v)", len(st2.kv), err)
			}
			after(rd, r.Owns)
			for _, row := range rd.out.rows {
				got = append(got, fmtJoinRow(row))
			}
		}
		if total != 24 {
			t.Fatalf("parallelism %d restored %d rows, want 24", par, total)
		}
		sort.Strings(got)
		wantRows(t, fmt.Sprintf("parallelism %d", par), got, want)
	}
}

// countingWriter applies a snapshot to a store and counts it.
type countingWriter struct {
	st         *memState
	puts, dels int
}

func (w *countingWriter) Put(k, v []byte) { w.puts++; w.st.Put(k, v) }
func (w *countingWriter) Delete(k []byte) { w.dels++; w.st.Delete(k) }
func (w *countingWriter) Full() bool      { return w.st.full }

// Incremental snapshots: a row stored and expired between two checkpoints
// is never written; a written row that expires is deleted; a newly matched
// left row is rewritten; nothing unchanged is rewritten.
func TestIntervalJoinIncrementalSnapshot(t *testing.T) {
	d := newJoinDriver(t, joinSpec(plan.LeftJoin, 0, 10, nil))
	st := &memState{kv: map[string][]byte{}}
	snap := func() *countingWriter {
		t.Helper()
		w := &countingWriter{st: st}
		if err := d.j.Snapshot(w); err != nil {
			t.Fatal(err)
		}
		again := &countingWriter{st: st}
		if err := d.j.Snapshot(again); err != nil {
			t.Fatal(err)
		}
		if again.puts+again.dels != 0 {
			t.Fatalf("a snapshot with nothing changed wrote %d, deleted %d", again.puts, again.dels)
		}
		if st.badDeletes != 0 || st.rowRecords() != d.j.StateRows() {
			t.Fatalf("store: %d row records (operator %d), %d bad deletes", st.rowRecords(), d.j.StateRows(), st.badDeletes)
		}
		return w
	}
	d.row(sideLeft, 0, jr(1, 100, 0))
	d.row(sideLeft, 1, jr(2, 100, 0))
	if w := snap(); w.puts != 2 || w.dels != 0 {
		t.Fatalf("first snapshot: %d puts, %d deletes; want 2, 0", w.puts, w.dels)
	}
	d.row(sideRight, 0, jr(1, 95, 0)) // matches left k=1
	d.row(sideLeft, 2, jr(3, 100, 0))
	d.wm(sideRight, 100)
	// Left k=1 rewritten (matched), left k=3 and the right row new, the
	// watermarks.
	if w := snap(); w.puts != 4 || w.dels != 0 {
		t.Fatalf("second snapshot: %d puts, %d deletes; want 4, 0", w.puts, w.dels)
	}
	d.row(sideLeft, 3, jr(4, 100, 0)) // stored, expires before the next snapshot
	d.wm(sideRight, 101)              // the four left rows expire
	if d.j.StateRows() != 1 {
		t.Fatalf("%d rows held, want the right row", d.j.StateRows())
	}
	wantRows(t, "padded", d.since(1), sorted("2,100,0|N,N,N", "3,100,0|N,N,N", "4,100,0|N,N,N"))
	if w := snap(); w.puts != 1 || w.dels != 3 {
		t.Fatalf("third snapshot: %d puts, %d deletes; want 1 (watermarks), 3", w.puts, w.dels)
	}
}

// Without checkpoints the dirty list does not grow without bound.
func TestIntervalJoinDirtyCompaction(t *testing.T) {
	d := newJoinDriver(t, joinSpec(plan.InnerJoin, 0, 0, nil))
	for i := int64(0); i < 10000; i++ {
		d.row(sideLeft, i, jr(i%10, i, 0))
		d.wm(sideRight, i+1)
		d.wm(sideLeft, i+1)
	}
	if d.j.StateRows() != 0 || len(d.j.dirty) > 2100 {
		t.Fatalf("%d rows held, %d dirty entries", d.j.StateRows(), len(d.j.dirty))
	}
}

// uniqueIDs fails when two output rows share a row id.
func uniqueIDs(t *testing.T, name string, meta []RowMeta) {
	t.Helper()
	ids := map[string]bool{}
	for _, m := range meta {
		if ids[m.ID] {
			t.Fatalf("%s: duplicate row id %x", name, m.ID)
		}
		ids[m.ID] = true
	}
}
