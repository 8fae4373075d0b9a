package e2e

// The changelog oracle (issue 18): aggregations that read an updating
// input, written from the contract rather than from the engine.
//
//   - An aggregation (or a filter, a projection) over a running aggregate
//     (a subquery or a view) is, once the input so far is processed, the
//     batch evaluation of the inner query over the input, then of the outer
//     query over the inner query's rows (Evaluate, then groupAll,
//     filterRows, ...): nothing here knows how the engine takes rows back.
//     The result of a query built on the running aggregate is what it
//     would be over the inner query's current rows, whatever rows the inner
//     query showed before: a group of the outer query whose rows all left it
//     is gone, HAVING is judged on the group as it is now, a row that no
//     longer passes WHERE is gone.
//   - A windowed aggregation over a PRIMARY KEY table reads the table's
//     changes: a row of key id replaces id's previous row (the last row of
//     id in log order, unless that was a delete), taking it out of the
//     windows it was in and putting the new row into its own; a delete
//     takes the previous row out. Each change is judged against the
//     table's watermark before the row, as an appended row is (oracle.go):
//     a change into a window with window_end + allowed_lateness <= the
//     watermark is dropped (the closed window keeps the row taken back, or
//     never gets the row put in), and a table row with at least one dropped
//     change counts once in late_rows. A window whose rows have all been
//     taken out is gone. Without dropped changes that is the batch
//     aggregation over the table's final state (tableState: the latest row
//     per key, deleted keys gone); TestChangelogOracleUpsertWindows checks
//     that the two agree.
//
// The witnesses (runningWitnesses, upsertWitnesses) say, from the oracle's
// view of the input only, that the input really takes back what the tests
// are about: an outer MIN's current extreme, the last row of a COUNT
// DISTINCT value, a group passing HAVING, a row passing WHERE, a row
// moving between windows. A test whose input has none of these would pass
// against an engine that never takes anything back.

import (
	"fmt"
	"sort"
	"testing"
)

