package e2e

// The oracle of the SQL built on changelog streams (issue 18): SELECT
// DISTINCT, UNION ALL, UNION, WITH, RIGHT JOIN and the one-sided TTL
// join, written from docs/sql.md, out of the pieces of the other oracles
// (Evaluate, groupAll, EvaluateJoin, closedWindows). Nothing here knows
// how the engine plans them.
//
//   - SELECT DISTINCT cols is one row per distinct value of cols over the
//     input's current rows (over a running aggregate: its rows now, so a
//     value whose last row was taken back is gone), keyed on cols.
//   - UNION ALL concatenates its queries' current rows, named by the first
//     query's columns: a multiset (two branches with a row of the same key
//     are two rows). UNION is SELECT DISTINCT * over that.
//   - A windowed aggregation over a UNION ALL of two tables sees every row
//     of both (no row is late on its own table, so none is late at the
//     union, whose watermark is at most each table's); on_window_close
//     shows the windows with window_end + allowed_lateness <= the union's
//     watermark: the lower of the two tables' (unionWatermark), none while
//     either table has no row.
//   - WITH: each read of a common table expression is the subquery it
//     names (a windowed one emits its windows on close), so the oracle is
//     that of the query with the subqueries written out.
//   - a RIGHT JOIN b ON ... is b LEFT JOIN a ON ... (EvaluateJoin, NULL
//     rows once a's watermark is past the bound), the columns in the order
//     written.
//   - A regular join with state_ttl and a time bound on one side only, ON
//     l.k = r.k AND l.ts >= r.ts, holds the pairs with 0 <= l.ts - r.ts <=
//     state_ttl: an interval join (EvaluateJoin) with that condition.
//
// The witnesses (sqlStats) say, from the oracle's view of the input only,
// that the input exercises each of these: a DISTINCT value whose last row
// was taken back, keys of two running aggregates equal, windows closed on
// one table's watermark but not on the union's, RIGHT JOIN rows padded
// and rows still waiting, pairs the TTL and the one-sided bound leave out.

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// distinctRows is SELECT DISTINCT cols over rows: one row per distinct
// tuple, in the order first seen, keyed on cols.
func distinctRows(rows []Row, cols []string) Result {
	res := Result{Columns: slices.Clone(cols), Key: slices.Clone(cols)}
	seen := map[string]bool{}
	for _, r := range rows {
		vals := make([]any, len(cols))
		for i, c := range cols {
			vals[i] = r[c]
		}
		k := canonKey(vals)
		if seen[k] {
			continue
		}
		seen[k] = true
		res.Rows = append(res.Rows, pick(r, cols...))
	}
	return res
}

// unionAll is UNION ALL of the branches' rows, each branch's columns
// renamed positionally to cols (the first branch's names): a multiset.
func unionAll(cols []string, branches ...Result) Result {
	res := Result{Columns: slices.Clone(cols)}
	for i, b := range branches {
		if len(b.Columns) != len(cols) {
			panic(fmt.Sprintf("oracle: UNION ALL branch %d has %d columns, want %d", i, len(b.Columns), len(cols)))
		}
		for _, r := range b.Rows {
			out := Row{}
			for j, c := range b.Columns {
				out[cols[j]] = r[c]
			}
			res.Rows = append(res.Rows, out)
		}
	}
	return res
}

// unionWatermark is the watermark of a UNION ALL of tables: the lowest of
// their watermarks (max(ts) - watermark_delay over each table's rows);
// false while one of them has no row (no watermark yet).
func unionWatermark(srcs []Source, logs [][]Row) (int64, bool) {
	var wm int64
	for i, src := range srcs {
		w, ok := finalWatermark(src, logs[i])
		if !ok {
			return 0, false
		}
		if i == 0 || w < wm {
			wm = w
		}
	}
	return wm, true
}

// windowsOverUnion is the windowed aggregation q (TUMBLE or HOP) over the
// rows of a UNION ALL (rows, each branch's rows already in the union's
// columns), whose watermark is wm (ok false: none yet): every window in
// changes mode; in on_window_close mode those with window_end +
// lateness <= wm. No input row may be late on its own table (the caller
// checks it: checkOnTime), so the union drops none.
func windowsOverUnion(q Query, timeCol string, lateness int64, rows []Row, wm int64, ok bool) Result {
	owc := q.OnWindowClose
	q.OnWindowClose = false
	res := Evaluate(noWatermark(timeCol), q, rows)
	if res.Late != 0 {
		panic("oracle: late rows without a watermark")
	}
	if owc {
		res.Rows = filterRows(res.Rows, func(r Row) bool { return ok && endOf(r)+lateness <= wm })
	}
	return res
}

// checkOnTime panics unless no row of log is late on its table (its time
// is at least the table's watermark before it): the premise of the union
// and join oracles here.
func checkOnTime(table string, src Source, log []Row) {
	wm := watermark{delay: src.WatermarkDelay}
	for i, r := range log {
		ts := timeOf(r, src.TimeCol)
		if wm.seen && ts < wm.max-wm.delay {
			panic(fmt.Sprintf("oracle: %s row %d (ts %s) is behind the watermark %s", table, i, Timestamp(ts), Timestamp(wm.max-wm.delay)))
		}
		wm.observe(ts)
	}
}

