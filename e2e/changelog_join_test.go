package e2e

// Joins of updating inputs (issue 18) end to end, against the oracle of
// changelog_join_oracle_test.go. Two HTTP tables, t (k, v, ts; keys 1-20)
// and u (k, w, ts; keys 5-26: some keys only on one side), rows with
// disorder within the watermark delay (none late), and at parallelism 1
// and 2, over x = SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k and
// y = SELECT k, COUNT(*) AS m, SUM(w) AS sw FROM u GROUP BY k (yh: y HAVING
// SUM(w) > 0; w's sums go up and down, so a key's row of yh comes and goes):
//
//   - cj_stream: t joined with SELECT k, COUNT(*) AS n FROM u GROUP BY k
//     (state_ttl 1h): every row of t shows its key's current count;
//   - cj_inner, cj_left: x JOIN / LEFT JOIN yh ON x.k = y.k: the LEFT
//     join's NULL-padded rows are taken back when a key's yh row comes and
//     come back when it goes (asserted from the oracle's states at the
//     checks); cj_left_res: x LEFT JOIN y with a residual (x.s > y.sw), so
//     a match comes and goes with both sides' sums;
//   - cj_agg: an aggregation over x LEFT JOIN yh grouped by y.m % 4, the
//     NULL group (keys without a match) included;
//   - cj_count: x JOIN y ON x.n = y.m, a value both sides update: a pair
//     goes when either count moves on, and rows move between join tasks at
//     parallelism 2;
//   - cj_stream_left: t LEFT JOIN yh (state_ttl 1h): a row of t is
//     padded with NULLs while its key has no row of yh;
//   - cj_stream_agg: an aggregation over cj_stream's join, grouped by
//     a.n % 5 (a row of t moves on as its key's count grows);
//   - cj_vx, cj_vyh, cj_vleft: x and yh as views, and the LEFT join of the
//     two views (as cj_left);
//   - cj_right: x RIGHT JOIN y (the swapped LEFT join), created apart: a
//     refusal of it is reported and the rest goes on.
//
// Both tables' rows are posted in alternating chunks: the first three
// pairs of chunks checked one by one, a third checked, half, a
// checkpoint, two thirds and a SIGKILL right after their acknowledgement,
// a restart and a check (every acknowledged row counts, once), single rows
// of each table checked one by one, the rest checked, a SIGKILL after that
// checkpoint and a check of the restored state. Then the TTL: a row two
// hours later on each table moves the join's watermark past every earlier
// row of t by more than the hour (checked), then rows of u change the
// counts (checked: the expired rows of t keep the counts they had, from
// the oracle's view a difference), then new rows of t join the current
// counts (checked). Every check compares each view's committed results
// (after POST /v1/checkpoints) with the oracle over exactly the rows
// posted so far, and its rows_in and late_rows (0).

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	cjTDDL = `CREATE TABLE t (k BIGINT, v BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL)
ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "2s", "idle_timeout": "1h"}'`
	cjUDDL = `CREATE TABLE u (k BIGINT, w BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL)
ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "2s", "idle_timeout": "1h"}'`
	cjDelay = 2000      // both tables' watermark_delay, ms
	cjTTL   = 3_600_000 // the stream join's state_ttl, ms
	cjRows  = 1500      // rows per table before the TTL phase

	cjX  = `(SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k)`
	cjY  = `(SELECT k, COUNT(*) AS m, SUM(w) AS sw FROM u GROUP BY k)`
	cjYH = `(SELECT k, COUNT(*) AS m, SUM(w) AS sw FROM u GROUP BY k HAVING SUM(w) > 0)`
)

// The inner queries in the oracle's terms.
var (
	cjXQuery = Query{GroupBy: []string{"k"}, Aggs: []Agg{{As: "n", Func: CountStar}, {As: "s", Func: Sum, Arg: colRef("v")}}}
	cjYQuery = Query{GroupBy: []string{"k"}, Aggs: []Agg{{As: "m", Func: CountStar}, {As: "sw", Func: Sum, Arg: colRef("w")}}}
)

