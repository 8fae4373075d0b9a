package e2e

// Interval joins end to end: two HTTP tables, bids and auctions, and views
// joining them (INNER with and without a residual condition, strict and
// negative bounds, the sides swapped, LEFT with and without a residual,
// windowed aggregations over INNER and LEFT joins, by either side's time),
// each at parallelism 1 and 2.
// Seeded rows with disorder within the watermark delay (no row is late)
// are posted to the two tables in chunks from one goroutine, one table
// running ahead of the other by a random amount; after a checkpoint every
// view's committed results must equal the join oracle (join_oracle_test.go)
// over the rows posted so far, with no late rows and, once flush rows have
// passed every bound, the state shrunk to the flush rows (state_size). The
// same through SIGKILL and restart; the LEFT join's NULL rows at the exact
// watermark boundary; the watermarks a join query reports; and join SQL
// the engine must refuse.

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	joinBidsDDL = `CREATE TABLE bids (
  auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL
) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "3s"}'`
	joinAuctionsDDL = `CREATE TABLE auctions (
  id BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT NOT NULL, name VARCHAR(32), ts TIMESTAMP(3) NOT NULL
) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "3s"}'`
	joinDelay = 3000 // both tables' watermark_delay, ms
)

var (
	bidSide     = JoinSide{Alias: "b", Columns: []string{"auction", "bidder", "price", "ts"}, TimeCol: "ts", WatermarkDelay: joinDelay}
	auctionSide = JoinSide{Alias: "a", Columns: []string{"id", "seller", "category", "name", "ts"}, TimeCol: "ts", WatermarkDelay: joinDelay}
)

func tsOf(r Row) int64 { return int64(r["ts"].(Timestamp)) }

// bidIn10s is `b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL
// 10 SECOND`.
func bidIn10s(b, a Row) bool {
	return bigint(b, "auction") == bigint(a, "id") && tsOf(a) <= tsOf(b) && tsOf(b) <= tsOf(a)+10_000
}

// aboveCategory is the residual `b.price > a.category * 10`.
func aboveCategory(b, a Row) bool { return bigint(b, "price") > bigint(a, "category")*10 }

// col is an output column reading one joined column.
func col(as, name string) Column { return Column{As: as, Expr: colRef(name)} }

// project is an append-only view's expected result over joined rows.
func project(joined []Row, cols ...Column) Result {
	return Evaluate(Source{}, Query{Project: cols}, joined)
}

// joinView is a view over bids and auctions in SQL (with the placeholder
// {hint}) and its expected result over the rows posted to each table.
type joinView struct {
	base     string
	agg      bool   // a windowed aggregation in changes mode; else append-only
	hints    string // more hints for {hint}, such as SET_VAR(state_ttl='30s')
	sql      string
	expected func(bids, auctions []Row) Result
}

