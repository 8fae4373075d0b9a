package e2e

// Changelog streams (issue 18) end to end: queries reading an updating
// input, against the changelog oracle (changelog_oracle_test.go).
//
// TestChangelogRunning: one HTTP table t (k, v, tag, ts; v negative and
// positive, so sums go up and down; tag a nullable VARCHAR; a few rows
// late, which a running aggregate counts like any other) and, at
// parallelism 1 and 2, queries over the running aggregate inner = SELECT
// k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi, COUNT(DISTINCT
// v) AS d, MAX(tag), MAX(ts), AVG(v) FROM t GROUP BY k:
//
//   - cl_agg: an aggregation over it (a subquery) GROUP BY n, with every
//     retracting aggregate (COUNT(*), COUNT of a CASE, SUM, AVG, MIN, MAX,
//     COUNT(DISTINCT); over BIGINT, VARCHAR, TIMESTAMP and DOUBLE values,
//     and over CASEs that are NULL for some or all of a group's rows);
//   - cl_having: the same with HAVING COUNT(*) > 1 (groups come and go);
//     cl_hidden: HAVING over aggregates the SELECT list does not show;
//     cl_global: an aggregation without GROUP BY over it;
//   - cl_pos: WHERE s > 0 over it, straight into the results (a row whose
//     s drops to 0 or below leaves them);
//   - cl_v1, cl_v2, cl_v3: views three levels deep (inner; an aggregation
//     over cl_v1 GROUP BY n; an aggregation over cl_v2 GROUP BY nkeys),
//     cl_hv (an aggregation over a HAVING subquery over cl_v1), cl_fagg
//     (an aggregation over WHERE s > 0 over cl_v1, grouped by n % 3),
//     cl_bytag (GROUP BY a nullable column of cl_v1: the NULL group
//     empties in the second half) and
//     cl_vpos, a filter (s > 0 AND n % 2 = 0: rows leave and come back)
//     and projection over the view cl_v1;
//   - cl_mix and cl_mixsub: an aggregation at one parallelism over a
//     running aggregate at the other (a view; a subquery with its own
//     parallelism hint).
//
// A third of the rows is posted and checked (after each of the first
// three chunks too); more rows, a checkpoint, more rows and a SIGKILL
// right after their acknowledgement, then a restart and a check (the
// acknowledged rows all count, once); ten single rows, each checked; the
// rest but 200, a check; a SIGKILL after that checkpoint, a restart and a
// check; the last 200 rows, a last check. Each check compares every query's committed results with the
// oracle over exactly the rows posted so far; at a third, after the kill
// and at the end the test first asserts, from the oracle's view of those
// rows (runningWitnesses), that the answers depend on rows taken back: an
// outer MIN's and MAX's current extreme, a COUNT(DISTINCT) value's last
// row, a group leaving HAVING, a key leaving WHERE s > 0, a group whose
// every row left.
//
// TestChangelogUpsertTableWindows: a windowed aggregation (TUMBLE 10s,
// both emit modes), a running aggregate and a filter, at parallelism 1
// and 2, over a PRIMARY KEY table p whose upserts move rows between
// windows (forward and back in time) or replace them in place, whose
// deletes take rows out (some windows end up empty: gone), with ids
// deleted and inserted again and deletes of ids without a row. Every
// change goes into a window still open (late_rows 0) until a flush row a
// minute later closes every window. Checked at 40% of the log, after a
// SIGKILL right after the acknowledgement of 70%, at the end and after the
// flush; then after each of: a deliberate late delete of a row in a closed
// window (it changes nothing but late_rows, 1, in the windows; the running
// aggregate and the filter see it as any other delete); an upsert moving
// the flush row back into a closed window (taken out of the open flush
// window, which is gone, and late into the closed one: late_rows 2); a new
// row in the flush window; its delete with a time long behind the
// watermark (the delete takes the row back from the window of the row's
// time: open, not late).
//
// TestChangelogCrash: both tables' queries under random SIGKILLs (see
// there).

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	changelogTableDDL = `CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL, tag VARCHAR(8), ts TIMESTAMP(3) NOT NULL)
ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "2s", "allowed_lateness": "1s"}'`
	changelogInnerSQL = `SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi, COUNT(DISTINCT v) AS d,
  MAX(tag) AS top_tag, MAX(ts) AS last_ts, AVG(v) AS mean FROM t GROUP BY k`
	changelogRows = 2000
	// changelogAfterRestart rows are posted after the last restart.
	changelogAfterRestart = 200
	changelogKeys         = 24
	changelogChunk        = 100

	upsertTableDDL = `CREATE TABLE p (id BIGINT, v BIGINT, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id))
ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1s", "allowed_lateness": "1s", "idle_timeout": "1h"}'`
	upsertRows = 1500
)

// upsertSource is upsertTableDDL's ENGINE_ATTRIBUTE for the oracle (the
// idle timeout of an hour keeps the wall clock out of the watermark).
var upsertSource = Source{TimeCol: "ts", WatermarkDelay: 1000, AllowedLateness: 1000}

// clView is a query of these tests: its CREATE VIEW statement and its
// expected result over the rows of its table posted so far.
type clView struct {
	name     string
	create   string
	expected func(log []Row) Result
}

