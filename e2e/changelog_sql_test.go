package e2e

// The SQL built on changelog streams (issue 18) end to end, against the
// oracle of changelog_sql_oracle_test.go: two HTTP tables, bids and
// auctions (the join tests' columns and generator, genJoinData: bounded
// disorder, none late; watermark_delay 3s and 4s, allowed_lateness 1s
// both, idle_timeout an hour so that the wall clock never moves a
// watermark), and at parallelism 1 and 2:
//
//   - sq_union_all: UNION ALL of the two tables (a WHERE in one branch);
//     sq_union: UNION (distinct) of them, tuples in both branches once;
//   - sq_union_agg: a running aggregation over their UNION ALL;
//     sq_union_win and sq_union_win_owc: a TUMBLE aggregation over it in
//     both emit modes (on close: the windows the lower of the two tables'
//     watermarks has closed);
//   - sq_union_running: a running aggregate of each table, UNION ALL, on
//     the same keys (auction = id): a key of both is two rows;
//     sq_union_running_agg: an aggregation over that union (its rows
//     taken back through the union); sq_union_mixed: a running aggregate
//     UNION ALL an append-only query;
//   - sq_distinct: SELECT DISTINCT over auctions (a nullable VARCHAR
//     expression); sq_distinct_running: SELECT DISTINCT over a running
//     aggregate (a count leaves with the last auction that had it);
//   - sq_with_self: a windowed CTE read twice, joined with itself on
//     window_end; sq_with_chain: a CTE reading an earlier CTE (a filter
//     over a running aggregate rows leave and come back to), filtered;
//     sq_with_agg: an aggregation over a CTE that is a running aggregate;
//   - sq_right and sq_right_residual: interval RIGHT JOINs (the auctions
//     side preserved, NULL-padded once the bids watermark passes an
//     auction's bound), checked against the LEFT join oracle with the
//     sides swapped, with the columns in the order written;
//   - sq_ttl_1h and sq_ttl_20s: regular joins with state_ttl whose ON
//     condition bounds the time on one side only (b.ts >= a.ts): the pairs
//     with 0 <= b.ts - a.ts <= the TTL.
//
// The tables are posted in chunks, the one behind in event time first,
// except before two checks: at "half" the bids run 15s ahead of the
// auctions (the union's watermark is the auctions'), at "after_kill" the
// auctions run 15s ahead (the bids'), at the first time from there on
// where that leaves a window closed on the faster table and open on the
// union. Checked at "half" after POST /v1/checkpoints (every query equal
// to the oracle over exactly the rows posted so far); then more rows, a
// checkpoint, more rows and a SIGKILL right after their acknowledgement,
// a restart and the "after_kill" check; all rows but a tail, a check, a
// SIGKILL after that checkpoint, a restart and a check of the restored
// state alone; the tail (taking back rows of the restored state), a
// check; probe rows walking the bids watermark across a RIGHT JOIN bound
// and putting bids exactly on the TTL joins' bounds, each step checked;
// flush rows a minute later, a last check. Witnesses (sqlWitnesses,
// restoredTakenBack, checkProbeOracle) assert from the oracle's side that
// each check exercises what it is about.
//
// TestSQLUnionWatermark: the union's watermark step by step (one table
// ahead in one request, then an on-time row of the other, then the other
// catching up across a window's close), on the union aggregations.
//
// TestSQLCrash: the parallelism-2 queries under crash_test.go's random
// SIGKILLs, checked mid-stream against the prefixes each checkpoint read.
//
// TestSQLRefusals: UNION ALL of different column counts and types,
// EXCEPT, INTERSECT, UNION mixed with UNION ALL, WITH RECURSIVE, a WITH
// query reading itself, a WITH column list, SELECT DISTINCT with GROUP BY
// or aggregates: 422 naming the problem, no query created.

import (
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	sqlBidsDDL = `CREATE TABLE bids (
  auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL
) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "3s", "allowed_lateness": "1s", "idle_timeout": "1h"}'`
	sqlAuctionsDDL = `CREATE TABLE auctions (
  id BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT NOT NULL, name VARCHAR(32), ts TIMESTAMP(3) NOT NULL
) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "4s", "allowed_lateness": "1s", "idle_timeout": "1h"}'`
	sqlEvents   = 4000
	sqlLateness = 1000 // both tables' allowed_lateness, ms
	// sqlLead is how far (ms of event time) one table runs ahead of the
	// other before the "half" and "after_kill" checks.
	sqlLead = 15_000
	// sqlTailBids and sqlTailAuctions rows are posted after the restart
	// from a checkpoint.
	sqlTailBids, sqlTailAuctions = 300, 40
)

// The tables for the oracle.
var (
	sqlBids        = Source{TimeCol: "ts", WatermarkDelay: 3000, AllowedLateness: sqlLateness}
	sqlAuctions    = Source{TimeCol: "ts", WatermarkDelay: 4000, AllowedLateness: sqlLateness}
	sqlBidSide     = JoinSide{Alias: "b", Columns: bidSide.Columns, TimeCol: "ts", WatermarkDelay: 3000}
	sqlAuctionSide = JoinSide{Alias: "a", Columns: auctionSide.Columns, TimeCol: "ts", WatermarkDelay: 4000}
)

// sqlUnionSQL is the UNION ALL the union views aggregate.
const sqlUnionSQL = `SELECT auction AS k, price AS v, ts FROM bids UNION ALL SELECT id, category, ts FROM auctions`

// unionRows is sqlUnionSQL over the two logs, with b = k % 3 (the group of
// the windowed views).
func unionRows(bids, auctions []Row) []Row {
	u := unionAll([]string{"k", "v", "ts"},
		project(bids, col("k", "auction"), col("v", "price"), col("ts", "ts")),
		project(auctions, col("k", "id"), col("v", "category"), col("ts", "ts")))
	for _, r := range u.Rows {
		r["b"] = bigint(r, "k") % 3
	}
	return u.Rows
}

