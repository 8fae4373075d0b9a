package e2e

// The temporal join oracle: a naive batch evaluation of a stream-to-table
// join against a PRIMARY KEY table, written from the contract (docs/sql.md,
// the TemporalJoin contract of planner/plan/join.go)
// rather than from the engine.
//
// The table side is the table's whole log: rows are versions of their key
// at their event time; a row with "_op": "delete" is a delete of its key at
// its time (it carries only the key and the time); any other row (no _op,
// or "_op": "upsert") is an upsert.
//
// AS OF (`s JOIN t AS OF TIMESTAMP s.ts ON s.k = t.key`):
//
//   - The version of key k valid at time T is the table row of key k with
//     the greatest ts <= T; among rows of equal ts the later one in log
//     order wins. None when there is no such row or it is a delete.
//   - A stream row s is emitted only once the table's watermark is
//     strictly past s.ts: s.ts < max(table ts) - watermark_delay over the
//     table's rows posted so far. A version exactly at the watermark is on
//     time (as a row exactly at the watermark is for a window), so at
//     watermark == s.ts a version at s.ts may still come, and win a tie;
//     only past it has every version up to s.ts arrived. Until then s
//     waits, and nothing of it shows. No table row at all: nothing emitted.
//     (The table side's idle timeout would also release waiting rows with
//     the wall clock; the tests are built so that it cannot change an
//     answer, see temporal_test.go.)
//   - INNER: one row per emitted stream row with a version for which the
//     residual (if any) holds: the stream's columns, then the table's
//     (named "alias.column"). LEFT: every emitted stream row, with NULL
//     table columns when there is no version or the residual fails on it
//     (the residual is judged on the version valid at s.ts, not on older
//     or newer ones).
//
// Latest (no AS OF): the stream row joins the version the table holds when
// the row is processed, whatever the times: the last row of its key in log
// order among the table rows processed before it (none if that is a
// delete). Which rows those are depends on arrival, so the oracle takes the
// input as batches in processing order (the tests checkpoint between
// batches: a checkpoint covers every row acknowledged before it).
//
// Regular joins with state_ttl are interval joins of ±TTL on the sides'
// event times (join_oracle_test.go's EvaluateJoin with the condition
// |l.ts - r.ts| <= TTL): with input that is never late on its own table,
// a row is kept until the other side's watermark is TTL past it, so every
// such pair is found.

import (
	"fmt"
	"strconv"
	"testing"
)

// TemporalJoin is the oracle's form of
// `stream [LEFT] JOIN table [AS OF TIMESTAMP stream.time] ON stream.StreamKey = table.TableKey [AND residual]`.
type TemporalJoin struct {
	Kind          JoinKind
	Stream, Table JoinSide
	StreamKey     string
	TableKey      string
	// Residual is the rest of the ON condition over a stream row and the
	// version it joins; nil: none.
	Residual func(s, t Row) bool
}

// isDelete reports whether a table row is a delete.
func isDelete(r Row) bool {
	op, ok := r["_op"]
	if !ok || op == "upsert" {
		return false
	}
	if op != "delete" {
		panic(fmt.Sprintf("oracle: table row with _op %v", op))
	}
	return true
}

// checkTable panics when a table row lacks its key or time (an upsert: any
// column), or is late on the table's own watermark.
func checkTable(s JoinSide, key string, rows []Row) {
	wm := watermark{delay: s.WatermarkDelay}
	for i, r := range rows {
		if r[key] == nil {
			panic(fmt.Sprintf("oracle: %s row %d has no key %q", s.Alias, i, key))
		}
		if !isDelete(r) {
			for _, c := range s.Columns {
				if _, ok := r[c]; !ok {
					panic(fmt.Sprintf("oracle: %s row %d has no column %q", s.Alias, i, c))
				}
			}
		}
		ts := timeOf(r, s.TimeCol)
		if wm.seen && ts < wm.max-wm.delay {
			panic(fmt.Sprintf("oracle: %s row %d (ts %s) is late: the watermark before it is %s; the temporal join oracle needs a table without late rows",
				s.Alias, i, Timestamp(ts), Timestamp(wm.max-wm.delay)))
		}
		wm.observe(ts)
	}
}

