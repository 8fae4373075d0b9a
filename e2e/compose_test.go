package e2e

// Composed queries end to end, over the two HTTP tables of the join tests
// (bids with allowed_lateness 1s, auctions with 500ms, both with a
// watermark_delay of 3s, rows with bounded disorder and none late):
//
//   - q7: Nexmark's highest bid, a tumbling MAX in a subquery joined back
//     to the bids of its window (the bounds are WHERE conditions);
//   - q5: Nexmark's hot items, HOP counts per auction joined with their
//     per-window maximum, a cascading aggregation (GROUP BY window_start,
//     window_end of the counts) in a nested subquery;
//   - window joins of two windowed subqueries over the two tables on the
//     key and window_end, INNER and LEFT;
//   - views over views: base (a tumbling aggregation), top (a cascading
//     aggregation over base, in changes mode at parallelism 1 and
//     on_window_close at 2), filtered (base's rows filtered), toplist
//     (a view over top: three levels) and joined (auctions LEFT JOIN base
//     on an interval over base's window_end);
//
// each at parallelism 1 and 2. Half the rows are posted and checked, the
// server is SIGKILLed and restarted, the rest is posted and checked, then
// composeBoundaryProbe walks each table's watermark across one window end
// step by step (checked after each), and a flush row a minute later on
// each table closes every window and passes every bound, and a last check.
// Results must equal the composition oracle (compose_oracle_test.go) over
// the rows posted so far each time; no row is late anywhere. Also: DROP
// VIEW of a view other views read is a 409 naming them, and what cannot
// feed another query (a running aggregate, a subquery in changes mode) is
// a 422.

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	composeBidsDDL = `CREATE TABLE bids (
  auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL
) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "3s", "allowed_lateness": "1s"}'`
	composeAuctionsDDL = `CREATE TABLE auctions (
  id BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT NOT NULL, name VARCHAR(32), ts TIMESTAMP(3) NOT NULL
) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "3s", "allowed_lateness": "500ms"}'`
	composeEvents = 6000
)

// The two tables for the oracle (genJoinData keeps disorder within
// joinDelay, the watermark_delay of both).
var (
	composeBids     = Source{TimeCol: "ts", WatermarkDelay: joinDelay, AllowedLateness: 1000}
	composeAuctions = Source{TimeCol: "ts", WatermarkDelay: joinDelay, AllowedLateness: 500}
)

// dualView is a view over the bids and auctions tables: its CREATE VIEW
// statement, its expected result over the rows of each table, and how many
// sources of the query read each table (a query reading a table twice
// reads each row twice: rows_in).
type dualView struct {
	name string
	// oracleKey is the view's SQL without its parallelism (hint and view
	// name suffixes): views of one key share an oracle.
	oracleKey string
	create    string
	reads     map[string]int
	expected  func(bids, auctions []Row) Result
}

// prefixCheckable reports whether the offsets a checkpoint of the view
// records say exactly which rows its results cover: it reads each table
// at most once (the offsets are recorded per table).
func (v dualView) prefixCheckable() bool {
	for _, n := range v.reads {
		if n > 1 {
			return false
		}
	}
	return true
}

// dual is a join view instance as a dualView.
func (ji joinInstance) dual() dualView {
	return dualView{name: ji.name, create: ji.createSQL(), reads: map[string]int{"bids": 1, "auctions": 1}, expected: ji.def.expected}
}