var (
	unionWinQuery = Query{Window: TumbleWindow(10_000), GroupBy: []string{"b"}, Aggs: []Agg{
		{As: "n", Func: CountStar},
		{As: "total", Func: Sum, Arg: colRef("v")},
		{As: "hi", Func: Max, Arg: colRef("v")},
		{As: "nkeys", Func: CountDistinct, Arg: colRef("k")},
	}}
	// SELECT auction, COUNT(*) AS n, MAX(price) AS top FROM bids GROUP BY auction
	perAuctionAggs = []Agg{{As: "n", Func: CountStar}, {As: "top", Func: Max, Arg: colRef("price")}}
	// the windowed CTE of sq_with_self
	withWindowQuery = Query{Window: TumbleWindow(10_000), GroupBy: []string{"auction"}, Aggs: []Agg{{As: "n", Func: CountStar}}}
)

// perAuction is the running aggregate over bids the DISTINCT and WITH
// views read: per auction n, top, and vol (the sum of prices).
func perAuction(bids []Row) []Row {
	return groupAll(bids, []string{"auction"}, append(slices.Clip(perAuctionAggs), Agg{As: "vol", Func: Sum, Arg: colRef("price")})).Rows
}

// chainKeeps is sq_with_chain's two filters: the CTE odd (n % 3 <> 0)
// and the main query's (vol > 2000).
func chainKeeps(r Row) bool { return bigint(r, "n")%3 != 0 && bigint(r, "vol") > 2000 }

func priceBelow(n int64) func(Row) bool { return func(r Row) bool { return bigint(r, "price") < n } }

