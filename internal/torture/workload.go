package torture

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// inRow is one input row of either source: ev (HTTP) or kev (Kafka).
type inRow struct {
	ID int64
	K  string
	V  *int64 // NULL when nil
	TS int64  // epoch milliseconds
}

// json renders the row as the API and the Kafka source take it.
func (r inRow) json() []byte {
	m := map[string]any{"id": r.ID, "k": r.K, "ts": r.TS}
	if r.V != nil {
		m["v"] = *r.V
	} else {
		m["v"] = nil
	}
	b, _ := json.Marshal(m)
	return b
}

// Time layout of the input: rows are stepMS apart in event time, each
// jittered forward by up to jitterMS; kev rows are moved by up to
// ±kevShiftMS from their ev partner. Watermark delays exceed the
// disorder, so no row is ever late.
const (
	baseTS     = int64(1735689600000) // 2025-01-01T00:00:00Z
	stepMS     = 10
	jitterMS   = 500
	kevShiftMS = 1500
	keys       = 23
	evDelay    = "3s"
	kevDelay   = "6s"
	evDelayMS  = 3000
	kevDelayMS = 6000
)

// input is the whole input of a run: ev[i] is the i-th row posted,
// kev[i] the i-th produced (committed), dim the versions of the PRIMARY
// KEY table posted along with ev. Every third kev row has an id no ev row
// has; the others match ev's row of the same id within 1.5s. Each input
// ends with sentinel rows ten minutes of event time after the rest: they
// push every watermark past every other row, so every window closes and
// every join emits what it will (the final results are fully determined).
type input struct {
	ev, kev []inRow
	dim     []dimRow
	// dimAfter[j]: dim[j] is posted after ev rows [0, dimAfter[j]).
	dimAfter []int
}

// dimRow is a version of the dim table: an upsert, or a delete of its key
// when Label is nil.
type dimRow struct {
	K     string
	Label *int64
	TS    int64
}

func (d dimRow) json() []byte {
	m := map[string]any{"k": d.K, "ts": d.TS}
	if d.Label != nil {
		m["label"] = *d.Label
	} else {
		m["_op"] = "delete"
	}
	b, _ := json.Marshal(m)
	return b
}

const sentinelAfterMS = 600_000

func genInput(seed uint64, n int) input {
	rng := rand.New(rand.NewPCG(seed, 0x70127e))
	in := input{ev: make([]inRow, n), kev: make([]inRow, n)}
	key := func() string { return fmt.Sprintf("k%02d", rng.IntN(keys)) }
	for i := range n {
		id := int64(i)
		ts := baseTS + id*stepMS + rng.Int64N(jitterMS)
		var v *int64
		if rng.IntN(17) != 0 {
			x := rng.Int64N(1000)
			v = &x
		}
		in.ev[i] = inRow{ID: id, K: key(), V: v, TS: ts}
		kid := id
		if i%3 == 0 {
			kid = 2*int64(n) + id
		}
		var kv *int64
		if rng.IntN(11) != 0 {
			x := rng.Int64N(500)
			kv = &x
		}
		in.kev[i] = inRow{ID: kid, K: key(), V: kv, TS: ts + rng.Int64N(2*kevShiftMS+1) - kevShiftMS}
		if i%7 == 0 {
			// A version of a key: in time order, one per 10ms at most.
			d := dimRow{K: key(), TS: baseTS + id*stepMS + 5}
			if rng.IntN(6) != 0 {
				x := rng.Int64N(100)
				d.Label = &x
			}
			in.dim, in.dimAfter = append(in.dim, d), append(in.dimAfter, i+1)
		}
	}
	end := baseTS + int64(n)*stepMS + sentinelAfterMS
	in.ev = append(in.ev, inRow{ID: 4 * int64(n), K: "~end", TS: end})
	// One per partition (id mod 2), so the Kafka source's watermark, the
	// minimum over partitions, moves too.
	in.kev = append(in.kev, inRow{ID: 4*int64(n) + 2, K: "~end", TS: end}, inRow{ID: 4*int64(n) + 3, K: "~end", TS: end})
	in.dim, in.dimAfter = append(in.dim, dimRow{K: "~dimend", TS: end + 60_000}), append(in.dimAfter, len(in.ev))
	return in
}

