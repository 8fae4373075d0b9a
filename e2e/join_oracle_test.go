package e2e

// The join oracle: a naive batch evaluation of an interval join of two
// whole input logs, written from the contract (docs/sql.md, and the
// IntervalJoin contract of planner/plan/join.go) rather than from the
// engine. It is a nested loop over every (left, right) pair evaluating the
// ON condition as written in the SQL; nothing is expired, nothing is late.
// That is the exact answer when no row of either log is late on its own
// source (every row's time >= the largest time before it in its table's
// log minus the table's watermark_delay): the contract keeps a row in the
// join's state until the other side's watermark makes a match impossible,
// so a streaming join of such input finds every pair the batch join finds.
//
// The contract, as implemented here:
//
//   - INNER: one output row per (l, r) with On(l, r): every left column,
//     then every right column, named "alias.column".
//   - LEFT: the INNER rows, plus each left row l with no r such that
//     On(l, r) (key, time bounds and residual alike: ON semantics), with
//     NULL right columns, once the right side's watermark has passed the
//     latest right event time that could still match l: Deadline(l) <
//     max(right ts) - right watermark_delay. A right row at exactly the
//     watermark is not late (a window [s, e) is closed only when e <= the
//     watermark), so a watermark equal to Deadline(l) still lets a match
//     arrive and the NULL row is not yet due. No right row at all: no
//     watermark, no NULL rows.
//   - Aggregations over a join are the ordinary oracle (Evaluate) over the
//     joined rows with a watermark that never passes: the batch answer. Rows
//     are never late by construction, so the engine's late_rows must be 0.

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// JoinKind is INNER or LEFT.
type JoinKind int

const (
	InnerJoin JoinKind = iota
	LeftJoin
)

// JoinSide is one input of a join: the table's alias in the query, its
// columns, its event-time column and its watermark_delay in ms.
type JoinSide struct {
	Alias          string
	Columns        []string
	TimeCol        string
	WatermarkDelay int64
}

// Join is the oracle's form of `left [LEFT] JOIN right ON ...`.
type Join struct {
	Kind        JoinKind
	Left, Right JoinSide
	// On is the whole ON condition over a left and a right input row (key
	// equalities, time bounds and any residual), written from the SQL.
	On func(l, r Row) bool
	// Deadline (LEFT joins only) is the latest right event time that the ON
	// condition's time bounds accept for left row l: once the right
	// watermark is past it, l can get no match any more.
	Deadline func(l Row) int64
}

// EvaluateJoin joins left and right (each in its table's log order) and
// returns the joined rows, as a multiset, with columns "alias.column".
func EvaluateJoin(j Join, left, right []Row) []Row {
	if j.On == nil || (j.Kind == LeftJoin) != (j.Deadline != nil) {
		panic("oracle: a join needs On, and Deadline exactly when it is a LEFT join")
	}
	checkSide(j.Left, left)
	checkSide(j.Right, right)
	rightWM := watermark{delay: j.Right.WatermarkDelay}
	for _, r := range right {
		rightWM.observe(timeOf(r, j.Right.TimeCol))
	}
	var out []Row
	for _, l := range left {
		matched := false
		for _, r := range right {
			if j.On(l, r) {
				out = append(out, joinedRow(j, l, r))
				matched = true
			}
		}
		if !matched && j.Kind == LeftJoin && rightWM.seen && j.Deadline(l) < rightWM.max-rightWM.delay {
			out = append(out, joinedRow(j, l, nil))
		}
	}
	return out
}

// checkSide panics when a row lacks a column of its side, or when the
// input breaks the oracle's premise: a row late on its own source.
func checkSide(s JoinSide, rows []Row) {
	wm := watermark{delay: s.WatermarkDelay}
	for i, r := range rows {
		for _, c := range s.Columns {
			if _, ok := r[c]; !ok {
				panic(fmt.Sprintf("oracle: %s row %d has no column %q", s.Alias, i, c))
			}
		}
		ts := timeOf(r, s.TimeCol)
		if wm.seen && ts < wm.max-wm.delay {
			panic(fmt.Sprintf("oracle: %s row %d (ts %s) is late: the watermark before it is %s; the join oracle needs input without late rows",
				s.Alias, i, Timestamp(ts), Timestamp(wm.max-wm.delay)))
		}
		wm.observe(ts)
	}
}

