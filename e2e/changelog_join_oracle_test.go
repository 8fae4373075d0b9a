package e2e

// The oracle of joins of updating inputs (issue 18), written from the
// contract (docs/sql.md, "Joins of updating inputs are regular joins on
// key equalities") rather than from the engine:
//
//   - The result of a join of two running aggregates, once the input so far
//     is processed, is the nested-loop join (joinRows) of the two inner
//     queries' current rows (Evaluate over each table's rows so far): every
//     pair satisfying ON; in a LEFT join each left row without such a pair
//     once with NULLs (whatever pairs or NULL rows it had before); a RIGHT
//     join is the LEFT join with the sides swapped. A PRIMARY KEY table
//     read as a changelog is an updating input too: its current rows
//     (tableState). An aggregation over such a join is the batch
//     aggregation over those joined rows.
//   - A stream joined with a running aggregate (streamJoin, streamAggJoin):
//     every row of the stream still held joins the aggregate's current
//     rows (LEFT: once with NULLs while it has none). A row is held until
//     the join's watermark, the lower of its two tables' (max event time -
//     watermark_delay each, once both have rows), is more than state_ttl
//     past its event time; then it expires: the pairs it had (or its NULL
//     row) at that moment stay as they were, and later changes of the
//     aggregate no longer reach it. The walk follows the rows in the order
//     they were posted (the tables interleaved): the tests put a checkpoint
//     between the rows before an expiry and the rows that move the
//     watermark, so that the order the engine reads the tables in cannot
//     matter.
//
// The witnesses (leftTransitions, pairMoves, and pkMoves in
// changelog_join_test.go) say, from the oracle's view
// of the input at the checks, that the answers depend on rows taken back:
// a LEFT join's NULL-padded row taken back when its match came and back
// when the match went, pairs of a join on an updated value that are gone
// later (their rows moved on to other values), a PRIMARY KEY table's rows
// moving between join keys and deleted.

import (
	"slices"
	"testing"
)

// tagged is one posted row and the table it was posted to.
type tagged struct {
	table string
	row   Row
}

// streamAggJoin evaluates `SELECT s.k, s.v, s.ts, a.n FROM stream s JOIN
// (SELECT k, COUNT(*) AS n FROM agg GROUP BY k) a ON s.k = a.k` with
// state_ttl ttl (ms) over events (rows of the tables named stream and agg
// in posting order; both tables' event time column ts, watermark_delay
// delay): see the top of this file.
func streamAggJoin(events []tagged, stream, agg string, delay, ttl int64) []Row {
	count := Query{GroupBy: []string{"k"}, Aggs: []Agg{{As: "n", Func: CountStar}}}
	return streamJoin(events, stream, agg, delay, ttl, InnerJoin,
		func(rows []Row) []Row { return Evaluate(Source{}, count, rows).Rows },
		func(s, a Row) Row { return Row{"k": s["k"], "v": s["v"], "ts": s["ts"], "n": a["n"]} })
}

// streamJoin evaluates `stream s [LEFT] JOIN (inner over agg) a ON s.k =
// a.k` with state_ttl ttl (ms) over events: each row of stream still held
// joins the current rows of inner (evaluated over agg's rows so far;
// LEFT: once with a nil row when none has its k), rendered by out; a row
// that expires keeps the rows it had then. Rows of other tables are
// skipped. See the top of this file.
func streamJoin(events []tagged, stream, agg string, delay, ttl int64, kind JoinKind, inner func(aggRows []Row) []Row, out func(s, a Row) Row) []Row {
	var held, aggRows, res []Row
	wms := map[string]*watermark{stream: {delay: delay}, agg: {delay: delay}}
	join := func(rows []Row) {
		cur := inner(aggRows)
		var due func(Row) bool
		if kind == LeftJoin {
			due = func(Row) bool { return true }
		}
		res = append(res, joinRows(rows, cur, sameK, due, out)...)
	}
	for _, e := range events {
		switch e.table {
		case stream:
			held = append(held, e.row)
		case agg:
			aggRows = append(aggRows, e.row)
		default:
			continue // a table the join does not read
		}
		wms[e.table].observe(tsOf(e.row))
		ws, wa := wms[stream], wms[agg]
		if !ws.seen || !wa.seen {
			continue
		}
		jw := min(ws.max-ws.delay, wa.max-wa.delay)
		var expired []Row
		held = slices.DeleteFunc(held, func(r Row) bool {
			if tsOf(r)+ttl >= jw {
				return false
			}
			expired = append(expired, r)
			return true
		})
		if len(expired) > 0 {
			join(expired) // their rows stay as they are now
		}
	}
	join(held)
	return res
}