// closedBefore is the final watermark of a source: its windows ending at
// or before it are closed (the sentinel's time less the delay).
func closedBefore(rows []inRow, delayMS int64) int64 {
	m := rows[0].TS
	for _, r := range rows {
		m = max(m, r.TS)
	}
	return m - delayMS
}

// colType is an output column's type, for comparing values.
type colType int

const (
	tInt colType = iota
	tFloat
	tStr
	tTime
	tBool
)

func (t colType) sql() string {
	return [...]string{"BIGINT", "DOUBLE", "VARCHAR(16)", "TIMESTAMP(3)", "BOOLEAN"}[t]
}

type column struct {
	name string
	typ  colType
}

// outRow is an output row: column -> value (nil, int64, float64, string
// or, for tTime, int64 milliseconds; bool).
type outRow map[string]any

// querySpec is one query of the workload: its SELECT, its output columns,
// its upsert key (nil: append-only), the columns that identify an
// append-only row for the comparison (ident, default id) and the oracle's
// rows.
type querySpec struct {
	name   string
	sql    string // SELECT ..., with {hint} for the optimizer hint
	cols   []column
	key    []string
	ident  []string
	hints  string // more SET_VARs
	oracle func(in input) []outRow
}

func (q querySpec) appendOnly() bool { return q.key == nil }

// selectSQL is the SELECT with the parallelism hint.
func (q querySpec) selectSQL(parallelism int) string {
	return strings.Replace(q.sql, "{hint}", fmt.Sprintf("/*+ SET_VAR(parallelism=%d)%s */", parallelism, q.hints), 1)
}

// keyOf renders the identity of a row for comparison: its upsert key,
// or id for append-only rows.
func (q querySpec) keyOf(r outRow) string {
	cols := q.key
	if cols == nil {
		cols = q.ident
	}
	if cols == nil {
		cols = []string{"id"}
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprint(r[c])
	}
	return strings.Join(parts, "|")
}

func winCols(rest ...column) []column {
	return append([]column{{"window_start", tTime}, {"window_end", tTime}, {"k", tStr}}, rest...)
}

var winKey = []string{"window_start", "window_end", "k"}