// joinedRow is l's columns then r's (NULL when r is nil), qualified.
func joinedRow(j Join, l, r Row) Row {
	out := Row{}
	for _, c := range j.Left.Columns {
		out[j.Left.Alias+"."+c] = l[c]
	}
	for _, c := range j.Right.Columns {
		var v any
		if r != nil {
			v = r[c]
		}
		out[j.Right.Alias+"."+c] = v
	}
	return out
}

// noWatermark is a Source for Evaluate over joined rows: its watermark
// never passes a window, so Evaluate is the plain batch aggregation.
func noWatermark(timeCol string) Source {
	return Source{TimeCol: timeCol, WatermarkDelay: math.MaxInt64 / 2}
}

// renameColumns renames result columns (and the keys of its rows) by
// from -> to, and drops the columns mapped to "".
func renameColumns(res Result, names map[string]string) Result {
	rename := func(cols []string) []string {
		if cols == nil {
			return nil
		}
		out := []string{}
		for _, c := range cols {
			if n, ok := names[c]; !ok {
				out = append(out, c)
			} else if n != "" {
				out = append(out, n)
			}
		}
		return out
	}
	out := Result{Columns: rename(res.Columns), Key: rename(res.Key), Late: res.Late}
	for _, r := range res.Rows {
		nr := Row{}
		for c, v := range r {
			if n, ok := names[c]; !ok {
				nr[c] = v
			} else if n != "" {
				nr[n] = v
			}
		}
		out.Rows = append(out.Rows, nr)
	}
	return out
}

// Hand-computed cases for the join oracle; they need no server.

// leftRow is an expected row of the j_left view (a.id, a.seller, b.bidder, b.price).
func leftRow(id, seller int64, bidder, price any) Row {
	return Row{"id": id, "seller": seller, "bidder": bidder, "price": price}
}

// innerRow is an expected row of the j_inner view.
func innerRow(auction, bidder, price, seller int64) Row {
	return Row{"auction": auction, "bidder": bidder, "price": price, "seller": seller}
}

// TestOracleLeftBoundary pins the oracle's answers on leftBoundaryProbe,
// step by step (the rows posted so far), for j_left and j_inner.
func TestOracleLeftBoundary(t *testing.T) {
	views := joinViewsByBase("j_left", "j_inner")
	wantLeft := [][]Row{
		{},                                      // bids watermark T+10000: a1's and a2's bound, not past it
		{leftRow(1, 11, int64(21), int64(100))}, // a bid on the watermark and on a1's bound
		{leftRow(1, 11, int64(21), int64(100)), leftRow(2, 12, nil, nil)}, // watermark T+10001: a2 due, a3 (bound T+10001) not
		{leftRow(1, 11, int64(21), int64(100)), leftRow(2, 12, nil, nil),
			leftRow(3, 13, int64(23), int64(230)), // a bid exactly on a3's bound and on the watermark
			leftRow(4, 14, nil, nil),              // arrives with its bound passed
			leftRow(9, 15, int64(31), int64(310)), // a5 at T+3000: bid at T+13000 on its upper bound
			leftRow(9, 16, int64(31), int64(310)), // a6 at T+3001: bids at T+13000 and T+13001
			leftRow(9, 16, int64(33), int64(330))},
	}
	wantInner := [][]Row{
		{},
		{innerRow(1, 21, 100, 11)},
		{innerRow(1, 21, 100, 11)},
		{innerRow(1, 21, 100, 11), innerRow(3, 23, 230, 13), innerRow(9, 31, 310, 15), innerRow(9, 31, 310, 16), innerRow(9, 33, 330, 16)},
	}
	var bids, auctions []Row
	for i, s := range leftBoundaryProbe() {
		bids, auctions = append(bids, s.bids...), append(auctions, s.auctions...)
		t.Run(fmt.Sprint("step", i+1), func(t *testing.T) {
			checkRows(t, views[0].expected(bids, auctions), wantLeft[i], 0)
			checkRows(t, views[1].expected(bids, auctions), wantInner[i], 0)
		})
	}
}