// The aggregations the composed views are made of, in the oracle's terms.
var (
	// SELECT MAX(price) AS maxprice, window_end FROM bids GROUP BY TUMBLE(ts, '10s')
	maxPriceQuery = Query{Window: TumbleWindow(10_000), Aggs: []Agg{{As: "maxprice", Func: Max, Arg: colRef("price")}}}
	// SELECT auction, COUNT(*) AS num, window_start, window_end FROM bids GROUP BY HOP(ts, '2s', '10s'), auction
	hopCountQuery = Query{Window: HopWindow(2000, 10_000), GroupBy: []string{"auction"}, Aggs: []Agg{{As: "num", Func: CountStar}}}
	// SELECT auction, window_start, window_end, COUNT(*) AS n, SUM(price) AS volume FROM bids GROUP BY TUMBLE(ts, '10s'), auction
	bidWindowQuery = Query{Window: TumbleWindow(10_000), GroupBy: []string{"auction"}, Aggs: []Agg{
		{As: "n", Func: CountStar}, {As: "volume", Func: Sum, Arg: colRef("price")}}}
	// SELECT id, window_end, COUNT(*) AS listings, MAX(category) AS top_category FROM auctions GROUP BY TUMBLE(ts, '10s'), id
	auctionWindowQuery = Query{Window: TumbleWindow(10_000), GroupBy: []string{"id"}, Aggs: []Agg{
		{As: "listings", Func: CountStar}, {As: "top_category", Func: Max, Arg: colRef("category")}}}
	// the base view
	baseQuery = Query{Window: TumbleWindow(10_000), GroupBy: []string{"auction"}, Aggs: []Agg{
		{As: "n", Func: CountStar}, {As: "volume", Func: Sum, Arg: colRef("price")}, {As: "top", Func: Max, Arg: colRef("price")}}}
)

// q7SQL and q5SQL are the Nexmark queries of queries/examples/nexmark
// over the bids table.
const (
	q7SQL = `SELECT {hint} b.auction, b.price, b.bidder, b.ts, m.window_end
FROM bids b
JOIN (SELECT MAX(price) AS maxprice, window_end FROM bids GROUP BY TUMBLE(ts, '10s')) m
  ON b.price = m.maxprice
WHERE b.ts >= m.window_end - INTERVAL 10 SECOND AND b.ts < m.window_end`
	q5SQL = `SELECT {hint} ab.auction, ab.num, ab.window_start, ab.window_end
FROM (SELECT auction, COUNT(*) AS num, window_start, window_end
      FROM bids GROUP BY HOP(ts, '2s', '10s'), auction) ab
JOIN (SELECT MAX(num) AS maxn, window_start, window_end
      FROM (SELECT COUNT(*) AS num, window_start, window_end
            FROM bids GROUP BY HOP(ts, '2s', '10s'), auction) cb
      GROUP BY window_start, window_end) mb
ON ab.window_start = mb.window_start AND ab.window_end = mb.window_end AND ab.num >= mb.maxn`
)

// q7Expected: every bid whose price is the maximum of its tumbling window,
// for the windows the MAX subquery has emitted.
func q7Expected(bids, _ []Row) Result {
	m := closedWindows(composeBids, maxPriceQuery, bids, 1)
	rows := joinRows(bids, m, func(b, m Row) bool {
		end := endOf(m)
		return bigint(b, "price") == bigint(m, "maxprice") && tsOf(b) >= end-10_000 && tsOf(b) < end
	}, nil, func(b, m Row) Row {
		return Row{"auction": b["auction"], "price": b["price"], "bidder": b["bidder"], "ts": b["ts"], "window_end": m["window_end"]}
	})
	return multiset([]string{"auction", "price", "bidder", "ts", "window_end"}, rows)
}

// q5Expected: per hop window, the auctions with the most bids. The counts
// (ab) are out after one windowed stage, their per-window maximum (mb)
// after two.
func q5Expected(bids, _ []Row) Result {
	ab := closedWindows(composeBids, hopCountQuery, bids, 1)
	mb := groupAll(closedWindows(composeBids, hopCountQuery, bids, 2), []string{"window_start", "window_end"},
		[]Agg{{As: "maxn", Func: Max, Arg: colRef("num")}}).Rows
	rows := joinRows(ab, mb, func(a, m Row) bool {
		return startOf(a) == startOf(m) && endOf(a) == endOf(m) && bigint(a, "num") >= bigint(m, "maxn")
	}, nil, func(a, _ Row) Row { return pick(a, "auction", "num", "window_start", "window_end") })
	return multiset([]string{"auction", "num", "window_start", "window_end"}, rows)
}