// queries are the workload: every window kind (TUMBLE, HOP, SESSION, a
// running aggregate), every aggregate (COUNT(*), COUNT(x), COUNT
// DISTINCT, SUM, AVG, MIN, MAX), a HAVING that groups leave (deletes),
// both emit modes, over the HTTP source and the Kafka source, and every
// join kind: interval INNER and LEFT, an aggregation over a join, a
// regular join with a TTL, a window join, and an AS OF join with a PRIMARY
// KEY table (upserts and deletes); and queries over updating inputs: an
// aggregation and a filter over a running aggregate, an aggregation over
// the PRIMARY KEY table.
var queries = []querySpec{
	{
		name: "tumble_all",
		sql: `SELECT {hint} window_start, window_end, k, COUNT(*) AS n, COUNT(v) AS nv, COUNT(DISTINCT v) AS dv,
  SUM(v) AS s, AVG(v) AS a, MIN(v) AS lo, MAX(v) AS hi
FROM ev GROUP BY TUMBLE(ts, '5s'), k`,
		cols: winCols(column{"n", tInt}, column{"nv", tInt}, column{"dv", tInt}, column{"s", tInt}, column{"a", tFloat}, column{"lo", tInt}, column{"hi", tInt}),
		key:  winKey,
		oracle: func(in input) []outRow {
			return windowed(in.ev, tumble(5000), func(r outRow, rows []inRow) bool {
				vs := values(rows)
				r["n"], r["nv"], r["dv"] = int64(len(rows)), int64(len(vs)), distinct(vs)
				r["s"], r["a"], r["lo"], r["hi"] = sum(vs), avg(vs), minOf(vs), maxOf(vs)
				return true
			})
		},
	},
	{
		name: "hop_having",
		sql: `SELECT {hint} window_start, window_end, k, COUNT(*) AS n, SUM(v) AS s
FROM ev GROUP BY HOP(ts, '2s', '6s'), k HAVING MAX(v) < 900`,
		cols: winCols(column{"n", tInt}, column{"s", tInt}),
		key:  winKey,
		oracle: func(in input) []outRow {
			return windowed(in.ev, hop(2000, 6000), func(r outRow, rows []inRow) bool {
				vs := values(rows)
				if hi := maxOf(vs); hi == nil || hi.(int64) >= 900 {
					return false
				}
				r["n"], r["s"] = int64(len(rows)), sum(vs)
				return true
			})
		},
	},
	{
		name: "session_k",
		sql: `SELECT {hint} window_start, window_end, k, COUNT(*) AS n, MAX(v) AS hi
FROM ev GROUP BY SESSION_WINDOW(ts, '300ms'), k`,
		cols: winCols(column{"n", tInt}, column{"hi", tInt}),
		key:  winKey,
		oracle: func(in input) []outRow {
			return sessions(in.ev, 300, func(r outRow, rows []inRow) {
				r["n"], r["hi"] = int64(len(rows)), maxOf(values(rows))
			})
		},
	},
	{
		name: "running_k",
		sql:  `SELECT {hint} k, COUNT(*) AS n, SUM(v) AS s, AVG(v) AS a FROM ev GROUP BY k`,
		cols: []column{{"k", tStr}, {"n", tInt}, {"s", tInt}, {"a", tFloat}},
		key:  []string{"k"},
		oracle: func(in input) []outRow {
			by := map[string][]inRow{}
			for _, r := range in.ev {
				by[r.K] = append(by[r.K], r)
			}
			var out []outRow
			for k, rows := range by {
				vs := values(rows)
				out = append(out, outRow{"k": k, "n": int64(len(rows)), "s": sum(vs), "a": avg(vs)})
			}
			return out
		},
	},
	{
		name: "k_tumble",
		sql: `SELECT {hint} window_start, window_end, k, COUNT(*) AS n, SUM(v) AS s, COUNT(DISTINCT v) AS dv, MIN(v) AS lo
FROM kev GROUP BY TUMBLE(ts, '4s'), k`,
		cols: winCols(column{"n", tInt}, column{"s", tInt}, column{"dv", tInt}, column{"lo", tInt}),
		key:  winKey,
		oracle: func(in input) []outRow {
			return windowed(in.kev, tumble(4000), func(r outRow, rows []inRow) bool {
				vs := values(rows)
				r["n"], r["s"], r["dv"], r["lo"] = int64(len(rows)), sum(vs), distinct(vs), minOf(vs)
				return true
			})
		},
	},
	{
		name: "j_rows",
		sql: `SELECT {hint} e.id, e.k, e.v AS ev_v, q.v AS kev_v, e.ts, q.ts AS kev_ts
FROM ev e JOIN kev q ON e.id = q.id AND q.ts BETWEEN e.ts - INTERVAL 2 SECOND AND e.ts + INTERVAL 2 SECOND`,
		cols: []column{{"id", tInt}, {"k", tStr}, {"ev_v", tInt}, {"kev_v", tInt}, {"ts", tTime}, {"kev_ts", tTime}},
		oracle: func(in input) []outRow {
			var out []outRow
			for _, p := range joined(in) {
				e, q := p[0], p[1]
				out = append(out, outRow{"id": e.ID, "k": e.K, "ev_v": val(e.V), "kev_v": val(q.V), "ts": e.TS, "kev_ts": q.TS})
			}
			return out
		},
	},
	{
		name: "j_agg",
		sql: `SELECT {hint} window_start, window_end, e.k, COUNT(*) AS n, SUM(q.v) AS s
FROM ev e JOIN kev q ON e.id = q.id AND q.ts BETWEEN e.ts - INTERVAL 2 SECOND AND e.ts + INTERVAL 2 SECOND
GROUP BY TUMBLE(e.ts, '10s'), e.k`,
		cols: winCols(column{"n", tInt}, column{"s", tInt}),
		key:  winKey,
		oracle: func(in input) []outRow {
			var left []inRow
			kv := map[int64]*int64{}
			for _, p := range joined(in) {
				left = append(left, p[0])
				kv[p[0].ID] = p[1].V
			}
			return windowed(left, tumble(10000), func(r outRow, rows []inRow) bool {
				var vs []int64
				for _, e := range rows {
					if v := kv[e.ID]; v != nil {
						vs = append(vs, *v)
					}
				}
				r["n"], r["s"] = int64(len(rows)), sum(vs)
				return true
			})
		},
	},
	{
		name:  "tumble_owc",
		hints: " SET_VAR(emit_mode=on_window_close)",
		sql: `SELECT {hint} window_start, window_end, k, COUNT(*) AS n, MAX(v) AS hi
FROM ev GROUP BY TUMBLE(ts, '5s'), k`,
		cols: winCols(column{"n", tInt}, column{"hi", tInt}),
		key:  winKey,
		oracle: func(in input) []outRow {
			closed := closedBefore(in.ev, evDelayMS)
			return windowed(in.ev, tumble(5000), func(r outRow, rows []inRow) bool {
				r["n"], r["hi"] = int64(len(rows)), maxOf(values(rows))
				return r["window_end"].(int64) <= closed
			})
		},
	},
	{
		name: "jl_rows",
		sql: `SELECT {hint} e.id, e.k, q.v AS kev_v, q.ts AS kev_ts
FROM ev e LEFT JOIN kev q ON e.id = q.id AND q.ts BETWEEN e.ts - INTERVAL 2 SECOND AND e.ts + INTERVAL 2 SECOND`,
		cols: []column{{"id", tInt}, {"k", tStr}, {"kev_v", tInt}, {"kev_ts", tTime}},
		oracle: func(in input) []outRow {
			matched := map[int64]inRow{}
			for _, p := range joined(in) {
				matched[p[0].ID] = p[1]
			}
			closed := min(closedBefore(in.ev, evDelayMS), closedBefore(in.kev, kevDelayMS))
			var out []outRow
			for _, e := range in.ev {
				if q, ok := matched[e.ID]; ok {
					out = append(out, outRow{"id": e.ID, "k": e.K, "kev_v": val(q.V), "kev_ts": q.TS})
				} else if e.TS+2000 < closed {
					// NULL-padded once the watermark is past the bound:
					// every row but the sentinel.
					out = append(out, outRow{"id": e.ID, "k": e.K, "kev_v": nil, "kev_ts": nil})
				}
			}
			return out
		},
	},
	{
		name:  "jr_rows",
		hints: " SET_VAR(state_ttl='10s')",
		sql: `SELECT {hint} e.id, e.k, q.v AS kev_v
FROM ev e JOIN kev q ON e.id = q.id`,
		cols: []column{{"id", tInt}, {"k", tStr}, {"kev_v", tInt}},
		oracle: func(in input) []outRow {
			// A regular join keeps a row until the other side's watermark
			// is the TTL past it; partners here are 1.5s apart at most.
			var out []outRow
			for _, p := range joined(in) {
				out = append(out, outRow{"id": p[0].ID, "k": p[0].K, "kev_v": val(p[1].V)})
			}
			return out
		},
	},
	{
		name: "wj",
		sql: `SELECT {hint} a.window_end, a.k, a.n AS n_ev, b.n AS n_kev
FROM (SELECT window_start, window_end, k, COUNT(*) AS n FROM ev GROUP BY TUMBLE(ts, '5s'), k) a
JOIN (SELECT window_start, window_end, k, COUNT(*) AS n FROM kev GROUP BY TUMBLE(ts, '5s'), k) b
ON a.k = b.k AND a.window_end = b.window_end`,
		cols:  []column{{"window_end", tTime}, {"k", tStr}, {"n_ev", tInt}, {"n_kev", tInt}},
		ident: []string{"window_end", "k"},
		oracle: func(in input) []outRow {
			count := func(rows []inRow, closed int64) map[groupKey]int64 {
				m := map[groupKey]int64{}
				for _, r := range rows {
					if w := tumble(5000)(r.TS)[0]; w.end <= closed {
						m[groupKey{w, r.K}]++
					}
				}
				return m
			}
			kevN := count(in.kev, closedBefore(in.kev, kevDelayMS))
			var out []outRow
			for g, n := range count(in.ev, closedBefore(in.ev, evDelayMS)) {
				if m, ok := kevN[g]; ok {
					out = append(out, outRow{"window_end": g.w.end, "k": g.k, "n_ev": n, "n_kev": m})
				}
			}
			return out
		},
	},
	{
		name: "asof",
		sql: `SELECT {hint} e.id, e.k, d.label, e.ts
FROM ev e JOIN dim d AS OF TIMESTAMP e.ts ON e.k = d.k`,
		cols: []column{{"id", tInt}, {"k", tStr}, {"label", tInt}, {"ts", tTime}},
		oracle: func(in input) []outRow {
			// The version of k valid at T: the dim row of k with the
			// greatest ts <= T (times are distinct), none if a delete.
			versions := map[string][]dimRow{}
			for _, d := range in.dim {
				versions[d.K] = append(versions[d.K], d)
			}
			var out []outRow
			for _, e := range in.ev {
				vs := versions[e.K]
				i := sort.Search(len(vs), func(i int) bool { return vs[i].TS > e.TS }) - 1
				if i >= 0 && vs[i].Label != nil {
					out = append(out, outRow{"id": e.ID, "k": e.K, "label": *vs[i].Label, "ts": e.TS})
				}
			}
			return out
		},
	},
	// Queries over updating inputs (changelog streams): an aggregation
	// over a running aggregate (every row of ev moves its key from one
	// bucket of n % 4 to the next: MIN, MAX and COUNT(DISTINCT) take the
	// key's values back from the bucket it leaves), a filter over a
	// running aggregate (a key's row leaves when its average reaches 500,
	// and comes back below it), and an aggregation over the PRIMARY KEY
	// table dim (each version takes its key's previous one back, a delete
	// takes it out).
	{
		name: "run_agg",
		sql: `SELECT {hint} n % 4 AS b, COUNT(*) AS nk, SUM(s) AS total, MIN(lo) AS lo, MAX(hi) AS hi, COUNT(DISTINCT n) AS dn
FROM (SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi FROM ev GROUP BY k) x GROUP BY b`,
		cols: []column{{"b", tInt}, {"nk", tInt}, {"total", tInt}, {"lo", tInt}, {"hi", tInt}, {"dn", tInt}},
		key:  []string{"b"},
		oracle: func(in input) []outRow {
			groups := map[int64][]outRow{}
			for _, r := range runningByK(in.ev) {
				b := r["n"].(int64) % 4
				groups[b] = append(groups[b], r)
			}
			var out []outRow
			for b, rs := range groups {
				var ss, los, his, ns []int64
				for _, r := range rs {
					ns = append(ns, r["n"].(int64))
					if r["s"] != nil {
						ss, los, his = append(ss, r["s"].(int64)), append(los, r["lo"].(int64)), append(his, r["hi"].(int64))
					}
				}
				out = append(out, outRow{"b": b, "nk": int64(len(rs)), "total": sum(ss), "lo": minOf(los), "hi": maxOf(his), "dn": distinct(ns)})
			}
			return out
		},
	},
	{
		name: "run_pos",
		sql:  `SELECT {hint} k, n, a FROM (SELECT k, COUNT(*) AS n, AVG(v) AS a FROM ev GROUP BY k) x WHERE a < 500`,
		cols: []column{{"k", tStr}, {"n", tInt}, {"a", tFloat}},
		key:  []string{"k"},
		oracle: func(in input) []outRow {
			var out []outRow
			for _, r := range runningByK(in.ev) {
				if a, ok := r["a"].(float64); ok && a < 500 { // NULL < 500 is not true
					out = append(out, outRow{"k": r["k"], "n": r["n"], "a": a})
				}
			}
			return out
		},
	},
	{
		name: "dim_agg",
		sql:  `SELECT {hint} label % 4 AS b, COUNT(*) AS n, SUM(label) AS s, MIN(k) AS lo_k, MAX(label) AS hi FROM dim GROUP BY b`,
		cols: []column{{"b", tInt}, {"n", tInt}, {"s", tInt}, {"lo_k", tStr}, {"hi", tInt}},
		key:  []string{"b"},
		oracle: func(in input) []outRow {
			groups := map[int64][]dimRow{}
			for _, d := range dimState(in.dim) {
				b := *d.Label % 4
				groups[b] = append(groups[b], d)
			}
			var out []outRow
			for b, ds := range groups {
				var labels []int64
				lo := ds[0].K
				for _, d := range ds {
					labels = append(labels, *d.Label)
					lo = min(lo, d.K)
				}
				out = append(out, outRow{"b": b, "n": int64(len(ds)), "s": sum(labels), "lo_k": lo, "hi": maxOf(labels)})
			}
			return out
		},
	},
}