// sameK is the key equality l.k = r.k (NULL equal to nothing).
func sameK(l, r Row) bool {
	return l["k"] != nil && r["k"] != nil && keyPart(l["k"]) == keyPart(r["k"])
}

// leftJoinRows is the LEFT join of two updating inputs' current rows on
// on, rendered by out (r nil for a NULL-padded row).
func leftJoinRows(left, right []Row, on func(l, r Row) bool, out func(l, r Row) Row) []Row {
	return joinRows(left, right, on, func(Row) bool { return true }, out)
}

// leftTransitions follows, over the successive states of a LEFT join
// checked against the engine (for each state, the set of left keys whose
// row is NULL-padded and the set of those with a match), how often a
// left key's NULL row was taken back by a match (padded at one check,
// matched at a later one) and brought back when its last match went
// (matched, then padded).
func leftTransitions(states []leftState) (takenBack, cameBack int) {
	last := map[string]bool{} // key -> padded at the last check that had it
	for _, s := range states {
		for k := range s.padded {
			if was, ok := last[k]; ok && !was {
				cameBack++
			}
			last[k] = true
		}
		for k := range s.matched {
			if was, ok := last[k]; ok && was {
				takenBack++
			}
			last[k] = false
		}
	}
	return takenBack, cameBack
}

// leftState is which left keys of a LEFT join are padded with NULLs and
// which have a match.
type leftState struct{ padded, matched map[string]bool }

// leftStateOf reads a leftState from a LEFT join's expected rows: left key
// column lk, right key column rk (NULL when padded).
func leftStateOf(rows []Row, lk, rk string) leftState {
	s := leftState{padded: map[string]bool{}, matched: map[string]bool{}}
	for _, r := range rows {
		if r[rk] == nil {
			s.padded[keyPart(r[lk])] = true
		} else {
			s.matched[keyPart(r[lk])] = true
		}
	}
	return s
}

// pairMoves counts, over the successive expected row sets of a join, the
// pairs (columns a, b) present at one check and gone at a later one, and
// the pairs that appeared after the first check.
func pairMoves(states [][]Row, a, b string) (gone, appeared int) {
	seen := map[string]bool{}
	for i, rows := range states {
		now := map[string]bool{}
		for _, r := range rows {
			now[canonKey([]any{r[a], r[b]})] = true
		}
		for p := range seen {
			if !now[p] {
				gone++
				delete(seen, p)
			}
		}
		for p := range now {
			if !seen[p] && i > 0 {
				appeared++
			}
			seen[p] = true
		}
	}
	return gone, appeared
}

// Hand-computed cases. They need no server.

func ku(k, w, ts int64) Row { return Row{"k": k, "w": w, "ts": Timestamp(ts)} }
func kt(k, v, ts int64) Row { return Row{"k": k, "v": v, "ts": Timestamp(ts)} }

