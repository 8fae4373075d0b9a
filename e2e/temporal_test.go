package e2e

// Stream-to-table (temporal) joins and regular joins with state_ttl, end to
// end, each view at parallelism 1 and 2, against the oracles of
// temporal_oracle_test.go and join_oracle_test.go.
//
// The table side is persons, a PRIMARY KEY table (upserts, and deletes as
// rows with "_op": "delete"), watermark_delay 0 and the default idle
// timeout of 5s; the stream side is bids (watermark_delay 3s, never late).
//
// AS OF joins are deterministic except for one wall-clock effect: a table
// side idle for 5s advances its watermark with the wall clock (releasing
// waiting bids before later versions arrive, and putting later versions
// behind its watermark). The data is built so that this cannot change an
// answer, rather than configuring the idle timeout away: rows are posted
// in phases, each in well under a second; the tests pause for long
// (verify, restart) only between phases; each phase starts 2 hours of
// event time after the previous one, and a phase that starts with bids
// starts with bids older than its first version. So a bid waiting across
// a pause has every version it will ever see already, and no wall-clock
// advance in a pause comes near the next phase's times. (TestTemporalIdle
// checks the idle release itself.) Versions are posted in time order;
// equal times (a tie, won by the later row) occur within a request and
// across requests. At the end far-future person rows move the persons
// watermark past every bid, and far-future bids join them (one exactly on
// the final watermark waits for good).

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	personsDDL = `CREATE TABLE persons (id BIGINT, name VARCHAR(32), state VARCHAR(2), ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`
	// personsNoIdleDDL is persons with an idle timeout of an hour, for the
	// tests that pin exact boundaries across pauses.
	personsNoIdleDDL = `CREATE TABLE persons (id BIGINT, name VARCHAR(32), state VARCHAR(2), ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "idle_timeout": "1h"}'`
)

var personSide = JoinSide{Alias: "p", Columns: []string{"id", "name", "state", "ts"}, TimeCol: "ts"}

// temporalInput is what a temporal view's oracle reads: each table's rows
// in log order, and the posts in processing order (for latest joins).
type temporalInput struct {
	bids, persons []Row
	batches       []TemporalBatch
}

// temporalView is a view over bids and persons in SQL (with the
// placeholder {hint}) and its expected result.
type temporalView struct {
	base     string
	agg      bool // a windowed aggregation in changes mode; else append-only
	latest   bool // depends on processing order: see temporalScenario.ordered
	sql      string
	expected func(bids, persons []Row) Result // AS OF views
	batches  func(b []TemporalBatch) Result   // latest views
}

func (v temporalView) result(in temporalInput) Result {
	if v.latest {
		return v.batches(in.batches)
	}
	return v.expected(in.bids, in.persons)
}

var (
	asOfInner = TemporalJoin{Kind: InnerJoin, Stream: bidSide, Table: personSide, StreamKey: "bidder", TableKey: "id"}
	asOfLeft  = TemporalJoin{Kind: LeftJoin, Stream: bidSide, Table: personSide, StreamKey: "bidder", TableKey: "id"}
)

// bidPersonCols are the columns of t_inner, t_left and their latest
// counterparts.
var bidPersonCols = []Column{col("auction", "b.auction"), col("bidder", "b.bidder"), col("price", "b.price"), col("name", "p.name"), col("state", "p.state")}

func asOfViews() []temporalView {
	leftCA := asOfLeft
	leftCA.Residual = func(_, p Row) bool { return p["state"] == "CA" }
	return []temporalView{
		{
			base: "t_inner",
			sql: `SELECT {hint} b.auction, b.bidder, b.price, p.name, p.state
FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id`,
			expected: func(bids, persons []Row) Result {
				return project(EvaluateAsOf(asOfInner, bids, persons), bidPersonCols...)
			},
		},
		{
			base: "t_left",
			sql: `SELECT {hint} b.auction, b.bidder, b.price, p.name, p.state
FROM bids b LEFT JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id`,
			expected: func(bids, persons []Row) Result {
				return project(EvaluateAsOf(asOfLeft, bids, persons), bidPersonCols...)
			},
		},
		{
			// A residual on the table side, judged on the version valid at
			// b.ts: a bid whose person was in CA before (or after) but not
			// then gets NULLs.
			base: "t_left_ca",
			sql: `SELECT {hint} b.auction, b.bidder, p.name
FROM bids b LEFT JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id AND p.state = 'CA'`,
			expected: func(bids, persons []Row) Result {
				return project(EvaluateAsOf(leftCA, bids, persons), col("auction", "b.auction"), col("bidder", "b.bidder"), col("name", "p.name"))
			},
		},
		{
			// Windows by the stream's time over the join: a bid waits for
			// the persons watermark, so the join must hold back the
			// watermark it forwards or its rows are late here.
			base: "t_agg", agg: true,
			sql: `SELECT {hint} window_start, window_end, p.state, COUNT(*) AS bids, SUM(b.price) AS volume
FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id
GROUP BY TUMBLE(b.ts, '10s'), p.state`,
			expected: func(bids, persons []Row) Result {
				q := Query{Window: TumbleWindow(10_000), GroupBy: []string{"p.state"}, Aggs: []Agg{
					{As: "bids", Func: CountStar},
					{As: "volume", Func: Sum, Arg: colRef("b.price")},
				}}
				res := Evaluate(noWatermark("b.ts"), q, EvaluateAsOf(asOfInner, bids, persons))
				return renameColumns(res, map[string]string{"p.state": "state"})
			},
		},
		{
			// NULL-padded rows group with persons whose state is NULL;
			// COUNT(p.name) skips both kinds of NULL name.
			base: "t_left_agg", agg: true,
			sql: `SELECT {hint} window_start, window_end, p.state, COUNT(*) AS n, COUNT(p.name) AS named, SUM(b.price) AS volume, MAX(b.bidder) AS top_bidder
FROM bids b LEFT JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id
GROUP BY TUMBLE(b.ts, '10s'), p.state`,
			expected: func(bids, persons []Row) Result {
				q := Query{Window: TumbleWindow(10_000), GroupBy: []string{"p.state"}, Aggs: []Agg{
					{As: "n", Func: CountStar},
					{As: "named", Func: Count, Arg: colRef("p.name")},
					{As: "volume", Func: Sum, Arg: colRef("b.price")},
					{As: "top_bidder", Func: Max, Arg: colRef("b.bidder")},
				}}
				res := Evaluate(noWatermark("b.ts"), q, EvaluateAsOf(asOfLeft, bids, persons))
				return renameColumns(res, map[string]string{"p.state": "state"})
			},
		},
	}
}