// runningByK is the running aggregate SELECT k, COUNT(*) AS n, SUM(v) AS
// s, MIN(v) AS lo, MAX(v) AS hi, AVG(v) AS a ... GROUP BY k over rows
// (NULLs where a key's v are all NULL).
func runningByK(rows []inRow) []outRow {
	by := map[string][]inRow{}
	for _, r := range rows {
		by[r.K] = append(by[r.K], r)
	}
	var out []outRow
	for k, rs := range by {
		vs := values(rs)
		out = append(out, outRow{"k": k, "n": int64(len(rs)), "s": sum(vs), "lo": minOf(vs), "hi": maxOf(vs), "a": avg(vs)})
	}
	return out
}

// dimState is the PRIMARY KEY table dim after its versions in posting
// order: the last version of each key, keys whose last one is a delete
// left out.
func dimState(versions []dimRow) []dimRow {
	last := map[string]dimRow{}
	for _, d := range versions {
		last[d.K] = d
	}
	var out []dimRow
	for _, d := range last {
		if d.Label != nil {
			out = append(out, d)
		}
	}
	return out
}

func queryByName(name string) querySpec {
	for _, q := range queries {
		if q.name == name {
			return q
		}
	}
	panic("torture: no query " + name)
}

// sinkSpec is an external sink of the workload: a query's SELECT inserted
// into a PostgreSQL table or a Kafka topic.
type sinkSpec struct {
	name     string // the streamsql table (and query) name
	engine   string // "postgres" or "kafka"
	delivery string // "exactly_once", "at_least_once" or "at_most_once" (append-only queries only: see kafkaRows)
	query    string // the querySpec it takes its SELECT from
}