// sqlViews are the views at parallelism p, in creation order.
func sqlViews(p int) []dualView {
	sfx := "_p" + strconv.Itoa(p)
	par := "SET_VAR(parallelism=" + strconv.Itoa(p) + ")"
	v := func(base, hints, sql string, reads map[string]int, expected func(bids, auctions []Row) Result) dualView {
		name := base + sfx
		sql = strings.NewReplacer("{hint}", "/*+ "+par+hints+" */", "{union}", sqlUnionSQL).Replace(sql)
		return dualView{name: name, oracleKey: oracleKey(base, sql, par, sfx), create: "CREATE VIEW " + name + " AS\n" + sql, reads: reads, expected: expected}
	}
	bidsOnce, bidsTwice := map[string]int{"bids": 1}, map[string]int{"bids": 2}
	auctionsOnce, both := map[string]int{"auctions": 1}, map[string]int{"bids": 1, "auctions": 1}
	changes, owc := " SET_VAR(emit_mode=changes)", " SET_VAR(emit_mode=on_window_close)"
	unionWin := `SELECT {hint} window_start, window_end, k % 3 AS b, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS hi, COUNT(DISTINCT k) AS nkeys
FROM ({union}) u GROUP BY TUMBLE(ts, '10s'), b`
	unionWinExpected := func(onClose bool) func(bids, auctions []Row) Result {
		return func(bids, auctions []Row) Result {
			checkOnTime("bids", sqlBids, bids)
			checkOnTime("auctions", sqlAuctions, auctions)
			q := unionWinQuery
			q.OnWindowClose = onClose
			wm, ok := unionWatermark([]Source{sqlBids, sqlAuctions}, [][]Row{bids, auctions})
			return windowsOverUnion(q, "ts", sqlLateness, unionRows(bids, auctions), wm, ok)
		}
	}
	rightCols := []Column{col("auction", "b.auction"), col("bidder", "b.bidder"), col("price", "b.price"), col("id", "a.id"), col("seller", "a.seller")}
	ttlCols := []Column{col("auction", "b.auction"), col("bidder", "b.bidder"), col("price", "b.price"),
		col("bid_ts", "b.ts"), col("auction_ts", "a.ts"), col("seller", "a.seller")}
	return []dualView{
		v("sq_union_all", "", `SELECT {hint} auction AS k, price AS v, ts FROM bids WHERE price > 500
UNION ALL SELECT id, category, ts FROM auctions`, both,
			func(bids, auctions []Row) Result {
				return unionAll([]string{"k", "v", "ts"},
					project(filterRows(bids, func(r Row) bool { return bigint(r, "price") > 500 }), col("k", "auction"), col("v", "price"), col("ts", "ts")),
					project(auctions, col("k", "id"), col("v", "category"), col("ts", "ts")))
			}),
		v("sq_union", "", `SELECT {hint} auction AS k, bidder % 3 AS c FROM bids UNION SELECT id, seller % 3 FROM auctions`, both,
			func(bids, auctions []Row) Result {
				return distinctRows(unionDistinctRows(bids, auctions), []string{"k", "c"})
			}),
		v("sq_union_agg", changes, `SELECT {hint} k, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi, MAX(ts) AS last_ts
FROM ({union}) u GROUP BY k`, both,
			func(bids, auctions []Row) Result {
				return groupAll(unionRows(bids, auctions), []string{"k"}, []Agg{
					{As: "n", Func: CountStar},
					{As: "total", Func: Sum, Arg: colRef("v")},
					{As: "lo", Func: Min, Arg: colRef("v")},
					{As: "hi", Func: Max, Arg: colRef("v")},
					{As: "last_ts", Func: Max, Arg: colRef("ts")},
				})
			}),
		v("sq_union_win", changes, unionWin, both, unionWinExpected(false)),
		v("sq_union_win_owc", owc, unionWin, both, unionWinExpected(true)),
		v("sq_union_running", changes, `SELECT {hint} auction AS k, COUNT(*) AS n, MAX(price) AS top FROM bids GROUP BY auction
UNION ALL SELECT id, COUNT(*), MAX(category) FROM auctions GROUP BY id`, both,
			func(bids, auctions []Row) Result {
				return Result{Columns: []string{"k", "n", "top"}, Rows: unionRunningRows(bids, auctions)}
			}),
		// An aggregation over the UNION ALL of the two running aggregates:
		// equal keys of the two branches are two rows of its input.
		v("sq_union_running_agg", changes, `SELECT {hint} n, COUNT(*) AS nkeys, SUM(top) AS tops, MIN(k) AS lo_k
FROM (SELECT auction AS k, COUNT(*) AS n, MAX(price) AS top FROM bids GROUP BY auction
      UNION ALL SELECT id, COUNT(*), MAX(category) FROM auctions GROUP BY id) u GROUP BY n`, both,
			func(bids, auctions []Row) Result {
				return groupAll(unionRunningRows(bids, auctions), []string{"n"}, []Agg{
					{As: "nkeys", Func: CountStar},
					{As: "tops", Func: Sum, Arg: colRef("top")},
					{As: "lo_k", Func: Min, Arg: colRef("k")},
				})
			}),
		// A running aggregate UNION ALL an append-only query: updating,
		// keyed on the branch and the row's key or id.
		v("sq_union_mixed", "", `SELECT {hint} auction AS k, COUNT(*) AS n FROM bids GROUP BY auction
UNION ALL SELECT id, seller FROM auctions WHERE category < 20`, both,
			func(bids, auctions []Row) Result {
				return unionAll([]string{"k", "n"},
					groupAll(bids, []string{"auction"}, perAuctionAggs[:1]),
					project(filterRows(auctions, func(r Row) bool { return bigint(r, "category") < 20 }), col("k", "id"), col("n", "seller")))
			}),
		v("sq_distinct", "", `SELECT {hint} DISTINCT seller, LEFT(name, 6) AS prefix FROM auctions`, auctionsOnce,
			func(_, auctions []Row) Result {
				var rows []Row
				for _, a := range auctions {
					var prefix any
					if s, ok := a["name"].(string); ok {
						prefix = s[:min(6, len(s))]
					}
					rows = append(rows, Row{"seller": a["seller"], "prefix": prefix})
				}
				return distinctRows(rows, []string{"seller", "prefix"})
			}),
		v("sq_distinct_running", "", `SELECT {hint} DISTINCT n FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) r`, bidsOnce,
			func(bids, _ []Row) Result { return distinctRows(perAuction(bids), []string{"n"}) }),
		// The CTE read twice: two windowed subqueries, joined on
		// window_end (a window join: a pair once both windows are out).
		v("sq_with_self", "", `WITH w AS (SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction)
SELECT {hint} x.window_end, x.auction, y.auction AS other, x.n FROM w x JOIN w y
  ON x.window_end = y.window_end AND x.n = y.n AND x.auction < y.auction`, bidsTwice,
			func(bids, _ []Row) Result {
				w := closedWindows(sqlBids, withWindowQuery, bids, 1)
				rows := joinRows(w, w, func(x, y Row) bool {
					return endOf(x) == endOf(y) && bigint(x, "n") == bigint(y, "n") && bigint(x, "auction") < bigint(y, "auction")
				}, nil, func(x, y Row) Row {
					return Row{"window_end": x["window_end"], "auction": x["auction"], "other": y["auction"], "n": x["n"]}
				})
				return multiset([]string{"window_end", "auction", "other", "n"}, rows)
			}),
		v("sq_with_chain", "", `WITH per AS (SELECT auction, COUNT(*) AS n, SUM(price) AS vol FROM bids GROUP BY auction),
  odd AS (SELECT auction, n, vol FROM per WHERE n % 3 <> 0)
SELECT {hint} auction, n, vol FROM odd WHERE vol > 2000`, bidsOnce,
			func(bids, _ []Row) Result {
				return keyedProjection(perAuction(bids), "auction", chainKeeps, []Column{col("auction", "auction"), col("n", "n"), col("vol", "vol")})
			}),
		v("sq_with_agg", changes, `WITH per AS (SELECT auction, COUNT(*) AS n, MAX(price) AS top FROM bids GROUP BY auction)
SELECT {hint} n, COUNT(*) AS auctions, MAX(top) AS top, MIN(auction) AS lo_auction FROM per GROUP BY n`, bidsOnce,
			func(bids, _ []Row) Result {
				return groupAll(perAuction(bids), []string{"n"}, []Agg{
					{As: "auctions", Func: CountStar},
					{As: "top", Func: Max, Arg: colRef("top")},
					{As: "lo_auction", Func: Min, Arg: colRef("auction")},
				})
			}),
		v("sq_right", "", `SELECT {hint} b.auction, b.bidder, b.price, a.id, a.seller
FROM bids b RIGHT JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND`, both,
			func(bids, auctions []Row) Result {
				return project(EvaluateJoin(rightJoin(nil), auctions, bids), rightCols...)
			}),
		v("sq_right_residual", "", `SELECT {hint} a.id, b.price, a.category, b.bidder
FROM bids b RIGHT JOIN auctions a ON a.id = b.auction AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND AND b.price > a.category * 10`, both,
			func(bids, auctions []Row) Result {
				return project(EvaluateJoin(rightJoin(aboveCategory), auctions, bids),
					col("id", "a.id"), col("price", "b.price"), col("category", "a.category"), col("bidder", "b.bidder"))
			}),
		v("sq_ttl_1h", " SET_VAR(state_ttl='1h')", `SELECT {hint} b.auction, b.bidder, b.price, b.ts AS bid_ts, a.ts AS auction_ts, a.seller
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts >= a.ts WHERE b.price < 100`, both,
			func(bids, auctions []Row) Result {
				return project(EvaluateJoin(oneSidedTTLJoin(3_600_000), filterRows(bids, priceBelow(100)), auctions), ttlCols...)
			}),
		// The auctions first, the bound written the other way round.
		v("sq_ttl_20s", " SET_VAR(state_ttl='20s')", `SELECT {hint} b.auction, b.bidder, b.price, b.ts AS bid_ts, a.ts AS auction_ts, a.seller
FROM auctions a JOIN bids b ON a.id = b.auction AND a.ts <= b.ts WHERE b.price < 300`, both,
			func(bids, auctions []Row) Result {
				return project(EvaluateJoin(oneSidedTTLJoin(20_000), filterRows(bids, priceBelow(300)), auctions), ttlCols...)
			}),
	}
}

