package e2e

// Joins of updating inputs (issue 18) end to end, against the oracle of
// changelog_join_oracle_test.go. Three HTTP tables: t (k, v, ts; keys
// 1-20) and u (k, w, ts; keys 5-26: some keys only on one side), rows with
// disorder within the watermark delay (none late), and a PRIMARY KEY
// table p (id, k, v, ts). At parallelism 1 and 2, over x = SELECT k,
// COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k and y = SELECT k, COUNT(*)
// AS m, SUM(w) AS sw FROM u GROUP BY k (yh: y HAVING SUM(w) > 0; w's sums
// go up and down, so a key's row of yh comes and goes):
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
//   - cj_pk_left, cj_pk_agg: a PRIMARY KEY table p (id, k, v, ts; upserts
//     moving rows between keys k, deletes, ids back after a delete, deletes
//     of ids without a row) read as a changelog, `(SELECT * FROM p) AS p`:
//     x LEFT JOIN p ON x.k = p.k, and an aggregation over p JOIN y grouped
//     by y.m % 3;
//   - cj_right: x RIGHT JOIN y (the swapped LEFT join), and
//     cj_right_stream: SELECT k, COUNT(*) AS n FROM u GROUP BY k RIGHT
//     JOIN t (state_ttl 1h), created apart: a refusal of them is reported
//     and the rest goes on; cj_right_as_left and cj_right_stream_as_left
//     are the LEFT joins they stand for, written out, against the same
//     oracles.
//
// The three tables' rows are posted in alternating chunks (p's in
// proportion): the first three rounds of chunks checked one by one, a
// third checked, half, a checkpoint, two thirds and a SIGKILL right after
// their acknowledgement, a restart and a check (every acknowledged row
// counts, once), single rows of each table checked one by one, the rest
// checked, a SIGKILL after that checkpoint and a check of the restored
// state. Then the TTL: a row two hours later on each of t and u moves
// the join's watermark past every earlier row of t by more than the hour
// (checked), then rows of u change the counts (checked: the expired rows
// of t keep the rows they had, pairs and NULL rows alike; from the
// oracle's view a difference), then new rows of t join the current counts
// (checked). Every check compares each view's committed results (after
// POST /v1/checkpoints) with the oracle over exactly the rows
// posted so far, and its rows_in and late_rows (0).
//
// TestChangelogJoinCrash: the same joins at parallelism 2 under random
// SIGKILLs, checked mid-stream against the prefixes each checkpoint read
// (see there).

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
	cjRows  = 1500      // rows of t and of u before the TTL phase
	cjPDDL  = `CREATE TABLE p (id BIGINT, k BIGINT, v BIGINT, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id))
ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "2s", "idle_timeout": "1h"}'`
	cjTableRows = 600 // rows of p

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
	reads    []string // the tables the view reads; nil: t and u
	expected func(events []tagged) Result
}

// split returns the rows of t and of u among events, each in order.
// rowsOf returns those of table.
func rowsOf(events []tagged, table string) []Row {
	var rows []Row
	for _, e := range events {
		if e.table == table {
			rows = append(rows, e.row)
		}
	}
	return rows
}