// runningValueStats walks a running aggregate GROUP BY key whose value
// (value of the key's rows so far) is what a SELECT DISTINCT reads: the
// distinct values now, the values that were some key's once and are
// nobody's now (their last row taken back), and how many of those had
// two keys or more at once (a copy taken back that was not the last).
type runningValueStats struct {
	now, gone, goneShared int
}

func distinctWitness(log []Row, key string, value func(rows []Row) any) runningValueStats {
	rowsOf := map[string][]Row{}
	cur := map[string]string{} // key -> its value's canonical text
	copies := map[string]int{} // value -> keys holding it now
	peak := map[string]int{}   // value -> the most keys holding it at once
	for _, r := range log {
		k := keyPart(r[key])
		rowsOf[k] = append(rowsOf[k], r)
		if old, ok := cur[k]; ok {
			copies[old]--
		}
		v := keyPart(value(rowsOf[k]))
		cur[k] = v
		copies[v]++
		peak[v] = max(peak[v], copies[v])
	}
	var st runningValueStats
	for v, n := range copies {
		switch {
		case n > 0:
			st.now++
		case peak[v] > 1:
			st.gone++
			st.goneShared++
		default:
			st.gone++
		}
	}
	return st
}

// rightJoin is `bids b RIGHT JOIN auctions a ON b.auction = a.id AND
// b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND [AND residual]`:
// auctions LEFT JOIN bids, NULL-padded once the bids watermark is past
// a.ts + 10s.
func rightJoin(residual func(b, a Row) bool) Join {
	return Join{Kind: LeftJoin, Left: sqlAuctionSide, Right: sqlBidSide,
		On: func(a, b Row) bool {
			return bidIn10s(b, a) && (residual == nil || residual(b, a))
		},
		Deadline: func(a Row) int64 { return tsOf(a) + 10_000 }}
}

// oneSidedTTLJoin is `bids b JOIN auctions a ON b.auction = a.id AND
// b.ts >= a.ts` with state_ttl ttl: the TTL join of the temporal oracle
// (|b.ts - a.ts| <= ttl) with the one-sided bound, so the pairs with 0 <=
// b.ts - a.ts <= ttl.
func oneSidedTTLJoin(ttl int64) Join {
	j := ttlJoin(InnerJoin, sqlBidSide, sqlAuctionSide, "auction", "id", ttl)
	within := j.On
	j.On = func(b, a Row) bool { return within(b, a) && tsOf(b) >= tsOf(a) }
	return j
}

// Hand-computed cases; they need no server.