// EvaluateUpsertTable runs the windowed aggregation q over the changelog
// log of a PRIMARY KEY table (key column key, read from src): see the top
// of this file. Rows with "_op": "delete" carry only the key and the time.
func EvaluateUpsertTable(src Source, key string, q Query, log []Row) Result {
	if err := q.check(); err != nil {
		panic(fmt.Sprintf("oracle: invalid query: %v", err))
	}
	if !q.Window.windowed() || q.Window.Kind == Session {
		panic("oracle: EvaluateUpsertTable needs a TUMBLE or HOP window")
	}
	res := Result{Columns: q.outputColumns(), Key: q.key()}
	wm := watermark{delay: src.WatermarkDelay}
	current := map[string]Row{} // key -> the table's row for it now
	// Each window's rows, by the table key of the row: a key has at most
	// one row in an open window (the row taken back from a closed window
	// stays there, but the closed window takes no new row).
	type cell struct {
		g       *group
		members map[string]Row
	}
	index := map[string]*cell{}
	var cells []*cell
	for i, r := range log {
		if r[key] == nil {
			panic(fmt.Sprintf("oracle: table row %d has no key %q", i, key))
		}
		id := keyPart(r[key])
		dropped := false
		change := func(row Row, insert bool) {
			if !q.passes(row) {
				return
			}
			for _, w := range assignWindows(q.Window, timeOf(row, src.TimeCol)) {
				if wm.passed(w.end, src.AllowedLateness) {
					dropped = true
					continue
				}
				keys := q.groupValues(row)
				k := canonKey(append([]any{w.start, w.end}, keys...))
				c := index[k]
				if c == nil {
					c = &cell{g: &group{w: w, keys: keys}, members: map[string]Row{}}
					index[k] = c
					cells = append(cells, c)
				}
				if insert {
					if _, dup := c.members[id]; dup {
						panic(fmt.Sprintf("oracle: key %s twice in window %v", id, w))
					}
					c.members[id] = row
				} else {
					if _, ok := c.members[id]; !ok {
						panic(fmt.Sprintf("oracle: taking key %s out of window %v, which does not hold it", id, w))
					}
					delete(c.members, id)
				}
			}
		}
		if old := current[id]; old != nil {
			change(old, false)
		}
		if isDelete(r) {
			delete(current, id)
		} else {
			row := Row{}
			for c, v := range r {
				if c != "_op" {
					row[c] = v
				}
			}
			current[id] = row
			change(row, true)
		}
		if dropped {
			res.Late++
		}
		wm.observe(timeOf(r, src.TimeCol))
	}
	for _, c := range cells {
		if len(c.members) == 0 {
			continue // every row taken out: the window is gone
		}
		if q.OnWindowClose && !wm.passed(c.g.w.end, src.AllowedLateness) {
			continue
		}
		for _, id := range sortedKeys(c.members) {
			c.g.rows = append(c.g.rows, c.members[id])
		}
		out := q.outputRow(c.g)
		if q.Having != nil && !q.Having(out) {
			continue
		}
		for _, a := range q.Aggs {
			if a.Hidden {
				delete(out, a.As)
			}
		}
		res.Rows = append(res.Rows, out)
	}
	return res
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tableState is a PRIMARY KEY table's state after log: the last row of
// each key in log order (without _op), keys whose last row is a delete
// left out, in the order keys first appeared.
func tableState(key string, log []Row) []Row {
	last := map[string]Row{}
	var order []string
	for _, r := range log {
		id := keyPart(r[key])
		if _, seen := last[id]; !seen {
			order = append(order, id)
		}
		last[id] = r
	}
	var out []Row
	for _, id := range order {
		r := last[id]
		if isDelete(r) {
			continue
		}
		row := Row{}
		for c, v := range r {
			if c != "_op" {
				row[c] = v
			}
		}
		out = append(out, row)
	}
	return out
}

// batchOverState is the batch aggregation q over rows with nothing late:
// every row in its windows, every window shown (changes mode).
func batchOverState(src Source, q Query, rows []Row) Result {
	q.OnWindowClose = false
	return Evaluate(Source{TimeCol: src.TimeCol, WatermarkDelay: 1 << 60}, q, rows)
}

// upsertStats says what the changes of a PRIMARY KEY table's log do to a
// windowed query, from the oracle's view: upserts whose previous row is in
// another window (moved) or the same one (inPlace), upserts earlier than
// their previous row (back), deletes of a current
// row, deletes of a key without one (noop), keys inserted again after a
// delete (reinserted), windows that had rows and have none at the end
// (emptied), and rows with a dropped change (late).
type upsertStats struct {
	moved, back, inPlace, deletes, noop, reinserted, emptied, late int
}

func upsertWitnesses(src Source, key string, w Window, log []Row) upsertStats {
	var st upsertStats
	current := map[string]Row{}
	deleted := map[string]bool{}
	had := map[window]bool{}
	wm := watermark{delay: src.WatermarkDelay}
	winOf := func(r Row) window { return assignWindows(w, timeOf(r, src.TimeCol))[0] }
	for _, r := range log {
		id := keyPart(r[key])
		old := current[id]
		late := old != nil && wm.passed(winOf(old).end, src.AllowedLateness)
		if isDelete(r) {
			if old == nil {
				st.noop++
			} else {
				st.deletes++
			}
			delete(current, id)
			deleted[id] = true
		} else {
			late = late || wm.passed(winOf(r).end, src.AllowedLateness)
			if old != nil && tsOf(r) < tsOf(old) {
				st.back++
			}
			switch {
			case old != nil && winOf(old) == winOf(r):
				st.inPlace++
			case old != nil:
				st.moved++
			case deleted[id]:
				st.reinserted++
			}
			current[id] = r
			had[winOf(r)] = true
		}
		if late {
			st.late++
		}
		wm.observe(timeOf(r, src.TimeCol))
	}
	final := map[window]bool{}
	for _, r := range current {
		final[winOf(r)] = true
	}
	for win := range had {
		if !final[win] {
			st.emptied++
		}
	}
	return st
}

// runningStats says, for the outer aggregation GROUP BY n over an inner
// running aggregate GROUP BY k (n = COUNT(*) of k), which answers over the
// input so far depend on rows the inner query has taken back. An outer
// group n holds the inner rows of the keys with exactly n rows now; the
// keys with more than n rows passed through it (their n-th inner row was
// in it, then taken back). Counted over the outer groups that exist now:
// those whose MIN(lo) is above (MAX(hi) below) the extreme over every
// inner row ever in them (the current extreme was taken back), whose
// COUNT(DISTINCT d) lost a value (its last row taken back), whose COUNT(*)
// was above 1 and is 1 now (HAVING COUNT(*) > 1 passed, then failed); and
// the groups gone (every row taken back). Per key: an s that went down,
// and an s that was above 0 and is not now (WHERE s > 0 passed, then
// failed).
type runningStats struct {
	minTaken, maxTaken, distinctLost, havingLeft, groupsGone int
	sumDown, filterLeft                                      int
}

func (s runningStats) String() string {
	return fmt.Sprintf("outer groups whose MIN was taken back %d, MAX %d, COUNT(DISTINCT) value lost %d, left HAVING COUNT(*) > 1 %d, gone %d; keys whose SUM went down %d, left WHERE s > 0 %d",
		s.minTaken, s.maxTaken, s.distinctLost, s.havingLeft, s.groupsGone, s.sumDown, s.filterLeft)
}

// innerVersions evaluates the running aggregate inner (GROUP BY key) over
// log, one key at a time: versions[k][i] is key k's row after its first
// i+1 rows.
func innerVersions(inner Query, key string, log []Row) map[string][]Row {
	rowsOf := map[string][]Row{}
	versions := map[string][]Row{}
	for _, r := range log {
		k := keyPart(r[key])
		rowsOf[k] = append(rowsOf[k], r)
		res := Evaluate(Source{}, inner, rowsOf[k])
		if len(res.Rows) != 1 {
			panic(fmt.Sprintf("oracle: the inner query over key %s's rows gave %d rows", k, len(res.Rows)))
		}
		versions[k] = append(versions[k], res.Rows[0])
	}
	return versions
}

// runningWitnesses computes runningStats over log for inner, whose output
// has columns n (COUNT(*)), s, lo, hi, d, grouped by key.
func runningWitnesses(inner Query, key string, log []Row) runningStats {
	var st runningStats
	versions := innerVersions(inner, key, log)
	maxN := 0
	for _, vs := range versions {
		maxN = max(maxN, len(vs))
	}
	for n := 1; n <= maxN; n++ {
		var now, ever []Row
		for _, vs := range versions {
			if len(vs) >= n {
				ever = append(ever, vs[n-1])
				if len(vs) == n {
					now = append(now, vs[n-1])
				}
			}
		}
		if len(ever) == 0 {
			continue
		}
		if len(now) == 0 {
			st.groupsGone++
			continue
		}
		agg := func(rows []Row, f AggFunc, col string) any {
			return aggregate(Agg{As: col, Func: f, Arg: colRef(col)}, rows)
		}
		if agg(now, Min, "lo") != agg(ever, Min, "lo") {
			st.minTaken++
		}
		if agg(now, Max, "hi") != agg(ever, Max, "hi") {
			st.maxTaken++
		}
		if agg(now, CountDistinct, "d") != agg(ever, CountDistinct, "d") {
			st.distinctLost++
		}
		if len(now) == 1 && len(ever) > 1 {
			st.havingLeft++
		}
	}
	for _, vs := range versions {
		down, wasPositive := false, false
		for i, v := range vs {
			if i > 0 && bigint(v, "s") < bigint(vs[i-1], "s") {
				down = true
			}
			if i < len(vs)-1 && bigint(v, "s") > 0 {
				wasPositive = true
			}
		}
		if down {
			st.sumDown++
		}
		if wasPositive && bigint(vs[len(vs)-1], "s") <= 0 {
			st.filterLeft++
		}
	}
	return st
}

// Hand-computed cases. They need no server.

// kv is an input row of the running cases: key k, value v (no time).
func kv(k string, v int64) Row { return Row{"k": k, "v": v} }

// The inner running aggregate of the hand-computed cases and of
// changelog_test.go (changelogInnerSQL): per k, n rows, sum s, lo and hi,
// d distinct values.
var changelogInner = Query{GroupBy: []string{"k"}, Aggs: []Agg{
	{As: "n", Func: CountStar},
	{As: "s", Func: Sum, Arg: colRef("v")},
	{As: "lo", Func: Min, Arg: colRef("v")},
	{As: "hi", Func: Max, Arg: colRef("v")},
	{As: "d", Func: CountDistinct, Arg: colRef("v")},
}}

// changelogOuterAggs: GROUP BY n over changelogInner's rows, the
// hand-computed cases' outer query.
var changelogOuterAggs = []Agg{
	{As: "nkeys", Func: CountStar},
	{As: "total", Func: Sum, Arg: colRef("s")},
	{As: "lo", Func: Min, Arg: colRef("lo")},
	{As: "hi", Func: Max, Arg: colRef("hi")},
	{As: "dd", Func: CountDistinct, Arg: colRef("d")},
}

func TestChangelogOracleAggOverAgg(t *testing.T) {
	log := []Row{
		kv("a", 5),  // a: n1 s5 lo5 hi5 d1
		kv("b", -4), // b: n1 s-4 lo-4 hi-4 d1
		kv("c", 9),  // c: n1 s9 lo9 hi9 d1
		kv("a", -3), // a: n2 s2 lo-3 hi5 d2      (leaves n=1: its MIN -4 stays with b)
		kv("b", -4), // b: n2 s-8 lo-4 hi-4 d1    (leaves n=1: MIN there goes -4 -> 9)
		kv("d", 1),  // d: n1 s1 lo1 hi1 d1
		kv("c", 9),  // c: n2 s18 lo9 hi9 d1      (leaves n=1: MAX there goes 9 -> 1)
		kv("a", 0),  // a: n3 s2 lo-3 hi5 d3      (leaves n=2: d 2 was a's only: dd 1)
	}
	inner := Evaluate(Source{}, changelogInner, log)
	checkRows(t, inner, []Row{
		{"k": "a", "n": int64(3), "s": int64(2), "lo": int64(-3), "hi": int64(5), "d": int64(3)},
		{"k": "b", "n": int64(2), "s": int64(-8), "lo": int64(-4), "hi": int64(-4), "d": int64(1)},
		{"k": "c", "n": int64(2), "s": int64(18), "lo": int64(9), "hi": int64(9), "d": int64(1)},
		{"k": "d", "n": int64(1), "s": int64(1), "lo": int64(1), "hi": int64(1), "d": int64(1)},
	}, 0)
	outer := groupAll(inner.Rows, []string{"n"}, changelogOuterAggs)
	checkRows(t, outer, []Row{
		{"n": int64(1), "nkeys": int64(1), "total": int64(1), "lo": int64(1), "hi": int64(1), "dd": int64(1)},
		{"n": int64(2), "nkeys": int64(2), "total": int64(10), "lo": int64(-4), "hi": int64(9), "dd": int64(1)},
		{"n": int64(3), "nkeys": int64(1), "total": int64(2), "lo": int64(-3), "hi": int64(5), "dd": int64(1)},
	}, 0)
	if outer.Key == nil || outer.Key[0] != "n" {
		t.Errorf("outer key %v, want [n]", outer.Key)
	}
	// HAVING COUNT(*) > 1 over the inner rows as they are: only n = 2.
	having := Evaluate(Source{}, Query{GroupBy: []string{"n"}, Aggs: changelogOuterAggs, Having: func(r Row) bool { return bigint(r, "nkeys") > 1 }}, inner.Rows)
	checkRows(t, having, []Row{
		{"n": int64(2), "nkeys": int64(2), "total": int64(10), "lo": int64(-4), "hi": int64(9), "dd": int64(1)},
	}, 0)
	// WHERE s > 0 over the inner rows: b (s -8) is not there.
	pos := filterRows(inner.Rows, func(r Row) bool { return bigint(r, "s") > 0 })
	var ks []string
	for _, r := range pos {
		ks = append(ks, r["k"].(string))
	}
	sort.Strings(ks)
	if fmt.Sprint(ks) != "[a c d]" {
		t.Errorf("WHERE s > 0 keeps %v, want [a c d]", ks)
	}

	// The witnesses of the same log. n=1: now {d}, ever {a,b,c,d} at 1 row:
	// MIN -4 (b's) taken back (now 1), MAX 9 (c's) taken back (now 1), d
	// values {1} both; COUNT(*) 4 -> 1 (left HAVING). n=2: now {b,c}, ever
	// {a,b,c}: MIN -4 both, MAX 9 both, d {2,1} -> {1}: lost; 3 -> 2. n=3:
	// only a. Keys: b's s went down (-4, -8), a's too (5, 2, 2); a's s was
	// above 0 and still is, b's never was.
	got := runningWitnesses(changelogInner, "k", log)
	want := runningStats{minTaken: 1, maxTaken: 1, distinctLost: 1, havingLeft: 1, groupsGone: 0, sumDown: 2, filterLeft: 0}
	if got != want {
		t.Errorf("runningWitnesses:\n got  %v\n want %v", got, want)
	}
	// One more row of d (-2) moves it to n=2: n=1 is gone; d's s goes to
	// -1: it was above 0 and is not now.
	// n=2 now {b,c,d}: MIN -4, MAX 9 (c), ever adds a's (lo -3, hi 5): the
	// same; d values now {1,1,2}, ever {2,1,1,2}: nothing lost. n=3: a
	// alone. So MIN and MAX taken back nowhere, no value lost, n=1 gone.
	got = runningWitnesses(changelogInner, "k", append(log[:len(log):len(log)], kv("d", -2)))
	want = runningStats{groupsGone: 1, sumDown: 3, filterLeft: 1}
	if got != want {
		t.Errorf("runningWitnesses with d's second row:\n got  %v\n want %v", got, want)
	}
}

// pk is an upsert of a PRIMARY KEY table row; pkDelete a delete.
func pk(id, v, ts int64) Row { return Row{"id": id, "v": v, "ts": Timestamp(ts)} }
func pkDelete(id, ts int64) Row {
	return Row{"_op": "delete", "id": id, "ts": Timestamp(ts)}
}

func TestChangelogOracleUpsertWindows(t *testing.T) {
	src := Source{TimeCol: "ts", WatermarkDelay: 1000, AllowedLateness: 1000}
	q := Query{Window: TumbleWindow(10_000), Aggs: []Agg{{As: "n", Func: CountStar}, {As: "s", Func: Sum, Arg: colRef("v")}}}
	w := func(start, n, s int64) Row {
		return Row{"window_start": Timestamp(start), "window_end": Timestamp(start + 10_000), "n": n, "s": s}
	}
	log := []Row{
		pk(1, 10, 1000),    // [0,10s): 1
		pk(2, 20, 2000),    // wm 0: [0,10s): 1 2
		pk(3, 30, 3000),    // wm 1000: [0,10s): 1 2 3
		pk(2, 21, 2500),    // wm 2000: 2 replaced in place
		pk(1, 11, 10500),   // wm 2000: 1 moves to [10s,20s)
		pkDelete(3, 10500), // wm 9500: 3 out of [0,10s) (closes at 11000)
		pkDelete(9, 10500), // no row of 9: nothing
		pk(4, 40, 15000),   // wm 9500: [10s,20s): 1 4
		pk(3, 31, 25000),   // wm 14000: 3 again, in [20s,30s)
		pkDelete(4, 25000), // wm 24000: [10s,20s) closed at 21000: late, 4 stays
		pk(5, 50, 26000),   // wm 24000: [20s,30s): 3 5
		pk(5, 51, 26500),   // wm 25000: 5 in place
		pk(6, 60, 27000),   // wm 25500: [20s,30s): 3 5 6
		pk(6, 61, 0),       // wm 26000: 6 out of [20s,30s); its new row in [0,10s), closed: late
	}
	// Windows: [0,10s) holds 2 (21): n 1, s 21. [10s,20s) holds 1 (11) and
	// 4 (40), whose delete was late: n 2, s 51. [20s,30s) holds 3 (31) and
	// 5 (51): n 2, s 82. Late rows: the delete of 4 and 6's second row.
	got := EvaluateUpsertTable(src, "id", q, log)
	checkRows(t, got, []Row{w(0, 1, 21), w(10_000, 2, 51), w(20_000, 2, 82)}, 2)
	// Final watermark 26000: [0,10s) and [10s,20s) are closed.
	owc := q
	owc.OnWindowClose = true
	checkRows(t, EvaluateUpsertTable(src, "id", owc, log), []Row{w(0, 1, 21), w(10_000, 2, 51)}, 2)

	st := upsertWitnesses(src, "id", q.Window, log)
	if want := (upsertStats{moved: 2, back: 1, inPlace: 2, deletes: 2, noop: 1, reinserted: 1, emptied: 0, late: 2}); st != want {
		t.Errorf("upsertWitnesses:\n got  %+v\n want %+v", st, want)
	}

	// Without late changes the walk equals the batch aggregation over the
	// table's final state; a window emptied by deletes is gone.
	clean := log[:9:9]
	got = EvaluateUpsertTable(src, "id", q, clean)
	if got.Late != 0 {
		t.Fatalf("late %d in the first 9 rows, want 0", got.Late)
	}
	checkRows(t, got, batchOverState(src, q, tableState("id", clean)).Rows, 0)
	checkRows(t, got, []Row{w(0, 1, 21), w(10_000, 2, 51), w(20_000, 1, 31)}, 0)
	emptied := append(append([]Row{}, log[:3]...), pkDelete(1, 3000), pkDelete(2, 3000), pkDelete(3, 3000), pk(7, 70, 5000))
	got = EvaluateUpsertTable(src, "id", q, emptied)
	checkRows(t, got, []Row{w(0, 1, 70)}, 0)
	emptied = emptied[:6]
	got = EvaluateUpsertTable(src, "id", q, emptied)
	checkRows(t, got, nil, 0)
	if st := upsertWitnesses(src, "id", q.Window, emptied); st.emptied != 1 || st.deletes != 3 {
		t.Errorf("upsertWitnesses of an emptied window: %+v, want emptied 1, deletes 3", st)
	}
	if s := tableState("id", log); len(s) != 5 {
		t.Errorf("tableState: %d rows, want 5 (ids 1, 2, 3, 5, 6): %v", len(s), s)
	}
}