// sinks cover both engines in the delivery modes, with upserts,
// deletes (HAVING, sessions merging) and append-only rows; at_most_once
// on append-only rows to Kafka, where a record produced again is seen.
var sinks = []sinkSpec{
	{"pg_tumble_eo", "postgres", "exactly_once", "tumble_all"},
	{"pg_rows_eo", "postgres", "exactly_once", "j_rows"},
	{"pg_session_alo", "postgres", "at_least_once", "session_k"},
	{"pg_hop_alo", "postgres", "at_least_once", "hop_having"},
	{"k_ktumble_eo", "kafka", "exactly_once", "k_tumble"},
	{"k_hop_eo", "kafka", "exactly_once", "hop_having"},
	{"k_session_alo", "kafka", "at_least_once", "session_k"},
	{"pg_asof_eo", "postgres", "exactly_once", "asof"},
	{"k_left_alo", "kafka", "at_least_once", "jl_rows"},
	// Updating inputs: upserts and deletes of rows taken back.
	{"pg_runagg_eo", "postgres", "exactly_once", "run_agg"},
	{"pg_runpos_alo", "postgres", "at_least_once", "run_pos"},
	{"k_runpos_eo", "kafka", "exactly_once", "run_pos"},
	{"k_runagg_alo", "kafka", "at_least_once", "run_agg"},
	{"pg_dimagg_alo", "postgres", "at_least_once", "dim_agg"},
	{"k_rows_amo", "kafka", "at_most_once", "j_rows"},
}

