package e2e

// The composition oracle: composed queries (subqueries in FROM, views read
// by other views, cascading windows, window joins) evaluated in batch from
// the contract, out of the pieces of the aggregation oracle (Evaluate) and
// plain nested loops. Nothing here knows how the engine plans them.
//
// The contract, as implemented here (docs/sql.md, planner/stream.go):
//
//   - A windowed aggregation read by another query (a subquery, or a view
//     planned into its reader) emits each window once, when its input
//     watermark passes window_end + allowed_lateness, and forwards that
//     watermark held back by the allowed lateness. Its window_end is an
//     event-time column of its output; window_start is not.
//   - So after k windowed aggregations in a row over a table (a cascade:
//     GROUP BY an upstream window's window_start, window_end), a window is
//     out of the last one once the table's watermark, max(ts) -
//     watermark_delay over the rows read, has reached window_end + k *
//     allowed_lateness (closedWindows with stages k). The watermark such a
//     chain forwards is the table's minus k * allowed_lateness.
//   - Joins of such streams are interval joins over their event-time
//     columns (join_oracle_test.go): an INNER pair is out once both rows are;
//     a LEFT row with no match gets its NULL row once the right side's
//     watermark is past the latest right time that could match it.
//   - Input rows are never late on their own table (the generators make
//     sure of it), so no stage drops a row: every stage is a batch
//     computation over what the stage before it emitted.

import "fmt"

// finalWatermark is a table's watermark after log: max(ts) -
// watermark_delay; false when log is empty (no watermark yet).
func finalWatermark(src Source, log []Row) (int64, bool) {
	wm := watermark{delay: src.WatermarkDelay}
	for _, r := range log {
		wm.observe(timeOf(r, src.TimeCol))
	}
	return wm.max - wm.delay, wm.seen
}

// closedWindows is what the windowed aggregation q over log emits when it
// is read by another query through stages windowed aggregations (stages =
// 1: q itself; 2: an aggregation grouping by q's window, and so on): the
// windows with window_end + stages * allowed_lateness <= the table's final
// watermark. The oracle panics on late rows: the premise is input without
// them.
func closedWindows(src Source, q Query, log []Row, stages int64) []Row {
	if !q.Window.windowed() || q.Window.Kind == Session {
		panic("oracle: closedWindows needs a TUMBLE or HOP window")
	}
	s := src
	s.AllowedLateness = stages * src.AllowedLateness
	q.OnWindowClose = true
	res := Evaluate(s, q, log)
	if res.Late != 0 {
		panic(fmt.Sprintf("oracle: %d late rows in input meant to have none", res.Late))
	}
	return res.Rows
}

// groupAll is a batch GROUP BY keys over rows (no window): one row per
// distinct key, with the keys and the aggregates, keyed by keys.
func groupAll(rows []Row, keys []string, aggs []Agg) Result {
	return Evaluate(Source{}, Query{GroupBy: keys, Aggs: aggs}, rows)
}

// joinRows is the nested-loop join of two row sets: out(l, r) for every
// pair with on(l, r) and, for a LEFT join (due != nil), out(l, nil) for
// every l without a match for which due(l) holds (its NULL row has been
// emitted).
func joinRows(left, right []Row, on func(l, r Row) bool, due func(l Row) bool, out func(l, r Row) Row) []Row {
	var res []Row
	for _, l := range left {
		matched := false
		for _, r := range right {
			if on(l, r) {
				res = append(res, out(l, r))
				matched = true
			}
		}
		if !matched && due != nil && due(l) {
			res = append(res, out(l, nil))
		}
	}
	return res
}

// get reads a column of a row that may be nil (the NULL side of a LEFT
// join).
func get(r Row, c string) any {
	if r == nil {
		return nil
	}
	return r[c]
}

// pick copies the named columns of a row.
func pick(r Row, cols ...string) Row {
	out := Row{}
	for _, c := range cols {
		out[c] = r[c]
	}
	return out
}

// filterRows keeps the rows for which keep holds.
func filterRows(rows []Row, keep func(Row) bool) []Row {
	var out []Row
	for _, r := range rows {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// multiset is an append-only view's expected result: a multiset of rows.
func multiset(cols []string, rows []Row) Result {
	return Result{Columns: cols, Rows: rows}
}

// endOf and startOf read a window's bounds in ms.
func endOf(r Row) int64   { return int64(r["window_end"].(Timestamp)) }
func startOf(r Row) int64 { return int64(r["window_start"].(Timestamp)) }