// The outer aggregation of cl_agg and cl_v2 over the inner rows.
var (
	clOuterAggs = []Agg{
		{As: "nkeys", Func: CountStar},
		{As: "npos", Func: Count, Arg: func(r Row) any {
			if bigint(r, "s") > 0 {
				return r["k"]
			}
			return nil
		}},
		{As: "total", Func: Sum, Arg: colRef("s")},
		{As: "mean", Func: Avg, Arg: colRef("s")},
		{As: "lo", Func: Min, Arg: colRef("lo")},
		{As: "hi", Func: Max, Arg: colRef("hi")},
		{As: "dd", Func: CountDistinct, Arg: colRef("d")},
		// NULL for the keys the CASE leaves out: aggregates over values
		// some (or all) of which are NULL, taken back.
		{As: "min_pos", Func: Min, Arg: sIf(func(s int64) bool { return s > 0 }, "s")},
		{As: "max_neg", Func: Max, Arg: sIf(func(s int64) bool { return s < 0 }, "s")},
		{As: "big", Func: Sum, Arg: sIf(func(s int64) bool { return s > 50 }, "s")},
		{As: "dpos", Func: CountDistinct, Arg: sIf(func(s int64) bool { return s > 0 }, "d")},
		{As: "min_tag", Func: Min, Arg: colRef("top_tag")},
		{As: "tags", Func: CountDistinct, Arg: colRef("top_tag")},
		{As: "first_last", Func: Min, Arg: colRef("last_ts")},
		{As: "last_ts", Func: Max, Arg: colRef("last_ts")},
		{As: "top_mean", Func: Max, Arg: colRef("mean")},
	}
	clHavingAggs = []Agg{
		{As: "nkeys", Func: CountStar},
		{As: "total", Func: Sum, Arg: colRef("s")},
		{As: "lo", Func: Min, Arg: colRef("lo")},
		{As: "hi", Func: Max, Arg: colRef("hi")},
	}
	clV3Aggs = []Agg{
		{As: "ns", Func: CountStar},
		{As: "total", Func: Sum, Arg: colRef("total")},
		{As: "lo_n", Func: Min, Arg: colRef("n")},
		{As: "hi_n", Func: Max, Arg: colRef("n")},
		{As: "ndd", Func: CountDistinct, Arg: colRef("dd")},
		{As: "max_min_tag", Func: Max, Arg: colRef("min_tag")},
	}
)

// sIf is CASE WHEN cond(s) THEN col END.
func sIf(cond func(int64) bool, col string) Expr {
	return func(r Row) any {
		if cond(bigint(r, "s")) {
			return r[col]
		}
		return nil
	}
}

// clInner is changelogInnerSQL: changelogInner (the hand-computed cases'
// inner query) and aggregates of other types, whose values the outer MIN,
// MAX and COUNT(DISTINCT) take back: a VARCHAR (NULL for a key whose tags
// are all NULL so far), a TIMESTAMP and a DOUBLE.
var clInner = Query{GroupBy: []string{"k"}, Aggs: append(slices.Clip(changelogInner.Aggs),
	Agg{As: "top_tag", Func: Max, Arg: colRef("tag")},
	Agg{As: "last_ts", Func: Max, Arg: colRef("ts")},
	Agg{As: "mean", Func: Avg, Arg: colRef("v")},
)}

// innerRows is the running aggregate over log, batch.
func innerRows(log []Row) []Row { return Evaluate(Source{}, clInner, log).Rows }

// keyedProjection is a filter and projection of rows keyed by key: the
// rows keep passes, with cols.
func keyedProjection(rows []Row, key string, keep func(Row) bool, cols []Column) Result {
	res := Result{Key: []string{key}}
	for _, c := range cols {
		res.Columns = append(res.Columns, c.As)
	}
	for _, r := range filterRows(rows, keep) {
		out := Row{}
		for _, c := range cols {
			out[c.As] = c.Expr(r)
		}
		res.Rows = append(res.Rows, out)
	}
	return res
}

func positiveSum(r Row) bool { return bigint(r, "s") > 0 }