func latestViews() []temporalView {
	leftOR := asOfLeft
	leftOR.Residual = func(_, p Row) bool { return p["state"] == "OR" }
	return []temporalView{
		{
			base: "l_inner", latest: true,
			sql: `SELECT {hint} b.auction, b.bidder, b.price, p.name, p.state
FROM bids b JOIN persons p ON b.bidder = p.id`,
			batches: func(b []TemporalBatch) Result { return project(EvaluateLatest(asOfInner, b), bidPersonCols...) },
		},
		{
			base: "l_left", latest: true,
			sql: `SELECT {hint} b.auction, b.bidder, b.price, p.name, p.state
FROM bids b LEFT JOIN persons p ON p.id = b.bidder`,
			batches: func(b []TemporalBatch) Result { return project(EvaluateLatest(asOfLeft, b), bidPersonCols...) },
		},
		{
			base: "l_left_or", latest: true,
			sql: `SELECT {hint} b.auction, b.bidder, p.name
FROM bids b LEFT JOIN persons p ON b.bidder = p.id AND p.state = 'OR'`,
			batches: func(b []TemporalBatch) Result {
				return project(EvaluateLatest(leftOR, b), col("auction", "b.auction"), col("bidder", "b.bidder"), col("name", "p.name"))
			},
		},
	}
}

func temporalViewsByBase(defs []temporalView, bases ...string) []temporalView {
	return pickByBase(defs, func(v temporalView) string { return v.base }, bases...)
}

// temporalInstance is one temporal view created on a server.
type temporalInstance struct {
	name        string
	def         temporalView
	parallelism int
}

func (ti temporalInstance) createSQL() string {
	h := "SET_VAR(parallelism=" + strconv.Itoa(ti.parallelism) + ")"
	if ti.def.agg {
		h += " SET_VAR(emit_mode=changes)"
	}
	return "CREATE VIEW " + ti.name + " AS\n" + strings.Replace(ti.def.sql, "{hint}", "/*+ "+h+" */", 1)
}

func temporalInstances(defs []temporalView) []temporalInstance {
	var out []temporalInstance
	for _, d := range defs {
		for _, p := range []int{1, 2} {
			out = append(out, temporalInstance{name: d.base + "_p" + strconv.Itoa(p), def: d, parallelism: p})
		}
	}
	return out
}

// temporalScenario is a server with bids and persons and temporal views,
// and the rows acknowledged so far.
type temporalScenario struct {
	srv    *server
	views  []temporalInstance
	in     temporalInput
	offset map[string]int64 // the next log offset per table, once known
	// last is the table of the last post; fresh is true when a checkpoint
	// followed it. ordered is false once a post went to the other table
	// than the one before it with no checkpoint in between: then which
	// table rows a bid saw in a latest join is not known.
	last    string
	fresh   bool
	ordered bool
}

func newTemporalScenario(t *testing.T, persons string, views []temporalInstance) *temporalScenario {
	t.Helper()
	sc := &temporalScenario{srv: startServer(t), offset: map[string]int64{}, ordered: true}
	sc.srv.sql(t, joinBidsDDL+";\n"+persons)
	sc.create(t, views)
	return sc
}

func (sc *temporalScenario) create(t *testing.T, views []temporalInstance) {
	t.Helper()
	stmts := make([]string, len(views))
	names := make([]string, len(views))
	for i, v := range views {
		stmts[i], names[i] = v.createSQL(), v.name
	}
	if res := sc.srv.sql(t, strings.Join(stmts, ";\n")); len(res) != len(views) {
		t.Fatalf("POST /v1/sql with %d CREATE VIEW statements: %d results", len(views), len(res))
	}
	sc.views = append(sc.views, views...)
	sc.srv.waitRunning(t, names...)
}

func (sc *temporalScenario) names() []string {
	out := make([]string, len(sc.views))
	for i, v := range sc.views {
		out[i] = v.name
	}
	return out
}

// post posts rows to table in one request and checks that the offsets
// acknowledged continue the table's log.
func (sc *temporalScenario) post(t *testing.T, table string, rows []Row) {
	t.Helper()
	sc.postAs(t, table, rows, false)
}

// postAs is post, as one JSON array when array is set.
func (sc *temporalScenario) postAs(t *testing.T, table string, rows []Row, array bool) {
	t.Helper()
	if len(rows) == 0 {
		return
	}
	posted := &sc.in.bids
	if table == "persons" {
		posted = &sc.in.persons
	}
	var ack ingestAck
	if array {
		ack = sc.srv.postRowsArray(t, table, wireRows(rows, len(*posted)))
	} else {
		ack = sc.srv.postRows(t, table, wireRows(rows, len(*posted)))
	}
	if want, ok := sc.offset[table]; ok && ack.FirstOffset != want {
		t.Errorf("%s rows %d..: first_offset %d, want %d (contiguous with the previous request)", table, len(*posted), ack.FirstOffset, want)
	}
	sc.offset[table] = ack.LastOffset + 1
	*posted = append(*posted, rows...)
	isTable := table == "persons"
	if n := len(sc.in.batches); n > 0 && sc.in.batches[n-1].Table == isTable {
		sc.in.batches[n-1].Rows = append(sc.in.batches[n-1].Rows, rows...)
	} else {
		if sc.last != "" && sc.last != table && !sc.fresh {
			sc.ordered = false
		}
		sc.in.batches = append(sc.in.batches, TemporalBatch{Table: isTable, Rows: append([]Row{}, rows...)})
	}
	sc.last, sc.fresh = table, false
}

// checkpoint checkpoints every query and returns the queries covered.
func (sc *temporalScenario) checkpoint(t *testing.T) map[string]bool {
	t.Helper()
	covered := map[string]bool{}
	for _, c := range sc.srv.checkpoint(t) {
		covered[c.Query] = true
	}
	sc.fresh = true
	return covered
}

func (sc *temporalScenario) restart(t *testing.T) {
	t.Helper()
	sc.srv.restart(t)
	sc.srv.waitRunning(t, sc.names()...)
}

// verify checkpoints, then checks every view against the oracle over the
// rows posted so far, one subtest per view under stage.
func (sc *temporalScenario) verify(t *testing.T, stage string) {
	t.Helper()
	covered := sc.checkpoint(t)
	t.Run(stage, func(t *testing.T) {
		for _, ti := range sc.views {
			t.Run(ti.name, func(t *testing.T) {
				if !covered[ti.name] {
					t.Errorf("POST /v1/checkpoints reported no checkpoint of %s", ti.name)
				}
				sc.checkView(t, ti)
			})
		}
	})
}