func cjXRows(ts []Row) []Row { return Evaluate(Source{}, cjXQuery, ts).Rows }
func cjYRows(us []Row, having bool) []Row {
	q := cjYQuery
	if having {
		q.Having = func(r Row) bool { return bigint(r, "sw") > 0 }
	}
	return Evaluate(Source{}, q, us).Rows
}

// cjView is a view of these tests: its CREATE VIEW statement and its
// expected result over the rows posted so far (both tables, interleaved in
// posting order).
type cjView struct {
	name     string
	create   string
	only     string // the one table the view reads; "": both
	expected func(events []tagged) Result
}

// split returns the rows of t and of u among events, each in order.
func split(events []tagged) (ts, us []Row) {
	for _, e := range events {
		if e.table == "t" {
			ts = append(ts, e.row)
		} else {
			us = append(us, e.row)
		}
	}
	return ts, us
}

// cjLeftRows is cj_left's expected rows: x LEFT JOIN yh.
func cjLeftRows(events []tagged) []Row {
	ts, us := split(events)
	return leftJoinRows(cjXRows(ts), cjYRows(us, true), sameK, func(l, r Row) Row {
		return Row{"k": l["k"], "n": l["n"], "s": l["s"], "yk": get(r, "k"), "m": get(r, "m"), "sw": get(r, "sw")}
	})
}

// cjStreamLeftRows is cj_stream_left's expected rows with state_ttl ttl.
func cjStreamLeftRows(events []tagged, ttl int64) []Row {
	return streamJoin(events, "t", "u", cjDelay, ttl, LeftJoin, func(us []Row) []Row { return cjYRows(us, true) },
		func(s, a Row) Row {
			return Row{"k": s["k"], "v": s["v"], "ts": s["ts"], "m": get(a, "m"), "sw": get(a, "sw")}
		})
}

// cjCountRows is cj_count's expected rows: x JOIN y ON x.n = y.m.
func cjCountRows(events []tagged) []Row {
	ts, us := split(events)
	return joinRows(cjXRows(ts), cjYRows(us, false), func(l, r Row) bool { return bigint(l, "n") == bigint(r, "m") }, nil,
		func(l, r Row) Row { return Row{"xk": l["k"], "yk": r["k"], "n": l["n"], "s": l["s"], "sw": r["sw"]} })
}

func only(table string, v cjView) cjView {
	v.only = table
	return v
}