func joinViews() []joinView {
	inner := Join{Kind: InnerJoin, Left: bidSide, Right: auctionSide, On: bidIn10s}
	left := Join{Kind: LeftJoin, Left: auctionSide, Right: bidSide,
		On:       func(a, b Row) bool { return bidIn10s(b, a) },
		Deadline: func(a Row) int64 { return tsOf(a) + 10_000 }}
	leftResidual := left
	leftResidual.On = func(a, b Row) bool { return bidIn10s(b, a) && aboveCategory(b, a) }
	return []joinView{
		{
			base: "j_inner",
			sql: `SELECT {hint} b.auction, b.bidder, b.price, a.seller
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND`,
			expected: func(bids, auctions []Row) Result {
				return project(EvaluateJoin(inner, bids, auctions),
					col("auction", "b.auction"), col("bidder", "b.bidder"), col("price", "b.price"), col("seller", "a.seller"))
			},
		},
		{
			// A residual over both sides, a nullable VARCHAR and an
			// expression over both sides in the output.
			base: "j_residual",
			sql: `SELECT {hint} b.auction, b.price, a.category, a.name, b.price - a.category * 10 AS margin
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND AND b.price > a.category * 10`,
			expected: func(bids, auctions []Row) Result {
				j := inner
				j.On = func(b, a Row) bool { return bidIn10s(b, a) && aboveCategory(b, a) }
				return project(EvaluateJoin(j, bids, auctions),
					col("auction", "b.auction"), col("price", "b.price"), col("category", "a.category"), col("name", "a.name"),
					Column{As: "margin", Expr: func(r Row) any { return bigint(r, "b.price") - bigint(r, "a.category")*10 }})
			},
		},
		{
			// Strict bounds, the lower one negative; both event times out.
			base: "j_strict",
			sql: `SELECT {hint} b.auction, b.bidder, b.ts AS bid_ts, a.ts AS auction_ts, a.seller
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts > a.ts - INTERVAL 2 SECOND AND b.ts < a.ts + INTERVAL 5 SECOND`,
			expected: func(bids, auctions []Row) Result {
				j := inner
				j.On = func(b, a Row) bool {
					return bigint(b, "auction") == bigint(a, "id") && tsOf(b) > tsOf(a)-2000 && tsOf(b) < tsOf(a)+5000
				}
				return project(EvaluateJoin(j, bids, auctions),
					col("auction", "b.auction"), col("bidder", "b.bidder"), col("bid_ts", "b.ts"), col("auction_ts", "a.ts"), col("seller", "a.seller"))
			},
		},
		{
			// auctions on the left, the bounds written on a.ts, the key
			// equality between them.
			base: "j_swapped",
			sql: `SELECT {hint} a.id, a.seller, b.bidder, b.price
FROM auctions a JOIN bids b ON a.ts >= b.ts - INTERVAL 10 SECOND AND a.id = b.auction AND a.ts <= b.ts`,
			expected: func(bids, auctions []Row) Result {
				j := Join{Kind: InnerJoin, Left: auctionSide, Right: bidSide, On: func(a, b Row) bool { return bidIn10s(b, a) }}
				return project(EvaluateJoin(j, auctions, bids),
					col("id", "a.id"), col("seller", "a.seller"), col("bidder", "b.bidder"), col("price", "b.price"))
			},
		},
		{
			base: "j_left",
			sql: `SELECT {hint} a.id, a.seller, b.bidder, b.price
FROM auctions a LEFT JOIN bids b ON a.id = b.auction AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND`,
			expected: func(bids, auctions []Row) Result {
				return project(EvaluateJoin(left, auctions, bids),
					col("id", "a.id"), col("seller", "a.seller"), col("bidder", "b.bidder"), col("price", "b.price"))
			},
		},
		{
			// The residual is part of ON: an auction whose only candidates
			// fail it gets its NULL row.
			base: "j_left_residual",
			sql: `SELECT {hint} a.id, a.category, b.bidder, b.price
FROM auctions a LEFT JOIN bids b ON a.id = b.auction AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND AND b.price > a.category * 10`,
			expected: func(bids, auctions []Row) Result {
				return project(EvaluateJoin(leftResidual, auctions, bids),
					col("id", "a.id"), col("category", "a.category"), col("bidder", "b.bidder"), col("price", "b.price"))
			},
		},
		{
			base: "j_agg", agg: true,
			sql: `SELECT {hint} window_start, a.seller, COUNT(*) AS bids, SUM(b.price) AS volume, MAX(b.price) AS top
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND
GROUP BY TUMBLE(b.ts, '10s'), a.seller`,
			expected: func(bids, auctions []Row) Result {
				q := Query{Window: TumbleWindow(10_000), GroupBy: []string{"a.seller"}, Aggs: []Agg{
					{As: "bids", Func: CountStar},
					{As: "volume", Func: Sum, Arg: colRef("b.price")},
					{As: "top", Func: Max, Arg: colRef("b.price")},
				}}
				res := Evaluate(noWatermark("b.ts"), q, EvaluateJoin(inner, bids, auctions))
				// window_end is not selected: the key served is (window_start, seller).
				return renameColumns(res, map[string]string{"a.seller": "seller", "window_end": ""})
			},
		},
		{
			// Windows over the right side's time: a bid arriving late in
			// event time joins an auction up to 10s older than the bids
			// watermark, so the join must hold back the watermark it forwards
			// by the upper bound, or these rows are late downstream.
			base: "j_agg_auction_time", agg: true,
			sql: `SELECT {hint} window_start, window_end, a.seller, COUNT(*) AS bids, SUM(b.price) AS volume, MIN(b.bidder) AS first_bidder
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND
GROUP BY TUMBLE(a.ts, '10s'), a.seller`,
			expected: func(bids, auctions []Row) Result {
				q := Query{Window: TumbleWindow(10_000), GroupBy: []string{"a.seller"}, Aggs: []Agg{
					{As: "bids", Func: CountStar},
					{As: "volume", Func: Sum, Arg: colRef("b.price")},
					{As: "first_bidder", Func: Min, Arg: colRef("b.bidder")},
				}}
				res := Evaluate(noWatermark("a.ts"), q, EvaluateJoin(inner, bids, auctions))
				return renameColumns(res, map[string]string{"a.seller": "seller"})
			},
		},
		{
			// An aggregation over a LEFT join: NULL rows come out 10s after
			// their auction's time (once the bids watermark passes it) and
			// must still count in its window; COUNT and SUM of a NULL right
			// column skip it.
			base: "j_left_agg", agg: true,
			sql: `SELECT {hint} window_start, window_end, a.seller, COUNT(*) AS n, COUNT(b.bidder) AS matched, SUM(b.price) AS volume
FROM auctions a LEFT JOIN bids b ON a.id = b.auction AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND
GROUP BY TUMBLE(a.ts, '10s'), a.seller`,
			expected: func(bids, auctions []Row) Result {
				q := Query{Window: TumbleWindow(10_000), GroupBy: []string{"a.seller"}, Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "matched", Func: Count, Arg: colRef("b.bidder")},
					{As: "volume", Func: Sum, Arg: colRef("b.price")},
				}}
				res := Evaluate(noWatermark("a.ts"), q, EvaluateJoin(left, auctions, bids))
				return renameColumns(res, map[string]string{"a.seller": "seller"})
			},
		},
	}
}

