package op

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// The stream (left) is (k, ts, v), the table (right) (k, ts, w) with
// PRIMARY KEY k and versions on ts, as in join_test.go.
func temporalSpec(kind plan.JoinKind, asOf bool, residual plan.Expr) *plan.TemporalJoin {
	s := &plan.TemporalJoin{Kind: kind, AsOf: asOf, LeftKeys: []int{0}, RightKeys: []int{0}, LeftTime: -1, RightTime: -1,
		Residual: residual, Left: joinLeftSchema, Right: joinRightSchema,
		Out: append(append(plan.Schema{}, joinLeftSchema...), joinRightSchema...)}
	if asOf {
		s.LeftTime, s.RightTime = 1, 1
	}
	return s
}

// tjDriver feeds a temporal join and checks every call's output: rows are
// stamped with the watermark forwarded before them and, input being on
// time, none has a left time behind it; an AS OF row's version is not
// newer than its left row.
// tjDriver drives a temporal join (output time column 1; with AS OF a
// joined version is never newer than its row).
type tjDriver struct {
	sideDriver
	j *temporalJoin
}

func newTJDriver(t *testing.T, spec *plan.TemporalJoin) *tjDriver {
	t.Helper()
	j, err := newTemporalJoin(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	d := &tjDriver{sideDriver: newSideDriver(t, j, spec.LeftKeys, spec.RightKeys, 1), j: j}
	d.extra = func(r plan.Row) bool { return !spec.AsOf || r[4].IsNull() || r[4].I <= r[1].I }
	return d
}

func (d *tjDriver) restore(r StateReader) { d.t.Helper(); d.restoreOp(r, &d.j.outWM) }

func (d *tjDriver) left(off int64, r plan.Row) { d.t.Helper(); d.send(sideLeft, off, r, Insert) }
func (d *tjDriver) up(off int64, r plan.Row)   { d.t.Helper(); d.send(sideRight, off, r, Upsert) }

// del sends a delete of key k at time ts (the other columns NULL).
func (d *tjDriver) del(off, k, ts int64) {
	d.t.Helper()
	r := jrn(k, ts, 0)
	r[2] = plan.Null
	d.send(sideRight, off, r, Delete)
}

func (d *tjDriver) rows(t *testing.T, what string, want int) {
	t.Helper()
	if n := d.j.StateRows(); n != want {
		t.Fatalf("%s: %d rows held, want %d", what, n, want)
	}
}

// AS OF picks the newest version at or before the row's time: before the
// first version, at and after each boundary, a delete version, equal
// times (the later arrival wins), versions arriving out of time order.
func TestTemporalJoinAsOfVersions(t *testing.T) {
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			d := newTJDriver(t, temporalSpec(kind, true, nil))
			d.up(0, jr(1, 200, 2))
			d.up(1, jr(1, 100, 1))
			d.del(2, 1, 300)
			d.up(3, jr(1, 400, 4))
			d.up(4, jr(1, 500, 5))
			d.up(5, jr(1, 500, 6)) // same time, later: wins
			d.up(6, jr(1, 600, 7))
			d.del(7, 1, 600) // same time, later: wins
			d.up(8, jr(2, 100, 8))
			for i, ts := range []int64{99, 100, 150, 199, 200, 299, 300, 350, 399, 400, 499, 500, 599, 600, 700} {
				d.left(int64(i), jr(1, ts, ts))
			}
			d.left(100, jr(2, 50, 0))
			d.left(101, jr(2, 1000, 1))
			d.left(102, jr(3, 1000, 2))
			if len(d.out.rows) != 0 {
				t.Fatalf("emitted %q before the right watermark", d.since(0))
			}
			d.both(math.MaxInt64)
			want := []string{
				"1,100,100|1,100,1", "1,150,150|1,100,1", "1,199,199|1,100,1",
				"1,200,200|1,200,2", "1,299,299|1,200,2",
				"1,400,400|1,400,4", "1,499,499|1,400,4",
				"1,500,500|1,500,6", "1,599,599|1,500,6",
				"2,1000,1|2,100,8",
			}
			if kind == plan.LeftJoin {
				want = append(want, "1,99,99|N,N,N", "1,300,300|N,N,N", "1,350,350|N,N,N", "1,399,399|N,N,N",
					"1,600,600|N,N,N", "1,700,700|N,N,N", "2,50,0|N,N,N", "3,1000,2|N,N,N")
			}
			wantRows(t, "as of", d.since(0), sorted(want...))
			d.rows(t, "at end", 0)
			// Offset: the left row's; ID: (left offset, version offset or
			// -1); Key: the join key.
			verOff := map[int64]int64{2: 0, 1: 1, 4: 3, 6: 5, 8: 8}
			for i, m := range d.out.meta {
				r := d.out.rows[i]
				lOff := int64(0)
				for k, ts := range []int64{99, 100, 150, 199, 200, 299, 300, 350, 399, 400, 499, 500, 599, 600, 700} {
					if r[0].I == 1 && r[1].I == ts {
						lOff = int64(k)
					}
				}
				if r[0].I != 1 {
					lOff = 100 + r[2].I
				}
				rOff := int64(-1)
				if !r[5].IsNull() {
					rOff = verOff[r[5].I]
				}
				id := string(value.AppendValue(value.AppendValue(nil, plan.Int(lOff)), plan.Int(rOff)))
				if m.Offset != lOff || m.ID != id || m.Key != string(value.EncodeKey(nil, r, []int{0})) {
					t.Fatalf("row %s: offset %d id %x key %x", fmtJoinRow(r), m.Offset, m.ID, m.Key)
				}
			}
		})
	}
}