func cjViews(p int) []cjView {
	sfx := "_p" + strconv.Itoa(p)
	hint := "/*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") */"
	v := func(base, sql string, expected func(events []tagged) Result) cjView {
		sql = strings.NewReplacer("{hint}", hint, "{p}", sfx, "{x}", cjX, "{y}", cjY, "{yh}", cjYH,
			"{ttl}", "/*+ SET_VAR(parallelism="+strconv.Itoa(p)+") SET_VAR(state_ttl='1h') */").Replace(sql)
		return cjView{name: base + sfx, create: "CREATE VIEW " + base + sfx + " AS\n" + sql, expected: expected}
	}
	return []cjView{
		v("cj_stream", `SELECT {ttl} t.k, t.v, t.ts, a.n FROM t JOIN (SELECT k, COUNT(*) AS n FROM u GROUP BY k) a ON t.k = a.k`,
			func(events []tagged) Result {
				return multiset([]string{"k", "v", "ts", "n"}, streamAggJoin(events, "t", "u", cjDelay, cjTTL))
			}),
		// The same as a LEFT join with yh: a row of t is padded while its
		// key has no row of yh.
		v("cj_stream_left", `SELECT {ttl} t.k, t.v, t.ts, a.m, a.sw FROM t LEFT JOIN {yh} a ON t.k = a.k`,
			func(events []tagged) Result {
				return multiset([]string{"k", "v", "ts", "m", "sw"}, cjStreamLeftRows(events, cjTTL))
			}),
		v("cj_inner", `SELECT {hint} x.k, x.n, x.s, y.m, y.sw FROM {x} x JOIN {yh} y ON x.k = y.k`,
			func(events []tagged) Result {
				ts, us := split(events)
				return multiset([]string{"k", "n", "s", "m", "sw"}, joinRows(cjXRows(ts), cjYRows(us, true), sameK, nil, func(l, r Row) Row {
					return Row{"k": l["k"], "n": l["n"], "s": l["s"], "m": r["m"], "sw": r["sw"]}
				}))
			}),
		v("cj_left", `SELECT {hint} x.k, x.n, x.s, y.k AS yk, y.m, y.sw FROM {x} x LEFT JOIN {yh} y ON x.k = y.k`,
			func(events []tagged) Result {
				return multiset([]string{"k", "n", "s", "yk", "m", "sw"}, cjLeftRows(events))
			}),
		v("cj_left_res", `SELECT {hint} x.k, x.s, y.k AS yk, y.m, y.sw FROM {x} x LEFT JOIN {y} y ON x.k = y.k AND x.s > y.sw`,
			func(events []tagged) Result {
				ts, us := split(events)
				return multiset([]string{"k", "s", "yk", "m", "sw"}, leftJoinRows(cjXRows(ts), cjYRows(us, false),
					func(l, r Row) bool { return sameK(l, r) && bigint(l, "s") > bigint(r, "sw") },
					func(l, r Row) Row {
						return Row{"k": l["k"], "s": l["s"], "yk": get(r, "k"), "m": get(r, "m"), "sw": get(r, "sw")}
					}))
			}),
		v("cj_agg", `SELECT {hint} y.m % 4 AS b, COUNT(*) AS nkeys, SUM(x.n) AS total, MIN(x.s) AS lo, MAX(x.s) AS hi,
  COUNT(y.k) AS matched, SUM(y.sw) AS sw FROM {x} x LEFT JOIN {yh} y ON x.k = y.k GROUP BY b`,
			func(events []tagged) Result {
				var rows []Row
				for _, r := range cjLeftRows(events) {
					var b any
					if r["m"] != nil {
						b = bigint(r, "m") % 4
					}
					rows = append(rows, Row{"b": b, "n": r["n"], "s": r["s"], "yk": r["yk"], "sw": r["sw"]})
				}
				return groupAll(rows, []string{"b"}, []Agg{
					{As: "nkeys", Func: CountStar},
					{As: "total", Func: Sum, Arg: colRef("n")},
					{As: "lo", Func: Min, Arg: colRef("s")},
					{As: "hi", Func: Max, Arg: colRef("s")},
					{As: "matched", Func: Count, Arg: colRef("yk")},
					{As: "sw", Func: Sum, Arg: colRef("sw")},
				})
			}),
		v("cj_count", `SELECT {hint} x.k AS xk, y.k AS yk, x.n, x.s, y.sw FROM {x} x JOIN {y} y ON x.n = y.m`,
			func(events []tagged) Result {
				return multiset([]string{"xk", "yk", "n", "s", "sw"}, cjCountRows(events))
			}),
		// An aggregation over the stream join: a row of t moves from its
		// bucket to the next as its key's count grows (until it expires).
		v("cj_stream_agg", `SELECT {ttl} a.n % 5 AS b, COUNT(*) AS pairs, SUM(t.v) AS total, MIN(t.ts) AS first_ts, MAX(t.k) AS top_k
FROM t JOIN (SELECT k, COUNT(*) AS n FROM u GROUP BY k) a ON t.k = a.k GROUP BY b`,
			func(events []tagged) Result {
				var rows []Row
				for _, r := range streamAggJoin(events, "t", "u", cjDelay, cjTTL) {
					rows = append(rows, Row{"b": bigint(r, "n") % 5, "v": r["v"], "ts": r["ts"], "k": r["k"]})
				}
				return groupAll(rows, []string{"b"}, []Agg{
					{As: "pairs", Func: CountStar},
					{As: "total", Func: Sum, Arg: colRef("v")},
					{As: "first_ts", Func: Min, Arg: colRef("ts")},
					{As: "top_k", Func: Max, Arg: colRef("k")},
				})
			}),
		// Running views joined: x and yh as views, LEFT JOIN of the two.
		only("t", v("cj_vx", `SELECT {hint} k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k`,
			func(events []tagged) Result {
				ts, _ := split(events)
				return Evaluate(Source{}, cjXQuery, ts)
			})),
		only("u", v("cj_vyh", `SELECT {hint} k, COUNT(*) AS m, SUM(w) AS sw FROM u GROUP BY k HAVING SUM(w) > 0`,
			func(events []tagged) Result {
				_, us := split(events)
				q := cjYQuery
				q.Having = func(r Row) bool { return bigint(r, "sw") > 0 }
				return Evaluate(Source{}, q, us)
			})),
		v("cj_vleft", `SELECT {hint} x.k, x.n, x.s, y.k AS yk, y.m, y.sw FROM cj_vx{p} x LEFT JOIN cj_vyh{p} y ON x.k = y.k`,
			func(events []tagged) Result {
				return multiset([]string{"k", "n", "s", "yk", "m", "sw"}, cjLeftRows(events))
			}),
	}
}