// changelogViews are TestChangelogRunning's queries at parallelism p, a
// view before the views reading it.
func changelogViews(p int) []clView {
	sfx := "_p" + strconv.Itoa(p)
	par := "/*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") */"
	agg := "/*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") SET_VAR(emit_mode=changes) */"
	v := func(base, sql string, expected func(log []Row) Result) clView {
		name := base + sfx
		sql = strings.NewReplacer("{par}", par, "{agg}", agg, "{inner}", changelogInnerSQL, "{p}", sfx,
			"{nullable}", "MIN(CASE WHEN s > 0 THEN s END) AS min_pos, MAX(CASE WHEN s < 0 THEN s END) AS max_neg,\n  SUM(CASE WHEN s > 50 THEN s END) AS big, COUNT(DISTINCT CASE WHEN s > 0 THEN d END) AS dpos,\n  "+
				"MIN(top_tag) AS min_tag, COUNT(DISTINCT top_tag) AS tags, MIN(last_ts) AS first_last, MAX(last_ts) AS last_ts, MAX(mean) AS top_mean").Replace(sql)
		return clView{name: name, create: "CREATE VIEW " + name + " AS\n" + sql, expected: expected}
	}
	return []clView{
		v("cl_agg", `SELECT {agg} n, COUNT(*) AS nkeys, COUNT(CASE WHEN s > 0 THEN k END) AS npos, SUM(s) AS total, AVG(s) AS mean,
  MIN(lo) AS lo, MAX(hi) AS hi, COUNT(DISTINCT d) AS dd, {nullable}
FROM ({inner}) a GROUP BY n`,
			func(log []Row) Result { return groupAll(innerRows(log), []string{"n"}, clOuterAggs) }),
		v("cl_having", `SELECT {agg} n, COUNT(*) AS nkeys, SUM(s) AS total, MIN(lo) AS lo, MAX(hi) AS hi
FROM ({inner}) a GROUP BY n HAVING COUNT(*) > 1`,
			func(log []Row) Result {
				return Evaluate(Source{}, Query{GroupBy: []string{"n"}, Aggs: clHavingAggs,
					Having: func(r Row) bool { return bigint(r, "nkeys") > 1 }}, innerRows(log))
			}),
		// HAVING over aggregates the SELECT list does not show: they
		// retract too.
		v("cl_hidden", `SELECT {agg} n, COUNT(*) AS nkeys FROM ({inner}) a GROUP BY n HAVING MAX(hi) - MIN(lo) > 40`,
			func(log []Row) Result {
				return Evaluate(Source{}, Query{GroupBy: []string{"n"}, Aggs: []Agg{
					{As: "nkeys", Func: CountStar},
					{As: "lo", Func: Min, Arg: colRef("lo"), Hidden: true},
					{As: "hi", Func: Max, Arg: colRef("hi"), Hidden: true},
				}, Having: func(r Row) bool { return bigint(r, "hi")-bigint(r, "lo") > 40 }}, innerRows(log))
			}),
		// No GROUP BY: one row, whose MIN(n) is taken back whenever the key
		// with the fewest rows gets one more.
		v("cl_global", `SELECT {agg} COUNT(*) AS nkeys, SUM(n) AS total, MIN(n) AS lo_n, MAX(n) AS hi_n, COUNT(DISTINCT n) AS counts
FROM ({inner}) a`,
			func(log []Row) Result {
				return groupAll(innerRows(log), nil, []Agg{
					{As: "nkeys", Func: CountStar},
					{As: "total", Func: Sum, Arg: colRef("n")},
					{As: "lo_n", Func: Min, Arg: colRef("n")},
					{As: "hi_n", Func: Max, Arg: colRef("n")},
					{As: "counts", Func: CountDistinct, Arg: colRef("n")},
				})
			}),
		v("cl_pos", `SELECT {par} k, s, top_tag FROM ({inner}) a WHERE s > 0`,
			func(log []Row) Result {
				return keyedProjection(innerRows(log), "k", positiveSum, []Column{col("k", "k"), col("s", "s"), col("top_tag", "top_tag")})
			}),
		v("cl_v1", strings.Replace(changelogInnerSQL, "SELECT", "SELECT {agg}", 1),
			func(log []Row) Result { return Evaluate(Source{}, clInner, log) }),
		v("cl_v2", `SELECT {agg} n, COUNT(*) AS nkeys, COUNT(CASE WHEN s > 0 THEN k END) AS npos, SUM(s) AS total, AVG(s) AS mean,
  MIN(lo) AS lo, MAX(hi) AS hi, COUNT(DISTINCT d) AS dd, {nullable}
FROM cl_v1{p} GROUP BY n`,
			func(log []Row) Result { return groupAll(innerRows(log), []string{"n"}, clOuterAggs) }),
		v("cl_v3", `SELECT {agg} nkeys, COUNT(*) AS ns, SUM(total) AS total, MIN(n) AS lo_n, MAX(n) AS hi_n, COUNT(DISTINCT dd) AS ndd,
  MAX(min_tag) AS max_min_tag
FROM cl_v2{p} GROUP BY nkeys`,
			func(log []Row) Result {
				v2 := groupAll(innerRows(log), []string{"n"}, clOuterAggs).Rows
				return groupAll(v2, []string{"nkeys"}, clV3Aggs)
			}),
		// HAVING feeding an aggregation: a group of the subquery comes and
		// goes whole.
		v("cl_hv", `SELECT {agg} nkeys, COUNT(*) AS ns, SUM(total) AS total, MIN(n) AS lo_n, MAX(n) AS hi_n
FROM (SELECT n, COUNT(*) AS nkeys, SUM(s) AS total FROM cl_v1{p} GROUP BY n HAVING COUNT(*) > 1) h GROUP BY nkeys`,
			func(log []Row) Result {
				h := Evaluate(Source{}, Query{GroupBy: []string{"n"}, Aggs: clHavingAggs[:2],
					Having: func(r Row) bool { return bigint(r, "nkeys") > 1 }}, innerRows(log)).Rows
				return groupAll(h, []string{"nkeys"}, clV3Aggs[:4])
			}),
		// WHERE feeding an aggregation grouped by an expression: a key
		// leaves its bucket at every row, and the aggregation when its s
		// stops being positive.
		v("cl_fagg", `SELECT {agg} n % 3 AS bucket, COUNT(*) AS nkeys, SUM(s) AS total, MIN(s) AS lo_s, MAX(s) AS hi_s
FROM cl_v1{p} WHERE s > 0 GROUP BY bucket`,
			func(log []Row) Result {
				var rows []Row
				for _, r := range filterRows(innerRows(log), positiveSum) {
					rows = append(rows, Row{"bucket": bigint(r, "n") % 3, "s": r["s"]})
				}
				return groupAll(rows, []string{"bucket"}, []Agg{
					{As: "nkeys", Func: CountStar},
					{As: "total", Func: Sum, Arg: colRef("s")},
					{As: "lo_s", Func: Min, Arg: colRef("s")},
					{As: "hi_s", Func: Max, Arg: colRef("s")},
				})
			}),
		// GROUP BY a nullable column: the keys whose tags are all NULL so
		// far are a group, which empties as they get tags.
		v("cl_bytag", `SELECT {agg} top_tag, COUNT(*) AS nkeys, SUM(n) AS total, MIN(k) AS lo_k, MAX(s) AS hi_s FROM cl_v1{p} GROUP BY top_tag`,
			func(log []Row) Result {
				return groupAll(innerRows(log), []string{"top_tag"}, []Agg{
					{As: "nkeys", Func: CountStar},
					{As: "total", Func: Sum, Arg: colRef("n")},
					{As: "lo_k", Func: Min, Arg: colRef("k")},
					{As: "hi_s", Func: Max, Arg: colRef("s")},
				})
			}),
		// n % 2 = 0: a key's row leaves the results at every other row of
		// it, and comes back at the next.
		v("cl_vpos", `SELECT {par} k, n, s * 2 AS s2, last_ts FROM cl_v1{p} WHERE s > 0 AND n % 2 = 0`,
			func(log []Row) Result {
				return keyedProjection(innerRows(log), "k", func(r Row) bool { return positiveSum(r) && bigint(r, "n")%2 == 0 },
					[]Column{col("k", "k"), col("n", "n"), {As: "s2", Expr: timesTwo("s")}, col("last_ts", "last_ts")})
			}),
	}
}