// unionRunningRows are sq_union_running's rows: the running aggregates
// of both tables (k, n, top), UNION ALL.
func unionRunningRows(bids, auctions []Row) []Row {
	return unionAll([]string{"k", "n", "top"},
		groupAll(bids, []string{"auction"}, perAuctionAggs),
		groupAll(auctions, []string{"id"}, []Agg{{As: "n", Func: CountStar}, {As: "top", Func: Max, Arg: colRef("category")}})).Rows
}

// unionDistinctRows are sq_union's branches, before DISTINCT.
func unionDistinctRows(bids, auctions []Row) []Row {
	return unionAll([]string{"k", "c"},
		project(bids, col("k", "auction"), Column{As: "c", Expr: func(r Row) any { return bigint(r, "bidder") % 3 }}),
		project(auctions, col("k", "id"), Column{As: "c", Expr: func(r Row) any { return bigint(r, "seller") % 3 }})).Rows
}

// sqlStats are the witnesses of the rows posted so far (see the top of
// changelog_sql_oracle_test.go).
type sqlStats struct {
	// sq_distinct_running and sq_with_agg: counts some auctions had and
	// none has now (of them, those that two auctions had at once).
	distinctGone, distinctGoneShared int
	// sq_with_chain: auctions that passed its filters once and fail now.
	chainLeft int
	// sq_union_running: keys of both branches; sq_union: tuples of both.
	sharedKeys, sharedTuples int
	// sq_union_win_owc: windows closed on the faster table's watermark but
	// not on the union's; slower is the table whose watermark is lower.
	closedOnFaster int
	slower         string
	// sq_right: NULL-padded rows, and auctions without a match whose NULL
	// row is not due yet (the bids watermark has not passed their bound).
	padded, pending int
	// the TTL joins: key-equal pairs with b.ts < a.ts (out by the
	// one-sided bound), with b.ts - a.ts > 20s among sq_ttl_20s's bids
	// (out by the TTL), and the pairs in.
	beforeBound, beyondTTL, ttlIn int
}

func sqlWitnesses(bids, auctions []Row) sqlStats {
	var st sqlStats
	dv := distinctWitness(bids, "auction", func(rows []Row) any { return int64(len(rows)) })
	st.distinctGone, st.distinctGoneShared = dv.gone, dv.goneShared

	passed := map[string]bool{}
	rowsOf := map[string][]Row{}
	for _, b := range bids {
		k := keyPart(b["auction"])
		rowsOf[k] = append(rowsOf[k], b)
		if r := perAuction(rowsOf[k]); chainKeeps(r[0]) {
			passed[k] = true
		}
	}
	for _, r := range perAuction(bids) {
		if passed[keyPart(r["auction"])] && !chainKeeps(r) {
			st.chainLeft++
		}
	}

	ids := map[int64]bool{}
	for _, a := range auctions {
		ids[bigint(a, "id")] = true
	}
	for _, r := range perAuction(bids) {
		if ids[bigint(r, "auction")] {
			st.sharedKeys++
		}
	}
	fromBids := map[string]bool{}
	for _, r := range distinctRows(unionDistinctRows(bids, nil), []string{"k", "c"}).Rows {
		fromBids[canonKey([]any{r["k"], r["c"]})] = true
	}
	for _, r := range distinctRows(unionDistinctRows(nil, auctions), []string{"k", "c"}).Rows {
		if fromBids[canonKey([]any{r["k"], r["c"]})] {
			st.sharedTuples++
		}
	}

	st.closedOnFaster, st.slower = closedOnFaster(bids, auctions)
	wb, okB := finalWatermark(sqlBids, bids)

	for _, r := range EvaluateJoin(rightJoin(nil), auctions, bids) {
		if r["b.auction"] == nil {
			st.padded++
		}
	}
	for _, a := range auctions {
		matched := slices.ContainsFunc(bids, func(b Row) bool { return bidIn10s(b, a) })
		if !matched && (!okB || tsOf(a)+10_000 >= wb) {
			st.pending++
		}
	}

	for _, b := range bids {
		for _, a := range auctions {
			if bigint(b, "auction") != bigint(a, "id") {
				continue
			}
			d := tsOf(b) - tsOf(a)
			switch {
			case d < 0:
				st.beforeBound++
			case d > 20_000 && bigint(b, "price") < 300:
				st.beyondTTL++
			case bigint(b, "price") < 300:
				st.ttlIn++
			}
		}
	}
	return st
}

// closedOnFaster counts the windows of sq_union_win that the faster
// table's watermark has closed and the union's (the slower one's) has
// not, and names the slower table.
func closedOnFaster(bids, auctions []Row) (int, string) {
	wb, okB := finalWatermark(sqlBids, bids)
	wa, okA := finalWatermark(sqlAuctions, auctions)
	if !okB || !okA {
		return 0, ""
	}
	slower := "bids"
	if wa < wb {
		slower = "auctions"
	}
	n := 0
	for _, r := range windowsOverUnion(unionWinQuery, "ts", sqlLateness, unionRows(bids, auctions), 0, false).Rows {
		if e := endOf(r) + sqlLateness; e <= max(wb, wa) && e > min(wb, wa) {
			n++
		}
	}
	return n, slower
}