// windowJoinExpected: the bids windows per auction joined with the
// auctions windows per id ending at the same time; for a LEFT join, a bids
// window without one gets its NULL row once the auctions subquery's
// watermark (the table's, held back by its allowed lateness) is past its
// window_end.
func windowJoinExpected(left bool) func(bids, auctions []Row) Result {
	return func(bids, auctions []Row) Result {
		b := closedWindows(composeBids, bidWindowQuery, bids, 1)
		a := closedWindows(composeAuctions, auctionWindowQuery, auctions, 1)
		var due func(Row) bool
		if left {
			wm, ok := finalWatermark(composeAuctions, auctions)
			due = func(b Row) bool { return ok && endOf(b) < wm-composeAuctions.AllowedLateness }
		}
		rows := joinRows(b, a, func(b, a Row) bool {
			return bigint(b, "auction") == bigint(a, "id") && endOf(b) == endOf(a)
		}, due, func(b, a Row) Row {
			out := pick(b, "window_start", "window_end", "auction", "n", "volume")
			out["listings"], out["top_category"] = get(a, "listings"), get(a, "top_category")
			return out
		})
		return multiset([]string{"window_start", "window_end", "auction", "n", "volume", "listings", "top_category"}, rows)
	}
}

// topExpected is the top view (a cascading aggregation over base) with
// its windows stages windowed stages behind the table: in changes mode top
// shows every window base has emitted (1); in on_window_close mode, and
// read by another view, it emits a window when its own input watermark
// (the table's, held back once by base) passes its end plus the allowed
// lateness (2).
func topExpected(stages int64, bids []Row) Result {
	return groupAll(closedWindows(composeBids, baseQuery, bids, stages), []string{"window_start", "window_end"}, []Agg{
		{As: "maxn", Func: Max, Arg: colRef("n")},
		{As: "volume", Func: Sum, Arg: colRef("volume")},
		{As: "auctions", Func: CountStar},
		{As: "avg_top", Func: Avg, Arg: colRef("top")},
	})
}

// oracleKey is the oracleKey of view base of SQL text sql at the
// parallelism whose hint is par and whose view names end in sfx.
func oracleKey(base, sql, par, sfx string) string {
	return base + "\x00" + strings.NewReplacer(par, "", sfx, "").Replace(sql)
}