// sameKey is SQL equality of two key values: NULL equals nothing.
func sameKey(a, b any) bool {
	return a != nil && b != nil && keyPart(a) == keyPart(b)
}

// versionAt is the version of key valid at time ts: the table row of that
// key with the greatest time <= ts, the later in log order on a tie; nil
// when there is none or it is a delete.
func versionAt(j TemporalJoin, table []Row, key any, ts int64) Row {
	var best Row
	var bestTS int64
	for _, r := range table {
		if !sameKey(r[j.TableKey], key) {
			continue
		}
		if rt := timeOf(r, j.Table.TimeCol); rt <= ts && (best == nil || rt >= bestTS) {
			best, bestTS = r, rt
		}
	}
	if best == nil || isDelete(best) {
		return nil
	}
	return best
}

// tableWatermark is the table's watermark after its whole log: max(ts) -
// watermark_delay; ok is false before any row.
func tableWatermark(j TemporalJoin, table []Row) (wm int64, ok bool) {
	w := watermark{delay: j.Table.WatermarkDelay}
	for _, r := range table {
		w.observe(timeOf(r, j.Table.TimeCol))
	}
	return w.max - w.delay, w.seen
}

// joinVersion is the output of one stream row joined with version v (nil:
// none), or nothing (ok false) when INNER drops it.
func (j TemporalJoin) joinVersion(s, v Row) (Row, bool) {
	if v != nil && j.Residual != nil && !j.Residual(s, v) {
		v = nil
	}
	if v == nil && j.Kind == InnerJoin {
		return nil, false
	}
	return joinedRow(Join{Left: j.Stream, Right: j.Table}, s, v), true
}

// EvaluateAsOf joins stream and table (each in its table's log order) AS OF
// the stream rows' event time and returns the joined rows emitted, as a
// multiset, with columns "alias.column".
func EvaluateAsOf(j TemporalJoin, stream, table []Row) []Row {
	checkSide(j.Stream, stream)
	checkTable(j.Table, j.TableKey, table)
	wm, ok := tableWatermark(j, table)
	if !ok {
		return nil
	}
	var out []Row
	for _, s := range stream {
		ts := timeOf(s, j.Stream.TimeCol)
		if ts >= wm {
			continue // waiting for the table's watermark to pass ts
		}
		if r, ok := j.joinVersion(s, versionAt(j, table, s[j.StreamKey], ts)); ok {
			out = append(out, r)
		}
	}
	return out
}

// TemporalBatch is rows of one side processed together: table rows
// (Table true) or stream rows.
type TemporalBatch struct {
	Table bool
	Rows  []Row
}

// EvaluateLatest joins each stream row with the table's latest version of
// its key at the time the row is processed, batches in processing order.
func EvaluateLatest(j TemporalJoin, batches []TemporalBatch) []Row {
	latest := map[string]Row{}
	var out []Row
	for _, b := range batches {
		for _, r := range b.Rows {
			if b.Table {
				k := keyPart(r[j.TableKey])
				if isDelete(r) {
					delete(latest, k)
				} else {
					latest[k] = r
				}
				continue
			}
			var v Row
			if key := r[j.StreamKey]; key != nil {
				v = latest[keyPart(key)]
			}
			if row, ok := j.joinVersion(r, v); ok {
				out = append(out, row)
			}
		}
	}
	return out
}

// ttlJoin is a regular join with state_ttl on a key equality: an interval
// join of ±ttl ms on the sides' event times.
func ttlJoin(kind JoinKind, left, right JoinSide, leftKey, rightKey string, ttl int64) Join {
	j := Join{Kind: kind, Left: left, Right: right, On: func(l, r Row) bool {
		d := timeOf(l, left.TimeCol) - timeOf(r, right.TimeCol)
		return sameKey(l[leftKey], r[rightKey]) && -ttl <= d && d <= ttl
	}}
	if kind == LeftJoin {
		j.Deadline = func(l Row) int64 { return timeOf(l, left.TimeCol) + ttl }
	}
	return j
}