// leadCut returns how many rows of each table to post so that one table
// (the bids if bidsAhead, else the auctions) runs sqlLead ms ahead of the
// other at a time t, the first one from the bid at index from on (in
// steps of 20 bids) where a window of sq_union_win is closed on the
// faster table's watermark and open on the union's.
func leadCut(t *testing.T, data joinData, from int, bidsAhead bool) (bidsN, auctionsN int) {
	t.Helper()
	for i := from; i < len(data.bids); i += 20 {
		at := tsOf(data.bids[i])
		aheadB, aheadA := at, at
		if bidsAhead {
			aheadB += sqlLead
		} else {
			aheadA += sqlLead
		}
		bidsN, auctionsN = cutAt(data.bids, aheadB), cutAt(data.auctions, aheadA)
		if n, _ := closedOnFaster(data.bids[:bidsN], data.auctions[:auctionsN]); n > 0 {
			return bidsN, auctionsN
		}
	}
	t.Fatalf("no time after bid %d where a table %dms ahead of the other has closed a window the union has not (change E2E_SEED or the generator)", from, sqlLead)
	return 0, 0
}

// requireSQLWitnesses fails t unless every named witness is above 0.
func requireSQLWitnesses(t *testing.T, stage string, st sqlStats, names ...string) {
	t.Helper()
	t.Logf("%s: %+v", stage, st)
	vals := map[string]int{
		"distinct_gone": st.distinctGone, "distinct_gone_shared": st.distinctGoneShared, "chain_left": st.chainLeft,
		"shared_keys": st.sharedKeys, "shared_tuples": st.sharedTuples, "closed_on_faster": st.closedOnFaster,
		"padded": st.padded, "pending": st.pending, "before_bound": st.beforeBound, "beyond_ttl": st.beyondTTL, "ttl_in": st.ttlIn,
	}
	for _, n := range names {
		v, ok := vals[n]
		if !ok {
			panic("no witness " + n)
		}
		if v == 0 {
			t.Errorf("%s: the rows posted have no %s (%+v): the check would pass against an engine that does not do it (change E2E_SEED or the generator)", stage, n, st)
		}
	}
}

// cutAt is the number of rows of log before the first one after ts.
func cutAt(log []Row, ts int64) int {
	for i, r := range log {
		if tsOf(r) > ts {
			return i
		}
	}
	return len(log)
}

// postUpTo posts data's rows until bidsN bids and auctionsN auctions are
// posted, in chunks (up to 150 bids, 20 auctions), the table whose last
// posted row is older first.
func postUpTo(t *testing.T, sc *dualScenario, data joinData, bidsN, auctionsN int) {
	t.Helper()
	last := func(rows []Row) int64 {
		if len(rows) == 0 {
			return -1
		}
		return tsOf(rows[len(rows)-1])
	}
	for {
		pb, pa := len(sc.js.posted["bids"]), len(sc.js.posted["auctions"])
		moreB, moreA := pb < bidsN, pa < auctionsN
		if !moreB && !moreA {
			return
		}
		if moreB && (!moreA || last(sc.js.posted["bids"]) <= last(sc.js.posted["auctions"])) {
			sc.js.postRows(t, "bids", data.bids[pb:min(pb+150, bidsN)])
		} else {
			sc.js.postRows(t, "auctions", data.auctions[pa:min(pa+20, auctionsN)])
		}
	}
}

// checkColumnOrder checks that the RIGHT JOIN views serve their columns
// in the order the SELECT lists them.
func checkColumnOrder(t *testing.T, sc *dualScenario) {
	t.Helper()
	t.Run("right_join_columns", func(t *testing.T) {
		for _, v := range sc.views {
			if !strings.HasPrefix(v.name, "sq_right") {
				continue
			}
			want := v.expected(nil, nil).Columns
			if got := sc.srv.results(t, v.name).Columns; !slices.Equal(got, want) {
				t.Errorf("%s: columns %q, want %q (the order written)", v.name, got, want)
			}
		}
	})
}

// TestSQLChangelogQueries: DISTINCT, UNION ALL, UNION, WITH, RIGHT JOIN
// and the one-sided TTL join at parallelism 1 and 2; see the top of this
// file.
func TestSQLChangelogQueries(t *testing.T) {
	begin := time.Now()
	data := genJoinData(testSeed(t, 1810), sqlEvents)
	views := append(sqlViews(1), sqlViews(2)...)
	srv := startServer(t)
	sc := &dualScenario{srv: srv, js: &joinScenario{srv: srv, data: data, next: map[string]int{}, posted: map[string][]Row{}, offset: map[string]int64{}}}
	srv.sql(t, sqlBidsDDL+";\n"+sqlAuctionsDDL)
	sc.create(t, views)
	stats := func() sqlStats { return sqlWitnesses(sc.js.posted["bids"], sc.js.posted["auctions"]) }

	// Half: the bids 15s ahead of the auctions.
	nb, na := leadCut(t, data, len(data.bids)/2, true)
	postUpTo(t, sc, data, nb, na)
	st := stats()
	requireSQLWitnesses(t, "half", st, "closed_on_faster", "padded", "distinct_gone")
	if st.slower != "auctions" {
		t.Errorf("half: the %s watermark is the lower one, want the auctions' (%+v)", st.slower, st)
	}
	sc.verify(t, "half")
	checkColumnOrder(t, sc)

	// More rows, a checkpoint, more rows up to the auctions 15s ahead of
	// the bids, a SIGKILL right after their acknowledgement.
	nb, na = leadCut(t, data, len(data.bids)*3/4, false)
	mid := tsOf(data.bids[(len(sc.js.posted["bids"])+nb)/2])
	postUpTo(t, sc, data, cutAt(data.bids, mid), cutAt(data.auctions, mid))
	sc.srv.checkpoint(t)
	postUpTo(t, sc, data, nb, na)
	sc.restart(t)
	st = stats()
	requireSQLWitnesses(t, "after_kill", st, "closed_on_faster", "pending", "padded")
	if st.slower != "bids" {
		t.Errorf("after_kill: the %s watermark is the lower one, want the bids' (%+v)", st.slower, st)
	}
	sc.verify(t, "after_kill")

	// All but a tail, a check, a SIGKILL after that checkpoint (its state
	// alone), a check, then the tail: it takes back rows of the restored
	// state.
	tailB, tailA := len(data.bids)-sqlTailBids, len(data.auctions)-sqlTailAuctions
	postUpTo(t, sc, data, tailB, tailA)
	requireSQLWitnesses(t, "all_but_tail", stats(), "distinct_gone", "distinct_gone_shared", "chain_left", "shared_keys", "shared_tuples",
		"padded", "before_bound", "beyond_ttl", "ttl_in")
	sc.verify(t, "all_but_tail")
	restored := perAuction(sc.js.posted["bids"])
	sc.restart(t)
	sc.verify(t, "restarted")
	postUpTo(t, sc, data, len(data.bids), len(data.auctions))
	if gone, left := restoredTakenBack(restored, perAuction(sc.js.posted["bids"])); gone == 0 || left == 0 {
		t.Errorf("after_restart: of the running aggregate's rows at the restart, the tail takes the last copy of %d counts back (sq_distinct_running) and %d rows out of sq_with_chain's filters: want both above 0", gone, left)
	}
	sc.verify(t, "after_restart")

	probe := sqlBoundaryProbe(sc.js.posted["bids"], sc.js.posted["auctions"])
	for i, s := range probe {
		if len(s.auctions) > 0 {
			sc.js.postRows(t, "auctions", s.auctions)
		}
		if len(s.bids) > 0 {
			sc.js.postRows(t, "bids", s.bids)
		}
		checkProbeOracle(t, i, sc.views, sc.js.posted["bids"], sc.js.posted["auctions"])
		sc.verify(t, "probe"+strconv.Itoa(i))
	}
	bid, auction := flushRows(joinData{bids: sc.js.posted["bids"], auctions: sc.js.posted["auctions"]})
	sc.js.postRows(t, "bids", []Row{bid})
	sc.js.postRows(t, "auctions", []Row{auction})
	counts := sc.verify(t, "flushed")
	for _, v := range sc.views {
		if counts[v.name] == 0 {
			t.Errorf("%s: the oracle expects no rows at all: the test data does not exercise it", v.name)
		}
	}
	t.Logf("changelog SQL: %d bids, %d auctions, expected rows per view %v, elapsed %v",
		len(sc.js.posted["bids"]), len(sc.js.posted["auctions"]), counts, time.Since(begin).Round(time.Millisecond))
}