func (sc *temporalScenario) checkView(t *testing.T, ti temporalInstance) {
	if ti.def.latest && !sc.ordered {
		t.Fatal("e2e: a latest join view over posts to both tables without a checkpoint in between: no exact answer")
	}
	got := sc.srv.results(t, ti.name)
	info := sc.srv.query(t, ti.name)
	if info.State != "running" {
		t.Errorf("state %q, want running (error: %v)", info.State, info.raw["error"])
	}
	if n := int64(len(sc.in.bids) + len(sc.in.persons)); info.Counters.RowsIn != n {
		t.Errorf("counters.rows_in = %d, want %d (rows posted to bids and persons)", info.Counters.RowsIn, n)
	}
	if info.Counters.LateRows != 0 {
		recent, _ := info.raw["recent_late_rows"].([]any)
		t.Errorf("counters.late_rows = %d, want 0: no bid is late on its table, and a joined row must not be late downstream (recent late rows: %v)",
			info.Counters.LateRows, recent[:min(len(recent), 3)])
	}
	want := ti.def.result(sc.in)
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: results differ from the oracle over %d bids and %d person rows (%d rows served, %d expected): %s\nSQL: %s",
			ti.name, len(sc.in.bids), len(sc.in.persons), len(got.Rows), len(want.Rows), formatDiffs(diffs, 6), ti.createSQL())
	}
	if !ti.def.agg && info.Counters.RowsOut != int64(len(want.Rows)) {
		t.Errorf("counters.rows_out = %d, want %d (joined rows)", info.Counters.RowsOut, len(want.Rows))
	}
}

// temporalData is the input of an AS OF scenario: each table's rows in log
// order, the requests that post them, and where each phase ends.
type temporalData struct {
	bids, persons []Row
	steps         []postStep
	phaseEnds     []int // steps[:phaseEnds[i]] post phases 0..i
}

var personStates = []any{"CA", "OR", "WA", "NY", "CA", nil}

// genTemporalData generates phases of about events rows each, phase i
// starting 2h of event time after phase i-1 (see the file comment). In a
// phase a clock advances 0-60ms per row with a rare pause of 1-3s. A
// quarter of the rows are person versions on ids 1-30 at the clock, times
// strictly increasing but for ties: 5% of versions come with a second
// upsert of the same id at the same time, posted in the same request, and
// 1 in 15 repeats the previous version's id and time, possibly in the next
// request. About 18% of the versions of a person who exists are deletes
// (key and time only); upserts change name (NULL 10% of the time) and
// state (NULL or one of four), 30% of them with an explicit "_op":
// "upsert". Bids are
// on bidders 1-34 (31-34 never have a person); 20% sit exactly on a recent
// version's time, or 1ms either side, on its id; the others at the clock
// -2.5s..+2.5s (bids run ahead of the versions and wait). No bid is late
// on bids (3s delay).
//
// The posting plan takes chunks (bids 5-60 rows, persons 1-8 versions, a
// tie never split), 70% of the time from the table whose last posted row
// is older, so either table runs ahead at times: bids wait for the persons
// watermark, and the bids watermark passes versions that waiting bids
// still need. Even phases start with a request of 5-20 bids, all before
// the phase's first version (the bids watermark jumps 2h ahead of the
// persons one while bids of the previous phase wait; and should the
// persons table be idle by then, these bids already have every version
// they will see), odd ones with persons.
func genTemporalData(seed uint64, phases, events int) temporalData {
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	var d temporalData
	var maxBid, lastPerson int64 = -1, -1
	exists := map[int64]bool{}
	var recent []Row // recent person versions
	for p := 0; p < phases; p++ {
		clock := baseTime + 500 + int64(p)*2*3600_000
		if lastPerson >= clock-3600_000 || maxBid >= clock-3600_000 {
			panic("genTemporalData: a phase ran into the next one")
		}
		var groups [][]Row // person requests are made of whole groups
		var bids []Row
		lead := 0 // bids before the phase's first version, posted first
		if p%2 == 0 {
			lead = 5 + rng.IntN(16)
		}
		for i := 0; i < events; i++ {
			clock += rng.Int64N(61)
			if rng.IntN(100) == 0 {
				clock += 1000 + rng.Int64N(2000)
			}
			if i < lead {
				ts := clock - 1 - rng.Int64N(2500)
				if maxBid >= 0 && ts < maxBid-joinDelay {
					ts = maxBid - joinDelay
				}
				maxBid = max(maxBid, ts)
				bids = append(bids, probeBid(1+rng.Int64N(50), 1+rng.Int64N(34), 1+rng.Int64N(1000), ts))
				continue
			}
			if rng.IntN(4) == 0 {
				id := 1 + rng.Int64N(30)
				ts := max(clock, lastPerson+1)
				if len(groups) > 0 && rng.IntN(15) == 0 {
					// A tie with the previous version, of the same id, in
					// a group of its own: possibly in a later request.
					prev := groups[len(groups)-1]
					id, ts = prev[0]["id"].(int64), lastPerson
				}
				lastPerson, clock = ts, max(clock, ts)
				upsert := func() Row {
					var name any
					if rng.IntN(10) != 0 {
						name = "n" + strconv.FormatInt(id, 10) + "-" + strconv.Itoa(p) + "-" + strconv.Itoa(i) + "-" + strconv.Itoa(rng.IntN(100))
					}
					r := Row{"id": id, "name": name, "state": personStates[rng.IntN(len(personStates))], "ts": Timestamp(ts)}
					if rng.IntN(10) < 3 {
						r["_op"] = "upsert"
					}
					exists[id] = true
					return r
				}
				var g []Row
				if exists[id] && rng.IntN(100) < 18 {
					g = append(g, personDelete(id, ts))
					exists[id] = false
				} else {
					g = append(g, upsert())
				}
				if rng.IntN(20) == 0 {
					g = append(g, upsert()) // a tie: this one wins
				}
				groups = append(groups, g)
				recent = append(recent, g...)
				if len(recent) > 40 {
					recent = recent[len(recent)-40:]
				}
				continue
			}
			b := Row{"auction": 1 + rng.Int64N(50), "bidder": 1 + rng.Int64N(34), "price": 1 + rng.Int64N(1000)}
			var ts int64
			if len(recent) > 0 && rng.IntN(5) == 0 {
				v := recent[rng.IntN(len(recent))]
				b["bidder"] = v["id"]
				ts = tsOf(v) + rng.Int64N(3) - 1
			} else {
				ts = clock + rng.Int64N(5001) - 2500
			}
			if maxBid >= 0 && ts < maxBid-joinDelay {
				ts = maxBid - joinDelay // on the watermark: not late
			}
			maxBid = max(maxBid, ts)
			b["ts"] = Timestamp(ts)
			bids = append(bids, b)
		}
		// The posting plan of this phase.
		nb, ng := 0, 0
		lastTS := func(rows []Row) int64 {
			if len(rows) == 0 {
				return -1
			}
			return tsOf(rows[len(rows)-1])
		}
		for first := true; nb < len(bids) || ng < len(groups); first = false {
			bidsBehind := lastTS(d.bids) < lastTS(d.persons)
			takeBids := rng.IntN(10) < 7 == bidsBehind
			if first {
				takeBids = lead > 0
			}
			if ng == len(groups) || (nb < len(bids) && takeBids) {
				n := min(5+rng.IntN(56), len(bids)-nb)
				if first {
					n = lead
				}
				d.bids = append(d.bids, bids[nb:nb+n]...)
				d.steps = append(d.steps, postStep{"bids", n})
				nb += n
			} else {
				k := min(1+rng.IntN(8), len(groups)-ng)
				n := 0
				for _, g := range groups[ng : ng+k] {
					d.persons = append(d.persons, g...)
					n += len(g)
				}
				d.steps = append(d.steps, postStep{"persons", n})
				ng += k
			}
		}
		d.phaseEnds = append(d.phaseEnds, len(d.steps))
	}
	return d
}