func joinViewsByBase(bases ...string) []joinView {
	return pickByBase(joinViews(), func(v joinView) string { return v.base }, bases...)
}

// pickByBase returns the definitions with the given base names, in that
// order; a name with no definition is a bug in the test.
func pickByBase[T any](defs []T, base func(T) string, bases ...string) []T {
	var out []T
	for _, b := range bases {
		found := false
		for _, v := range defs {
			if base(v) == b {
				out, found = append(out, v), true
			}
		}
		if !found {
			panic("no view definition " + b)
		}
	}
	return out
}

// joinInstance is one join view created on a server.
type joinInstance struct {
	name        string
	def         joinView
	parallelism int
}

func (ji joinInstance) createSQL() string {
	return "CREATE VIEW " + ji.name + " AS\n" + ji.selectSQL()
}

// selectSQL is the view's SELECT with its hints.
func (ji joinInstance) selectSQL() string {
	h := "SET_VAR(parallelism=" + strconv.Itoa(ji.parallelism) + ")"
	if ji.def.hints != "" {
		h += " " + ji.def.hints
	}
	if ji.def.agg {
		h += " SET_VAR(emit_mode=changes)"
	}
	return strings.Replace(ji.def.sql, "{hint}", "/*+ "+h+" */", 1)
}

// joinInstances runs each view at parallelism 1 and 2.
func joinInstances(defs []joinView) []joinInstance {
	var out []joinInstance
	for _, d := range defs {
		for _, p := range []int{1, 2} {
			out = append(out, joinInstance{name: d.base + "_p" + strconv.Itoa(p), def: d, parallelism: p})
		}
	}
	return out
}

// postStep is one request of a posting plan: the next n rows of a table.
type postStep struct {
	table string
	n     int
}

// joinData is the input of a join scenario: each table's rows in log
// order and the order of the requests that post them.
type joinData struct {
	bids, auctions []Row
	steps          []postStep
}