// restoredTakenBack compares perAuction's rows at a restart with those
// after more rows: the counts some auction had then and none has now (a
// DISTINCT value whose last copy was restored state), and the auctions in
// sq_with_chain then and not now.
func restoredTakenBack(before, after []Row) (gone, left int) {
	now := map[int64]bool{}
	for _, r := range after {
		now[bigint(r, "n")] = true
	}
	for _, r := range distinctRows(before, []string{"n"}).Rows {
		if !now[bigint(r, "n")] {
			gone++
		}
	}
	in := map[int64]bool{}
	for _, r := range after {
		if chainKeeps(r) {
			in[bigint(r, "auction")] = true
		}
	}
	for _, r := range before {
		if chainKeeps(r) && !in[bigint(r, "auction")] {
			left++
		}
	}
	return gone, left
}

// checkProbeOracle asserts, from the oracle's side, what each step of
// sqlBoundaryProbe is for: auction 202's NULL row in sq_right not due at
// step 1 (the bids watermark on its bound), due at step 2 (past it); at
// step 3 the bid on 201 at E+20000 in both TTL joins, the one at E+20001
// in the 1h join only; at every step the bid at E-1 in neither.
func checkProbeOracle(t *testing.T, step int, views []dualView, bids, auctions []Row) {
	t.Helper()
	find := func(name string) Result {
		i := slices.IndexFunc(views, func(v dualView) bool { return v.name == name })
		return views[i].expected(bids, auctions)
	}
	has := func(res Result, match func(Row) bool) bool { return slices.ContainsFunc(res.Rows, match) }
	padded := has(find("sq_right_p1"), func(r Row) bool { return r["id"] == int64(202) && r["auction"] == nil })
	if want := step >= 2; padded != want {
		t.Errorf("oracle at probe step %d: auction 202's NULL row in sq_right: %v, want %v", step, padded, want)
	}
	for _, c := range []struct {
		view   string
		bidder int64
		want   bool
	}{
		{"sq_ttl_20s_p1", 1, false}, {"sq_ttl_1h_p1", 1, false}, {"sq_ttl_20s_p1", 2, true},
		{"sq_ttl_20s_p1", 7, step >= 3}, {"sq_ttl_1h_p1", 7, step >= 3},
		{"sq_ttl_20s_p1", 8, false}, {"sq_ttl_1h_p1", 8, step >= 3},
	} {
		got := has(find(c.view), func(r Row) bool { return r["auction"] == int64(201) && r["bidder"] == c.bidder })
		if got != c.want {
			t.Errorf("oracle at probe step %d: %s has the bid of bidder %d on auction 201: %v, want %v", step, c.view, c.bidder, got, c.want)
		}
	}
}

// sqlBoundaryProbe is posted after the generated rows: auctions 201 and
// 202 at E (30s or more after every row), then bids on 201 at E-1 (before
// the one-sided bound: in no join), E (on it), E+10000 (the RIGHT JOIN's
// upper bound: a match) and E+10001 (past it; the watermark goes to
// E+7001); a bid on 999 (no auction) moving the bids watermark to
// E+10000 (202's bound: its NULL row not due yet), then to E+10001 (due);
// then bids on 201 at E+20000 (on the 20s TTL: in) and E+20001 (past it:
// in the 1h join only). Every price is below 100: in both TTL joins'
// WHERE.
func sqlBoundaryProbe(bids, auctions []Row) []probeStep {
	var last int64
	for _, r := range append(slices.Clip(bids), auctions...) {
		last = max(last, tsOf(r))
	}
	E := (last/10_000 + 4) * 10_000
	return []probeStep{
		{
			auctions: []Row{probeAuction(201, 1, "p201", E), probeAuction(202, 2, nil, E)},
			bids:     []Row{probeBid(201, 1, 50, E-1), probeBid(201, 2, 60, E), probeBid(201, 3, 70, E+10_000), probeBid(201, 4, 80, E+10_001)},
		},
		{bids: []Row{probeBid(999, 5, 1, E+13_000)}},
		{bids: []Row{probeBid(999, 6, 1, E+13_001)}},
		{bids: []Row{probeBid(201, 7, 90, E+20_000), probeBid(201, 8, 95, E+20_001)}},
	}
}