// temporalFlush is person rows a day after every row of d (at F and F+1,
// on ids of their own), and bids at F on the first of them and on an id
// without a person, and at F+1 on the second: the persons watermark F+1
// passes every bid but the last, which sits exactly on it and waits.
func temporalFlush(d temporalData) (persons, bids []Row) {
	var last int64
	for _, r := range append(append([]Row{}, d.bids...), d.persons...) {
		last = max(last, tsOf(r))
	}
	F := last + 24*3600_000
	return []Row{person(1000, "flush", "ZZ", F), person(1001, "flush2", "ZZ", F+1)},
		[]Row{probeBid(1, 1000, 7, F), probeBid(2, 999, 9, F), probeBid(3, 1001, 11, F+1)}
}

// postSteps posts d's steps from step from up to (not including) upto.
func (sc *temporalScenario) postSteps(t *testing.T, d temporalData, from, upto int) {
	t.Helper()
	next := map[string]int{}
	for _, s := range d.steps[:from] {
		next[s.table] += s.n
	}
	for _, s := range d.steps[from:upto] {
		all := d.bids
		if s.table == "persons" {
			all = d.persons
		}
		i := next[s.table]
		sc.post(t, s.table, all[i:i+s.n])
		next[s.table] = i + s.n
	}
}

func (sc *temporalScenario) flush(t *testing.T, d temporalData) {
	t.Helper()
	persons, bids := temporalFlush(d)
	sc.post(t, "persons", persons)
	sc.post(t, "bids", bids)
}

// stateRows is state_size.rows of GET /v1/queries/{name}, if reported.
func (sc *temporalScenario) stateRows(t *testing.T, name string) (int64, bool) {
	t.Helper()
	size, _ := sc.srv.query(t, name).raw["state_size"].(map[string]any)
	n, ok := size["rows"].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := n.Int64()
	return v, err == nil
}

// checkVersionsDropped checks, after the flush, what the append-only AS
// OF views hold: per person id of the phases, its newest version if that
// is an upsert (a delete is dropped: finding nothing means none just as
// well), as every older one is before min(bids, persons watermark) where
// no lookup can come any more; the two flush versions, after that bound;
// and the one bid waiting exactly on the persons watermark. Without
// dropping versions the state would hold every version posted.
func (sc *temporalScenario) checkVersionsDropped(t *testing.T) {
	t.Helper()
	newest := map[int64]Row{}
	for _, r := range sc.in.persons {
		if id := r["id"].(int64); id < 1000 {
			if n, ok := newest[id]; !ok || tsOf(r) >= tsOf(n) {
				newest[id] = r
			}
		}
	}
	want := int64(3)
	for _, r := range newest {
		if !isDelete(r) {
			want++
		}
	}
	t.Run("state_size", func(t *testing.T) {
		for _, ti := range sc.views {
			if ti.def.agg || ti.def.latest {
				continue
			}
			n, ok := sc.stateRows(t, ti.name)
			if !ok {
				t.Errorf("%s: no state_size.rows in GET /v1/queries/%s", ti.name, ti.name)
				continue
			}
			if n != want {
				t.Errorf("%s: state_size.rows = %d after the flush, want %d (the newest version of each of %d person ids unless a delete, 2 flush versions, 1 waiting bid; %d person rows posted)",
					ti.name, n, want, len(newest), len(sc.in.persons))
			}
		}
	})
}

// TestTemporalAsOf runs the AS OF views (INNER, LEFT, LEFT with a residual
// on the table, aggregations over INNER and LEFT) at parallelism 1 and 2
// over three phases, checking after each (bids still waiting for the
// persons watermark must not show); one view created after the first phase
// reads both backlogs at once. Then far-future person rows release every
// waiting bid (but one exactly on the final watermark), and the state is
// down to a version per person.
func TestTemporalAsOf(t *testing.T) {
	d := genTemporalData(testSeed(t, 400), 3, 700)
	// No idle timeout: the state check counts the bid waiting exactly on
	// the persons watermark, which an idle persons side (5 s of wall clock
	// on a busy machine) would release.
	sc := newTemporalScenario(t, personsNoIdleDDL, temporalInstances(asOfViews()))
	for p, end := range d.phaseEnds {
		from := 0
		if p > 0 {
			from = d.phaseEnds[p-1]
		}
		sc.postSteps(t, d, from, end)
		sc.verify(t, "phase"+strconv.Itoa(p+1))
		if p == 0 {
			late := temporalInstances(temporalViewsByBase(asOfViews(), "t_left", "t_agg"))
			for i := range late {
				late[i].name += "_created_late"
			}
			sc.create(t, late)
		}
	}
	sc.flush(t, d)
	sc.verify(t, "flushed")
	sc.checkVersionsDropped(t)
}