// genJoinData generates about events rows in one event-time timeline: a
// clock advancing 0-50ms per row with a rare pause of 11-20s (longer than
// the join bounds: state expires, NULL rows come due, windows close).
// About 12% of rows are auctions: 40 ids reused over time (a bid matches
// every auction of its id within its bounds), 8 sellers, names NULL 10% of
// the time. Of the bids, 30% are on any id (some never used by an
// auction), 20% exactly on a bound of one of the views (0, 10s, 10s+1ms,
// -1ms, -2s, -2s+1ms, 5s-1ms, 5s, 1ms, 10s-1ms) of a recent auction, the
// rest at an offset of -3s..13s from a recent auction. Every row's time is
// in [clock - 3s, clock], so no row is late on its own table; 2% of rows
// sit exactly on their table's watermark (max so far - 3s).
//
// The posting plan takes chunks (bids 20-200 rows, auctions 3-30), 70% of
// the time from the table whose last posted row is older, so the tables
// stay near each other in event time but either runs ahead at times: the
// join sees rows whose partners were expired long ago on the other side's
// watermark, and rows waiting for the other side.
func genJoinData(seed uint64, events int) joinData {
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e9955bd1e995))
	clock := baseTime + 500
	var d joinData
	var maxBid, maxAuction int64 = -1, -1
	var recent []Row // the last auctions generated
	boundaries := []int64{0, 10_000, 10_001, -1, -2000, -1999, 4999, 5000, 1, 9999}
	onTime := func(max int64) int64 { // a time in [clock-3s, clock], sometimes exactly the watermark
		if max >= 0 && rng.IntN(50) == 0 {
			return max - joinDelay
		}
		return clock - rng.Int64N(joinDelay+1)
	}
	for i := 0; i < events; i++ {
		clock += rng.Int64N(51)
		if rng.IntN(250) == 0 {
			clock += 11_000 + rng.Int64N(9000)
		}
		if rng.IntN(100) < 12 {
			ts := onTime(maxAuction)
			maxAuction = max(maxAuction, ts)
			var name any
			if rng.IntN(10) != 0 {
				name = "item-" + strconv.Itoa(i)
			}
			a := Row{"id": 1 + rng.Int64N(40), "seller": 1 + rng.Int64N(8), "category": 1 + rng.Int64N(100), "name": name, "ts": Timestamp(ts)}
			d.auctions = append(d.auctions, a)
			recent = append(recent, a)
			if len(recent) > 100 {
				recent = recent[1:]
			}
			continue
		}
		b := Row{"bidder": 1 + rng.Int64N(100), "price": 1 + rng.Int64N(1000), "auction": 1 + rng.Int64N(45)}
		ts := int64(-1)
		switch k := rng.IntN(20); {
		case len(recent) == 0 || k < 6: // any id
		case k < 10: // exactly on a bound of a recent auction, where that time is on time
			off := boundaries[rng.IntN(len(boundaries))]
			for j, start := 0, rng.IntN(len(recent)); j < len(recent); j++ {
				a := recent[(start+j)%len(recent)]
				if t := tsOf(a) + off; t >= clock-joinDelay && t <= clock {
					b["auction"], ts = a["id"], t
					break
				}
			}
		default: // around the bounds of a recent auction
			a := recent[rng.IntN(len(recent))]
			b["auction"] = a["id"]
			if t := tsOf(a) + rng.Int64N(16_001) - 3000; t >= clock-joinDelay && t <= clock {
				ts = t
			}
		}
		if ts < 0 {
			ts = onTime(maxBid)
		}
		maxBid = max(maxBid, ts)
		b["ts"] = Timestamp(ts)
		d.bids = append(d.bids, b)
	}
	for nb, na := 0, 0; nb < len(d.bids) || na < len(d.auctions); {
		bidsBehind := nb == 0 || (na > 0 && tsOf(d.bids[nb-1]) < tsOf(d.auctions[na-1]))
		if na == len(d.auctions) || (nb < len(d.bids) && (rng.IntN(10) < 7) == bidsBehind) {
			n := min(20+rng.IntN(181), len(d.bids)-nb)
			d.steps = append(d.steps, postStep{"bids", n})
			nb += n
		} else {
			n := min(3+rng.IntN(28), len(d.auctions)-na)
			d.steps = append(d.steps, postStep{"auctions", n})
			na += n
		}
	}
	return d
}

// flushRows are one bid and one auction a minute after every row of d, on
// ids nothing else uses: they pass every join bound of the rows before
// them (every pending LEFT row gets its NULL row) and match nothing.
func flushRows(d joinData) (bid, auction Row) {
	var last int64
	for _, r := range append(append([]Row{}, d.bids...), d.auctions...) {
		last = max(last, tsOf(r))
	}
	ts := Timestamp(last + 60_000)
	return Row{"auction": int64(-1), "bidder": int64(0), "price": int64(0), "ts": ts},
		Row{"id": int64(-2), "seller": int64(0), "category": int64(0), "name": "flush", "ts": ts}
}