// composeViews are the composed views at parallelism p, in creation order
// (a view before the views reading it).
func composeViews(p int) []dualView {
	sfx := "_p" + strconv.Itoa(p)
	par := "SET_VAR(parallelism=" + strconv.Itoa(p) + ")"
	v := func(base, hint, sql string, reads map[string]int, expected func(bids, auctions []Row) Result) dualView {
		name := base + sfx
		sql = strings.ReplaceAll(strings.Replace(sql, "{hint}", "/*+ "+hint+" */", 1), "{p}", sfx)
		return dualView{name: name, oracleKey: oracleKey(base, sql, par, sfx), create: "CREATE VIEW " + name + " AS\n" + sql, reads: reads, expected: expected}
	}
	bidsOnce, bidsTwice := map[string]int{"bids": 1}, map[string]int{"bids": 2}
	both := map[string]int{"bids": 1, "auctions": 1}
	topMode, topStages := "changes", int64(1)
	if p == 2 {
		topMode, topStages = "on_window_close", 2
	}
	windowJoin := `SELECT {hint} b.window_start, b.window_end, b.auction, b.n, b.volume, a.listings, a.top_category
FROM (SELECT auction, window_start, window_end, COUNT(*) AS n, SUM(price) AS volume
      FROM bids GROUP BY TUMBLE(ts, '10s'), auction) b
%s (SELECT id, window_end, COUNT(*) AS listings, MAX(category) AS top_category
      FROM auctions GROUP BY TUMBLE(ts, '10s'), id) a
ON b.auction = a.id AND b.window_end = a.window_end`
	return []dualView{
		v("q7", par, q7SQL, bidsTwice, q7Expected),
		v("q5", par, q5SQL, bidsTwice, q5Expected),
		v("wjoin", par, strings.Replace(windowJoin, "%s", "JOIN", 1), both, windowJoinExpected(false)),
		v("wjoin_left", par, strings.Replace(windowJoin, "%s", "LEFT JOIN", 1), both, windowJoinExpected(true)),
		v("base", par, `SELECT {hint} window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS volume, MAX(price) AS top
FROM bids GROUP BY TUMBLE(ts, '10s'), auction`, bidsOnce,
			func(bids, _ []Row) Result { return Evaluate(composeBids, baseQuery, bids) }),
		v("top", par+" SET_VAR(emit_mode="+topMode+")", `SELECT {hint} window_start, window_end, MAX(n) AS maxn, SUM(volume) AS volume, COUNT(*) AS auctions, AVG(top) AS avg_top
FROM base{p} GROUP BY window_start, window_end`, bidsOnce,
			func(bids, _ []Row) Result { return topExpected(topStages, bids) }),
		v("filtered", par, `SELECT {hint} window_start, window_end, auction, n, volume FROM base{p} WHERE n >= 10`, bidsOnce,
			func(bids, _ []Row) Result {
				rows := filterRows(closedWindows(composeBids, baseQuery, bids, 1), func(r Row) bool { return bigint(r, "n") >= 10 })
				cols := []string{"window_start", "window_end", "auction", "n", "volume"}
				for i, r := range rows {
					rows[i] = pick(r, cols...)
				}
				return multiset(cols, rows)
			}),
		// top read by another view emits on close whatever its own mode.
		v("toplist", par, `SELECT {hint} window_end, maxn, auctions FROM top{p} WHERE auctions < 40`, bidsOnce,
			func(bids, _ []Row) Result {
				cols := []string{"window_end", "maxn", "auctions"}
				var rows []Row
				for _, r := range topExpected(2, bids).Rows {
					if bigint(r, "auctions") < 40 {
						rows = append(rows, pick(r, cols...))
					}
				}
				return multiset(cols, rows)
			}),
		// An auction's NULL row is due once base's watermark (the bids
		// watermark held back by its allowed lateness) is past a.ts + 10s.
		v("joined", par, `SELECT {hint} a.id, a.seller, a.ts AS auction_ts, v.window_end, v.n
FROM auctions a LEFT JOIN base{p} v
  ON a.id = v.auction AND v.window_end BETWEEN a.ts + INTERVAL 1 SECOND AND a.ts + INTERVAL 10 SECOND`, both,
			func(bids, auctions []Row) Result {
				base := closedWindows(composeBids, baseQuery, bids, 1)
				wm, ok := finalWatermark(composeBids, bids)
				rows := joinRows(auctions, base, func(a, v Row) bool {
					return bigint(a, "id") == bigint(v, "auction") && tsOf(a)+1000 <= endOf(v) && endOf(v) <= tsOf(a)+10_000
				}, func(a Row) bool { return ok && tsOf(a)+10_000 < wm-composeBids.AllowedLateness }, func(a, v Row) Row {
					return Row{"id": a["id"], "seller": a["seller"], "auction_ts": a["ts"], "window_end": get(v, "window_end"), "n": get(v, "n")}
				})
				return multiset([]string{"id", "seller", "auction_ts", "window_end", "n"}, rows)
			}),
	}
}

// composeViewByBase is one composed view at parallelism p.
func composeViewByBase(base string, p int) dualView {
	for _, v := range composeViews(p) {
		if v.name == base+"_p"+strconv.Itoa(p) {
			return v
		}
	}
	panic("no composed view " + base)
}