// temporalProbeStep is one step of the hand-made AS OF probe: person rows
// posted, then bids; restart: SIGKILL and restart after the step; left:
// the t_left rows expected after the step (a hand-computed answer the
// oracle must give too, see TestOracleTemporalProbe).
type temporalProbeStep struct {
	persons, bids []Row
	restart       bool
	left          []Row
}

// temporalProbe: versions exactly at bids' times, ties in one request and
// across requests, a delete exactly at a bid's time, bids exactly on the
// persons watermark waiting (over a checkpoint and a SIGKILL) until a
// version at their very time arrives and wins, a bid for a person that
// appears only after its time, and a bid waiting for a slow persons side
// while the bids watermark passes newer versions of its person.
func temporalProbe() []temporalProbeStep {
	T, H := probeT, int64(2*3600_000)
	r := asOfRow
	s1 := []Row{} // nothing yet: no persons watermark
	s2 := []Row{  // watermark T+2000: bids before it released, 13 (T+2000) waits
		r(10, 1, 100, "a2", "WA"), // a2 exactly at T+1000 (after a, T)
		r(11, 2, 110, "b", "OR"),  // b exactly at T+1000
		r(12, 9, 120, nil, nil),   // no person 9
	}
	s3 := append(append([]Row{}, s2...),
		r(14, 2, 140, "b", "OR"),  // just before the delete
		r(15, 2, 150, nil, nil),   // deleted exactly then
		r(16, 1, 160, "a2", "WA"), // just before the ties at T+2000
	)
	s4 := append(append([]Row{}, s3...),
		r(13, 1, 130, "a5", "CA"), // the last of three versions at T+2000, the third in a later request
		r(17, 1, 170, "b1", "CA"), // b1 exactly at its time, posted after it waited
		r(18, 3, 180, nil, nil),   // person 3 appears 1ms after this bid
	)
	s5 := s4 // 19, 21 wait for persons; 20 makes the bids watermark T+2H+7000
	s6 := append(append([]Row{}, s5...),
		r(19, 1, 190, "b1", "CA"), // not d1 (T+2H+5000, at or before the bids watermark, arrived while 19 waited)
		r(21, 3, 210, "c", "CA"),
	)
	s7 := append(append([]Row{}, s6...),
		r(20, 2, 200, "b2", nil), // re-inserted after the delete
		r(22, 2, 220, "b2", nil),
	)
	return []temporalProbeStep{
		{bids: []Row{probeBid(10, 1, 100, T+1000), probeBid(11, 2, 110, T+1000), probeBid(12, 9, 120, T+500), probeBid(13, 1, 130, T+2000)}, left: s1},
		{persons: []Row{
			person(1, "a", "CA", T), person(2, "b", "OR", T+1000), person(1, "a2", "WA", T+1000),
			personDelete(2, T+1500), person(1, "a3", "NY", T+2000), person(1, "a4", "OR", T+2000),
		}, left: s2},
		{persons: []Row{person(1, "a5", "CA", T+2000)},
			bids: []Row{probeBid(14, 2, 140, T+1499), probeBid(15, 2, 150, T+1500), probeBid(16, 1, 160, T+1999),
				probeBid(17, 1, 170, T+H), probeBid(18, 3, 180, T+H)},
			restart: true, left: s3},
		{persons: []Row{person(1, "b1", "CA", T+H), person(3, "c", "CA", T+H+1)}, left: s4},
		{bids: []Row{probeBid(19, 1, 190, T+2*H), probeBid(21, 3, 210, T+2*H), probeBid(20, 2, 200, T+2*H+10_000)}, left: s5},
		{persons: []Row{person(1, "d1", "NY", T+2*H+5000), person(2, "b2", nil, T+2*H+5001)}, left: s6},
		{persons: []Row{person(9, "z", "WA", T+4*H)}, bids: []Row{probeBid(22, 2, 220, T+3*H)}, left: s7},
	}
}

// TestTemporalAsOfProbe posts temporalProbe's steps and checks the INNER,
// LEFT and LEFT-with-residual views after each against the oracle (and
// t_left against the hand-computed rows). Bids wait across pauses for
// versions still to come, so persons has an idle timeout of an hour here.
func TestTemporalAsOfProbe(t *testing.T) {
	sc := newTemporalScenario(t, personsNoIdleDDL, temporalInstances(temporalViewsByBase(asOfViews(), "t_inner", "t_left", "t_left_ca")))
	for i, s := range temporalProbe() {
		sc.post(t, "persons", s.persons)
		sc.post(t, "bids", s.bids)
		stage := "step" + strconv.Itoa(i+1)
		sc.verify(t, stage)
		for _, name := range []string{"t_left_p1", "t_left_p2"} {
			got := sc.srv.results(t, name)
			want := Result{Columns: []string{"auction", "bidder", "price", "name", "state"}, Rows: s.left}
			if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
				t.Errorf("%s %s: results differ from the hand-computed rows: %s", stage, name, formatDiffs(diffs, 10))
			}
		}
		if s.restart {
			sc.restart(t)
			sc.verify(t, stage+"_restarted")
		}
	}
}