// mixedViews read a running aggregate at one parallelism from an
// aggregation at another: a view over cl_v1 of the other parallelism, and
// a subquery with a parallelism hint of its own. They come after both
// changelogViews(1) and changelogViews(2).
func mixedViews() []clView {
	outer := `SELECT /*+ SET_VAR(parallelism=%d) */ n, COUNT(*) AS nkeys, SUM(s) AS total, MIN(lo) AS lo, MAX(hi) AS hi,
  COUNT(DISTINCT d) AS dd, MIN(top_tag) AS min_tag FROM %s GROUP BY n`
	aggs := []Agg{
		{As: "nkeys", Func: CountStar},
		{As: "total", Func: Sum, Arg: colRef("s")},
		{As: "lo", Func: Min, Arg: colRef("lo")},
		{As: "hi", Func: Max, Arg: colRef("hi")},
		{As: "dd", Func: CountDistinct, Arg: colRef("d")},
		{As: "min_tag", Func: Min, Arg: colRef("top_tag")},
	}
	expected := func(log []Row) Result { return groupAll(innerRows(log), []string{"n"}, aggs) }
	var out []clView
	for _, p := range []int{1, 2} {
		other := 3 - p
		sub := "(" + strings.Replace(changelogInnerSQL, "SELECT", "SELECT /*+ SET_VAR(parallelism="+strconv.Itoa(other)+") */", 1) + ") a"
		for _, c := range []struct{ name, from string }{
			{"cl_mix_p" + strconv.Itoa(p), "cl_v1_p" + strconv.Itoa(other)},
			{"cl_mixsub_p" + strconv.Itoa(p), sub},
		} {
			out = append(out, clView{name: c.name, create: "CREATE VIEW " + c.name + " AS\n" + fmt.Sprintf(outer, p, c.from), expected: expected})
		}
	}
	return out
}

// genChangelogInput returns n rows of t in log order: k uniform over
// changelogKeys keys; v uniform over a range centred on -2 to 2 (by key:
// sums go up and down, some keys' cross 0 again and again) and 20 to 65
// wide (by key: MIN, MAX and COUNT(DISTINCT) differ between keys with as
// many rows); tag NULL (15%; for every sixth key, all of the first half's
// rows) or a letter, the highest one by key; ts a clock advancing 0-30ms
// a row minus up to 1.5s, and about 2% of rows 3-23s behind the clock
// (late for windows; a running aggregate counts them).
func genChangelogInput(seed uint64, n int) []Row {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	clock := baseTime + 500
	rows := make([]Row, 0, n)
	for i := range n {
		clock += rng.Int64N(31)
		ts := clock - rng.Int64N(1500)
		if rng.IntN(50) == 0 {
			ts = clock - 3000 - rng.Int64N(20_000)
		}
		k := 1 + rng.Int64N(changelogKeys)
		mean, width := k%5-2, 20+k%4*15
		var tag any // NULL or one of the first 2 to 7 letters (by key)
		if rng.IntN(100) >= 15 && (k%6 != 0 || i >= n/2) {
			tag = string(rune('a' + rng.Int64N(2+k%6)))
		}
		rows = append(rows, Row{"k": k, "v": mean - width/2 + rng.Int64N(width+1), "tag": tag, "ts": Timestamp(ts)})
	}
	return rows
}

// clScenario is a server with one table and queries over it, and the rows
// acknowledged so far in log order.
type clScenario struct {
	srv        *server
	table      string
	views      []clView
	posted     []Row
	nextOffset int64
	haveOffset bool
}

func newCLScenario(t *testing.T, ddl, table string, views []clView) *clScenario {
	t.Helper()
	sc := &clScenario{srv: startServer(t), table: table}
	sc.srv.sql(t, ddl)
	stmts := make([]string, len(views))
	for i, v := range views {
		stmts[i] = v.create
	}
	res := sc.srv.sql(t, strings.Join(stmts, ";\n"))
	if len(res) != len(views) {
		t.Fatalf("POST /v1/sql with %d CREATE VIEW statements: %d results", len(views), len(res))
	}
	sc.views = views
	sc.srv.waitRunning(t, sc.names()...)
	return sc
}

func (sc *clScenario) names() []string {
	names := make([]string, len(sc.views))
	for i, v := range sc.views {
		names[i] = v.name
	}
	return names
}

// post ingests rows in chunks, sequentially, checking that the offsets
// acknowledged are contiguous across requests and restarts.
func (sc *clScenario) post(t *testing.T, rows []Row) {
	t.Helper()
	for start := 0; start < len(rows); start += changelogChunk {
		chunk := rows[start:min(start+changelogChunk, len(rows))]
		ack := sc.srv.postRows(t, sc.table, chunk)
		if sc.haveOffset && ack.FirstOffset != sc.nextOffset {
			t.Errorf("rows %d..: first_offset %d, want %d (contiguous with the previous request)", len(sc.posted), ack.FirstOffset, sc.nextOffset)
		}
		sc.nextOffset, sc.haveOffset = ack.LastOffset+1, true
		sc.posted = append(sc.posted, chunk...)
	}
}