// parallelism of each query: 2 for some, so exchanges and alignment are
// exercised, 1 for the rest (the machine may have 2 cores).
func parallelismOf(name string) int {
	switch name {
	case "tumble_all", "j_agg", "session_k", "jl_rows", "pg_tumble_eo", "k_hop_eo", "run_agg", "pg_runagg_eo", "k_runpos_eo":
		return 2
	}
	return 1
}

// ddl is the workload's tables and views.
func ddl(brokers, topic string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `CREATE TABLE ev (id BIGINT NOT NULL, k VARCHAR(16) NOT NULL, v BIGINT, ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": %q, "retention": "1s"}';
CREATE TABLE kev (id BIGINT NOT NULL, k VARCHAR(16) NOT NULL, v BIGINT, ts TIMESTAMP(3) NOT NULL)
  ENGINE=kafka CONNECTION='%s'
  ENGINE_ATTRIBUTE='{"topic": %q, "format": "json", "start": "earliest", "event_time": "ts", "watermark_delay": %q}';
CREATE TABLE dim (k VARCHAR(16), label BIGINT, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (k))
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": %q, "idle_timeout": "24h"}';
`, evDelay, brokers, topic, kevDelay, evDelay)
	for _, q := range queries {
		fmt.Fprintf(&b, "CREATE VIEW %s AS\n%s;\n", q.name, q.selectSQL(parallelismOf(q.name)))
	}
	return b.String()
}