// TestTemporalLatest: a join against the latest version (no AS OF), where
// the answer depends on what the join has processed: every person version
// first, a checkpoint, then bids (each joins the latest version, whatever
// the times: these bids are hours older than the versions); then deletes,
// updates and new persons, a checkpoint, more bids (INNER drops the bids
// of deleted persons, LEFT pads them); the earlier results stay as they
// were (append-only). Then the same once more after a restart.
func TestTemporalLatest(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t, 410), 7))
	sc := newTemporalScenario(t, personsDDL, temporalInstances(latestViews()))
	T := probeT
	clock := T
	tick := func() int64 { clock += 1 + rng.Int64N(50); return clock }
	upsert := func(id int64) Row {
		return person(id, "n"+strconv.FormatInt(id, 10)+"-"+strconv.FormatInt(clock, 10), personStates[rng.IntN(len(personStates))], tick())
	}
	bids := func(n int, from int64) []Row {
		out := make([]Row, n)
		for i := range out {
			from += rng.Int64N(30)
			out[i] = probeBid(1+rng.Int64N(50), 1+rng.Int64N(24), 1+rng.Int64N(1000), from)
		}
		return out
	}
	// Ids 1-20 with 1-4 versions each, 17 deleted and back, 18-20 deleted.
	var versions []Row
	for round := 0; round < 4; round++ {
		for id := int64(1); id <= 20; id++ {
			if round == 0 || rng.IntN(2) == 0 {
				versions = append(versions, upsert(id))
			}
		}
	}
	versions = append(versions, personDelete(17, tick()), upsert(17), personDelete(18, tick()), personDelete(19, tick()), personDelete(20, tick()))
	sc.post(t, "persons", versions[:len(versions)/2])
	sc.post(t, "persons", versions[len(versions)/2:])
	sc.checkpoint(t)
	sc.post(t, "bids", bids(150, T-5*3600_000))
	sc.verify(t, "first_bids")
	// Deletes, updates, a new person, one back from the dead. (2h later:
	// should persons have been idle meanwhile, advancing its watermark
	// with the wall clock, these versions are not behind it.)
	clock += 2 * 3600_000
	sc.post(t, "persons", []Row{
		personDelete(1, tick()), personDelete(2, tick()), personDelete(3, tick()),
		upsert(4), upsert(5), upsert(6), upsert(21), upsert(18),
		{"_op": "upsert", "id": int64(7), "name": "seven", "state": "OR", "ts": Timestamp(tick())},
	})
	sc.checkpoint(t)
	sc.post(t, "bids", bids(150, clock))
	sc.verify(t, "after_changes")
	// Restored after a SIGKILL: the latest versions, not a replay's.
	clock += 2 * 3600_000
	sc.post(t, "persons", []Row{personDelete(4, tick()), upsert(8), upsert(22)})
	sc.checkpoint(t)
	sc.restart(t)
	sc.post(t, "bids", bids(100, clock))
	sc.verify(t, "after_restart")
}

// TestTemporalRestart: the AS OF views through SIGKILLs. Phase 1 is
// checked; phase 2 is posted with checkpoints after its last steps (bids
// waiting for the persons watermark are in the checkpoint); phase 3 is
// posted without one; SIGKILL and restart: the waiting bids and the
// versions are restored and phase 3 replayed. One view is stopped and
// resumed during phase 4; the flush rows; SIGKILL right after their
// acknowledgement and restart. Results equal the oracle each time.
func TestTemporalRestart(t *testing.T) {
	d := genTemporalData(testSeed(t, 420), 4, 500)
	sc := newTemporalScenario(t, personsDDL, temporalInstances(temporalViewsByBase(asOfViews(), "t_inner", "t_left", "t_agg")))
	sc.postSteps(t, d, 0, d.phaseEnds[0])
	sc.verify(t, "phase1")
	last := d.phaseEnds[1] - 4
	sc.postSteps(t, d, d.phaseEnds[0], last)
	for k := last; k < d.phaseEnds[1]; k++ {
		sc.postSteps(t, d, k, k+1)
		sc.checkpoint(t)
	}
	sc.postSteps(t, d, d.phaseEnds[1], d.phaseEnds[2])
	sc.restart(t)
	sc.verify(t, "phase3_after_kill")
	sc.srv.stopQuery(t, "t_left_p2")
	sc.postSteps(t, d, d.phaseEnds[2], d.phaseEnds[3])
	sc.srv.resumeQuery(t, "t_left_p2")
	sc.flush(t, d)
	sc.restart(t)
	sc.verify(t, "flushed_after_second_kill")
	sc.checkVersionsDropped(t)
}