// joinScenario is a server with the two tables and join views, and the
// rows acknowledged so far per table, in log order.
type joinScenario struct {
	srv    *server
	views  []joinInstance
	data   joinData
	step   int            // the next step of data.steps
	next   map[string]int // the next row of data per table
	posted map[string][]Row
	offset map[string]int64 // the next log offset per table, once known
}

func newJoinScenario(t *testing.T, data joinData, views []joinInstance) *joinScenario {
	t.Helper()
	sc := &joinScenario{srv: startServer(t), data: data, next: map[string]int{}, posted: map[string][]Row{}, offset: map[string]int64{}}
	sc.srv.sql(t, joinBidsDDL+";\n"+joinAuctionsDDL)
	sc.create(t, views)
	return sc
}

func (sc *joinScenario) create(t *testing.T, views []joinInstance) {
	t.Helper()
	stmts := make([]string, len(views))
	names := make([]string, len(views))
	for i, v := range views {
		stmts[i], names[i] = v.createSQL(), v.name
	}
	res := sc.srv.sql(t, strings.Join(stmts, ";\n"))
	if len(res) != len(views) {
		t.Fatalf("POST /v1/sql with %d CREATE VIEW statements: %d results", len(views), len(res))
	}
	sc.views = append(sc.views, views...)
	sc.srv.waitRunning(t, names...)
}

// postTo posts the plan's steps up to (not including) step upto.
func (sc *joinScenario) postTo(t *testing.T, upto int) {
	t.Helper()
	for ; sc.step < upto; sc.step++ {
		s := sc.data.steps[sc.step]
		all := sc.data.bids
		if s.table == "auctions" {
			all = sc.data.auctions
		}
		from := sc.next[s.table]
		sc.postRows(t, s.table, all[from:from+s.n])
		sc.next[s.table] = from + s.n
	}
}

// postRows posts rows to table in one request and checks that the offsets
// acknowledged continue the table's log.
func (sc *joinScenario) postRows(t *testing.T, table string, rows []Row) {
	t.Helper()
	ack := sc.srv.postRows(t, table, wireRows(rows, len(sc.posted[table])))
	if want, ok := sc.offset[table]; ok && ack.FirstOffset != want {
		t.Errorf("%s rows %d..: first_offset %d, want %d (contiguous with the previous request)", table, len(sc.posted[table]), ack.FirstOffset, want)
	}
	sc.offset[table] = ack.LastOffset + 1
	sc.posted[table] = append(sc.posted[table], rows...)
}

func (sc *joinScenario) restart(t *testing.T) {
	t.Helper()
	sc.srv.restart(t)
	sc.srv.waitRunning(t, sc.names()...)
}

func (sc *joinScenario) names() []string {
	names := make([]string, len(sc.views))
	for i, v := range sc.views {
		names[i] = v.name
	}
	return names
}

// verify checkpoints, then checks every view against the oracle over the
// rows posted so far, one subtest per view under stage.
func (sc *joinScenario) verify(t *testing.T, stage string) {
	t.Helper()
	sc.srv.checkpointAndCheck(t, stage, sc.names(), func(t *testing.T, name string, _ checkpointInfo) {
		sc.checkView(t, sc.views[slices.IndexFunc(sc.views, func(v joinInstance) bool { return v.name == name })])
	})
}