// TestSQLRefusals: SQL built on changelog streams that must be refused:
// a 422 whose title or detail matches each pattern, and no query created.
func TestSQLRefusals(t *testing.T) {
	srv := startServer(t)
	srv.sql(t, sqlBidsDDL+";\n"+sqlAuctionsDDL)
	cases := []struct {
		name string
		sql  string
		want []string
	}{
		{"union_column_count", "SELECT auction, price FROM bids UNION ALL SELECT id FROM auctions",
			[]string{`(?i)\bUNION\b`, `(?i)column`, `\b2\b`, `\b1\b`}},
		{"union_column_types", "SELECT auction, price FROM bids UNION ALL SELECT id, name FROM auctions",
			[]string{`(?i)\bUNION\b`, `\bprice\b`, `(?i)\bBIGINT\b`, `(?i)\bVARCHAR\b`}},
		{"union_distinct_column_types", "SELECT auction, ts FROM bids UNION SELECT id, seller FROM auctions",
			[]string{`(?i)\bUNION\b`, `(?i)\bTIMESTAMP`, `(?i)\bBIGINT\b`}},
		{"except", "SELECT auction FROM bids EXCEPT SELECT id FROM auctions", []string{`(?i)\bEXCEPT\b`}},
		{"intersect", "SELECT auction FROM bids INTERSECT SELECT id FROM auctions", []string{`(?i)\bINTERSECT\b`}},
		{"union_mixed", "SELECT auction FROM bids UNION SELECT id FROM auctions UNION ALL SELECT bidder FROM bids",
			[]string{`(?i)\bUNION ALL\b`, `(?i)mix`}},
		{"with_recursive", "WITH RECURSIVE r AS (SELECT auction FROM bids UNION ALL SELECT auction FROM r) SELECT auction FROM r",
			[]string{`(?i)\bRECURSIVE\b`}},
		{"with_reads_itself", "WITH r AS (SELECT auction FROM r) SELECT auction FROM r",
			[]string{`(?i)\bWITH\b`, `\br\b`, `(?i)itself`}},
		{"with_column_list", "WITH r (a) AS (SELECT auction FROM bids) SELECT a FROM r",
			[]string{`(?i)\bWITH\b|column list`}},
		{"distinct_group_by", "SELECT DISTINCT auction, COUNT(*) AS n FROM bids GROUP BY auction",
			[]string{`(?i)\bDISTINCT\b`, `(?i)GROUP BY`}},
		{"distinct_group_by_only", "SELECT DISTINCT auction FROM bids GROUP BY auction",
			[]string{`(?i)\bDISTINCT\b`, `(?i)GROUP BY`}},
		{"distinct_aggregate", "SELECT DISTINCT COUNT(*) AS n FROM bids",
			[]string{`(?i)\bDISTINCT\b`, `(?i)aggregate`}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "bad_sql_" + strconv.Itoa(i)
			p := srv.sqlError(t, "CREATE VIEW "+name+" AS "+c.sql)
			if p.httpStatus != http.StatusUnprocessableEntity {
				t.Errorf("status %d, want 422: %s", p.httpStatus, p)
			}
			text := p.Title + "\n" + p.Detail
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(text) {
					t.Errorf("error does not match %s: %s", w, p)
				}
			}
			if st := srv.status(t, "/v1/queries/"+name); st != http.StatusNotFound {
				t.Errorf("GET /v1/queries/%s: status %d, want 404: the rejected statement was kept", name, st)
			}
		})
	}
	// The tables still take queries: the refusals left nothing behind.
	srv.sql(t, "CREATE VIEW ok_after AS SELECT auction FROM bids UNION ALL SELECT id FROM auctions")
	srv.waitRunning(t, "ok_after")
	if q := srv.query(t, "ok_after"); q.State != "running" {
		t.Errorf("ok_after: state %q", q.State)
	}
}