// createSinkSQL is the sink's CREATE TABLE and INSERT.
func (s sinkSpec) createSQL(conn, pgSchema, topic string) string {
	q := queryByName(s.query)
	var defs, key []string
	if q.appendOnly() {
		defs, key = append(defs, "_row_id VARCHAR(255) NOT NULL"), []string{"_row_id"}
	} else {
		key = q.key
	}
	for _, c := range q.cols {
		defs = append(defs, c.name+" "+c.typ.sql())
	}
	attrs := map[string]any{"delivery": s.delivery}
	if s.engine == "postgres" {
		attrs["schema"], attrs["table"], attrs["create_table"] = pgSchema, s.name, true
	} else {
		attrs["topic"] = topic
	}
	ab, _ := json.Marshal(attrs)
	return fmt.Sprintf("CREATE TABLE %s (\n  %s,\n  PRIMARY KEY (%s)\n) ENGINE=%s CONNECTION='%s' ENGINE_ATTRIBUTE='%s';\nINSERT INTO %s\n%s;\n",
		s.name, strings.Join(defs, ",\n  "), strings.Join(key, ", "), s.engine, conn, ab, s.name, q.selectSQL(parallelismOf(s.name)))
}

// The oracle's pieces.

type window struct{ start, end int64 }

type assigner func(ts int64) []window

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func tumble(size int64) assigner {
	return func(ts int64) []window {
		s := floorDiv(ts, size) * size
		return []window{{s, s + size}}
	}
}