func (sc *joinScenario) checkView(t *testing.T, ji joinInstance) {
	bids, auctions := sc.posted["bids"], sc.posted["auctions"]
	got := sc.srv.results(t, ji.name)
	info := sc.srv.query(t, ji.name)
	if info.State != "running" {
		t.Errorf("state %q, want running (error: %v)", info.State, info.raw["error"])
	}
	if n := int64(len(bids) + len(auctions)); info.Counters.RowsIn != n {
		t.Errorf("counters.rows_in = %d, want %d (rows posted to bids and auctions)", info.Counters.RowsIn, n)
	}
	if info.Counters.LateRows != 0 {
		recent, _ := info.raw["recent_late_rows"].([]any)
		t.Errorf("counters.late_rows = %d, want 0: no input row is late on its table's watermark, so the join's output must not be late downstream either (recent late rows: %v)",
			info.Counters.LateRows, recent[:min(len(recent), 3)])
	}
	want := ji.def.expected(bids, auctions)
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: results differ from the oracle over %d bids and %d auctions (%d rows served, %d expected): %s\nSQL: %s",
			ji.name, len(bids), len(auctions), len(got.Rows), len(want.Rows), formatDiffs(diffs, 5), ji.createSQL())
	}
	if !ji.def.agg && info.Counters.RowsOut != int64(len(want.Rows)) {
		t.Errorf("counters.rows_out = %d, want %d (joined rows)", info.Counters.RowsOut, len(want.Rows))
	}
}

// stateRows returns state_size.rows of GET /v1/queries/{name}: the open
// groups and held join rows of the query's operators.
func (sc *joinScenario) stateRows(t *testing.T, name string) int64 {
	t.Helper()
	info := sc.srv.query(t, name)
	size, _ := info.raw["state_size"].(map[string]any)
	n, ok := size["rows"].(json.Number)
	if !ok {
		t.Fatalf("GET /v1/queries/%s: no state_size.rows in %v", name, info.raw)
	}
	v, err := n.Int64()
	if err != nil {
		t.Fatalf("GET /v1/queries/%s: state_size.rows %q: %v", name, n, err)
	}
	return v
}

// checkFlushedState checks, once the flush rows are in and checkpointed,
// that every view holds exactly the two flush rows: a later on-time row
// could still match either, while both watermarks are 57s past every
// other row's bound (at most 10s after its time), so the rest has expired;
// no window is open either. before, when set, is each view's state before
// the flush, which must have been larger.
func (sc *joinScenario) checkFlushedState(t *testing.T, before map[string]int64) {
	t.Helper()
	t.Run("state_size", func(t *testing.T) {
		for _, ji := range sc.views {
			if n := sc.stateRows(t, ji.name); n != 2 {
				t.Errorf("%s: state_size.rows = %d after the flush rows, want 2 (the flush rows; everything else is past its bound)", ji.name, n)
			} else if b, ok := before[ji.name]; ok && b <= n {
				t.Errorf("%s: state_size.rows = %d before the flush rows, want more than the %d after", ji.name, b, n)
			}
		}
	})
}

const joinEvents = 4000

// TestJoinViews runs every join view at parallelism 1 and 2 over one pair
// of logs on one server, checks them halfway and at the end, and once more
// after a flush row on each table has passed every bound (every LEFT row
// still pending gets its NULL row); then the state has shrunk to the flush
// rows (state_size.rows).
func TestJoinViews(t *testing.T) {
	data := genJoinData(testSeed(t, 300), joinEvents)
	sc := newJoinScenario(t, data, joinInstances(joinViews()))
	sc.postTo(t, len(data.steps)/2)
	sc.verify(t, "half")
	// Created halfway: it reads the rows posted before it (start: earliest).
	late := joinInstances(joinViewsByBase("j_left", "j_agg"))
	for i := range late {
		late[i].name += "_created_late"
	}
	sc.create(t, late)
	sc.postTo(t, len(data.steps))
	sc.verify(t, "all")
	before := map[string]int64{}
	for _, ji := range sc.views {
		before[ji.name] = sc.stateRows(t, ji.name)
	}
	t.Logf("state_size.rows before the flush rows: %v", before)
	bid, auction := flushRows(data)
	sc.postRows(t, "bids", []Row{bid})
	sc.postRows(t, "auctions", []Row{auction})
	sc.verify(t, "flushed")
	sc.checkFlushedState(t, before)
}