// restart kills the server with SIGKILL, starts it on the same data
// directory and waits for the queries to run again.
func (sc *clScenario) restart(t *testing.T) {
	t.Helper()
	sc.srv.restart(t)
	sc.srv.waitRunning(t, sc.names()...)
}

// verify checkpoints, then checks every query against the oracle over the
// rows posted so far, one subtest per query under stage; it returns the
// number of rows expected per query.
func (sc *clScenario) verify(t *testing.T, stage string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	sc.srv.checkpointAndCheck(t, stage, sc.names(), func(t *testing.T, name string, _ checkpointInfo) {
		v := sc.views[slices.IndexFunc(sc.views, func(v clView) bool { return v.name == name })]
		counts[name] = sc.checkView(t, v)
	})
	return counts
}

func (sc *clScenario) checkView(t *testing.T, v clView) int {
	t.Helper()
	got := sc.srv.results(t, v.name)
	info := sc.srv.query(t, v.name)
	if info.State != "running" {
		t.Errorf("state %q, want running (error: %v)", info.State, info.raw["error"])
	}
	if info.Counters.RowsIn != int64(len(sc.posted)) {
		t.Errorf("counters.rows_in = %d, want %d (rows posted to %s)", info.Counters.RowsIn, len(sc.posted), sc.table)
	}
	want := v.expected(sc.posted)
	if info.Counters.LateRows != want.Late {
		recent, _ := info.raw["recent_late_rows"].([]any)
		t.Errorf("counters.late_rows = %d, want %d (recent late rows: %v)", info.Counters.LateRows, want.Late, recent[:min(len(recent), 3)])
	}
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: results differ from the oracle over %d rows (%d rows served, %d expected): %s\nSQL: %s",
			v.name, len(sc.posted), len(got.Rows), len(want.Rows), formatDiffs(diffs, 6), v.create)
	}
	return len(want.Rows)
}

// requireRunningWitnesses fails t unless the rows posted so far make the
// answers depend on every kind of row taken back (runningStats).
func requireRunningWitnesses(t *testing.T, stage string, log []Row) {
	t.Helper()
	st := runningWitnesses(clInner, "k", log)
	t.Logf("%s: %d rows: %v", stage, len(log), st)
	requireWitnesses(t, fmt.Sprintf("%s: the %d rows posted", stage, len(log)), []witness{
		{"an outer MIN whose current extreme was taken back", st.minTaken},
		{"an outer MAX whose current extreme was taken back", st.maxTaken},
		{"an outer COUNT(DISTINCT) value whose last row was taken back", st.distinctLost},
		{"an outer group that passed HAVING COUNT(*) > 1 and fails it now", st.havingLeft},
		{"an outer group whose every row was taken back", st.groupsGone},
		{"an inner SUM that went down", st.sumDown},
		{"an inner row that passed WHERE s > 0 and fails it now", st.filterLeft},
	})
}

// witness is a kind of row taken back and how often the input has it.
type witness struct {
	what string
	n    int
}

// requireWitnesses fails t for each kind of row taken back that input (a
// description of the rows) never has: a check over it would pass against
// an engine that never takes such rows back.
func requireWitnesses(t *testing.T, input string, ws []witness) {
	t.Helper()
	for _, w := range ws {
		if w.n == 0 {
			t.Errorf("%s have no %s: the check would pass against an engine that never takes it back (change E2E_SEED or the generator)", input, w.what)
		}
	}
}

// TestChangelogRunning: aggregations, HAVING, filters and views over a
// running aggregate at parallelism 1 and 2; see the top of this file.
func TestChangelogRunning(t *testing.T) {
	begin := time.Now()
	rows := genChangelogInput(testSeed(t, 1800), changelogRows)
	views := append(append(changelogViews(1), changelogViews(2)...), mixedViews()...)
	sc := newCLScenario(t, changelogTableDDL, "t", views)
	end := len(rows) - changelogAfterRestart
	rows, after := rows[:end], rows[end:]
	third, half, twoThirds := len(rows)/3, len(rows)/2, 2*len(rows)/3

	for i := range 3 { // the first chunks one by one
		sc.post(t, rows[i*changelogChunk:(i+1)*changelogChunk])
		sc.verify(t, "chunk"+strconv.Itoa(i))
	}
	sc.post(t, rows[3*changelogChunk:third])
	requireRunningWitnesses(t, "third", sc.posted)
	sc.verify(t, "third")

	sc.post(t, rows[third:half])
	sc.srv.checkpoint(t)
	sc.post(t, rows[half:twoThirds])
	sc.restart(t) // SIGKILL right after the last acknowledgement, no checkpoint since
	requireRunningWitnesses(t, "after_kill", sc.posted)
	sc.verify(t, "after_kill")

	for i := range 10 { // single rows, each checked: one change through every stage
		sc.post(t, rows[twoThirds+i:twoThirds+i+1])
		sc.verify(t, "step"+strconv.Itoa(i))
	}
	sc.post(t, rows[twoThirds+10:])
	requireRunningWitnesses(t, "all", sc.posted)
	sc.verify(t, "all")

	sc.restart(t) // SIGKILL after a checkpoint: its state alone
	sc.verify(t, "restarted")
	sc.post(t, after) // taking back values of the restored state
	counts := sc.verify(t, "after_restart")
	for _, v := range sc.views {
		if counts[v.name] == 0 {
			t.Errorf("%s: the oracle expects no rows: the test data does not exercise it", v.name)
		}
	}
	t.Logf("changelog over running aggregates: %d rows, expected rows per query %v, elapsed %v", len(sc.posted), counts, time.Since(begin).Round(time.Millisecond))
}