// cjRightView is x RIGHT JOIN y at parallelism p: y's rows without a row
// of x (keys 21-26, and any key before its first row of t) padded.
func cjRightView(p int) cjView {
	name := "cj_right_p" + strconv.Itoa(p)
	return cjView{
		name: name,
		create: "CREATE VIEW " + name + " AS\nSELECT /*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") */ x.k, x.n, y.k AS yk, y.m, y.sw FROM " +
			cjX + " x RIGHT JOIN " + cjY + " y ON x.k = y.k",
		expected: func(events []tagged) Result {
			ts, us := split(events)
			return multiset([]string{"k", "n", "yk", "m", "sw"}, leftJoinRows(cjYRows(us, false), cjXRows(ts), sameK, func(y, x Row) Row {
				return Row{"k": get(x, "k"), "n": get(x, "n"), "yk": y["k"], "m": y["m"], "sw": y["sw"]}
			}))
		},
	}
}

// genCJInput returns n rows of t (keys 1-20, v from -20 to 20) and n of u
// (keys 5-26, w from -10 to 10 around a mean of -1 to 1 by key, so that
// sums cross 0 again and again); in each table a clock advances 0-40ms a
// row and a row's ts is the clock minus up to 1s (under the 2s watermark
// delay: nothing late). Both clocks start at baseTime.
func genCJInput(seed uint64, n int) (ts, us []Row) {
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	ct, cu := baseTime+1000, baseTime+1000
	for range n {
		ct += rng.Int64N(41)
		ts = append(ts, kt(1+rng.Int64N(20), rng.Int64N(41)-20, ct-rng.Int64N(1000)))
		cu += rng.Int64N(41)
		k := 5 + rng.Int64N(22)
		us = append(us, ku(k, k%3-1+rng.Int64N(21)-10, cu-rng.Int64N(1000)))
	}
	return ts, us
}

// cjScenario is a server with t and u, views over them, and the rows
// posted so far in posting order.
type cjScenario struct {
	srv    *server
	st, su *clScenario // posting, one per table
	views  []cjView
	events []tagged
}

func (sc *cjScenario) names() []string {
	names := make([]string, len(sc.views))
	for i, v := range sc.views {
		names[i] = v.name
	}
	return names
}