// A row waits until the right watermark passes its time (a version at
// exactly the watermark is still on time), then joins what arrived
// meanwhile; a row the right watermark has passed joins at once.
func TestTemporalJoinWaits(t *testing.T) {
	d := newTJDriver(t, temporalSpec(plan.InnerJoin, true, nil))
	d.up(0, jr(1, 50, 1))
	d.wm(sideRight, 60)
	d.left(0, jr(1, 100, 0))
	d.wm(sideLeft, 1000)
	if d.fw != 60 {
		t.Fatalf("forwarded %d, want min(1000, 60)", d.fw)
	}
	d.up(1, jr(1, 90, 2))
	d.wm(sideRight, 100)
	if len(d.out.rows) != 0 {
		t.Fatalf("emitted %q at right watermark 100: a version at 100 may still come", d.since(0))
	}
	d.up(2, jr(1, 100, 3))
	d.up(3, jr(1, 101, 4))
	d.rows(t, "waiting", 3) // the row, versions 100 and 101 (50 and 90 pruned: 100 is the base at bound 100)
	d.wm(sideRight, 101)
	wantRows(t, "released", d.since(0), sorted("1,100,0|1,100,3"))
	if d.out.meta[0].WM != 100 || d.fw != 101 {
		t.Fatalf("released row stamped %d (want 100), forwarded %d (want 101)", d.out.meta[0].WM, d.fw)
	}
	d.rows(t, "after release", 1) // 101 is the base at bound 101
	// Already passed: at once.
	d.wm(sideRight, 1001)
	d.left(1, jr(1, 1000, 1))
	wantRows(t, "at once", d.since(1), sorted("1,1000,1|1,101,4"))
	d.rows(t, "after the row", 1)
	// Rows wait in time order, across keys.
	d.left(2, jr(2, 1300, 2))
	d.left(3, jr(1, 1200, 3))
	d.left(4, jr(1, 1100, 4))
	d.up(4, jr(2, 1250, 5))
	d.wm(sideRight, 1201)
	if got := d.since(2); len(got) != 2 || fmtJoinRow(d.out.rows[2]) != "1,1100,4|1,101,4" {
		t.Fatalf("released %q out of time order", got)
	}
	d.wm(sideRight, math.MaxInt64)
	wantRows(t, "at the right end", d.since(4), sorted("2,1300,2|2,1250,5"))
	if d.fw != 1000 {
		t.Fatalf("forwarded %d, want the left watermark 1000", d.fw)
	}
}