// upsertViews are TestChangelogUpsertTableWindows's queries at parallelism
// p: the same windowed aggregation over p in both emit modes, a running
// aggregate over p and a filter over p (keyed by id).
func upsertViews(p int) []clView {
	q := Query{Window: TumbleWindow(10_000), Aggs: []Agg{{As: "n", Func: CountStar}, {As: "s", Func: Sum, Arg: colRef("v")}}}
	var out []clView
	for _, mode := range []string{"changes", "on_window_close"} {
		name := "cl_pk_p" + strconv.Itoa(p)
		if mode == "on_window_close" {
			name += "_owc"
		}
		mq := q
		mq.OnWindowClose = mode == "on_window_close"
		out = append(out, clView{
			name: name,
			create: "CREATE VIEW " + name + " AS\nSELECT /*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") SET_VAR(emit_mode=" + mode + ") */ " +
				"window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM p GROUP BY TUMBLE(ts, '10s')",
			expected: func(log []Row) Result { return EvaluateUpsertTable(upsertSource, "id", mq, log) },
		})
	}
	// Without a window: the table's current rows, whatever their time.
	sfx, hint := "_p"+strconv.Itoa(p), "/*+ SET_VAR(parallelism="+strconv.Itoa(p)+") */"
	out = append(out,
		clView{
			name: "cl_pkrun" + sfx,
			create: "CREATE VIEW cl_pkrun" + sfx + " AS\nSELECT " + hint + " ABS(v) % 4 AS b, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi, " +
				"COUNT(DISTINCT v) AS d, MAX(ts) AS last_ts FROM p GROUP BY b",
			expected: func(log []Row) Result {
				var rows []Row
				for _, r := range tableState("id", log) {
					v := bigint(r, "v")
					rows = append(rows, Row{"b": max(v, -v) % 4, "v": v, "ts": r["ts"]})
				}
				return groupAll(rows, []string{"b"}, []Agg{
					{As: "n", Func: CountStar},
					{As: "s", Func: Sum, Arg: colRef("v")},
					{As: "lo", Func: Min, Arg: colRef("v")},
					{As: "hi", Func: Max, Arg: colRef("v")},
					{As: "d", Func: CountDistinct, Arg: colRef("v")},
					{As: "last_ts", Func: Max, Arg: colRef("ts")},
				})
			},
		},
		clView{
			name:   "cl_pkpos" + sfx,
			create: "CREATE VIEW cl_pkpos" + sfx + " AS\nSELECT " + hint + " id, v, ts FROM p WHERE v > 0",
			expected: func(log []Row) Result {
				return keyedProjection(tableState("id", log), "id", func(r Row) bool { return bigint(r, "v") > 0 },
					[]Column{col("id", "id"), col("v", "v"), col("ts", "ts")})
			},
		})
	return out
}

// upsertMargin keeps every change of genUpsertLog at least this far from
// its window's closing (ms): no change is near the lateness boundary.
const upsertMargin = 300

// genUpsertLog returns about n rows of the PRIMARY KEY table p (id, v, ts)
// in log order, none late: a clock advances 0-100ms a row, with a pause
// of 3-7s now and then (windows close); a row's ts is the clock minus up
// to 500ms (under the 1s watermark delay). Each row is an insert of a new
// id; an upsert of an id whose row is in a window still open (a new v, a
// ts mostly no earlier than its row's, in the same window or a later one,
// sometimes earlier; now and then the same row again; some with an
// explicit "_op": "upsert"); a delete of such an id (at the latest ts so
// far); an insert of an id deleted before; or a delete of an id without
// a row. Every 300 rows a sparse window: the clock jumps to the start of
// a window, two new ids go in, the clock jumps into the next window, one
// of them is deleted and the other moved there: the sparse window ends up
// empty.
func genUpsertLog(seed uint64, n int) []Row {
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	clock := baseTime + 500
	maxTS := clock
	nextID := int64(1)
	cur := map[int64]Row{} // the row of each id that has one
	var live, gone []int64 // ids with a row; ids deleted and not back
	var rows []Row
	add := func(r Row) {
		rows = append(rows, r)
		maxTS = max(maxTS, tsOf(r))
	}
	// open: r's window takes changes until the watermark passes its end
	// plus the allowed lateness; the watermark is at most clock - delay.
	open := func(r Row) bool {
		end := assignWindows(TumbleWindow(10_000), tsOf(r))[0].end
		return end+upsertSource.AllowedLateness > clock-upsertSource.WatermarkDelay+upsertMargin
	}
	upsert := func(id, v, ts int64) {
		r := pk(id, v, ts)
		if rng.IntN(3) == 0 {
			r["_op"] = "upsert"
		}
		if _, had := cur[id]; !had {
			live = append(live, id)
		}
		cur[id] = r
		add(r)
	}
	remove := func(ids []int64, id int64) []int64 {
		i := slices.Index(ids, id)
		return slices.Delete(ids, i, i+1)
	}
	del := func(id int64) {
		if _, had := cur[id]; had {
			live = remove(live, id)
			gone = append(gone, id)
			delete(cur, id)
		}
		add(pkDelete(id, maxTS))
	}
	for len(rows) < n {
		clock += rng.Int64N(101)
		if rng.IntN(100) == 0 {
			clock += 3000 + rng.Int64N(4000)
		}
		ts := clock - rng.Int64N(500)
		if len(rows) > 0 && len(rows)%300 == 0 {
			start := (clock/10_000 + 1) * 10_000
			clock = start + 100
			a, b := nextID, nextID+1
			nextID += 2
			upsert(a, rng.Int64N(41)-20, clock)
			upsert(b, rng.Int64N(41)-20, clock+50)
			clock = start + 10_100
			del(a)
			upsert(b, rng.Int64N(41)-20, clock)
			continue
		}
		var movable []int64 // ids whose row takes changes
		for _, id := range live {
			if open(cur[id]) {
				movable = append(movable, id)
			}
		}
		switch op := rng.IntN(100); {
		case op < 55 && len(movable) > 0:
			id := movable[rng.IntN(len(movable))]
			old := cur[id]
			if rng.IntN(20) == 0 {
				upsert(id, bigint(old, "v"), tsOf(old)) // the same row again
			} else {
				newTS := max(tsOf(old), ts)
				if rng.IntN(5) == 0 {
					newTS = ts // maybe before its row's: back in time
				}
				upsert(id, rng.Int64N(41)-20, newTS)
			}
		case op < 75 && len(movable) > 0:
			del(movable[rng.IntN(len(movable))])
		case op < 82 && len(gone) > 0:
			id := gone[rng.IntN(len(gone))]
			gone = remove(gone, id)
			upsert(id, rng.Int64N(41)-20, ts)
		case op < 85:
			if len(gone) > 0 && rng.IntN(2) == 0 {
				del(gone[rng.IntN(len(gone))]) // deleted already
			} else {
				del(1_000_000 + rng.Int64N(1000)) // never had a row
			}
		default:
			upsert(nextID, rng.Int64N(41)-20, ts)
			nextID++
		}
	}
	return rows
}