// hop: every window [s, s+size) with s a multiple of slide and
// s <= ts < s+size.
func hop(slide, size int64) assigner {
	return func(ts int64) []window {
		var out []window
		for s := floorDiv(ts, slide) * slide; s > ts-size; s -= slide {
			out = append(out, window{s, s + size})
		}
		return out
	}
}

type groupKey struct {
	w window
	k string
}

// windowed groups rows by window and k and builds a row per group; fill
// sets the aggregates and says whether the group passes HAVING.
func windowed(rows []inRow, assign assigner, fill func(outRow, []inRow) bool) []outRow {
	groups := map[groupKey][]inRow{}
	for _, r := range rows {
		for _, w := range assign(r.TS) {
			g := groupKey{w, r.K}
			groups[g] = append(groups[g], r)
		}
	}
	var out []outRow
	for g, rs := range groups {
		r := outRow{"window_start": g.w.start, "window_end": g.w.end, "k": g.k}
		if fill(r, rs) {
			out = append(out, r)
		}
	}
	return out
}

// sessions: per k, rows sorted by time; a row at ts opens [ts, ts+gap)
// and joins the current session when ts is before its end (sessions that
// only touch stay apart).
func sessions(rows []inRow, gap int64, fill func(outRow, []inRow)) []outRow {
	by := map[string][]inRow{}
	for _, r := range rows {
		by[r.K] = append(by[r.K], r)
	}
	var out []outRow
	for k, rs := range by {
		sort.Slice(rs, func(i, j int) bool { return rs[i].TS < rs[j].TS })
		emit := func(start, end int64, members []inRow) {
			r := outRow{"window_start": start, "window_end": end, "k": k}
			fill(r, members)
			out = append(out, r)
		}
		start, end, from := rs[0].TS, rs[0].TS+gap, 0
		for i := 1; i < len(rs); i++ {
			if rs[i].TS < end {
				end = max(end, rs[i].TS+gap)
				continue
			}
			emit(start, end, rs[from:i])
			start, end, from = rs[i].TS, rs[i].TS+gap, i
		}
		emit(start, end, rs[from:])
	}
	return out
}

// joined pairs each ev row with the kev rows of its id within ±2s.
func joined(in input) [][2]inRow {
	byID := map[int64][]inRow{}
	for _, q := range in.kev {
		byID[q.ID] = append(byID[q.ID], q)
	}
	var out [][2]inRow
	for _, e := range in.ev {
		for _, q := range byID[e.ID] {
			if q.TS >= e.TS-2000 && q.TS <= e.TS+2000 {
				out = append(out, [2]inRow{e, q})
			}
		}
	}
	return out
}

func values(rows []inRow) []int64 {
	var vs []int64
	for _, r := range rows {
		if r.V != nil {
			vs = append(vs, *r.V)
		}
	}
	return vs
}

func val(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

func distinct(vs []int64) int64 {
	seen := map[int64]bool{}
	for _, v := range vs {
		seen[v] = true
	}
	return int64(len(seen))
}

func sum(vs []int64) any {
	if len(vs) == 0 {
		return nil
	}
	var s int64
	for _, v := range vs {
		s += v
	}
	return s
}

func avg(vs []int64) any {
	if len(vs) == 0 {
		return nil
	}
	return float64(sum(vs).(int64)) / float64(len(vs))
}

func minOf(vs []int64) any {
	if len(vs) == 0 {
		return nil
	}
	m := vs[0]
	for _, v := range vs[1:] {
		m = min(m, v)
	}
	return m
}

func maxOf(vs []int64) any {
	if len(vs) == 0 {
		return nil
	}
	m := vs[0]
	for _, v := range vs[1:] {
		m = max(m, v)
	}
	return m
}

// formatTS renders milliseconds as the API does.
func formatTS(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