func (sc *cjScenario) post(t *testing.T, table string, rows []Row) {
	t.Helper()
	if table == "t" {
		sc.st.post(t, rows)
	} else {
		sc.su.post(t, rows)
	}
	for _, r := range rows {
		sc.events = append(sc.events, tagged{table, r})
	}
}

func (sc *cjScenario) restart(t *testing.T) {
	t.Helper()
	sc.srv.restart(t)
	sc.srv.waitRunning(t, sc.names()...)
}

// verify checkpoints, then checks every view against the oracle over the
// rows posted so far; it returns the number of rows expected per view.
func (sc *cjScenario) verify(t *testing.T, stage string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	sc.srv.checkpointAndCheck(t, stage, sc.names(), func(t *testing.T, name string, _ checkpointInfo) {
		v := sc.views[slices.IndexFunc(sc.views, func(v cjView) bool { return v.name == name })]
		got := sc.srv.results(t, v.name)
		info := sc.srv.query(t, v.name)
		if info.State != "running" {
			t.Errorf("state %q, want running (error: %v)", info.State, info.raw["error"])
		}
		read := 0
		for _, e := range sc.events {
			if v.only == "" || e.table == v.only {
				read++
			}
		}
		if info.Counters.RowsIn != int64(read) {
			t.Errorf("counters.rows_in = %d, want %d (rows posted to the tables it reads)", info.Counters.RowsIn, read)
		}
		if info.Counters.LateRows != 0 {
			t.Errorf("counters.late_rows = %d, want 0: no row is late on its table", info.Counters.LateRows)
		}
		want := v.expected(sc.events)
		if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
			t.Errorf("%s: results differ from the oracle over %d rows of t and u (%d rows served, %d expected): %s\nSQL: %s",
				v.name, len(sc.events), len(got.Rows), len(want.Rows), formatDiffs(diffs, 6), v.create)
		}
		counts[name] = len(want.Rows)
	})
	return counts
}

