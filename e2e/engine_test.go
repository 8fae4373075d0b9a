package e2e

// The main scenario: one HTTP table, many views over it (every window kind,
// every aggregate, WHERE, HAVING, a running aggregate, an append-only view,
// processing time), each created for parallelism 1 and 2 and, where it
// applies, for emit modes changes and on_window_close. Rows with bounded
// disorder and some late rows are posted in chunks from one goroutine, so
// log order is post order; after a checkpoint every view's committed results
// must equal the oracle over the rows posted so far, and late_rows must
// equal the oracle's count. The same runs through SIGKILL and restart.

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const bidsDDL = `CREATE TABLE bids (
  auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL,
  channel VARCHAR(32), ts TIMESTAMP(3) NOT NULL
) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "2s", "allowed_lateness": "1s"}'`

// bidsSource is bidsDDL's ENGINE_ATTRIBUTE for the oracle.
var bidsSource = Source{TimeCol: "ts", WatermarkDelay: 2000, AllowedLateness: 1000}

const (
	scenarioRows = 3000
	chunkSize    = 200
)

// viewKind says which variants a view has and how it is checked.
type viewKind int

const (
	eventWindowed viewKind = iota // event-time windows: changes and on_window_close
	runningAgg                    // GROUP BY without a window: changes only
	appendOnly                    // no aggregation: no emit_mode hint
	procTime                      // TUMBLE(PROCTIME()): changes only; totals checked
)

// viewDef is a view in SQL and in the oracle's terms. sql is a SELECT with
// the placeholder {hint} where the optimizer hints go.
type viewDef struct {
	base  string
	kind  viewKind
	sql   string
	query Query
}

// variant is how a view is run: its SET_VAR hints.
type variant struct {
	name        string
	parallelism int
	onClose     bool // emit_mode=on_window_close, else changes
}

var variants = []variant{
	{"p1", 1, false},
	{"p2", 2, false},
	{"p1_owc", 1, true},
	{"p2_owc", 2, true},
}

// viewInstance is one view created on a server.
type viewInstance struct {
	name string
	def  viewDef
	v    variant
}

func (vi viewInstance) hint() string {
	h := "SET_VAR(parallelism=" + strconv.Itoa(vi.v.parallelism) + ")"
	if vi.def.kind != appendOnly {
		mode := "changes"
		if vi.v.onClose {
			mode = "on_window_close"
		}
		h += " SET_VAR(emit_mode=" + mode + ")"
	}
	return "/*+ " + h + " */"
}

func (vi viewInstance) createSQL() string {
	return "CREATE VIEW " + vi.name + " AS\n" + vi.selectSQL()
}

// selectSQL is the view's SELECT with its hints.
func (vi viewInstance) selectSQL() string {
	return strings.Replace(vi.def.sql, "{hint}", vi.hint(), 1)
}

func (vi viewInstance) expected(log []Row) Result {
	q := vi.def.query
	q.OnWindowClose = vi.v.onClose
	return Evaluate(bidsSource, q, log)
}

// instances crosses views with variants, leaving out on_window_close for
// views without event-time windows.
func instances(defs []viewDef, vs []variant) []viewInstance {
	var out []viewInstance
	for _, d := range defs {
		for _, v := range vs {
			if v.onClose && d.kind != eventWindowed {
				continue
			}
			out = append(out, viewInstance{name: d.base + "_" + v.name, def: d, v: v})
		}
	}
	return out
}

func instanceNames(vs []viewInstance) []string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.name
	}
	return names
}

// Expressions over bids rows.

func bigint(r Row, col string) int64 { return r[col].(int64) }

func timesTwo(col string) Expr { return func(r Row) any { return bigint(r, col) * 2 } }

// caseWhenPrice is CASE WHEN price > limit THEN then(r) [ELSE elseV] END.
func caseWhenPrice(limit int64, then Expr, elseV any) Expr {
	return func(r Row) any {
		if bigint(r, "price") > limit {
			return then(r)
		}
		return elseV
	}
}