// TestOracleIntervalJoin: bounds, many-to-many keys, the residual and
// LEFT rows with and without a right watermark, and the aggregation.
func TestOracleIntervalJoin(t *testing.T) {
	T := int64(1_000_000)
	auctions := []Row{
		probeAuction(1, 7, "x", T),
		probeAuction(2, 7, "y", T),
		probeAuction(1, 8, nil, T+5000), // the same id: bids can match both
	}
	bids := []Row{
		probeBid(1, 1, 50, T-1),      // before a(1,T): none
		probeBid(1, 2, 60, T),        // a(1,T) only (lower bound)
		probeBid(1, 3, 70, T+5000),   // both id-1 auctions
		probeBid(1, 4, 80, T+10_000), // both (upper bound of the first)
		probeBid(1, 5, 90, T+10_001), // a(1,T+5000) only
		probeBid(2, 6, 5, T+12_000),  // a(2) out of bounds; moves the watermark to T+9000
	}
	views := map[string]joinView{}
	for _, v := range joinViews() {
		views[v.base] = v
	}
	checkRows(t, views["j_inner"].expected(bids, auctions), []Row{
		innerRow(1, 2, 60, 7), innerRow(1, 3, 70, 7), innerRow(1, 3, 70, 8),
		innerRow(1, 4, 80, 7), innerRow(1, 4, 80, 8), innerRow(1, 5, 90, 8),
	}, 0)
	// Watermark T+9000: no bound (T+10000, T+15000) has passed.
	checkRows(t, views["j_left"].expected(bids, auctions), []Row{
		leftRow(1, 7, int64(2), int64(60)), leftRow(1, 7, int64(3), int64(70)), leftRow(1, 8, int64(3), int64(70)),
		leftRow(1, 7, int64(4), int64(80)), leftRow(1, 8, int64(4), int64(80)), leftRow(1, 8, int64(5), int64(90)),
	}, 0)
	// No bids at all: no watermark, nothing due.
	checkRows(t, views["j_left"].expected(nil, auctions), nil, 0)
	// A bid far ahead: a(2)'s bound has passed (a(1,...) are matched).
	more := append(append([]Row{}, bids...), probeBid(3, 9, 1, T+60_000))
	got := views["j_left"].expected(more, auctions)
	if n := len(got.Rows); n != 7 || !slices.ContainsFunc(got.Rows, func(r Row) bool { return r["id"] == int64(2) && r["bidder"] == nil }) {
		t.Errorf("j_left with the watermark at T+57000: %d rows %v, want the 6 matches and (2, 7, NULL, NULL)", n, got.Rows)
	}
	// Residual (category 1: price > 10): bid 6 fails it but is out of bounds anyway.
	checkRows(t, views["j_residual"].expected(bids, auctions[:1]), []Row{
		{"auction": int64(1), "price": int64(60), "category": int64(1), "name": "x", "margin": int64(50)},
		{"auction": int64(1), "price": int64(70), "category": int64(1), "name": "x", "margin": int64(60)},
		{"auction": int64(1), "price": int64(80), "category": int64(1), "name": "x", "margin": int64(70)},
	}, 0)
	// Strict bounds (-2s, +5s): b.ts in (a.ts-2000, a.ts+5000).
	checkRows(t, views["j_strict"].expected(bids, auctions), []Row{
		{"auction": int64(1), "bidder": int64(1), "bid_ts": Timestamp(T - 1), "auction_ts": Timestamp(T), "seller": int64(7)},
		{"auction": int64(1), "bidder": int64(2), "bid_ts": Timestamp(T), "auction_ts": Timestamp(T), "seller": int64(7)},
		{"auction": int64(1), "bidder": int64(3), "bid_ts": Timestamp(T + 5000), "auction_ts": Timestamp(T + 5000), "seller": int64(8)},
	}, 0)
	// The aggregation by TUMBLE(b.ts, 10s) and seller; T is a multiple of 10s.
	agg := views["j_agg"].expected(bids, auctions)
	if !slices.Equal(agg.Key, []string{"window_start", "seller"}) || !slices.Equal(agg.Columns, []string{"window_start", "seller", "bids", "volume", "top"}) {
		t.Errorf("j_agg: key %q, columns %q", agg.Key, agg.Columns)
	}
	w := func(start, seller, n, volume, top int64) Row {
		return Row{"window_start": Timestamp(start), "seller": seller, "bids": n, "volume": volume, "top": top}
	}
	checkRows(t, agg, []Row{
		w(T, 7, 2, 130, 70), w(T, 8, 1, 70, 70),
		w(T+10_000, 7, 1, 80, 80), w(T+10_000, 8, 2, 170, 90),
	}, 0)
}