// LEFT pads a row with no version, a delete version or a failing
// residual; rows that cannot match pad at once; table rows with a NULL key
// or time are dropped.
func TestTemporalJoinLeftPadding(t *testing.T) {
	d := newTJDriver(t, temporalSpec(plan.LeftJoin, true, residualVLessW())) // l.v < r.w
	d.up(0, jrn(nullInt, 100, 1))
	d.up(1, jrn(1, nullInt, 1))
	d.rows(t, "NULL table rows", 0)
	d.up(2, jr(1, 100, 5))
	d.del(3, 2, 100)
	d.left(0, jrn(nullInt, 200, 0))
	d.left(1, jrn(1, nullInt, 0))
	wantRows(t, "at once", d.since(0), sorted("N,200,0|N,N,N", "1,N,0|N,N,N"))
	d.left(2, jr(1, 200, 4)) // 4 < 5
	d.left(3, jr(1, 201, 5)) // 5 < 5 fails
	d.left(4, jr(2, 200, 0)) // deleted
	d.left(5, jr(3, 200, 0)) // no version
	d.left(6, jr(1, 50, 0))  // before the first version
	d.both(math.MaxInt64)
	wantRows(t, "at end", d.since(2), sorted("1,200,4|1,100,5", "1,201,5|N,N,N", "2,200,0|N,N,N", "3,200,0|N,N,N", "1,50,0|N,N,N"))
	d.rows(t, "at end", 0)
	// INNER drops them all but the match.
	d = newTJDriver(t, temporalSpec(plan.InnerJoin, true, residualVLessW()))
	d.up(0, jr(1, 100, 5))
	d.del(1, 2, 100)
	d.left(0, jrn(nullInt, 200, 0))
	d.left(1, jrn(1, nullInt, 0))
	d.left(2, jr(1, 200, 4))
	d.left(3, jr(1, 201, 5))
	d.left(4, jr(2, 200, 0))
	d.both(math.MaxInt64)
	wantRows(t, "inner", d.since(0), sorted("1,200,4|1,100,5"))
}

// Without AS OF a row joins the latest version at once; upserts replace
// it, deletes remove it; the forwarded watermark is the left one.
func TestTemporalJoinLatest(t *testing.T) {
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			d := newTJDriver(t, temporalSpec(kind, false, nil))
			d.left(0, jr(1, 10, 0))
			d.up(0, jr(1, 500, 1))
			d.left(1, jr(1, 11, 1)) // time does not matter
			d.up(1, jr(1, 5, 2))    // nor does the version's: the latest arrival
			d.left(2, jr(1, 12, 2))
			d.del(2, 1, 0)
			d.rows(t, "deleted", 0)
			d.left(3, jr(1, 13, 3))
			d.up(3, jr(1, 7, 3))
			d.up(4, jr(2, 7, 4))
			d.rows(t, "two keys", 2)
			d.left(4, jr(1, 14, 4))
			d.left(5, jrn(nullInt, 15, 5))
			d.left(6, jrn(2, nullInt, 6)) // a NULL time joins: no time here
			d.wm(sideRight, 5)
			d.wm(sideLeft, 14)
			if d.fw != 14 {
				t.Fatalf("forwarded %d, want the left watermark 14", d.fw)
			}
			d.wm(sideRight, 100)
			if d.fw != 14 {
				t.Fatalf("forwarded %d after a right advance, want 14", d.fw)
			}
			// Once the stream has ended, nothing is kept.
			d.wm(sideLeft, math.MaxInt64)
			d.rows(t, "stream ended", 0)
			d.up(5, jr(3, 7, 5))
			d.rows(t, "a table row after the stream ended", 0)
			want := []string{"1,11,1|1,500,1", "1,12,2|1,5,2", "1,14,4|1,7,3", "2,N,6|2,7,4"}
			if kind == plan.LeftJoin {
				want = append(want, "1,10,0|N,N,N", "1,13,3|N,N,N", "N,15,5|N,N,N")
			}
			wantRows(t, "latest", d.since(0), sorted(want...))
			d.both(math.MaxInt64)
			d.rows(t, "at end", 0)
			if d.fw != math.MaxInt64 {
				t.Fatalf("forwarded %d at end", d.fw)
			}
		})
	}
}