// TestSQLUnionWatermark: the union's watermark, step by step, on the
// windowed and running aggregations over the UNION ALL of bids and
// auctions (sqlViews' sq_union_win, sq_union_win_owc and sq_union_agg,
// parallelism 1 and 2). Both tables get rows at T; then the bids run
// ahead, three rows in one request up to T+30s (the bids watermark
// T+27s, the auctions' still T-3s); then an auction at T+2s, on time on
// its table and so on the union, whose watermark is the lower one: the
// window [T, T+10s) takes it. Then the auctions move on, to T+12s (the
// union's watermark T+8s: that window still open) and to T+15s (T+11s:
// closed, out in on_window_close). After each step every query equals the
// oracle, none counts a late row, and GET /v1/queries reports a watermark
// no later than the union's.
func TestSQLUnionWatermark(t *testing.T) {
	var views []dualView
	for _, p := range []int{1, 2} {
		for _, v := range sqlViews(p) {
			if base := strings.TrimSuffix(v.name, "_p"+strconv.Itoa(p)); base == "sq_union_win" || base == "sq_union_win_owc" || base == "sq_union_agg" {
				views = append(views, v)
			}
		}
	}
	srv := startServer(t)
	sc := &dualScenario{srv: srv, js: &joinScenario{srv: srv, next: map[string]int{}, posted: map[string][]Row{}, offset: map[string]int64{}}}
	srv.sql(t, sqlBidsDDL+";\n"+sqlAuctionsDDL)
	sc.create(t, views)
	T := probeT
	steps := []probeStep{
		{bids: []Row{probeBid(1, 1, 100, T), probeBid(2, 2, 200, T+1000)}, auctions: []Row{probeAuction(1, 1, "x", T), probeAuction(2, 2, "y", T+1000)}},
		{bids: []Row{probeBid(3, 3, 300, T+10_000), probeBid(4, 4, 400, T+20_000), probeBid(5, 5, 500, T+30_000)}},
		{auctions: []Row{probeAuction(3, 3, "z", T+2000)}},
		{auctions: []Row{probeAuction(4, 4, "w", T+12_000)}},
		{auctions: []Row{probeAuction(5, 5, "v", T+15_000)}},
	}
	for i, s := range steps {
		if len(s.bids) > 0 {
			sc.js.postRows(t, "bids", s.bids)
		}
		if len(s.auctions) > 0 {
			sc.js.postRows(t, "auctions", s.auctions)
		}
		bids, auctions := sc.js.posted["bids"], sc.js.posted["auctions"]
		wm, _ := unionWatermark([]Source{sqlBids, sqlAuctions}, [][]Row{bids, auctions})
		sc.verify(t, "step"+strconv.Itoa(i))
		t.Run("step"+strconv.Itoa(i)+"/watermark", func(t *testing.T) {
			for _, v := range sc.views {
				got, _ := srv.query(t, v.name).raw["watermark"].(string)
				if want := Timestamp(wm).String(); got > want { // RFC 3339 UTC millis: text order is time order
					t.Errorf("%s: watermark %q, want at most %s: the union's is the lower of the bids' (%s) and the auctions' (%s)", v.name, got, want,
						Timestamp(mustWM(sqlBids, bids)), Timestamp(mustWM(sqlAuctions, auctions)))
				}
			}
		})
	}
	// The oracle's side: the auction at T+2s is in [T, T+10s) with the
	// four rows at T and T+1s; that window is out on close only at the
	// last step.
	owc := views[slices.IndexFunc(views, func(v dualView) bool { return v.name == "sq_union_win_owc_p1" })]
	all := owc.expected(sc.js.posted["bids"], sc.js.posted["auctions"])
	var n int64
	for _, r := range all.Rows {
		if startOf(r) == T {
			n += bigint(r, "n")
		}
	}
	if n != 5 || len(owc.expected(sc.js.posted["bids"], sc.js.posted["auctions"][:4]).Rows) != 0 {
		t.Errorf("oracle: [T, T+10s) holds %d rows on close (want 5), or is out before the last step", n)
	}
}

// mustWM is a table's watermark after log, which has rows.
func mustWM(src Source, log []Row) int64 {
	wm, ok := finalWatermark(src, log)
	if !ok {
		panic("oracle: no rows, no watermark")
	}
	return wm
}

// TestSQLCrash: sqlViews(2) (every query of TestSQLChangelogQueries at
// parallelism 2) under crash_test.go's load: both tables' rows posted in
// genJoinData's interleaved plan in small chunks with Idempotency-Keys,
// resent until acknowledged, then flush rows; checkpoints every 200ms and
// SIGKILLs at random moments (STREAMSQL_CRASH_KILLS, default 3), some
// aimed at a request in flight. Before each kill two random queries
// reading each table at most once (all but sq_with_self) are checked
// mid-stream: their committed results equal the oracle over exactly the
// rows before the offsets their committed checkpoint recorded per table.
// At the end every query equals the oracle over both logs.
func TestSQLCrash(t *testing.T) {
	begin := time.Now()
	kills := crashKills(t)
	seed := testSeed(t, 1811)
	data := genJoinData(seed, max(crashMinRows, kills*crashRowsPerKill))
	bid, auction := flushRows(data)
	data.bids, data.auctions = append(data.bids, bid), append(data.auctions, auction)
	data.steps = append(data.steps, postStep{"bids", 1}, postStep{"auctions", 1})

	srv := startServer(t, "--checkpoint-interval", "200ms")
	sc := &dualScenario{srv: srv, js: &joinScenario{srv: srv, data: data, next: map[string]int{}, posted: map[string][]Row{}, offset: map[string]int64{}}}
	srv.sql(t, sqlBidsDDL+";\n"+sqlAuctionsDDL)
	views := sqlViews(2)
	sc.create(t, views)
	var checkable []dualView
	for _, v := range views {
		if v.prefixCheckable() {
			checkable = append(checkable, v)
		}
	}
	chunks := joinCrashChunks(t, data, crashChunkRows, "sqlcrash")
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	poster := startCrashPoster(t, srv, chunks, kills)
	prefixChecks := 0
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(int) {
			for range 2 {
				if sc.checkCommittedPrefix(t, checkable[rng.IntN(len(checkable))]) {
					prefixChecks++
				}
			}
		},
	})
	poster.wait(t)
	for table, rows := range map[string][]Row{"bids": data.bids, "auctions": data.auctions} {
		if end, ok := srv.endOffset(t, table); !ok || end != int64(len(rows)) {
			t.Errorf("table %s: end_offset %d (reported: %v), want %d: every row exactly once", table, end, ok, len(rows))
		}
		sc.js.posted[table] = rows
	}
	srv.waitRunning(t, sc.names()...)
	requireSQLWitnesses(t, "final", sqlWitnesses(data.bids, data.auctions), "distinct_gone_shared", "chain_left", "shared_keys", "shared_tuples",
		"padded", "before_bound", "beyond_ttl", "ttl_in")
	counts := sc.verify(t, "final")
	t.Logf("changelog SQL crash recovery: kills=%d (under load %d, aimed at a request %d) mid-stream checks=%d bids=%d auctions=%d chunks=%d resends=%d replayed=%d expected rows %v elapsed=%v",
		kills, ks.underLoad, ks.aimed, prefixChecks, len(data.bids), len(data.auctions), len(chunks), poster.stats.resends, poster.stats.replayed,
		counts, time.Since(begin).Round(time.Millisecond))
}