// TestTemporalBadInput: ingest errors for PRIMARY KEY tables and _op, and
// SQL reading a PRIMARY KEY table other than as a join's table side. Each
// rejected request appends nothing and creates nothing; a LEFT AS OF view
// over the good rows posted around them equals the oracle over those.
func TestTemporalBadInput(t *testing.T) {
	sc := newTemporalScenario(t, personsNoIdleDDL, temporalInstances(temporalViewsByBase(asOfViews(), "t_left")))
	srv := sc.srv
	T := probeT
	sc.post(t, "persons", []Row{person(1, "a", "CA", T), {"_op": "upsert", "id": int64(2), "name": "b", "state": nil, "ts": Timestamp(T + 1)}})
	sc.post(t, "bids", []Row{probeBid(1, 1, 10, T+1), probeBid(2, 2, 20, T+1)})
	sc.checkpoint(t)
	endOf := func(table string) int64 {
		end, ok := srv.endOffset(t, table)
		if !ok {
			t.Fatalf("GET /v1/tables/%s reports no end_offset", table)
		}
		return end
	}
	ingestCases := []struct {
		name, table string
		body        string // NDJSON
		badRow      int
		want        []string // words the problem must mention
	}{
		{"op_insert", "persons", `{"id": 3, "name": "c", "state": "WA", "ts": 1704067300000}
{"_op": "insert", "id": 4, "name": "d", "state": "WA", "ts": 1704067300000}`, 1, []string{"_op"}},
		{"op_update", "persons", `{"_op": "update", "id": 1, "name": "x", "state": "WA", "ts": 1704067300000}`, 0, []string{"_op"}},
		{"op_number", "persons", `{"id": 3, "name": "c", "state": "WA", "ts": 1704067300000}
{"id": 4, "name": "d", "state": "WA", "ts": 1704067300000}
{"_op": 1, "id": 1, "ts": 1704067300000}`, 2, []string{"_op"}},
		{"delete_without_key", "persons", `{"_op": "delete", "id": 1, "ts": 1704067300000}
{"_op": "delete", "ts": 1704067300000}`, 1, []string{"id"}},
		{"delete_null_key", "persons", `{"_op": "delete", "id": null, "ts": 1704067300000}`, 0, []string{"id"}},
		{"upsert_without_key", "persons", `{"name": "x", "state": "WA", "ts": 1704067300000}`, 0, []string{"id"}},
		{"delete_without_time", "persons", `{"_op": "delete", "id": 1}`, 0, []string{"ts"}},
		{"op_on_plain_table", "bids", `{"auction": 1, "bidder": 1, "price": 1, "ts": 1704067300000}
{"_op": "delete", "auction": 1, "bidder": 1, "price": 1, "ts": 1704067300000}`, 1, []string{"_op"}},
		{"upsert_op_on_plain_table", "bids", `{"_op": "upsert", "auction": 1, "bidder": 1, "price": 1, "ts": 1704067300000}`, 0, []string{"_op"}},
	}
	for _, c := range ingestCases {
		t.Run(c.name, func(t *testing.T) {
			before := endOf(c.table)
			r := srv.postRaw(t, rowsPath(c.table), "application/x-ndjson", []byte(c.body))
			if r.status != http.StatusBadRequest {
				t.Fatalf("POST %s: got %s, want 400", rowsPath(c.table), r)
			}
			p := parseProblem(t, "POST "+rowsPath(c.table), r)
			for _, w := range c.want {
				if !p.mentions(w) {
					t.Errorf("error does not name %q: %s", w, p)
				}
			}
			if !namesRowIndex(p, c.badRow) {
				t.Errorf("error does not name row %d: %s", c.badRow, p)
			}
			if after := endOf(c.table); after != before {
				t.Errorf("table %s: end_offset %d after the rejected request, want %d: it appended rows", c.table, after, before)
			}
		})
	}
	// _op on a plain table says why.
	r := srv.postRaw(t, rowsPath("bids"), "application/x-ndjson", []byte(`{"_op": "delete", "auction": 1, "bidder": 1, "price": 1, "ts": 1704067300000}`))
	if p := parseProblem(t, "POST "+rowsPath("bids"), r); !regexp.MustCompile(`(?i)primary key`).MatchString(p.Title + " " + p.Detail) {
		t.Errorf("_op on bids: the error does not say that _op needs a PRIMARY KEY: %s", p)
	}

	sqlCases := []struct {
		name, sql string
		want      []string // patterns over title and detail
	}{
		{"select_table", "SELECT * FROM persons", []string{`(?i)\bjoin\b`, `(?i)primary key`}},
		{"table_on_left", "CREATE VIEW bad_t3 AS SELECT p.name, b.price FROM persons p JOIN bids b ON b.bidder = p.id", []string{`(?i)right side|table side|\bjoin\b`}},
		{"no_key_equality", "CREATE VIEW bad_t4 AS SELECT b.price FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.price > 0", []string{`\bid\b`}},
		{"as_of_not_time", "CREATE VIEW bad_t5 AS SELECT b.price FROM bids b JOIN persons p AS OF TIMESTAMP b.price ON b.bidder = p.id", []string{`(?i)event.time`}},
		{"mismatched_key", "CREATE VIEW bad_t6 AS SELECT b.price FROM bids b JOIN persons p ON p.name = b.bidder", []string{`(?i)\bid\b|mismatch|VARCHAR`}},
	}
	for _, c := range sqlCases {
		t.Run(c.name, func(t *testing.T) {
			p := srv.sqlError(t, c.sql)
			if p.httpStatus != http.StatusUnprocessableEntity {
				t.Errorf("status %d, want 422: %s", p.httpStatus, p)
			}
			text := p.Title + "\n" + p.Detail
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(text) {
					t.Errorf("error does not match %s: %s", w, p)
				}
			}
		})
	}
	for _, name := range []string{"bad_t3", "bad_t4", "bad_t5", "bad_t6"} {
		if st := srv.status(t, "/v1/queries/"+name); st != http.StatusNotFound {
			t.Errorf("GET /v1/queries/%s: status %d, want 404: the rejected statement was kept", name, st)
		}
	}

	// Good rows after the bad ones: a delete with the key and time only, an
	// explicit upsert, a JSON array.
	sc.post(t, "persons", []Row{personDelete(1, T+2), {"_op": "upsert", "id": int64(2), "name": "b2", "state": "OR", "ts": Timestamp(T + 3)}})
	sc.post(t, "bids", []Row{probeBid(3, 1, 30, T+2), probeBid(4, 2, 40, T+2), probeBid(5, 2, 50, T+3)})
	sc.postAs(t, "persons", []Row{person(1, "a-again", "NY", T+4)}, true)
	sc.post(t, "bids", []Row{probeBid(6, 1, 60, T+4)})
	sc.verify(t, "good_rows")
}

// ttlViews are regular joins (no time bounds) with state_ttl 30s: the
// brief's SQL as it is, the pairs with both times, LEFT, and an
// aggregation over the join.
func ttlViews() []joinView {
	const ttl = 30_000
	inner := ttlJoin(InnerJoin, bidSide, auctionSide, "auction", "id", ttl)
	left := ttlJoin(LeftJoin, auctionSide, bidSide, "id", "auction", ttl)
	hint := "SET_VAR(state_ttl='30s')"
	return []joinView{
		{
			base: "r_inner", hints: hint,
			sql: `SELECT {hint} b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id`,
			expected: func(bids, auctions []Row) Result {
				return project(EvaluateJoin(inner, bids, auctions), col("auction", "b.auction"), col("seller", "a.seller"))
			},
		},
		{
			base: "r_pairs", hints: hint,
			sql: `SELECT {hint} b.auction, b.bidder, b.price, b.ts AS bid_ts, a.seller, a.name, a.ts AS auction_ts
FROM bids b JOIN auctions a ON a.id = b.auction`,
			expected: func(bids, auctions []Row) Result {
				return project(EvaluateJoin(inner, bids, auctions), col("auction", "b.auction"), col("bidder", "b.bidder"), col("price", "b.price"),
					col("bid_ts", "b.ts"), col("seller", "a.seller"), col("name", "a.name"), col("auction_ts", "a.ts"))
			},
		},
		{
			base: "r_left", hints: hint,
			sql: `SELECT {hint} a.id, a.seller, a.ts AS auction_ts, b.bidder, b.price
FROM auctions a LEFT JOIN bids b ON a.id = b.auction`,
			expected: func(bids, auctions []Row) Result {
				return project(EvaluateJoin(left, auctions, bids), col("id", "a.id"), col("seller", "a.seller"), col("auction_ts", "a.ts"),
					col("bidder", "b.bidder"), col("price", "b.price"))
			},
		},
		{
			base: "r_agg", agg: true, hints: hint,
			sql: `SELECT {hint} window_start, window_end, a.seller, COUNT(*) AS bids, SUM(b.price) AS volume
FROM bids b JOIN auctions a ON b.auction = a.id
GROUP BY TUMBLE(b.ts, '10s'), a.seller`,
			expected: func(bids, auctions []Row) Result {
				q := Query{Window: TumbleWindow(10_000), GroupBy: []string{"a.seller"}, Aggs: []Agg{
					{As: "bids", Func: CountStar},
					{As: "volume", Func: Sum, Arg: colRef("b.price")},
				}}
				res := Evaluate(noWatermark("b.ts"), q, EvaluateJoin(inner, bids, auctions))
				return renameColumns(res, map[string]string{"a.seller": "seller"})
			},
		},
	}
}