// Versions older than the newest one at or before min(leftWM, rightWM)
// are dropped, and a delete at the bound with them; a row waiting below
// the left watermark keeps its version.
func TestTemporalJoinPruning(t *testing.T) {
	d := newTJDriver(t, temporalSpec(plan.LeftJoin, true, nil))
	d.up(0, jr(1, 100, 1))
	d.up(1, jr(1, 200, 2))
	d.up(2, jr(1, 300, 3))
	d.wm(sideRight, 100)
	d.left(0, jr(1, 150, 0)) // waits
	d.wm(sideLeft, 250)
	d.rows(t, "bound 100", 4)
	d.wm(sideRight, 151)
	wantRows(t, "released", d.since(0), sorted("1,150,0|1,100,1"))
	d.rows(t, "bound 151", 3) // 100 is still the base
	d.wm(sideRight, 250)
	d.rows(t, "bound 250", 2) // 200, 300
	d.del(3, 1, 260)
	d.rows(t, "delete at 260", 3)
	d.wm(sideLeft, 259)
	d.rows(t, "bound 250 still", 3)
	d.wm(sideRight, 400)
	d.wm(sideLeft, 260)
	d.rows(t, "bound 260: the delete base goes too", 1) // 300
	d.left(1, jr(1, 270, 1))
	d.left(2, jr(1, 300, 2))
	wantRows(t, "after the delete", d.since(1), sorted("1,270,1|N,N,N", "1,300,2|1,300,3"))
	// A version arriving at or below the bound (on time: >= rightWM) is
	// the new base; an equal-time one replaces the base.
	d.wm(sideLeft, 500)
	d.rows(t, "bound 400", 1)
	d.up(4, jr(1, 400, 4))
	d.rows(t, "new base", 1)
	d.up(5, jr(1, 400, 5))
	d.rows(t, "replaced base", 1)
	// A key whose only version is a delete at the bound is gone.
	d.del(6, 2, 400)
	d.rows(t, "delete of another key", 1)
	d.wm(sideRight, 501)
	d.left(3, jr(1, 500, 3))
	d.left(4, jr(2, 500, 4))
	wantRows(t, "new base", d.since(3), sorted("1,500,3|1,400,5", "2,500,4|N,N,N"))

	// Many keys and versions, watermarks moving along: state stays small,
	// and is empty at the end.
	d = newTJDriver(t, temporalSpec(plan.InnerJoin, true, nil))
	maxRows := 0
	for i := int64(0); i < 5000; i++ {
		k := i % 7
		if i%13 == 0 {
			d.del(i, k, 10*i)
		} else {
			d.up(i, jr(k, 10*i, i))
		}
		d.left(i, jr(k, 10*i+5, i))
		d.wm(sideRight, 10*i)
		d.wm(sideLeft, 10*i)
		maxRows = max(maxRows, d.j.StateRows())
	}
	if maxRows > 7+2 || len(d.j.prunes) > 20 {
		t.Fatalf("state grew to %d rows (%d prune entries)", maxRows, len(d.j.prunes))
	}
	d.both(math.MaxInt64)
	d.rows(t, "at end", 0)
	if len(d.j.versions) != 0 || len(d.j.prunes) != 0 || len(d.j.dirty) > 2100 {
		t.Fatalf("at end: %d keys, %d prune entries, %d dirty", len(d.j.versions), len(d.j.prunes), len(d.j.dirty))
	}
}

// tjEvent is a join event; del marks a table row as a delete.
type tjEvent struct {
	joinEvent
	del bool
}