func constant(v any) Expr { return func(Row) any { return v } }

// bidViews are the views of the main scenario.
func bidViews() []viewDef {
	price, channel, bidder, ts := colRef("price"), colRef("channel"), colRef("bidder"), colRef("ts")
	return []viewDef{
		{
			base: "tumble_auction", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end, auction,
  COUNT(*) AS n, COUNT(channel) AS n_channel, COUNT(DISTINCT bidder) AS bidders,
  SUM(price) AS volume, AVG(price) AS avg_price, MIN(price) AS min_price, MAX(price) AS max_price
FROM bids GROUP BY TUMBLE(ts, '10s'), auction`,
			query: Query{
				Window: TumbleWindow(10_000), GroupBy: []string{"auction"},
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "n_channel", Func: Count, Arg: channel},
					{As: "bidders", Func: CountDistinct, Arg: bidder},
					{As: "volume", Func: Sum, Arg: price},
					{As: "avg_price", Func: Avg, Arg: price},
					{As: "min_price", Func: Min, Arg: price},
					{As: "max_price", Func: Max, Arg: price},
				},
			},
		},
		{
			// One group per window, expressions, aggregates over a nullable
			// VARCHAR and over the event time.
			base: "tumble_exprs", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end,
  COUNT(*) AS n, COUNT(channel) AS n_channel, COUNT(DISTINCT channel) AS channels,
  SUM(price * 2) AS double_volume, SUM(CASE WHEN price > 500 THEN 1 ELSE 0 END) AS expensive,
  MIN(channel) AS min_channel, MAX(channel) AS max_channel, MIN(ts) AS first_ts, MAX(ts) AS last_ts
FROM bids WHERE bidder % 3 <> 0 GROUP BY TUMBLE(ts, '5s')`,
			query: Query{
				Window: TumbleWindow(5_000),
				Where:  func(r Row) bool { return bigint(r, "bidder")%3 != 0 },
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "n_channel", Func: Count, Arg: channel},
					{As: "channels", Func: CountDistinct, Arg: channel},
					{As: "double_volume", Func: Sum, Arg: timesTwo("price")},
					{As: "expensive", Func: Sum, Arg: caseWhenPrice(500, constant(int64(1)), int64(0))},
					{As: "min_channel", Func: Min, Arg: channel},
					{As: "max_channel", Func: Max, Arg: channel},
					{As: "first_ts", Func: Min, Arg: ts},
					{As: "last_ts", Func: Max, Arg: ts},
				},
			},
		},
		{
			// A nullable group key (the NULL channel is a group of its own),
			// CASE without ELSE (SUM and MAX of only NULLs are NULL), HAVING.
			base: "tumble_channel", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end, channel, COUNT(*) AS n,
  SUM(CASE WHEN price > 990 THEN price END) AS top_volume,
  MAX(CASE WHEN price > 990 THEN bidder END) AS top_bidder, AVG(price) AS avg_price
FROM bids WHERE auction <= 10 GROUP BY TUMBLE(ts, '10s'), channel HAVING COUNT(*) > 30`,
			query: Query{
				Window: TumbleWindow(10_000), GroupBy: []string{"channel"},
				Where: func(r Row) bool { return bigint(r, "auction") <= 10 },
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "top_volume", Func: Sum, Arg: caseWhenPrice(990, price, nil)},
					{As: "top_bidder", Func: Max, Arg: caseWhenPrice(990, bidder, nil)},
					{As: "avg_price", Func: Avg, Arg: price},
				},
				Having: func(out Row) bool { return bigint(out, "n") > 30 },
			},
		},
		{
			// Slide divides size. HAVING that a group passes and then fails
			// (a delete in changes mode).
			base: "hop_div", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS volume, MAX(price) AS max_price
FROM bids GROUP BY HOP(ts, '5s', '10s'), auction HAVING COUNT(*) > 2 AND MAX(price) < 950`,
			query: Query{
				Window: HopWindow(5_000, 10_000), GroupBy: []string{"auction"},
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "volume", Func: Sum, Arg: price},
					{As: "max_price", Func: Max, Arg: price},
				},
				Having: func(out Row) bool { return bigint(out, "n") > 2 && bigint(out, "max_price") < 950 },
			},
		},
		{
			// Slide does not divide size: rows are in 3 or 4 windows.
			base: "hop_nodiv", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end, channel, COUNT(*) AS n, AVG(price) AS avg_price, MIN(price) AS min_price
FROM bids WHERE price > 100 GROUP BY HOP(ts, '3s', '10s'), channel`,
			query: Query{
				Window: HopWindow(3_000, 10_000), GroupBy: []string{"channel"},
				Where: func(r Row) bool { return bigint(r, "price") > 100 },
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "avg_price", Func: Avg, Arg: price},
					{As: "min_price", Func: Min, Arg: price},
				},
			},
		},
		{
			// Slide larger than size: windows with gaps between them.
			base: "hop_gaps", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end, auction, COUNT(*) AS n, COUNT(DISTINCT bidder) AS bidders, SUM(price * 2) AS double_volume
FROM bids GROUP BY HOP(ts, '10s', '4s'), auction`,
			query: Query{
				Window: HopWindow(10_000, 4_000), GroupBy: []string{"auction"},
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "bidders", Func: CountDistinct, Arg: bidder},
					{As: "double_volume", Func: Sum, Arg: timesTwo("price")},
				},
			},
		},
		{
			// Long sessions that break at pauses in the input.
			base: "session_auction", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS volume,
  MIN(ts) AS first_ts, MAX(ts) AS last_ts, COUNT(channel) AS n_channel
FROM bids GROUP BY SESSION_WINDOW(ts, '1500ms'), auction`,
			query: Query{
				Window: SessionWindow(1_500), GroupBy: []string{"auction"},
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "volume", Func: Sum, Arg: price},
					{As: "first_ts", Func: Min, Arg: ts},
					{As: "last_ts", Func: Max, Arg: ts},
					{As: "n_channel", Func: Count, Arg: channel},
				},
			},
		},
		{
			// Short sessions that disorder keeps merging, WHERE and HAVING.
			base: "session_bidder", kind: eventWindowed,
			sql: `SELECT {hint} window_start, window_end, bidder, COUNT(*) AS n, MAX(price) AS max_price, MAX(channel) AS max_channel
FROM bids WHERE price > 50 GROUP BY SESSION_WINDOW(ts, '500ms'), bidder HAVING COUNT(*) > 1`,
			query: Query{
				Window: SessionWindow(500), GroupBy: []string{"bidder"},
				Where: func(r Row) bool { return bigint(r, "price") > 50 },
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "max_price", Func: Max, Arg: price},
					{As: "max_channel", Func: Max, Arg: channel},
				},
				Having: func(out Row) bool { return bigint(out, "n") > 1 },
			},
		},
		{
			base: "running_auction", kind: runningAgg,
			sql: `SELECT {hint} auction, COUNT(*) AS n, COUNT(channel) AS n_channel, COUNT(DISTINCT bidder) AS bidders,
  SUM(price) AS volume, AVG(price) AS avg_price, MIN(price) AS min_price, MAX(price) AS max_price, MAX(channel) AS max_channel
FROM bids GROUP BY auction`,
			query: Query{
				GroupBy: []string{"auction"},
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "n_channel", Func: Count, Arg: channel},
					{As: "bidders", Func: CountDistinct, Arg: bidder},
					{As: "volume", Func: Sum, Arg: price},
					{As: "avg_price", Func: Avg, Arg: price},
					{As: "min_price", Func: Min, Arg: price},
					{As: "max_price", Func: Max, Arg: price},
					{As: "max_channel", Func: Max, Arg: channel},
				},
			},
		},
		{
			// Groups start passing HAVING as they grow and stop passing when
			// a low price arrives (deletes); late rows count like any other.
			base: "running_having", kind: runningAgg,
			sql: `SELECT {hint} bidder, COUNT(*) AS n, MIN(price) AS min_price,
  SUM(CASE WHEN channel IS NULL THEN 1 ELSE 0 END) AS no_channel
FROM bids GROUP BY bidder HAVING COUNT(*) > 55 AND MIN(price) > 15`,
			query: Query{
				GroupBy: []string{"bidder"},
				Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "min_price", Func: Min, Arg: price},
					{As: "no_channel", Func: Sum, Arg: func(r Row) any {
						if r["channel"] == nil {
							return int64(1)
						}
						return int64(0)
					}},
				},
				Having: func(out Row) bool { return bigint(out, "n") > 55 && bigint(out, "min_price") > 15 },
			},
		},
		{
			base: "passthrough", kind: appendOnly,
			sql: `SELECT {hint} auction, bidder, price * 2 AS p2, channel, ts FROM bids WHERE price > 100`,
			query: Query{
				Where: func(r Row) bool { return bigint(r, "price") > 100 },
				Project: []Column{
					{As: "auction", Expr: colRef("auction")},
					{As: "bidder", Expr: bidder},
					{As: "p2", Expr: timesTwo("price")},
					{As: "channel", Expr: channel},
					{As: "ts", Expr: ts},
				},
			},
		},
		{
			base: "proctime", kind: procTime,
			sql: `SELECT {hint} window_start, window_end, COUNT(*) AS n FROM bids GROUP BY TUMBLE(PROCTIME(), '1s')`,
		},
	}
}

func viewByBase(base string) viewDef {
	for _, d := range bidViews() {
		if d.base == base {
			return d
		}
	}
	panic("no view " + base)
}

// testSeed is E2E_SEED if set, else fixed; offset separates the tests.
func testSeed(t *testing.T, offset uint64) uint64 {
	t.Helper()
	seed := uint64(20240101)
	if s := os.Getenv("E2E_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("E2E_SEED=%q: %v", s, err)
		}
		seed = v
	}
	seed += offset
	t.Logf("seed %d (E2E_SEED=%d reproduces this test)", seed, seed-offset)
	return seed
}

var channels = []string{"web", "app", "api", "partner"}

// baseTime is 2024-01-01T00:00:00Z.
const baseTime = int64(1704067200000)

// genBids returns n bids in log order. Event time follows a clock that
// advances 0-40ms per row with an occasional pause of 3-7s (so sessions
// end and windows close); a row's ts is the clock minus up to 1.9s (bounded
// disorder, under the 2s watermark delay: never late), some rows sit exactly
// on a 5s boundary, and about 2% are late rows 2-32s behind the clock. About
// 1 row in 300 starts a lateness probe: the clock jumps to B+3000 or B+2999
// for the next multiple B of 10s, which makes the watermark B+1000 or B+999,
// and the next row falls just before B, in windows ending at B: late exactly
// at the boundary (end + allowed_lateness == watermark), or just not. About
// 15% of channels are NULL.
func genBids(seed uint64, n int) []Row {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	clock := baseTime + 500
	probe := int64(-1) // a window end B that the next row probes
	rows := make([]Row, 0, n)
	for i := 0; i < n; i++ {
		var ts int64
		if probe >= 0 {
			ts, probe = probe-1-rng.Int64N(2000), -1
		} else {
			clock += rng.Int64N(41)
			if rng.IntN(150) == 0 {
				clock += 3000 + rng.Int64N(4000)
			}
			ts = clock - rng.Int64N(1900)
			switch {
			case i > 50 && rng.IntN(300) == 0:
				b := (clock/10_000 + 1) * 10_000
				clock = b + 3000 - rng.Int64N(2)
				ts, probe = clock, b
			case i > 50 && rng.IntN(50) == 0:
				ts = clock - 2000 - rng.Int64N(30_000)
			case rng.IntN(60) == 0:
				if b := clock - clock%5000; clock-b < 1900 {
					ts = b
				}
			}
		}
		var ch any
		if rng.IntN(100) >= 15 {
			ch = channels[rng.IntN(len(channels))]
		}
		rows = append(rows, Row{
			"auction": 1 + rng.Int64N(20),
			"bidder":  1 + rng.Int64N(50),
			"price":   1 + rng.Int64N(1000),
			"channel": ch,
			"ts":      Timestamp(ts),
		})
	}
	return rows
}

// wireRows is rows as posted: every fifth row (by log position, from
// first) carries ts as epoch milliseconds instead of an RFC 3339 string.
func wireRows(rows []Row, first int) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		if (first+i)%5 != 4 {
			out[i] = r
			continue
		}
		c := Row{}
		for k, v := range r {
			c[k] = v
		}
		c["ts"] = int64(r["ts"].(Timestamp))
		out[i] = c
	}
	return out
}

// scenario is a server with the bids table and views, and the rows
// acknowledged so far in log order.
type scenario struct {
	srv        *server
	views      []viewInstance
	posted     []Row
	nextOffset int64
	haveOffset bool
}

// newScenario starts a server (with flags) with the bids table and views.
func newScenario(t *testing.T, views []viewInstance, flags ...string) *scenario {
	t.Helper()
	sc := &scenario{srv: startServer(t, flags...)}
	sc.srv.sql(t, bidsDDL)
	sc.create(t, views)
	return sc
}

// create creates views in one multi-statement request.
func (sc *scenario) create(t *testing.T, views []viewInstance) {
	t.Helper()
	stmts := make([]string, len(views))
	for i, v := range views {
		stmts[i] = v.createSQL()
	}
	res := sc.srv.sql(t, strings.Join(stmts, ";\n"))
	if len(res) != len(views) {
		t.Fatalf("POST /v1/sql with %d CREATE VIEW statements: %d results", len(views), len(res))
	}
	for i, r := range res {
		if r.Statement != i || r.Name != views[i].name {
			t.Errorf("result %d: statement %d, name %q; want statement %d, name %q", i, r.Statement, r.Name, i, views[i].name)
		}
	}
	sc.views = append(sc.views, views...)
	sc.srv.waitRunning(t, instanceNames(views)...)
}

// post ingests rows in chunks, sequentially, and checks that the log
// offsets acknowledged are contiguous across requests (and restarts).
func (sc *scenario) post(t *testing.T, rows []Row) {
	t.Helper()
	for start := 0; start < len(rows); start += chunkSize {
		chunk := rows[start:min(start+chunkSize, len(rows))]
		ack := sc.srv.postRows(t, "bids", wireRows(chunk, len(sc.posted)))
		if sc.haveOffset && ack.FirstOffset != sc.nextOffset {
			t.Errorf("rows %d..: first_offset %d, want %d (contiguous with the previous request)", len(sc.posted), ack.FirstOffset, sc.nextOffset)
		}
		sc.nextOffset, sc.haveOffset = ack.LastOffset+1, true
		sc.posted = append(sc.posted, chunk...)
	}
}

// restart kills the server with SIGKILL, starts it on the same data
// directory and waits for the views to run again.
func (sc *scenario) restart(t *testing.T) {
	t.Helper()
	sc.srv.restart(t)
	sc.srv.waitRunning(t, instanceNames(sc.views)...)
}

// verify checkpoints, then checks every view against the oracle over the
// rows posted so far, one subtest per view under stage.
func (sc *scenario) verify(t *testing.T, stage string) {
	t.Helper()
	sc.srv.checkpointAndCheck(t, stage, instanceNames(sc.views), func(t *testing.T, name string, _ checkpointInfo) {
		sc.checkView(t, sc.views[slices.IndexFunc(sc.views, func(v viewInstance) bool { return v.name == name })])
	})
}

func (sc *scenario) checkView(t *testing.T, vi viewInstance) {
	got := sc.srv.results(t, vi.name)
	info := sc.srv.query(t, vi.name)
	if info.State != "running" {
		t.Errorf("state %q, want running (error: %v)", info.State, info.raw["error"])
	}
	if info.Counters.RowsIn != int64(len(sc.posted)) {
		t.Errorf("counters.rows_in = %d, want %d (rows posted)", info.Counters.RowsIn, len(sc.posted))
	}

	if vi.def.kind == procTime {
		var total int64
		for _, r := range got.Rows {
			n, err := strconv.ParseInt(jsonText(r["n"]), 10, 64)
			if err != nil {
				t.Fatalf("row %v: n is not a BIGINT", r)
			}
			total += n
		}
		if total != int64(len(sc.posted)) {
			t.Errorf("sum of COUNT(*) over %d PROCTIME windows = %d, want %d (rows posted)", len(got.Rows), total, len(sc.posted))
		}
		if info.Counters.LateRows != 0 {
			t.Errorf("counters.late_rows = %d, want 0 for processing time", info.Counters.LateRows)
		}
		return
	}

	want := vi.expected(sc.posted)
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: results differ from the oracle over %d rows (%d rows served, %d expected): %s\nSQL: %s",
			vi.name, len(sc.posted), len(got.Rows), len(want.Rows), formatDiffs(diffs, 5), vi.createSQL())
	}
	if info.Counters.LateRows != want.Late {
		t.Errorf("counters.late_rows = %d, want %d", info.Counters.LateRows, want.Late)
	}
	if vi.def.kind == appendOnly && info.Counters.RowsOut != int64(len(want.Rows)) {
		t.Errorf("counters.rows_out = %d, want %d (rows passing WHERE)", info.Counters.RowsOut, len(want.Rows))
	}
}

// jsonText is a decoded JSON scalar's text.
func jsonText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case string:
		return x
	}
	return ""
}

// TestViews runs every view and variant over one log on one server, checks
// them halfway and at the end, and creates one more view halfway that must
// read the rows posted before it (start: earliest).
func TestViews(t *testing.T) {
	rows := genBids(testSeed(t, 0), scenarioRows)
	sc := newScenario(t, instances(bidViews(), variants))
	half := len(rows) / 2
	sc.post(t, rows[:half])
	sc.verify(t, "half")

	sc.create(t, []viewInstance{{name: "tumble_auction_created_late", def: viewByBase("tumble_auction"), v: variants[1]}})
	sc.post(t, rows[half:])
	sc.verify(t, "all")
}

// TestRestartMidStream: half the rows, checkpoint, SIGKILL, restart on the
// same data directory, the other half; results equal the oracle over all.
func TestRestartMidStream(t *testing.T) {
	rows := genBids(testSeed(t, 1), scenarioRows)
	sc := newScenario(t, instances(bidViews(), variants))
	half := len(rows) / 2
	sc.post(t, rows[:half])
	sc.verify(t, "before_kill")
	sc.restart(t)
	sc.post(t, rows[half:])
	sc.verify(t, "after_restart")
}

// TestKillAfterAck: SIGKILL right after acknowledged posts, with no
// checkpoint since; after a restart and a checkpoint the acknowledged rows
// are all there, exactly once.
func TestKillAfterAck(t *testing.T) {
	rows := genBids(testSeed(t, 2), scenarioRows)
	sc := newScenario(t, instances(bidViews(), variants))
	third := len(rows) / 3
	sc.post(t, rows[:third])
	sc.srv.checkpoint(t)
	sc.post(t, rows[third:2*third])
	sc.restart(t) // SIGKILL right after the last acknowledgement
	sc.verify(t, "after_kill")
	sc.post(t, rows[2*third:])
	sc.restart(t)
	sc.verify(t, "after_second_kill")
}