// dualScenario is a server with the bids and auctions tables and views
// over them; posting (in joinData's plan) and the rows posted so far are
// its joinScenario's, which has no views of its own.
type dualScenario struct {
	js    *joinScenario
	srv   *server
	views []dualView
	// oracles are the expected results of one verify, by oracleKey: the
	// same query at parallelism 1 and 2 has one oracle (computing it once
	// halves the test process's CPU, most of these tests' time).
	oracles map[string]Result
}

func newDualScenario(t *testing.T, data joinData, views []dualView, flags ...string) *dualScenario {
	t.Helper()
	srv := startServer(t, flags...)
	sc := &dualScenario{srv: srv, js: &joinScenario{srv: srv, data: data, next: map[string]int{}, posted: map[string][]Row{}, offset: map[string]int64{}}}
	srv.sql(t, composeBidsDDL+";\n"+composeAuctionsDDL)
	sc.create(t, views)
	return sc
}

// create creates views in one multi-statement request, in order.
func (sc *dualScenario) create(t *testing.T, views []dualView) {
	t.Helper()
	stmts := make([]string, len(views))
	for i, v := range views {
		stmts[i] = v.create
	}
	res := sc.srv.sql(t, strings.Join(stmts, ";\n"))
	if len(res) != len(views) {
		t.Fatalf("POST /v1/sql with %d CREATE VIEW statements: %d results", len(views), len(res))
	}
	sc.views = append(sc.views, views...)
	sc.srv.waitRunning(t, sc.names()...)
}

func (sc *dualScenario) names() []string {
	names := make([]string, len(sc.views))
	for i, v := range sc.views {
		names[i] = v.name
	}
	return names
}

func (sc *dualScenario) restart(t *testing.T) {
	t.Helper()
	sc.srv.restart(t)
	sc.srv.waitRunning(t, sc.names()...)
}

// verify checkpoints, then checks every view against the oracle over the
// rows posted so far, one subtest per view under stage. It returns the
// number of rows expected per view.
func (sc *dualScenario) verify(t *testing.T, stage string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	sc.oracles = map[string]Result{}
	defer func() { sc.oracles = nil }()
	sc.srv.checkpointAndCheck(t, stage, sc.names(), func(t *testing.T, name string, _ checkpointInfo) {
		v := sc.views[slices.IndexFunc(sc.views, func(v dualView) bool { return v.name == name })]
		counts[name] = sc.checkView(t, v, sc.js.posted["bids"], sc.js.posted["auctions"])
	})
	return counts
}

// checkView compares a view's committed results, state and counters with
// the oracle over bids and auctions, the rows its committed checkpoint
// covers; it returns the number of rows expected.
func (sc *dualScenario) checkView(t *testing.T, v dualView, bids, auctions []Row) int {
	t.Helper()
	got := sc.srv.results(t, v.name)
	info := sc.srv.query(t, v.name)
	if info.State != "running" {
		t.Errorf("state %q, want running (error: %v)", info.State, info.raw["error"])
	}
	if n := int64(v.reads["bids"]*len(bids) + v.reads["auctions"]*len(auctions)); info.Counters.RowsIn != n {
		t.Errorf("counters.rows_in = %d, want %d (%d bids and %d auctions, read by %v sources)", info.Counters.RowsIn, n, len(bids), len(auctions), v.reads)
	}
	if info.Counters.LateRows != 0 {
		recent, _ := info.raw["recent_late_rows"].([]any)
		t.Errorf("counters.late_rows = %d, want 0: no input row is late on its table, so no stage may see a late row (recent late rows: %v)",
			info.Counters.LateRows, recent[:min(len(recent), 3)])
	}
	want, ok := sc.oracles[v.oracleKey]
	if !ok || v.oracleKey == "" {
		want = v.expected(bids, auctions)
		if sc.oracles != nil && v.oracleKey != "" {
			sc.oracles[v.oracleKey] = want
		}
	}
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: results differ from the oracle over %d bids and %d auctions (%d rows served, %d expected): %s\nSQL: %s",
			v.name, len(bids), len(auctions), len(got.Rows), len(want.Rows), formatDiffs(diffs, 6), v.create)
	}
	return len(want.Rows)
}