func TestSQLOracleDistinctUnion(t *testing.T) {
	rows := []Row{
		{"a": int64(1), "b": "x"}, {"a": int64(1), "b": "x"}, {"a": int64(1), "b": nil},
		{"a": int64(2), "b": nil}, {"a": int64(1), "b": nil},
	}
	checkRows(t, distinctRows(rows, []string{"a", "b"}), []Row{
		{"a": int64(1), "b": "x"}, {"a": int64(1), "b": nil}, {"a": int64(2), "b": nil},
	}, 0)
	left := Result{Columns: []string{"k", "n"}, Rows: []Row{{"k": int64(1), "n": int64(3)}, {"k": int64(2), "n": int64(1)}}}
	right := Result{Columns: []string{"id", "c"}, Rows: []Row{{"id": int64(1), "c": int64(3)}}}
	u := unionAll([]string{"k", "n"}, left, right)
	if u.Key != nil || len(u.Rows) != 3 {
		t.Fatalf("unionAll: key %v, %d rows %v; want a multiset of 3", u.Key, len(u.Rows), u.Rows)
	}
	// Two equal rows of two branches stay two rows.
	if d := diffResult(u, []string{"k", "n"}, []map[string]any{
		{"k": jsonNum(1), "n": jsonNum(3)}, {"k": jsonNum(2), "n": jsonNum(1)},
	}); len(d) != 1 {
		t.Errorf("a UNION ALL result missing one of two equal rows: diffs %v, want one", d)
	}
	checkRows(t, distinctRows(u.Rows, []string{"k", "n"}), []Row{{"k": int64(1), "n": int64(3)}, {"k": int64(2), "n": int64(1)}}, 0)

	// The union's watermark: the lower one, none before both have rows.
	a := Source{TimeCol: "ts", WatermarkDelay: 3000}
	b := Source{TimeCol: "ts", WatermarkDelay: 4000}
	at := func(ts int64) Row { return Row{"ts": Timestamp(ts)} }
	if _, ok := unionWatermark([]Source{a, b}, [][]Row{{at(50_000)}, nil}); ok {
		t.Errorf("a union watermark with one side empty")
	}
	if wm, ok := unionWatermark([]Source{a, b}, [][]Row{{at(50_000), at(49_000)}, {at(52_000)}}); !ok || wm != 47_000 {
		t.Errorf("unionWatermark = %d, %v; want 47000 (a's 50000 - 3000 below b's 52000 - 4000)", wm, ok)
	}
	if wm, ok := unionWatermark([]Source{a, b}, [][]Row{{at(60_000)}, {at(52_000)}}); !ok || wm != 48_000 {
		t.Errorf("unionWatermark = %d, %v; want 48000 (b's)", wm, ok)
	}
	// Windows over the union: [0,10s) and [10s,20s); on close with
	// lateness 1s and the watermark at 11000 only the first.
	q := Query{Window: TumbleWindow(10_000), Aggs: []Agg{{As: "n", Func: CountStar}}}
	urows := []Row{at(1000), at(9999), at(10_000), at(2000)}
	w := func(start, n int64) Row {
		return Row{"window_start": Timestamp(start), "window_end": Timestamp(start + 10_000), "n": n}
	}
	checkRows(t, windowsOverUnion(q, "ts", 1000, urows, 11_000, true), []Row{w(0, 3), w(10_000, 1)}, 0)
	q.OnWindowClose = true
	checkRows(t, windowsOverUnion(q, "ts", 1000, urows, 11_000, true), []Row{w(0, 3)}, 0)
	checkRows(t, windowsOverUnion(q, "ts", 1000, urows, 10_999, true), nil, 0)
	checkRows(t, windowsOverUnion(q, "ts", 1000, urows, 50_000, false), nil, 0)

	// distinctWitness over counts per key: a 1, b 1 (value 1 twice), a 2,
	// b 2 (1 gone, it had two keys), c 1, a 3 (2 now b's only), c 2.
	log := []Row{{"k": "a"}, {"k": "b"}, {"k": "a"}, {"k": "b"}, {"k": "c"}, {"k": "a"}, {"k": "c"}}
	count := func(rows []Row) any { return int64(len(rows)) }
	if st := distinctWitness(log, "k", count); st != (runningValueStats{now: 2, gone: 1, goneShared: 1}) {
		t.Errorf("distinctWitness: %+v, want now 2 (values 2, 3), gone 1 (value 1, once two keys')", st)
	}
}

// jsonNum is n as the server's JSON decodes it.
func jsonNum(n int64) any { return json.Number(fmt.Sprint(n)) }

// TestSQLOracleRightTTL: the RIGHT JOIN and one-sided TTL join oracles
// over a handful of rows at T.
func TestSQLOracleRightTTL(t *testing.T) {
	T := probeT
	auctions := []Row{probeAuction(1, 11, "a1", T), probeAuction(2, 12, nil, T)}
	bids := []Row{
		probeBid(1, 2, 20, T-1),      // before a1: in no join
		probeBid(1, 1, 10, T+10_000), // a1's upper bound: a match
		probeBid(1, 3, 30, T+10_001), // past the 10s bound; 20s TTL in
		probeBid(1, 4, 40, T+20_000), // on the 20s TTL
		probeBid(1, 5, 50, T+20_001), // past it: the 1h TTL only
	}
	right := func(bids []Row) []Row {
		var out []Row
		for _, r := range EvaluateJoin(rightJoin(nil), auctions, bids) {
			out = append(out, Row{"id": r["a.id"], "bidder": r["b.bidder"]})
		}
		return out
	}
	// The bids watermark T+17001 is past a2's bound T+10000: padded.
	checkRows(t, Result{Rows: right(bids)}, []Row{{"id": int64(1), "bidder": int64(1)}, {"id": int64(2), "bidder": nil}}, 0)
	// With the bids up to T+10001 the watermark is T+7001: a2 waits.
	checkRows(t, Result{Rows: right(bids[:3])}, []Row{{"id": int64(1), "bidder": int64(1)}}, 0)
	// A residual the match fails: a1 gets its NULL row too.
	var res []Row
	for _, r := range EvaluateJoin(rightJoin(func(b, _ Row) bool { return bigint(b, "price") > 10 }), auctions, bids) {
		res = append(res, Row{"id": r["a.id"], "bidder": r["b.bidder"]})
	}
	checkRows(t, Result{Rows: res}, []Row{{"id": int64(1), "bidder": nil}, {"id": int64(2), "bidder": nil}}, 0)

	ttl := func(ms int64) []Row {
		var out []Row
		for _, r := range EvaluateJoin(oneSidedTTLJoin(ms), bids, auctions) {
			out = append(out, Row{"bidder": r["b.bidder"], "id": r["a.id"]})
		}
		return out
	}
	pair := func(bidder int64) Row { return Row{"bidder": bidder, "id": int64(1)} }
	checkRows(t, Result{Rows: ttl(20_000)}, []Row{pair(1), pair(3), pair(4)}, 0)
	checkRows(t, Result{Rows: ttl(3_600_000)}, []Row{pair(1), pair(3), pair(4), pair(5)}, 0)
}