func split(events []tagged) (ts, us []Row) {
	for _, e := range events {
		switch e.table {
		case "t":
			ts = append(ts, e.row)
		case "u":
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

func reads(v cjView, tables ...string) cjView {
	v.reads = tables
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
		reads(v("cj_vx", `SELECT {hint} k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k`,
			func(events []tagged) Result {
				ts, _ := split(events)
				return Evaluate(Source{}, cjXQuery, ts)
			}), "t"),
		reads(v("cj_vyh", `SELECT {hint} k, COUNT(*) AS m, SUM(w) AS sw FROM u GROUP BY k HAVING SUM(w) > 0`,
			func(events []tagged) Result {
				_, us := split(events)
				q := cjYQuery
				q.Having = func(r Row) bool { return bigint(r, "sw") > 0 }
				return Evaluate(Source{}, q, us)
			}), "u"),
		v("cj_vleft", `SELECT {hint} x.k, x.n, x.s, y.k AS yk, y.m, y.sw FROM cj_vx{p} x LEFT JOIN cj_vyh{p} y ON x.k = y.k`,
			func(events []tagged) Result {
				return multiset([]string{"k", "n", "s", "yk", "m", "sw"}, cjLeftRows(events))
			}),
		// The PRIMARY KEY table p read as a changelog: its current rows
		// (an upsert moving a row to another k, a delete taking it out).
		reads(v("cj_pk_left", `SELECT {hint} x.k, x.n, p.id, p.v FROM {x} x LEFT JOIN (SELECT * FROM p) AS p ON x.k = p.k`,
			func(events []tagged) Result {
				ts, _ := split(events)
				return multiset([]string{"k", "n", "id", "v"}, leftJoinRows(cjXRows(ts), tableState("id", rowsOf(events, "p")), sameK,
					func(x, p Row) Row { return Row{"k": x["k"], "n": x["n"], "id": get(p, "id"), "v": get(p, "v")} }))
			}), "t", "p"),
		reads(v("cj_pk_agg", `SELECT {hint} y.m % 3 AS b, COUNT(*) AS pairs, SUM(p.v) AS total, COUNT(DISTINCT p.k) AS nk, MAX(p.id) AS top_id
FROM (SELECT * FROM p) AS p JOIN {y} y ON p.k = y.k GROUP BY b`,
			func(events []tagged) Result {
				_, us := split(events)
				var rows []Row
				for _, r := range joinRows(tableState("id", rowsOf(events, "p")), cjYRows(us, false), sameK, nil, func(p, y Row) Row {
					return Row{"b": bigint(y, "m") % 3, "v": p["v"], "k": p["k"], "id": p["id"]}
				}) {
					rows = append(rows, r)
				}
				return groupAll(rows, []string{"b"}, []Agg{
					{As: "pairs", Func: CountStar},
					{As: "total", Func: Sum, Arg: colRef("v")},
					{As: "nk", Func: CountDistinct, Arg: colRef("k")},
					{As: "top_id", Func: Max, Arg: colRef("id")},
				})
			}), "u", "p"),
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

// cjRightStreamView is a running aggregate RIGHT JOIN t at parallelism
// p (state_ttl 1h): t LEFT JOIN the aggregate, with the aggregate's
// columns first.
func cjRightStreamView(p int) cjView {
	name := "cj_right_stream_p" + strconv.Itoa(p)
	count := Query{GroupBy: []string{"k"}, Aggs: []Agg{{As: "n", Func: CountStar}}}
	return cjView{
		name: name,
		create: "CREATE VIEW " + name + " AS\nSELECT /*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") SET_VAR(state_ttl='1h') */ a.n, t.k, t.v, t.ts " +
			"FROM (SELECT k, COUNT(*) AS n FROM u GROUP BY k) a RIGHT JOIN t ON t.k = a.k",
		expected: func(events []tagged) Result {
			return multiset([]string{"n", "k", "v", "ts"}, streamJoin(events, "t", "u", cjDelay, cjTTL, LeftJoin,
				func(us []Row) []Row { return Evaluate(Source{}, count, us).Rows },
				func(s, a Row) Row { return Row{"n": get(a, "n"), "k": s["k"], "v": s["v"], "ts": s["ts"]} }))
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

// genCJTable returns n rows of the PRIMARY KEY table p (id, k, v, ts) in
// log order: inserts of new ids (k from 1 to 26), upserts of an id with a
// row (a new v, and half the time a new k: the row moves to another join
// key), deletes of an id with a row, inserts of a deleted id again, and
// now and then a delete of an id without a row; ts a clock advancing
// 0-100ms a row (from baseTime).
func genCJTable(seed uint64, n int) []Row {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	clock := baseTime + 1000
	cur := map[int64]Row{}
	var live, gone []int64
	nextID := int64(1)
	var rows []Row
	put := func(id, k int64) {
		r := Row{"id": id, "k": k, "v": rng.Int64N(101) - 50, "ts": Timestamp(clock)}
		if _, had := cur[id]; !had {
			live = append(live, id)
		}
		cur[id] = r
		rows = append(rows, r)
	}
	for len(rows) < n {
		clock += rng.Int64N(101)
		switch op := rng.IntN(100); {
		case op < 40 && len(live) > 0:
			id := live[rng.IntN(len(live))]
			k := bigint(cur[id], "k")
			if rng.IntN(2) == 0 {
				k = 1 + rng.Int64N(26)
			}
			put(id, k)
		case op < 55 && len(live) > 0:
			i := rng.IntN(len(live))
			id := live[i]
			live = slices.Delete(live, i, i+1)
			delete(cur, id)
			gone = append(gone, id)
			rows = append(rows, pkDelete(id, clock))
		case op < 62 && len(gone) > 0:
			i := rng.IntN(len(gone))
			id := gone[i]
			gone = slices.Delete(gone, i, i+1)
			put(id, 1+rng.Int64N(26))
		case op < 65:
			rows = append(rows, pkDelete(10_000+rng.Int64N(100), clock))
		default:
			if len(live) < 40 {
				put(nextID, 1+rng.Int64N(26))
				nextID++
			}
		}
	}
	return rows
}

// pkMoves counts, in p's log, the upserts that move an id's row to
// another k and the deletes of an id with a row.
func pkMoves(log []Row) (moved, deleted int) {
	cur := map[string]Row{}
	for _, r := range log {
		id := keyPart(r["id"])
		old := cur[id]
		if isDelete(r) {
			if old != nil {
				deleted++
			}
			delete(cur, id)
			continue
		}
		if old != nil && keyPart(old["k"]) != keyPart(r["k"]) {
			moved++
		}
		cur[id] = r
	}
	return moved, deleted
}

// cjScenario is a server with t and u, views over them, and the rows
// posted so far in posting order.
type cjScenario struct {
	srv    *server
	tables map[string]*clScenario // posting, one per table
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
	sc.tables[table].post(t, rows)
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
			if (v.reads == nil && e.table != "p") || slices.Contains(v.reads, e.table) {
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
	seed := testSeed(t, 1803)
	tRows, uRows := genCJInput(seed, cjRows)
	pRows := genCJTable(seed+1, cjTableRows)
	srv := startServer(t)
	srv.sql(t, cjTDDL+";\n"+cjUDDL+";\n"+cjPDDL)
	views := append(cjViews(1), cjViews(2)...)
	// The RIGHT joins' oracles against the LEFT joins they stand for,
	// written out: what cj_right and cj_right_stream must equal.
	for _, p := range []int{1, 2} {
		for _, c := range []struct {
			v    cjView
			from string
		}{
			{cjRightView(p), " AS\nSELECT /*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") */ x.k, x.n, y.k AS yk, y.m, y.sw FROM " +
				cjY + " y LEFT JOIN " + cjX + " x ON x.k = y.k"},
			{cjRightStreamView(p), " AS\nSELECT /*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ") SET_VAR(state_ttl='1h') */ a.n, t.k, t.v, t.ts " +
				"FROM t LEFT JOIN (SELECT k, COUNT(*) AS n FROM u GROUP BY k) a ON t.k = a.k"},
		} {
			c.v.name = strings.Replace(c.v.name, "_p", "_as_left_p", 1)
			c.v.create = "CREATE VIEW " + c.v.name + c.from
			views = append(views, c.v)
		}
	}
	stmts := make([]string, len(views))
	for i, v := range views {
		stmts[i] = v.create
	}
	if res := srv.sql(t, strings.Join(stmts, ";\n")); len(res) != len(views) {
		t.Fatalf("POST /v1/sql with %d CREATE VIEW statements: %d results", len(views), len(res))
	}
	// The RIGHT joins apart: a refusal (or a failure) is an error, and the
	// other views are checked all the same.
	for _, rv := range []cjView{cjRightView(1), cjRightView(2), cjRightStreamView(1), cjRightStreamView(2)} {
		if r := srv.do(t, http.MethodPost, "/v1/sql", "application/sql", []byte(rv.create)); r.status != http.StatusOK {
			t.Errorf("%s: POST /v1/sql answered %d: %s\nSQL: %s", rv.name, r.status, truncate(r.body, 600), rv.create)
			continue
		}
		views = append(views, rv)
	}
	sc := &cjScenario{srv: srv, views: views,
		tables: map[string]*clScenario{"t": {srv: srv, table: "t"}, "u": {srv: srv, table: "u"}, "p": {srv: srv, table: "p"}}}
	srv.waitRunning(t, sc.names()...)

	// posted[table] is how many rows of the table are posted; postTo
	// posts every table up to n rows of t's and u's cjRows (p's in
	// proportion), chunk by chunk, alternating.
	tables := []struct {
		name string
		rows []Row
	}{{"t", tRows}, {"u", uRows}, {"p", pRows}}
	posted := map[string]int{}
	postTo := func(n int) {
		for more := true; more; {
			more = false
			for _, tb := range tables {
				i, end := posted[tb.name], n*len(tb.rows)/cjRows
				if j := min(end, i+changelogChunk); i < j {
					sc.post(t, tb.name, tb.rows[i:j])
					posted[tb.name] = j
					more = more || j < end
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
		for _, tb := range tables {
			j := posted[tb.name]
			sc.post(t, tb.name, tb.rows[j:j+1])
			posted[tb.name] = j + 1
			verify("step" + strconv.Itoa(i) + "_" + tb.name)
		}
	}
	postTo(n)
	if posted["p"] != len(pRows) {
		t.Fatalf("posted %d rows of p, want all %d", posted["p"], len(pRows))
	}
	counts := verify("all")
	sc.restart(t) // SIGKILL after a checkpoint: its state alone
	verify("restarted")

	back, came := leftTransitions(leftStates)
	gone, appeared := pairMoves(countStates, "xk", "yk")
	t.Logf("LEFT join NULL rows taken back %d times, back %d times; x.n = y.m pairs gone %d, appeared %d", back, came, gone, appeared)
	if back == 0 || came == 0 {
		t.Errorf("the checks saw %d NULL-padded rows of cj_left taken back by a match and %d brought back when the match went: the input must do both (change E2E_SEED or the generator)", back, came)
	}
	moved, deleted := pkMoves(pRows[:posted["p"]])
	t.Logf("p: %d upserts moving a row to another k, %d deletes of a row", moved, deleted)
	if moved == 0 || deleted == 0 {
		t.Errorf("p's log has %d upserts moving a row to another k and %d deletes of a row: it must have both", moved, deleted)
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

// TestChangelogJoinCrash: cjViews(2) (every join of TestChangelogJoins at
// parallelism 2) under crash_test.go's load: t's, u's and p's logs posted
// in alternating small chunks with Idempotency-Keys, resent until
// acknowledged, checkpoints every 200ms, and SIGKILLs at random moments
// (STREAMSQL_CRASH_KILLS, default 3), some aimed at a request in flight.
// Before each kill three random views are checked mid-stream: their
// committed results equal the oracle over exactly the rows before the
// offsets their committed checkpoint recorded for each table they read (a
// pair taken back twice on replay, or a NULL row lost, shows there). No
// row moves the join's watermark by the TTL, so the order the tables are
// read in does not matter. At the end every view equals the oracle over
// the whole logs.
func TestChangelogJoinCrash(t *testing.T) {
	begin := time.Now()
	kills := crashKills(t)
	seed := testSeed(t, 1804)
	n := max(cjRows, kills*500)
	tRows, uRows := genCJInput(seed, n)
	pRows := genCJTable(seed+1, n*cjTableRows/cjRows)
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, cjTDDL+";\n"+cjUDDL+";\n"+cjPDDL)
	views := cjViews(2)
	stmts := make([]string, len(views))
	for i, v := range views {
		stmts[i] = v.create
	}
	srv.sql(t, strings.Join(stmts, ";\n"))
	sc := &cjScenario{srv: srv, views: views}
	srv.waitRunning(t, sc.names()...)

	logs := map[string][]Row{"t": tRows, "u": uRows, "p": pRows}
	var chunks []idemChunk
	perTable := map[string][]idemChunk{}
	for _, tb := range []string{"t", "u", "p"} {
		perTable[tb] = idemChunks(t, tb, logs[tb], crashChunkRows, "cj-"+tb)
	}
	for i := 0; len(perTable["t"])+len(perTable["u"])+len(perTable["p"]) > 0; i++ {
		for _, tb := range []string{"t", "u", "p"} {
			// p's chunks spread over the run like the others'.
			if len(perTable[tb]) > 0 && (tb != "p" || i%(cjRows/cjTableRows+1) == 0 || len(perTable[tb]) > len(perTable["t"])) {
				chunks = append(chunks, perTable[tb][0])
				perTable[tb] = perTable[tb][1:]
			}
		}
	}
	// eventsAt is the rows before the offsets of each table (all of a
	// table without an offset).
	eventsAt := func(offsets map[string]int64) []tagged {
		var events []tagged
		for _, tb := range []string{"t", "u", "p"} {
			rows := logs[tb]
			if off, ok := offsets[tb]; ok {
				rows = rows[:min(off, int64(len(rows)))]
			}
			for _, r := range rows {
				events = append(events, tagged{tb, r})
			}
		}
		return events
	}
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	poster := startCrashPoster(t, srv, chunks, kills)
	prefixChecks := 0
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(int) {
			for range 3 {
				v := views[rng.IntN(len(views))]
				id, got, offsets, ok := stableCommitted(t, srv, v.name)
				if !ok {
					continue
				}
				read := v.reads
				if read == nil {
					read = []string{"t", "u"}
				}
				complete := true
				for _, tb := range read {
					if off, ok := offsets[tb]; !ok {
						complete = false
					} else if off > int64(len(logs[tb])) {
						t.Errorf("%s: checkpoint %d recorded offset %d for %s, beyond the %d rows of its log", v.name, id, off, tb, len(logs[tb]))
						complete = false
					}
				}
				if !complete {
					continue
				}
				prefixChecks++
				want := v.expected(eventsAt(offsets))
				if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
					t.Errorf("%s: committed results at checkpoint %d differ from the oracle over the rows before its offsets %v (%d rows served, %d expected): %s",
						v.name, id, offsets, len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
				}
			}
		},
	})
	poster.wait(t)
	for _, tb := range []string{"t", "u", "p"} {
		if end, ok := srv.endOffset(t, tb); !ok || end != int64(len(logs[tb])) {
			t.Errorf("table %s: end_offset %d (reported: %v), want %d: every row exactly once", tb, end, ok, len(logs[tb]))
		}
	}
	srv.waitRunning(t, sc.names()...)
	sc.events = eventsAt(nil)
	sc.verify(t, "final")
	t.Logf("changelog join crash recovery: kills=%d (under load %d, aimed at a request %d) mid-stream checks=%d rows=%d+%d+%d chunks=%d resends=%d replayed=%d elapsed=%v",
		kills, ks.underLoad, ks.aimed, prefixChecks, len(tRows), len(uRows), len(pRows), len(chunks), poster.stats.resends, poster.stats.replayed, time.Since(begin).Round(time.Millisecond))
}