// Hand-computed cases for the temporal join oracle; they need no server.

// person is a person version; del makes it a delete (key and time only).
func person(id int64, name, state any, ts int64) Row {
	return Row{"id": id, "name": name, "state": state, "ts": Timestamp(ts)}
}

func personDelete(id, ts int64) Row {
	return Row{"_op": "delete", "id": id, "ts": Timestamp(ts)}
}

// asOfRow is an expected row of the t_inner / t_left views.
func asOfRow(auction, bidder, price int64, name, state any) Row {
	return Row{"auction": auction, "bidder": bidder, "price": price, "name": name, "state": state}
}

func TestOracleTemporalJoin(t *testing.T) {
	T := int64(1_000_000)
	persons := []Row{
		person(1, "a", "CA", T),
		person(2, "b", "OR", T+1000),
		person(1, "a2", "WA", T+1000),
		personDelete(2, T+1500),
		person(1, "a3", "NY", T+2000),
		person(1, "a4", nil, T+2000), // a tie: the later row wins
		{"_op": "upsert", "id": int64(2), "name": nil, "state": "OR", "ts": Timestamp(T + 3000)},
		person(5, "e", "NY", T+3001), // the watermark: T+3001
	}
	bids := []Row{
		probeBid(10, 1, 100, T-1),      // before any version of 1
		probeBid(11, 1, 110, T),        // exactly on a version
		probeBid(12, 1, 120, T+999),    // v1
		probeBid(13, 1, 130, T+1000),   // v2 (same time as 2's first version)
		probeBid(14, 2, 140, T+1499),   // b
		probeBid(15, 2, 150, T+1500),   // deleted exactly then
		probeBid(16, 1, 160, T+2000),   // the tie's later row
		probeBid(17, 9, 170, T+2500),   // no person 9
		probeBid(18, 2, 180, T+3000),   // re-inserted, NULL name
		probeBid(19, 1, 190, T+3000),   // just before the watermark
		probeBid(20, 1, 200, T+3001),   // exactly on the watermark: waits
		probeBid(21, 2, 210, T+50_000), // waits
	}
	views := map[string]temporalView{}
	for _, v := range asOfViews() {
		views[v.base] = v
	}
	checkRows(t, views["t_inner"].expected(bids, persons), []Row{
		asOfRow(11, 1, 110, "a", "CA"), asOfRow(12, 1, 120, "a", "CA"), asOfRow(13, 1, 130, "a2", "WA"),
		asOfRow(14, 2, 140, "b", "OR"), asOfRow(16, 1, 160, "a4", nil), asOfRow(18, 2, 180, nil, "OR"),
		asOfRow(19, 1, 190, "a4", nil),
	}, 0)
	checkRows(t, views["t_left"].expected(bids, persons), []Row{
		asOfRow(10, 1, 100, nil, nil),
		asOfRow(11, 1, 110, "a", "CA"), asOfRow(12, 1, 120, "a", "CA"), asOfRow(13, 1, 130, "a2", "WA"),
		asOfRow(14, 2, 140, "b", "OR"), asOfRow(15, 2, 150, nil, nil), asOfRow(16, 1, 160, "a4", nil),
		asOfRow(17, 9, 170, nil, nil), asOfRow(18, 2, 180, nil, "OR"), asOfRow(19, 1, 190, "a4", nil),
	}, 0)
	// The residual state = 'CA' is judged on the version valid then only.
	checkRows(t, views["t_left_ca"].expected(bids[:5], persons), []Row{
		{"auction": int64(10), "bidder": int64(1), "name": nil},
		{"auction": int64(11), "bidder": int64(1), "name": "a"},
		{"auction": int64(12), "bidder": int64(1), "name": "a"},
		{"auction": int64(13), "bidder": int64(1), "name": nil}, // a2 is in WA
		{"auction": int64(14), "bidder": int64(2), "name": nil},
	}, 0)
	// No person rows: no watermark, nothing emitted, even for LEFT.
	checkRows(t, views["t_left"].expected(bids, nil), nil, 0)
	// Windows of 10s by b.ts (T is a multiple of 10s), by state.
	agg := views["t_agg"].expected(bids, persons)
	w := func(state any, n, volume int64) Row {
		return Row{"window_start": Timestamp(T), "window_end": Timestamp(T + 10_000), "state": state, "bids": n, "volume": volume}
	}
	checkRows(t, agg, []Row{w("CA", 2, 230), w("WA", 1, 130), w("OR", 2, 320), w(nil, 2, 350)}, 0)

	// Latest: the version held when the bid is processed.
	j := TemporalJoin{Kind: LeftJoin, Stream: bidSide, Table: personSide, StreamKey: "bidder", TableKey: "id"}
	got := EvaluateLatest(j, []TemporalBatch{
		{Table: true, Rows: persons[:3]},
		{Rows: []Row{probeBid(1, 1, 1, T+5000), probeBid(2, 2, 2, T-5000)}}, // times do not matter
		{Table: true, Rows: persons[3:6]},
		{Rows: []Row{probeBid(3, 1, 3, T), probeBid(4, 2, 4, T)}},
		{Table: true, Rows: persons[6:]},
		{Rows: []Row{probeBid(5, 2, 5, T)}},
	})
	checkRows(t, project(got, col("auction", "b.auction"), col("name", "p.name")), []Row{
		{"auction": int64(1), "name": "a2"}, {"auction": int64(2), "name": "b"},
		{"auction": int64(3), "name": "a4"}, {"auction": int64(4), "name": nil},
		{"auction": int64(5), "name": nil},
	}, 0)

	// ±TTL pairs, both ends inclusive; LEFT rows due once the right
	// watermark is past ts + TTL.
	a := []Row{probeAuction(1, 7, "x", T)}
	b := []Row{probeBid(1, 1, 1, T-30_001), probeBid(1, 2, 1, T-30_000), probeBid(1, 3, 1, T+30_000), probeBid(1, 4, 1, T+30_001)}
	inner := EvaluateJoin(ttlJoin(InnerJoin, bidSide, auctionSide, "auction", "id", 30_000), b, a)
	checkRows(t, project(inner, col("bidder", "b.bidder")), []Row{{"bidder": int64(2)}, {"bidder": int64(3)}}, 0)
	left := ttlJoin(LeftJoin, auctionSide, bidSide, "id", "auction", 30_000)
	a2 := append(a, probeAuction(2, 8, nil, T))
	if n := len(EvaluateJoin(left, a2, b)); n != 2 { // bids watermark T+27001: a(2) not due
		t.Errorf("LEFT regular join with the bids watermark at T+27001: %d rows, want the 2 matches", n)
	}
	more := append(append([]Row{}, b...), probeBid(5, 5, 1, T+33_001)) // watermark T+30001
	if n := len(EvaluateJoin(left, a2, more)); n != 3 {
		t.Errorf("LEFT regular join with the bids watermark at T+30001: %d rows, want the 2 matches and a(2)'s NULL row", n)
	}
}

// TestOracleTemporalProbe pins the oracle's t_left answers on
// temporalProbe, step by step.
func TestOracleTemporalProbe(t *testing.T) {
	v := temporalViewsByBase(asOfViews(), "t_left")[0]
	var bids, persons []Row
	for i, s := range temporalProbe() {
		bids, persons = append(bids, s.bids...), append(persons, s.persons...)
		t.Run("step"+strconv.Itoa(i+1), func(t *testing.T) {
			checkRows(t, v.expected(bids, persons), s.left, 0)
		})
	}
}