// TestChangelogJoins: joins of updating inputs at parallelism 1 and 2;
// see the top of this file.
func TestChangelogJoins(t *testing.T) {
	begin := time.Now()
	tRows, uRows := genCJInput(testSeed(t, 1803), cjRows)
	srv := startServer(t)
	srv.sql(t, cjTDDL+";\n"+cjUDDL)
	views := append(cjViews(1), cjViews(2)...)
	stmts := make([]string, len(views))
	for i, v := range views {
		stmts[i] = v.create
	}
	if res := srv.sql(t, strings.Join(stmts, ";\n")); len(res) != len(views) {
		t.Fatalf("POST /v1/sql with %d CREATE VIEW statements: %d results", len(views), len(res))
	}
	// The RIGHT joins apart: a refusal (or a failure) is an error, and the
	// other views are checked all the same.
	for _, p := range []int{1, 2} {
		rv := cjRightView(p)
		if r := srv.do(t, http.MethodPost, "/v1/sql", "application/sql", []byte(rv.create)); r.status != http.StatusOK {
			t.Errorf("%s: POST /v1/sql answered %d: %s\nSQL: %s", rv.name, r.status, truncate(r.body, 600), rv.create)
			continue
		}
		views = append(views, rv)
	}
	sc := &cjScenario{srv: srv, views: views,
		st: &clScenario{srv: srv, table: "t"}, su: &clScenario{srv: srv, table: "u"}}
	srv.waitRunning(t, sc.names()...)

	// posted[table] is how many rows of the table are posted; postTo
	// posts both tables up to n rows each, chunk by chunk, alternating.
	posted := map[string]int{}
	postTo := func(n int) {
		for posted["t"] < n || posted["u"] < n {
			for _, tb := range []struct {
				name string
				rows []Row
			}{{"t", tRows}, {"u", uRows}} {
				i := posted[tb.name]
				j := min(n, i+changelogChunk)
				if i < j {
					sc.post(t, tb.name, tb.rows[i:j])
					posted[tb.name] = j
				}
			}
		}
	}
	// The states of cj_left and cj_count at each check, for the witnesses.
	var leftStates []leftState
	var countStates [][]Row
	verify := func(stage string) map[string]int {
		leftStates = append(leftStates, leftStateOf(cjLeftRows(sc.events), "k", "yk"))
		countStates = append(countStates, cjCountRows(sc.events))
		return sc.verify(t, stage)
	}

	n := len(tRows)
	for i := range 3 {
		postTo((i + 1) * changelogChunk)
		verify("chunk" + strconv.Itoa(i))
	}
	postTo(n / 3)
	verify("third")
	postTo(n / 2)
	srv.checkpoint(t)
	postTo(2 * n / 3)
	sc.restart(t) // SIGKILL right after the last acknowledgement
	verify("after_kill")
	for i := range 4 { // single rows of each table, each checked
		for _, tb := range []struct {
			name string
			rows []Row
		}{{"t", tRows}, {"u", uRows}} {
			j := posted[tb.name]
			sc.post(t, tb.name, tb.rows[j:j+1])
			posted[tb.name] = j + 1
			verify("step" + strconv.Itoa(i) + "_" + tb.name)
		}
	}
	postTo(n)
	counts := verify("all")
	sc.restart(t) // SIGKILL after a checkpoint: its state alone
	verify("restarted")

	back, came := leftTransitions(leftStates)
	gone, appeared := pairMoves(countStates, "xk", "yk")
	t.Logf("LEFT join NULL rows taken back %d times, back %d times; x.n = y.m pairs gone %d, appeared %d", back, came, gone, appeared)
	if back == 0 || came == 0 {
		t.Errorf("the checks saw %d NULL-padded rows of cj_left taken back by a match and %d brought back when the match went: the input must do both (change E2E_SEED or the generator)", back, came)
	}
	if gone == 0 || appeared == 0 {
		t.Errorf("the checks saw %d pairs of cj_count go and %d appear: the counts must move pairs (change E2E_SEED or the generator)", gone, appeared)
	}
	for _, v := range sc.views {
		if counts[v.name] < 3 {
			t.Errorf("%s: the oracle expects %d rows over the whole input: the test data does not exercise it", v.name, counts[v.name])
		}
	}

	// The TTL: a row two hours on in each table moves the join's watermark
	// past every earlier row of t by more than state_ttl.
	var lastTS int64
	for _, e := range sc.events {
		lastTS = max(lastTS, tsOf(e.row))
	}
	far := lastTS + 2*cjTTL
	sc.post(t, "t", []Row{kt(100, 0, far)})
	sc.post(t, "u", []Row{ku(101, 1, far)})
	verify("flushed")
	// Rows of u changing the counts of keys with rows of t: the expired
	// rows of t keep the counts they had.
	var more []Row
	for i := range 40 {
		more = append(more, ku(5+int64(i%16), 1, far+int64(i)*10))
	}
	sc.post(t, "u", more)
	endless := func(events []tagged) []Row { return streamAggJoin(events, "t", "u", cjDelay, 1<<60) }
	if !rowsDiffer(streamAggJoin(sc.events, "t", "u", cjDelay, cjTTL), endless(sc.events)) {
		t.Fatalf("oracle: the expiry changes nothing in cj_stream: the TTL phase does not test it")
	}
	t.Logf("the expiry changes cj_stream_left too: %v", rowsDiffer(cjStreamLeftRows(sc.events, cjTTL), cjStreamLeftRows(sc.events, 1<<60)))
	verify("expired")
	// New rows of t join the counts as they are.
	var fresh []Row
	for i := range 20 {
		fresh = append(fresh, kt(1+int64(i), int64(i), far+500+int64(i)*10))
	}
	sc.post(t, "t", fresh)
	verify("after_expiry")
	t.Logf("joins of updating inputs: %d rows, expected rows per view %v, elapsed %v", len(sc.events), counts, time.Since(begin).Round(time.Millisecond))
}