// TestJoinRestart: half the rows, a checkpoint, 8 steps with a checkpoint
// after each, more rows without one, SIGKILL, restart (join state
// restored, those rows replayed), the rest
// (one view stopped and resumed meanwhile) and the flush rows; then SIGKILL
// right after the last acknowledgement and restart again. Results equal
// the oracle each time.
func TestJoinRestart(t *testing.T) {
	data := genJoinData(testSeed(t, 301), joinEvents)
	sc := newJoinScenario(t, data, joinInstances(joinViewsByBase("j_inner", "j_agg", "j_left", "j_left_agg")))
	n := len(data.steps)
	sc.postTo(t, n/2)
	sc.verify(t, "before_kill")
	// A checkpoint after each of the next steps: LEFT rows persisted
	// unmatched by one checkpoint and matched before the next must be
	// restored matched.
	for k := n/2 + 1; k <= n/2+8; k++ {
		sc.postTo(t, k)
		sc.srv.checkpoint(t)
	}
	sc.postTo(t, 3*n/4)
	sc.restart(t)
	sc.verify(t, "after_kill")
	sc.postTo(t, 7*n/8)
	// Stopped with a final checkpoint, rows posted meanwhile, resumed.
	sc.srv.stopQuery(t, "j_left_p2")
	sc.postTo(t, n)
	sc.srv.resumeQuery(t, "j_left_p2")
	bid, auction := flushRows(data)
	sc.postRows(t, "bids", []Row{bid})
	sc.postRows(t, "auctions", []Row{auction})
	sc.restart(t)
	sc.verify(t, "after_second_kill")
	// Restored and replayed, the state is down to the flush rows too.
	// (Rows resurrected by a lost delete would expire again at the first
	// watermark; the results show them: a LEFT row's NULL row twice.)
	sc.checkFlushedState(t, nil)
}

// TestJoinLeftBoundary posts the hand-made steps of leftBoundaryProbe (see
// TestOracleLeftBoundary for the expected rows) and checks the LEFT and
// INNER views after each: a NULL row is due only once the bids watermark
// is strictly past the auction's bound, a bid exactly on the watermark and
// on the bound still matches, an auction arriving after its bound has
// passed gets its NULL row, and one arriving after its partners' own
// bound has passed still joins them. A SIGKILL and restart after step 2
// must restore which held rows have matched.
func TestJoinLeftBoundary(t *testing.T) {
	sc := newJoinScenario(t, joinData{}, joinInstances(joinViewsByBase("j_left", "j_inner")))
	for i, s := range leftBoundaryProbe() {
		if len(s.bids) > 0 {
			sc.postRows(t, "bids", s.bids)
		}
		if len(s.auctions) > 0 {
			sc.postRows(t, "auctions", s.auctions)
		}
		sc.verify(t, "step"+strconv.Itoa(i+1))
		if i == 1 {
			// a1 was checkpointed unmatched (step 1), then matched (step 2);
			// a2 and a3 wait for the watermark: all of that is restored.
			sc.restart(t)
		}
	}
}

// probeStep is one step of a hand-made scenario: rows posted to bids, then
// to auctions.
type probeStep struct {
	bids, auctions []Row
}

func probeBid(auction, bidder, price, ts int64) Row {
	return Row{"auction": auction, "bidder": bidder, "price": price, "ts": Timestamp(ts)}
}

func probeAuction(id, seller int64, name any, ts int64) Row {
	return Row{"id": id, "seller": seller, "category": int64(1), "name": name, "ts": Timestamp(ts)}
}

// probeT is the probe's reference time.
const probeT = baseTime + 100_000

// leftBoundaryProbe: auctions a1, a2 at T, a3 at T+1; the bids watermark
// moves to T+10000 (a1's and a2's bound: nothing due), a bid for a1 at
// exactly T+10000 (on the watermark and on a1's upper bound), the
// watermark to T+10001 (a2 due, a3 not), a bid for a3 exactly at T+10001,
// the watermark to T+10002; then auctions arriving late relative to the
// bids: a4 (bound T+10001, already passed: due at once) and a5, a6 on
// id 9, matching bids whose own bound on the auctions watermark is far.
func leftBoundaryProbe() []probeStep {
	T := probeT
	return []probeStep{
		{
			auctions: []Row{probeAuction(1, 11, "a1", T), probeAuction(2, 12, nil, T), probeAuction(3, 13, "a3", T+1)},
			bids:     []Row{probeBid(9, 31, 310, T+13_000)},
		},
		{bids: []Row{probeBid(1, 21, 100, T+10_000)}},
		{bids: []Row{probeBid(9, 33, 330, T+13_001)}},
		{
			bids:     []Row{probeBid(3, 23, 230, T+10_001), probeBid(9, 35, 350, T+13_002)},
			auctions: []Row{probeAuction(4, 14, "a4", T+1), probeAuction(9, 15, "a5", T+3000), probeAuction(9, 16, nil, T+3001)},
		},
	}
}