// TestChangelogUpsertTableWindows: windows (both emit modes), a running
// aggregate and a filter over a PRIMARY KEY table, parallelism 1 and 2;
// see the top of this file.
func TestChangelogUpsertTableWindows(t *testing.T) {
	begin := time.Now()
	log := genUpsertLog(testSeed(t, 1801), upsertRows)
	st := upsertWitnesses(upsertSource, "id", TumbleWindow(10_000), log)
	t.Logf("%d table rows: %+v", len(log), st)
	if st.moved == 0 || st.back == 0 || st.inPlace == 0 || st.deletes == 0 || st.noop == 0 || st.reinserted == 0 || st.emptied == 0 || st.late != 0 {
		t.Fatalf("the generated log does not exercise every change (moved, back in time, in place, deletes, deletes without a row, ids back after a delete, emptied windows) or has late changes: %+v", st)
	}
	// After the log, a flush row a minute later (every window closes), then
	// a delete of a row in a closed window: late, nothing changes.
	var lastTS int64
	for _, r := range log {
		lastTS = max(lastTS, tsOf(r))
	}
	flush := pk(-1, 0, lastTS+60_000)
	state := tableState("id", log)
	victim := state[len(state)/2]
	lateDelete := pkDelete(bigint(victim, "id"), lastTS+60_000)
	full := append(append(slices.Clip(log), flush), lateDelete)
	changes := Query{Window: TumbleWindow(10_000), Aggs: []Agg{{As: "n", Func: CountStar}, {As: "s", Func: Sum, Arg: colRef("v")}}}
	if res := EvaluateUpsertTable(upsertSource, "id", changes, full); res.Late != 1 {
		t.Fatalf("oracle: %d late rows after the late delete, want 1", res.Late)
	} else if diff := rowsDiffer(res.Rows, batchOverState(upsertSource, changes, tableState("id", full)).Rows); !diff {
		t.Fatalf("oracle: the late delete of id %v changes nothing even in the batch aggregation over the table's state: it does not test the late retraction", victim["id"])
	}
	// Then the flush row's id moves back into a closed window: its old row
	// leaves the flush window (open: taken back, the window is gone), its
	// new one is late. Then a new id in the flush window, and its delete
	// with an old time: the delete takes the row back from the window of
	// the row's time, which is open, whatever the delete's own time.
	lateMove := pk(-1, 5, lastTS)
	fresh := pk(-2, 7, lastTS+60_000)
	oldDelete := pkDelete(-2, baseTime)
	for i, c := range []struct {
		rows    []Row
		late    int64
		windows int
	}{
		{[]Row{lateMove}, 2, -1}, {[]Row{lateMove, fresh}, 2, 0}, {[]Row{lateMove, fresh, oldDelete}, 2, -1},
	} {
		before := EvaluateUpsertTable(upsertSource, "id", changes, full)
		after := EvaluateUpsertTable(upsertSource, "id", changes, append(slices.Clip(full), c.rows...))
		if after.Late != c.late || len(after.Rows)-len(before.Rows) != c.windows {
			t.Fatalf("oracle: the late phase's step %d: %d late rows and %d windows more, want %d and %d", i, after.Late, len(after.Rows)-len(before.Rows), c.late, c.windows)
		}
	}

	views := append(upsertViews(1), upsertViews(2)...)
	sc := newCLScenario(t, upsertTableDDL, "p", views)
	// The walk of the oracle and the batch aggregation over the table's
	// state agree on every prefix checked (no late change before the end).
	selfCheck := func(stage string) {
		t.Run(stage+"/oracle_vs_state", func(t *testing.T) {
			checkRows(t, EvaluateUpsertTable(upsertSource, "id", changes, sc.posted), batchOverState(upsertSource, changes, tableState("id", sc.posted)).Rows, 0)
		})
	}
	part1, part2 := len(log)*2/5, len(log)*7/10
	sc.post(t, log[:part1])
	selfCheck("part1")
	sc.verify(t, "part1")

	sc.post(t, log[part1:part2])
	sc.restart(t) // SIGKILL right after the acknowledgement
	selfCheck("after_kill")
	sc.verify(t, "after_kill")

	sc.post(t, log[part2:])
	selfCheck("all")
	sc.verify(t, "all")

	sc.post(t, []Row{flush})
	selfCheck("flushed")
	counts := sc.verify(t, "flushed")
	for _, v := range sc.views {
		if counts[v.name] < 4 {
			t.Errorf("%s: the oracle expects %d rows: the test data does not exercise it", v.name, counts[v.name])
		}
	}

	sc.post(t, []Row{lateDelete})
	sc.verify(t, "late_delete")
	sc.post(t, []Row{lateMove})
	sc.verify(t, "late_move")
	sc.post(t, []Row{fresh})
	sc.verify(t, "fresh")
	sc.post(t, []Row{oldDelete})
	sc.verify(t, "old_time_delete")
	t.Logf("queries over a PRIMARY KEY table: %d rows, expected rows per query %v, elapsed %v", len(sc.posted), counts, time.Since(begin).Round(time.Millisecond))
}