// TestComposedQueries: the composed views at parallelism 1 and 2 over one
// pair of logs; see the top of this file.
func TestComposedQueries(t *testing.T) {
	begin := time.Now()
	data := genJoinData(testSeed(t, 400), composeEvents)
	views := append(composeViews(1), composeViews(2)...)
	sc := newDualScenario(t, data, views)
	n := len(data.steps)
	sc.js.postTo(t, n/2)
	sc.verify(t, "half")

	t.Run("drop_view_read_by_views", func(t *testing.T) {
		for _, c := range []struct {
			view    string
			readers []string // the views reading it directly
		}{
			{"base_p1", []string{"top_p1", "filtered_p1", "joined_p1"}},
			{"top_p2", []string{"toplist_p2"}},
		} {
			p := sc.srv.sqlError(t, "DROP VIEW "+c.view)
			if p.httpStatus != http.StatusConflict {
				t.Errorf("DROP VIEW %s: status %d, want 409: %s", c.view, p.httpStatus, p)
			}
			for _, r := range c.readers {
				if !p.mentions(r) {
					t.Errorf("DROP VIEW %s: the error does not name %s, which reads it: %s", c.view, r, p)
				}
			}
			if q := sc.srv.query(t, c.view); q.State != "running" {
				t.Errorf("after the refused DROP VIEW %s: state %q, want running", c.view, q.State)
			}
		}
	})
	t.Run("cannot_feed_another_query", func(t *testing.T) {
		sc.srv.sql(t, "CREATE VIEW running_bids AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction")
		for i, sql := range []string{
			// a running aggregate is an updating result: joins take
			// append-only inputs
			"SELECT r.auction, r.n, a.seller FROM running_bids r JOIN auctions a ON r.auction = a.id AND a.ts > r.n",
			"SELECT r.auction, r.n FROM (SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction) r JOIN auctions a ON r.auction = a.id",
			// a subquery feeding another operator emits on close
			"SELECT m.window_end, m.maxprice FROM (SELECT /*+ SET_VAR(emit_mode=changes) */ MAX(price) AS maxprice, window_end FROM bids GROUP BY TUMBLE(ts, '10s')) m",
		} {
			name := "bad_compose_" + strconv.Itoa(i)
			p := sc.srv.sqlError(t, "CREATE VIEW "+name+" AS "+sql)
			if p.httpStatus != http.StatusUnprocessableEntity {
				t.Errorf("%s: status %d, want 422: %s", sql, p.httpStatus, p)
			}
			if st := sc.srv.status(t, "/v1/queries/"+name); st != http.StatusNotFound {
				t.Errorf("GET /v1/queries/%s: status %d, want 404: the rejected statement was kept", name, st)
			}
		}
		sc.srv.sql(t, "DROP VIEW running_bids")
	})

	sc.restart(t)
	sc.js.postTo(t, n)
	sc.verify(t, "all")
	for i, s := range composeBoundaryProbe(data) {
		if len(s.bids) > 0 {
			sc.js.postRows(t, "bids", s.bids)
		}
		if len(s.auctions) > 0 {
			sc.js.postRows(t, "auctions", s.auctions)
		}
		sc.verify(t, "boundary"+strconv.Itoa(i))
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
	t.Logf("composed queries: %d bids, %d auctions, expected rows per view %v, elapsed %v",
		len(sc.js.posted["bids"]), len(sc.js.posted["auctions"]), counts, time.Since(begin).Round(time.Millisecond))
}

// composeBoundaryProbe is posted after d: rows around one window end E (a
// multiple of 10s, 30s or more after d's last row). First a cluster inside
// [E-10s, E): bids on auctions 101 (three bids), 102 (two, one tying 101's
// top price 700: q7 has two rows) and 103 (one); auctions 101 at E-9s
// (joined matches base's window ending at E), 104 at E-9s (no bids: its
// NULL row in joined is due once the bids watermark is past E+2s) and 102
// at E-500ms (no window end in its range before the flush). Then single
// rows walk the bids watermark to E+999, E+1000 (E's window comes out of
// one windowed stage: base, q7's MAX, q5's counts, the bids side of the
// window joins), E+1999, E+2000 (out of two: q5's maximum, top in
// on_window_close mode, toplist), E+2001 (joined's NULL row for 104), and
// the auctions watermark to E+500 (the auctions side of the window joins)
// and E+501 (wjoin_left's NULL row for auction 103's window). Each step is
// checked on its own.
func composeBoundaryProbe(d joinData) []probeStep {
	var last int64
	for _, r := range append(append([]Row{}, d.bids...), d.auctions...) {
		last = max(last, tsOf(r))
	}
	E := (last/10_000 + 4) * 10_000
	steps := []probeStep{{
		bids: []Row{
			probeBid(101, 1, 500, E-9500), probeBid(101, 2, 700, E-9000), probeBid(102, 3, 700, E-8000),
			probeBid(102, 4, 100, E-5000), probeBid(103, 5, 50, E-3000), probeBid(101, 6, 10, E-100),
		},
		auctions: []Row{probeAuction(101, 1, "p101", E-9000), probeAuction(104, 2, nil, E-9000), probeAuction(102, 3, "p102", E-500)},
	}}
	for _, wm := range []int64{E + 999, E + 1000, E + 1999, E + 2000, E + 2001} {
		steps = append(steps, probeStep{bids: []Row{probeBid(999, 99, 1, wm+joinDelay)}})
	}
	for _, wm := range []int64{E + 500, E + 501} {
		steps = append(steps, probeStep{auctions: []Row{probeAuction(998, 99, "walk", wm+joinDelay)}})
	}
	return steps
}

// TestViewOverLaterNamedView: a view reading a view whose name sorts after
// its own (a_reader reads z_base) runs again after a restart, with its
// state, and its results equal the oracle. The restart plans every view
// from the catalog; a reader planned before the view it reads finds no
// such view.
func TestViewOverLaterNamedView(t *testing.T) {
	data := genJoinData(testSeed(t, 401), 1000)
	data.auctions, data.steps = nil, []postStep{{"bids", len(data.bids) / 2}, {"bids", len(data.bids) - len(data.bids)/2}}
	reads := map[string]int{"bids": 1}
	views := []dualView{
		{name: "z_base", reads: reads, create: `CREATE VIEW z_base AS
SELECT window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS volume, MAX(price) AS top FROM bids GROUP BY TUMBLE(ts, '10s'), auction`,
			expected: func(bids, _ []Row) Result { return Evaluate(composeBids, baseQuery, bids) }},
		{name: "a_reader", reads: reads, create: `CREATE VIEW a_reader AS
SELECT window_start, window_end, MAX(n) AS maxn, SUM(volume) AS volume, COUNT(*) AS auctions, AVG(top) AS avg_top FROM z_base GROUP BY window_start, window_end`,
			expected: func(bids, _ []Row) Result { return topExpected(1, bids) }},
	}
	sc := newDualScenario(t, data, views)
	sc.js.postTo(t, 1)
	sc.verify(t, "before_restart")
	sc.srv.restart(t)
	deadline := time.Now().Add(readyTimeout)
	for _, v := range views {
		for {
			q := sc.srv.query(t, v.name)
			if q.State == "running" {
				break
			}
			if q.State == "failed" || time.Now().After(deadline) {
				t.Fatalf("after a restart, view %s is %q (error: %v); it ran before. %s", v.name, q.State, q.raw["error"],
					"Engine.load plans the stored views in catalog (name) order, so a view reading a view whose name sorts after its own finds no such view yet")
			}
			time.Sleep(pollInterval)
		}
	}
	sc.js.postTo(t, 2)
	bid, _ := flushRows(data)
	sc.js.postRows(t, "bids", []Row{bid})
	sc.verify(t, "after_restart")
}