// TestJoinBadInput: join SQL that cannot run gets a 422 naming the problem
// and creates no query.
func TestJoinBadInput(t *testing.T) {
	srv := startServer(t)
	srv.sql(t, joinBidsDDL+";\n"+joinAuctionsDDL)
	bounds := "b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND"
	cases := []struct {
		name string
		sql  string
		// each pattern must match the problem's title or detail
		want []string
	}{
		{"no_key_equality", "SELECT b.price, a.seller FROM bids b JOIN auctions a ON b.price > a.category AND " + bounds,
			[]string{`(?i)\bjoin\b`, `(?i)equal|equi`}},
		{"no_time_bounds", "SELECT b.price, a.seller FROM bids b JOIN auctions a ON b.auction = a.id",
			[]string{`(?i)\bjoin\b`, `(?i)bound|interval|event.time`}},
		{"only_lower_bound", "SELECT b.price, a.seller FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts >= a.ts",
			[]string{`(?i)\bjoin\b`, `(?i)bound|interval|event.time`}},
		{"empty_bounds", "SELECT b.price, a.seller FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts + INTERVAL 10 SECOND AND a.ts",
			[]string{`(?i)\bjoin\b`, `(?i)bound|empty`}},
		{"mismatched_types", "SELECT b.price, a.seller FROM bids b JOIN auctions a ON b.bidder = a.name AND " + bounds,
			[]string{`\bbidder\b`, `\bname\b`, `(?i)\bBIGINT\b`, `(?i)\bVARCHAR\b`}},
		{"as_of", "SELECT b.price, a.seller FROM bids b JOIN auctions a AS OF TIMESTAMP b.ts ON b.auction = a.id",
			[]string{`(?i)AS OF|PRIMARY KEY`}},
		{"ambiguous_column", "SELECT ts, b.price FROM bids b JOIN auctions a ON b.auction = a.id AND " + bounds,
			[]string{`\bts\b`, `(?i)ambiguous`}},
		{"unknown_qualifier", "SELECT c.price FROM bids b JOIN auctions a ON b.auction = a.id AND " + bounds,
			[]string{`\bc\b`}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "bad_join_" + strconv.Itoa(i)
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
}

// TestJoinWatermarks: auctions up to T and bids up to T+13s (watermarks
// T-3s and T+10s). GET /v1/tables/{table} reports, per query reading the
// table, the watermark that query's source has reached on that table; a
// join query's own watermark cannot be ahead of its slower input (the join
// forwards at most min(bids - 10s, auctions) here: nothing downstream of it
// is further on).
func TestJoinWatermarks(t *testing.T) {
	sc := newJoinScenario(t, joinData{}, joinInstances(joinViewsByBase("j_inner")))
	T := probeT
	sc.postRows(t, "auctions", []Row{probeAuction(1, 11, "a1", T)})
	sc.postRows(t, "bids", []Row{probeBid(1, 21, 100, T+13_000)})
	sc.verify(t, "posted")
	for table, want := range map[string]Timestamp{"auctions": Timestamp(T - joinDelay), "bids": Timestamp(T + 13_000 - joinDelay)} {
		wms, _ := sc.srv.table(t, table)["watermarks"].(map[string]any)
		for _, ji := range sc.views {
			if got := wms[ji.name]; got != want.String() {
				t.Errorf("GET /v1/tables/%s: watermarks[%s] = %v, want %s (max(%s.ts) - watermark_delay)", table, ji.name, got, want, table)
			}
		}
	}
	for _, ji := range sc.views {
		got, _ := sc.srv.query(t, ji.name).raw["watermark"].(string)
		if slower := Timestamp(T - joinDelay).String(); got == "" || got > slower { // RFC 3339 UTC millis: text order is time order
			t.Errorf("GET /v1/queries/%s: watermark %q, want at most %s: the auctions input is only there", ji.name, got, slower)
		}
	}
}