// TestRegularJoinTTL: regular joins with state_ttl='30s' over the interval
// join scenario's data (bids -3s..13s around auctions, pauses of 11-20s,
// ids reused), checked halfway, at the end, after the flush rows (state
// down to them: every row is past its TTL on the other side's watermark),
// and after probe rows exactly on and just past ±30s. Without state_ttl
// the same SQL is refused with the reason.
func TestRegularJoinTTL(t *testing.T) {
	data := genJoinData(testSeed(t, 430), 3000)
	sc := newJoinScenario(t, data, joinInstances(ttlViews()))
	sc.postTo(t, len(data.steps)/2)
	sc.verify(t, "half")
	sc.postTo(t, len(data.steps))
	sc.verify(t, "all")
	bid, auction := flushRows(data)
	sc.postRows(t, "bids", []Row{bid})
	sc.postRows(t, "auctions", []Row{auction})
	sc.verify(t, "flushed")
	sc.checkFlushedState(t, nil)

	// ±30s exactly: auction 77 at P; bids at P-30001 (out), P-30000 (in),
	// P+30000 (in), P+30001 (out); auction 78 with only a bid 30001ms
	// after it, whose NULL row comes once the bids watermark passes
	// P+130000.
	P := tsOf(bid) + 3600_000
	sc.postRows(t, "bids", []Row{probeBid(77, 1, 1, P-30_001), probeBid(77, 2, 2, P-30_000)})
	sc.postRows(t, "auctions", []Row{probeAuction(77, 5, "p77", P), probeAuction(78, 6, "p78", P+100_000)})
	sc.postRows(t, "bids", []Row{probeBid(77, 3, 3, P+30_000), probeBid(77, 4, 4, P+30_001), probeBid(78, 5, 5, P+130_001)})
	sc.verify(t, "ttl_bounds")
	sc.postRows(t, "bids", []Row{probeBid(-1, 0, 0, P+133_001)}) // watermark P+130001
	sc.verify(t, "ttl_left_due")

	for _, sql := range []string{
		"CREATE VIEW r_unbounded AS SELECT b.auction, a.seller FROM bids b JOIN auctions a ON b.auction = a.id",
		"CREATE VIEW r_unbounded AS SELECT a.id, b.bidder FROM auctions a LEFT JOIN bids b ON a.id = b.auction",
	} {
		p := sc.srv.sqlError(t, sql)
		if p.httpStatus != http.StatusUnprocessableEntity {
			t.Errorf("status %d, want 422: %s\nSQL: %s", p.httpStatus, p, sql)
		}
		text := p.Title + "\n" + p.Detail
		if !regexp.MustCompile(`(?i)state_ttl`).MatchString(text) || !regexp.MustCompile(`(?i)unbounded|bounded state|grow without (end|bound)`).MatchString(text) {
			t.Errorf("error does not say why (unbounded state) and how (state_ttl): %s\nSQL: %s", p, sql)
		}
	}
	if st := sc.srv.status(t, "/v1/queries/r_unbounded"); st != http.StatusNotFound {
		t.Errorf("GET /v1/queries/r_unbounded: status %d, want 404", st)
	}
}

// resultsLatest reads a view's results with consistency=latest (what the
// sink holds now, checkpointed or not).
func (sc *temporalScenario) resultsLatest(t *testing.T, view string) resultSet {
	t.Helper()
	path := "/v1/queries/" + view + "/results?consistency=latest"
	r := sc.srv.do(t, http.MethodGet, path, "", nil)
	expectOK(t, "GET "+path, r)
	var rs resultSet
	decodeJSON(t, "GET "+path, r.body, &rs)
	return rs
}

// TestTemporalIdle: the persons table (default idle_timeout 5s) gets one
// version and goes quiet; bids wait for its watermark, one 2s past the
// version and one an hour past it. docs/sql.md: an idle table side
// "stops holding back the watermark of the operators it feeds (a stream
// row waiting in an AS OF join for an idle table side is released at
// once)", and docs/sql.md: "an idle table side stops holding it back after
// idle_timeout". So neither bid shows before about 5s, and both show soon
// after, joined with the version they see (the only one, or NULL for a
// bidder without a person).
func TestTemporalIdle(t *testing.T) {
	sc := newTemporalScenario(t, personsDDL, temporalInstances(temporalViewsByBase(asOfViews(), "t_inner", "t_left")))
	T := probeT
	sc.post(t, "persons", []Row{person(1, "a", "CA", T)})
	quiet := time.Now() // persons has had its last row
	sc.post(t, "bids", []Row{probeBid(1, 1, 10, T+2000), probeBid(2, 2, 20, T+2000), probeBid(3, 1, 30, T+3600_000)})
	sc.verify(t, "waiting") // the oracle: nothing past the watermark T
	near := []Row{asOfRow(1, 1, 10, "a", "CA"), asOfRow(2, 2, 20, nil, nil)}
	far := asOfRow(3, 1, 30, "a", "CA")
	has := func(rows []map[string]any, auction int64) bool {
		for _, r := range rows {
			if jsonText(r["auction"]) == strconv.FormatInt(auction, 10) {
				return true
			}
		}
		return false
	}
	// The bids 2s ahead: released by the idle table side within 15s.
	var released time.Duration
	if !waitFor(20*time.Second, func() bool {
		ok := has(sc.resultsLatest(t, "t_left_p1").Rows, 1) && has(sc.resultsLatest(t, "t_left_p2").Rows, 1)
		released = time.Since(quiet)
		return ok
	}) {
		t.Fatalf("bids 2s past the persons watermark still not released %v after persons went quiet (idle_timeout 5s)", released)
	}
	if released < 4500*time.Millisecond {
		t.Errorf("bids released %v after persons went quiet: before its idle timeout of 5s", released)
	}
	t.Logf("bids 2s ahead released %v after persons went quiet", released)
	// The bid an hour ahead: released at once as well, not after an hour
	// of the wall clock.
	time.Sleep(time.Second)
	for _, name := range []string{"t_left_p1", "t_left_p2", "t_inner_p1", "t_inner_p2"} {
		got := sc.resultsLatest(t, name)
		want := Result{Columns: []string{"auction", "bidder", "price", "name", "state"}, Rows: append(append([]Row{}, near...), far)}
		if strings.HasPrefix(name, "t_inner") {
			want.Rows = []Row{near[0], far}
		}
		if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
			t.Errorf("%s, %v after persons went quiet (idle_timeout 5s): %s\n(docs/sql.md: a stream row waiting in an AS OF join for an idle table side is released at once)",
				name, time.Since(quiet).Round(time.Millisecond), formatDiffs(diffs, 5))
		}
	}
}

// waitFor polls cond every pollInterval until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
}