func TestChangelogJoinOracle(t *testing.T) {
	T := baseTime
	const hour = 3_600_000
	s := func(table string, r Row) tagged { return tagged{table, r} }
	events := []tagged{
		s("t", kt(1, 10, T)),          // no count of 1 yet
		s("u", ku(1, 0, T)),           // 1: n 1
		s("t", kt(2, 20, T+100)),      // 2: no count
		s("u", ku(1, 0, T+200)),       // 1: n 2
		s("t", kt(1, 11, T+300)),      // joins n 2 (so does the first)
		s("u", ku(2, 0, T+300)),       // 2: n 1
		s("t", kt(9, 0, T+2*hour)),    // watermark t: T+2h-2s; u's T-1700: the join's
		s("u", ku(9, 0, T+2*hour)),    // the join's watermark T+2h-2s: every row before T+1h-2s expires, pairs as they are
		s("u", ku(1, 0, T+2*hour+1)),  // 1: n 3, the expired rows keep n 2
		s("u", ku(2, 0, T+2*hour+2)),  // 2: n 2, expired t row of 2 keeps n 1
		s("t", kt(1, 12, T+2*hour+5)), // a new row: n 3
	}
	// Held at the end: 9's row (n 1) and the new row of 1 (n 3).
	got := Result{Rows: streamAggJoin(events, "t", "u", 2000, hour)}
	row := func(k, v, ts, n int64) Row { return Row{"k": k, "v": v, "ts": Timestamp(ts), "n": n} }
	checkRows(t, got, []Row{
		row(1, 10, T, 2), row(2, 20, T+100, 1), row(1, 11, T+300, 2), row(9, 0, T+2*hour, 1), row(1, 12, T+2*hour+5, 3),
	}, 0)
	// Without the rows that move the watermark nothing expires: every row
	// shows its key's count now.
	noExpiry := []tagged{events[0], events[1], events[2], events[3], events[4], events[5], events[8], events[9]}
	checkRows(t, Result{Rows: streamAggJoin(noExpiry, "t", "u", 2000, hour)}, []Row{
		row(1, 10, T, 3), row(2, 20, T+100, 2), row(1, 11, T+300, 3),
	}, 0)
	// Only one table far ahead: the join's watermark is the other's, and a
	// later row of the other table within the TTL reaches every row.
	oneSided := append(slices.Clip(events[:7]), s("u", ku(1, 0, T+400)))
	checkRows(t, Result{Rows: streamAggJoin(oneSided, "t", "u", 2000, hour)}, []Row{
		row(1, 10, T, 3), row(2, 20, T+100, 1), row(1, 11, T+300, 3),
	}, 0)

	// LEFT join transitions: key a padded, matched, padded; b matched then
	// padded; c matched throughout.
	st := func(padded, matched []string) leftState {
		s := leftState{padded: map[string]bool{}, matched: map[string]bool{}}
		for _, k := range padded {
			s.padded[keyPart(k)] = true
		}
		for _, k := range matched {
			s.matched[keyPart(k)] = true
		}
		return s
	}
	back, came := leftTransitions([]leftState{
		st([]string{"a"}, []string{"b", "c"}),
		st(nil, []string{"a", "b", "c"}),
		st([]string{"a", "b"}, []string{"c"}),
	})
	if back != 1 || came != 2 {
		t.Errorf("leftTransitions: taken back %d, came back %d; want 1 and 2", back, came)
	}
	rows := []Row{{"k": int64(1), "yk": nil}, {"k": int64(2), "yk": int64(2)}}
	if s := leftStateOf(rows, "k", "yk"); !s.padded[keyPart(int64(1))] || !s.matched[keyPart(int64(2))] || len(s.padded)+len(s.matched) != 2 {
		t.Errorf("leftStateOf: %+v", s)
	}
	p := func(a, b int64) Row { return Row{"xk": a, "yk": b} }
	gone, appeared := pairMoves([][]Row{{p(1, 2), p(3, 4)}, {p(1, 2), p(5, 6)}, {p(3, 4)}}, "xk", "yk")
	if gone != 3 || appeared != 2 { // (3,4) then (1,2), (5,6) gone; (5,6), (3,4) again appeared
		t.Errorf("pairMoves: gone %d, appeared %d; want 3 and 2", gone, appeared)
	}

	// The LEFT join of current rows: a left row without a match once.
	xs := []Row{{"k": int64(1), "n": int64(2)}, {"k": int64(2), "n": int64(1)}}
	ys := []Row{{"k": int64(1), "m": int64(5)}}
	out := leftJoinRows(xs, ys, func(l, r Row) bool { return l["k"] == r["k"] }, func(l, r Row) Row {
		return Row{"k": l["k"], "m": get(r, "m")}
	})
	checkRows(t, Result{Rows: out}, []Row{{"k": int64(1), "m": int64(5)}, {"k": int64(2), "m": nil}}, 0)
}