func (d *tjDriver) apply(e tjEvent) {
	d.t.Helper()
	switch {
	case e.side < 0:
		d.both(e.wm)
	case e.row == nil:
		d.wm(e.side, e.wm)
	case e.side == sideRight && e.del:
		d.send(sideRight, e.off, e.row, Delete)
	case e.side == sideRight:
		d.send(sideRight, e.off, e.row, Upsert)
	default:
		d.send(sideLeft, e.off, e.row, Insert)
	}
}

// naiveTemporal evaluates the join over the events in order: AS OF scans
// every table row with the key and time <= l.time, the later arrival
// winning at equal times; latest takes the table row of the key that
// arrived last before the left row.
func naiveTemporal(t *testing.T, spec *plan.TemporalJoin, evs []tjEvent) []string {
	var res Eval
	if spec.Residual != nil {
		var err error
		if res, err = Compile(spec.Residual, &Env{}); err != nil {
			t.Fatal(err)
		}
	}
	var table []tjEvent // non-NULL key (and time, AS OF)
	for _, e := range evs {
		if e.side == sideRight && e.row != nil && !e.row[0].IsNull() && !(spec.AsOf && e.row[1].IsNull()) {
			table = append(table, e)
		}
	}
	var out []string
	seen := 0 // latest: table rows arrived so far
	for _, e := range evs {
		if e.side == sideRight && e.row != nil && !e.row[0].IsNull() {
			seen++
		}
		if e.side != sideLeft || e.row == nil {
			continue
		}
		l := e.row
		var ver *tjEvent
		if !l[0].IsNull() && !(spec.AsOf && l[1].IsNull()) {
			for i := range table {
				v := &table[i]
				if v.row[0].I != l[0].I {
					continue
				}
				if spec.AsOf {
					if v.row[1].I <= l[1].I && (ver == nil || v.row[1].I >= ver.row[1].I) {
						ver = v
					}
				} else if i < seen {
					ver = v
				}
			}
		}
		if ver != nil && !ver.del {
			row := append(append(plan.Row{}, l...), ver.row...)
			if res == nil || res(row).True() {
				out = append(out, fmtJoinRow(row))
				continue
			}
		}
		if spec.Kind == plan.LeftJoin {
			out = append(out, fmtJoinRow(append(append(plan.Row{}, l...), plan.Null, plan.Null, plan.Null)))
		}
	}
	sort.Strings(out)
	return out
}