// rowsDiffer reports whether two oracle row sets differ (as multisets of
// whole rows).
func rowsDiffer(a, b []Row) bool {
	canon := func(rows []Row) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			cols := make([]string, 0, len(r))
			for c := range r {
				cols = append(cols, c)
			}
			slices.Sort(cols)
			vals := make([]any, len(cols))
			for j, c := range cols {
				vals[j] = r[c]
			}
			out[i] = strings.Join(cols, ",") + "=" + canonKey(vals)
		}
		slices.Sort(out)
		return out
	}
	return !slices.Equal(canon(a), canon(b))
}

// TestChangelogCrash: changelogViews(2) (every shape of
// TestChangelogRunning at parallelism 2) over t and upsertViews(2) (the
// windows in both emit modes, the running aggregate and the filter over
// the PRIMARY KEY table p) under crash_test.go's load: both logs posted in
// alternating small chunks with Idempotency-Keys, resent until
// acknowledged (p's log ends with a flush row), checkpoints every 200ms,
// and SIGKILLs at random moments (STREAMSQL_CRASH_KILLS, default 3), some
// aimed at a request in flight. Before each kill two random queries of
// each table are checked mid-stream: their committed results equal the
// oracle over exactly the rows before the offset their committed
// checkpoint recorded for their table (a retraction applied twice on
// replay, or lost, shows there). At the end every query equals the oracle
// over its whole log.
func TestChangelogCrash(t *testing.T) {
	begin := time.Now()
	kills := crashKills(t)
	seed := testSeed(t, 1802)
	n := max(2000, kills*crashRowsPerKill)
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, changelogTableDDL+";\n"+upsertTableDDL)
	scT := &clScenario{srv: srv, table: "t", views: changelogViews(2), posted: genChangelogInput(seed, n)}
	pLog := genUpsertLog(seed+1, n)
	var lastTS int64
	for _, r := range pLog {
		lastTS = max(lastTS, tsOf(r))
	}
	pLog = append(pLog, pk(-1, 0, lastTS+60_000)) // every window closes
	scP := &clScenario{srv: srv, table: "p", views: upsertViews(2), posted: pLog}
	var stmts []string
	for _, v := range append(slices.Clip(scT.views), scP.views...) {
		stmts = append(stmts, v.create)
	}
	srv.sql(t, strings.Join(stmts, ";\n"))
	waitAll := func() { srv.waitRunning(t, append(scT.names(), scP.names()...)...) }
	waitAll()

	// Alternate the two tables' chunks.
	tChunks := idemChunks(t, "t", scT.posted, crashChunkRows, "changelog-t")
	pChunks := idemChunks(t, "p", scP.posted, crashChunkRows, "changelog-p")
	var chunks []idemChunk
	for i := 0; i < max(len(tChunks), len(pChunks)); i++ {
		if i < len(tChunks) {
			chunks = append(chunks, tChunks[i])
		}
		if i < len(pChunks) {
			chunks = append(chunks, pChunks[i])
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	poster := startCrashPoster(t, srv, chunks, kills)
	prefixChecks := 0
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(int) {
			for _, sc := range []*clScenario{scT, scP} {
				for range 2 {
					if sc.checkCommittedPrefix(t, sc.views[rng.IntN(len(sc.views))], sc.posted) {
						prefixChecks++
					}
				}
			}
		},
	})
	poster.wait(t)
	for _, sc := range []*clScenario{scT, scP} {
		if end, ok := srv.endOffset(t, sc.table); !ok || end != int64(len(sc.posted)) {
			t.Errorf("table %s: end_offset %d (reported: %v), want %d: every row exactly once", sc.table, end, ok, len(sc.posted))
		}
	}
	waitAll()
	requireRunningWitnesses(t, "final", scT.posted)
	scT.verify(t, "final_t")
	scP.verify(t, "final_p")
	t.Logf("changelog crash recovery: kills=%d (under load %d, aimed at a request %d) mid-stream checks=%d rows=%d+%d chunks=%d resends=%d replayed=%d elapsed=%v",
		kills, ks.underLoad, ks.aimed, prefixChecks, len(scT.posted), len(scP.posted), len(chunks), poster.stats.resends, poster.stats.replayed, time.Since(begin).Round(time.Millisecond))
}

// checkCommittedPrefix checks a running query mid-stream: its committed
// results must equal the oracle over exactly the prefix of log (every row,
// acknowledged or not yet) before the offset its committed checkpoint
// recorded for the table. It reports false when there was nothing stable
// to check (stableCommitted).
func (sc *clScenario) checkCommittedPrefix(t *testing.T, v clView, log []Row) bool {
	t.Helper()
	id, got, offsets, ok := stableCommitted(t, sc.srv, v.name)
	if !ok {
		return false
	}
	off, ok := offsets[sc.table]
	if !ok {
		return false
	}
	if off > int64(len(log)) {
		t.Errorf("%s: checkpoint %d recorded offset %d for %s, beyond the %d rows of the log", v.name, id, off, sc.table, len(log))
		return true
	}
	want := v.expected(log[:off])
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: committed results at checkpoint %d differ from the oracle over the %d rows before its offset (%d rows served, %d expected): %s",
			v.name, id, off, len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
	}
	return true
}