// Random streams and tables, interleaved at random (each side's
// watermarks on time), against the naive evaluation; halfway through, a
// checkpoint (after several incremental ones) is restored at parallelism 1
// or 2 and the restored operators finish the input.
func TestTemporalJoinProperty(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		kind := plan.InnerJoin
		if seed%2 == 0 {
			kind = plan.LeftJoin
		}
		asOf := seed%5 != 0
		var residual plan.Expr
		if rng.IntN(3) == 0 {
			residual = residualSumMod3()
		}
		spec := temporalSpec(kind, asOf, residual)
		_, levs := genSide(rng, sideLeft, rng.IntN(60))
		_, revs := genSide(rng, sideRight, rng.IntN(60))
		var evs []tjEvent
		for len(levs)+len(revs) > 0 {
			if len(revs) == 0 || len(levs) > 0 && rng.IntN(2) == 0 {
				evs, levs = append(evs, tjEvent{joinEvent: levs[0]}), levs[1:]
			} else {
				evs, revs = append(evs, tjEvent{joinEvent: revs[0], del: revs[0].row != nil && rng.IntN(4) == 0}), revs[1:]
			}
		}
		evs = append(evs, tjEvent{joinEvent: joinEvent{side: -1, wm: math.MaxInt64}})
		want := naiveTemporal(t, spec, evs)
		name := fmt.Sprintf("seed %d %s as_of %v residual %v", seed, kind, asOf, residual != nil)

		d := newTJDriver(t, spec)
		st := &memState{kv: map[string][]byte{}}
		snap := func() {
			t.Helper()
			if err := d.j.Snapshot(st); err != nil {
				t.Fatal(err)
			}
			if st.rowRecords() != d.j.StateRows() || st.badDeletes != 0 {
				t.Fatalf("%s: store holds %d rows (%d bad deletes), operator %d", name, st.rowRecords(), st.badDeletes, d.j.StateRows())
			}
		}
		cut := rng.IntN(len(evs))
		for _, e := range evs[:cut] {
			d.apply(e)
			if rng.IntN(8) == 0 {
				snap()
			}
		}
		snap()
		atCut := len(d.out.rows)
		for _, e := range evs[cut:] {
			d.apply(e)
		}
		wantRows(t, name, d.since(0), want)
		if d.j.StateRows() != 0 || d.fw != math.MaxInt64 {
			t.Fatalf("%s: at end %d rows held, forwarded %d", name, d.j.StateRows(), d.fw)
		}
		uniqueIDs(t, name, d.out.meta)

		par := 1 + int(seed%3)%2
		var restored []string
		for _, r := range d.out.rows[:atCut] {
			restored = append(restored, fmtJoinRow(r))
		}
		held := 0
		for sub := 0; sub < par; sub++ {
			rd := newTJDriver(t, spec)
			rs := memStateReader{st: st, subtask: sub, parallel: par}
			rd.restore(rs)
			held += rd.j.StateRows()
			if rd.j.wm != recordedWM(st) {
				t.Fatalf("%s: restored watermarks %v", name, rd.j.wm)
			}
			for key := range rd.j.versions {
				if !rs.Owns(key) {
					t.Fatalf("%s: task %d/%d restored key %x it does not own", name, sub, par, key)
				}
			}
			for _, e := range evs[cut:] {
				if e.row != nil && !rs.Owns(string(value.EncodeKey(nil, e.row, []int{0}))) {
					continue
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

// A hand-made round trip at parallelism 1 and 2: waiting rows, versions
// (a delete among them), watermarks and sequence numbers survive; each
// task restores the keys it owns; nothing is rewritten unless it changes;
// the restored run emits what the uninterrupted one does.
func TestTemporalJoinSnapshotRestore(t *testing.T) {
	spec := temporalSpec(plan.LeftJoin, true, nil)
	const keys = 8
	before := func(d *tjDriver) {
		for k := int64(0); k < keys; k++ {
			d.up(3*k, jr(k, 100, k))
			d.up(3*k+1, jr(k, 200, 10+k))
			d.del(3*k+2, k, 300)
			d.left(2*k, jr(k, 250, 0))   // waits; joins the version at 200
			d.left(2*k+1, jr(k, 350, 1)) // waits; the delete at 300, or for even keys...
		}
		d.wm(sideLeft, 150)
		d.wm(sideRight, 120)
	}
	after := func(d *tjDriver, owns func(string) bool) {
		for k := int64(0); k < keys; k++ {
			r := jr(k, 320, 20+k)
			if owns(string(value.EncodeKey(nil, r, []int{0}))) {
				if k%2 == 0 {
					d.up(100+k, r) // ... this version at 320
				}
				d.left(100+k, jr(k, 160, 2)) // waits; joins the version at 100
			}
		}
		d.wm(sideRight, 300)
		d.both(math.MaxInt64)
	}
	all := func(string) bool { return true }
	full := newTJDriver(t, spec)
	before(full)
	st := &memState{kv: map[string][]byte{}}
	if err := full.j.Snapshot(st); err != nil {
		t.Fatal(err)
	}
	cut, cutFW := len(full.out.rows), full.fw
	if st.rowRecords() != 5*keys || cutFW != 120 {
		t.Fatalf("%d row records (want %d), forwarding %d (want 120)", st.rowRecords(), 5*keys, cutFW)
	}
	after(full, all)
	want := full.since(0)
	if n := strings.Count(strings.Join(want, " "), "N,N,N"); n != keys/2 {
		t.Fatalf("%d padded rows, want %d: %q", n, keys/2, want)
	}
	for _, par := range []int{1, 2} {
		var got []string
		for _, r := range full.out.rows[:cut] {
			got = append(got, fmtJoinRow(r))
		}
		total := 0
		for sub := 0; sub < par; sub++ {
			rd := newTJDriver(t, spec)
			r := memStateReader{st: st, subtask: sub, parallel: par}
			rd.restore(r)
			if rd.j.wm != [2]int64{150, 120} || rd.fw != cutFW {
				t.Fatalf("restored watermarks %v, forwarding %d", rd.j.wm, rd.fw)
			}
			for key := range rd.j.versions {
				if !r.Owns(key) {
					t.Fatalf("parallelism %d task %d restored key %x it does not own", par, sub, key)
				}
			}
			for _, it := range rd.j.waiting {
				if !r.Owns(it.row.key) {
					t.Fatalf("parallelism %d task %d restored a waiting row of key %x it does not own", par, sub, it.row.key)
				}
			}
			total += rd.j.StateRows()
			if rd.j.StateRows() > 0 && rd.j.seq < 5 {
				t.Fatalf("sequence %d not restored", rd.j.seq)
			}
			st2 := &memState{kv: map[string][]byte{}}
			if err := rd.j.Snapshot(st2); err != nil || len(st2.kv) != 0 {
				t.Fatalf("snapshot right after restore wrote %d records (%v)", len(st2.kv), err)
			}
			after(rd, r.Owns)
			for _, row := range rd.out.rows {
				got = append(got, fmtJoinRow(row))
			}
		}
		if total != 5*keys {
			t.Fatalf("parallelism %d restored %d rows, want %d", par, total, 5*keys)
		}
		sort.Strings(got)
		wantRows(t, fmt.Sprintf("parallelism %d", par), got, want)
	}
}

// Incremental snapshots: a version pruned before any checkpoint is never
// written; a written one that is pruned, and a released row, are deleted;
// nothing unchanged is rewritten.
func TestTemporalJoinIncrementalSnapshot(t *testing.T) {
	d := newTJDriver(t, temporalSpec(plan.InnerJoin, true, nil))
	st := &memState{kv: map[string][]byte{}}
	snap := func(puts, dels int) {
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
		if w.puts != puts || w.dels != dels {
			t.Fatalf("snapshot: %d puts, %d deletes; want %d, %d", w.puts, w.dels, puts, dels)
		}
	}
	d.up(0, jr(1, 100, 0))
	d.left(0, jr(1, 150, 0))
	snap(2, 0)
	d.up(1, jr(1, 110, 1))
	d.up(2, jr(1, 120, 2))
	d.wm(sideLeft, 125)
	d.wm(sideRight, 125) // bound 125: 100 pruned (written), 110 pruned (never written)
	snap(2, 1)           // 120 and the watermarks; 100 deleted
	d.wm(sideRight, 151) // the row is released
	wantRows(t, "released", d.since(0), sorted("1,150,0|1,120,2"))
	snap(1, 1) // the watermarks; the row deleted
}

// Specs the operator refuses.
func TestTemporalJoinBadSpec(t *testing.T) {
	s := temporalSpec(plan.InnerJoin, true, nil)
	s.RightTime = -1
	if _, err := newTemporalJoin(s, &Env{}, &Counters{}); err == nil {
		t.Fatal("AS OF without a version time accepted")
	}
	s = temporalSpec(plan.InnerJoin, false, nil)
	s.RightKeys = []int{0, 1}
	if _, err := newTemporalJoin(s, &Env{}, &Counters{}); err == nil {
		t.Fatal("mismatched keys accepted")
	}
	j, _ := newTemporalJoin(temporalSpec(plan.InnerJoin, false, nil), &Env{}, &Counters{})
	if err := j.Process(&Batch{}, &joinCollector{}); err == nil {
		t.Fatal("Process accepted rows")
	}
	if err := j.ProcessSide(2, &Batch{}, &joinCollector{}); err == nil {
		t.Fatal("side 2 accepted")
	}
}
