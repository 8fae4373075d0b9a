package e2e

// Changelog streams (issue 18) into external sinks: queries over updating
// inputs INSERTed INTO PostgreSQL tables and Kafka topics, through
// SIGKILLs at random moments, against the changelog oracle
// (changelog_oracle_test.go).
//
// The two tables of changelog_test.go: t (HTTP, genChangelogInput: sums
// going up and down, extremes taken back) and p (PRIMARY KEY,
// genUpsertLog: upserts moving rows between open windows, in place and
// back in time, deletes, emptied windows; a flush row at the end), and
// four queries, each into a sink whose PRIMARY KEY is the query's upsert
// key:
//
//   - agg: an aggregation over a running aggregate (inner = SELECT k,
//     COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi FROM t GROUP
//     BY k; outer GROUP BY n: keys move from one n to the next, groups go,
//     MIN and MAX lose their extremes): rows of the sink are updated and
//     deleted;
//   - having: the same outer aggregation with HAVING COUNT(*) > 1 (groups
//     leave the sink as they fall to one key and go);
//   - pos: WHERE s > 0 over the inner running aggregate (a key's row
//     leaves the sink when its s drops to 0 or below, and comes back);
//   - pkwin: a TUMBLE 10s aggregation (COUNT, SUM, MIN, MAX) over p in
//     changes mode: rows move between open windows, windows empty and are
//     deleted;
//   - topn: the top 3 rows of each k of t by v (ROW_NUMBER, keyed on k
//     and rn: a new row moves the ranks below it);
//   - topagg: the key of the largest s per n of the inner running
//     aggregate (Top-1 over an updating input: a key leaving its n brings
//     the next one up);
//   - first: deduplication, the first row of each v by event time
//     (append-only, held until the watermark passes it; late rows
//     dropped), topn_oracle_test.go's oracles.
//
// TestChangelogSinksPG: each query into PostgreSQL in both delivery
// modes (exactly_once at parallelism 2, at_least_once at parallelism 1).
// TestChangelogSinksKafka: the same into Kafka topics (exactly_once read
// read_committed; at_least_once compacted by key: the latest record per
// key, a tombstone deleting it). Both logs are posted in alternating
// chunks with Idempotency-Keys, resent until acknowledged, while the
// server (checkpointing every 200ms) is SIGKILLed at random moments
// (crash_test.go's poster and killer, STREAMSQL_CRASH_KILLS, default 3).
// Before each kill a random exactly-once sink is read with its last epoch
// and must equal the oracle over the prefix of its table's log that
// epoch's checkpoint read. At the end every sink equals the oracle over
// the whole logs; exactly-once sinks recorded each epoch once,
// increasing, none of a checkpoint seen failed (and for Kafka, the state
// after each epoch seen completed equals the oracle over its prefix).
// Before anything runs, the oracle's view of the input (runningWitnesses,
// upsertWitnesses) must show that every query's sink has rows taken back.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/pgtest"
)

// clSinkInnerSQL is the brief's running aggregate over t (the oracle's
// changelogInner, whose extra COUNT(DISTINCT) column no query here reads).
const clSinkInnerSQL = `SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi FROM t GROUP BY k`

// clSinkRows is the length of each table's log at the default number of
// kills (more with STREAMSQL_CRASH_KILLS).
const clSinkRows = 2000

// clSinkDef is a query of these tests: the table it reads, its SELECT
// ({hint} for the optimizer hint) and its result over t's and p's logs.
type clSinkDef struct {
	base     string
	table    string // "t" or "p"
	agg      bool   // an aggregation: emit_mode=changes in its hint
	sql      string
	expected func(tLog, pLog []Row) Result
}

// clInnerSink is the inner running aggregate over t's log, batch.
func clInnerSink(tLog []Row) []Row { return Evaluate(Source{}, changelogInner, tLog).Rows }

var clSinkOuterAggs = []Agg{
	{As: "nk", Func: CountStar},
	{As: "total", Func: Sum, Arg: colRef("s")},
	{As: "lo", Func: Min, Arg: colRef("lo")},
	{As: "hi", Func: Max, Arg: colRef("hi")},
}

// clPKWindow is pkwin's query over p.
var clPKWindow = Query{Window: TumbleWindow(10_000), Aggs: []Agg{
	{As: "n", Func: CountStar},
	{As: "s", Func: Sum, Arg: colRef("v")},
	{As: "lo", Func: Min, Arg: colRef("v")},
	{As: "hi", Func: Max, Arg: colRef("v")},
}}

var clSinkDefs = []clSinkDef{
	{base: "agg", table: "t", agg: true,
		sql: `SELECT {hint} n, COUNT(*) AS nk, SUM(s) AS total, MIN(lo) AS lo, MAX(hi) AS hi
FROM (` + clSinkInnerSQL + `) x GROUP BY n`,
		expected: func(tLog, _ []Row) Result { return groupAll(clInnerSink(tLog), []string{"n"}, clSinkOuterAggs) }},
	{base: "having", table: "t", agg: true,
		sql: `SELECT {hint} n, COUNT(*) AS nk, SUM(s) AS total
FROM (` + clSinkInnerSQL + `) x GROUP BY n HAVING COUNT(*) > 1`,
		expected: func(tLog, _ []Row) Result {
			return Evaluate(Source{}, Query{GroupBy: []string{"n"}, Aggs: clSinkOuterAggs[:2],
				Having: func(r Row) bool { return bigint(r, "nk") > 1 }}, clInnerSink(tLog))
		}},
	{base: "pos", table: "t",
		sql: `SELECT {hint} k, s FROM (` + clSinkInnerSQL + `) x WHERE s > 0`,
		expected: func(tLog, _ []Row) Result {
			return keyedProjection(clInnerSink(tLog), "k", positiveSum, []Column{col("k", "k"), col("s", "s")})
		}},
	{base: "pkwin", table: "p", agg: true,
		sql: `SELECT {hint} window_start, window_end, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi
FROM p GROUP BY TUMBLE(ts, '10s')`,
		expected: func(_, pLog []Row) Result { return EvaluateUpsertTable(upsertSource, "id", clPKWindow, pLog) }},
	{base: "topn", table: "t",
		sql:      `SELECT {hint} k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) x WHERE rn <= 3`,
		expected: func(tLog, _ []Row) Result { return topNByKey(tLog, 3) }},
	{base: "topagg", table: "t",
		sql:      `SELECT {hint} n, k, s FROM (SELECT n, k, s, ROW_NUMBER() OVER (PARTITION BY n ORDER BY s DESC) AS rn FROM (` + clSinkInnerSQL + `) i) x WHERE rn = 1`,
		expected: func(tLog, _ []Row) Result { return topSumPerCount(clInnerSink(tLog)) }},
	{base: "first", table: "t",
		sql:      `SELECT {hint} v, k, ts FROM (SELECT k, v, ts, ROW_NUMBER() OVER (PARTITION BY v ORDER BY ts) AS rn FROM t) x WHERE rn = 1`,
		expected: func(tLog, _ []Row) Result { return firstByTime(changelogSource, tLog) }},
}

// clSink is a sink of these tests: the query it takes (def) and the
// sinkQuery (whose expected takes t's log as bids and p's as auctions).
type clSink struct {
	def clSinkDef
	sinkQuery
}

// clSinkQuery is def into a sink named <engine>_cs_<base>_<eo|alo>, at
// parallelism 2 for exactly_once and 1 for at_least_once.
func clSinkQuery(engine string, def clSinkDef, delivery string) clSink {
	p := 1
	if delivery == exactlyOnce {
		p = 2
	}
	hint := "/*+ SET_VAR(parallelism=" + strconv.Itoa(p) + ")"
	if def.agg {
		hint += " SET_VAR(emit_mode=changes)"
	}
	hint += " */"
	return clSink{def: def, sinkQuery: sinkQuery{
		name:      engine + "_cs_" + def.base + "_" + deliveryTag(delivery),
		delivery:  delivery,
		selectSQL: strings.Replace(def.sql, "{hint}", hint, 1),
		expected:  def.expected,
	}}
}

// ofTable is the sinkQuery with an expected that takes the log of the
// sink's own table first (as checkAtCheckpoint passes a prefix).
func (s clSink) ofTable() sinkQuery {
	q := s.sinkQuery
	if s.def.table == "p" {
		q.expected = func(in, _ []Row) Result { return s.def.expected(nil, in) }
	} else {
		q.expected = func(in, _ []Row) Result { return s.def.expected(in, nil) }
	}
	return q
}

// tablePrefix is the prefix of table's log (every row in log order,
// acknowledged or not yet) below the offset a checkpoint recorded for it.
func tablePrefix(table string, log []Row) logPrefix {
	return func(c checkpointStat) ([]Row, string, error) {
		off, ok := c.Offsets[table]
		switch {
		case !ok:
			return nil, "", errNoOffsets
		case off > int64(len(log)):
			return nil, "", fmt.Errorf("offset %d recorded for %s, beyond the %d rows of its log", off, table, len(log))
		}
		return log[:off], fmt.Sprintf("the %d rows of %s before its offset", off, table), nil
	}
}

// clSinkSet is the sinks of one engine on a server.
type clSinkSet interface {
	names() []string
	// verify checkpoints and checks every sink against the oracle over
	// t's and p's logs (passed as sinkSet's bids and auctions).
	verify(t *testing.T, stage string, tLog, pLog []Row)
	// checkPrefix checks a random exactly-once sink mid-stream against
	// the oracle over the prefix of its table's log its last epoch read.
	checkPrefix(t *testing.T, rng *rand.Rand, tLog, pLog []Row) bool
	// epochs checks and returns the epochs each exactly-once sink
	// recorded, in commit order.
	epochs(t *testing.T) map[string][]int64
	// epochStates checks the state after each epoch seen completed, where
	// the engine can tell (Kafka); it returns how many it checked.
	epochStates(t *testing.T, obs cpObserver, tLog, pLog []Row) int
}

func logOf(table string, tLog, pLog []Row) []Row {
	if table == "p" {
		return pLog
	}
	return tLog
}

// clPGSinks: the sinks in PostgreSQL, each in a schema of its own.
type clPGSinks struct {
	ps    *pgScenario
	sinks []clSink
}

func newCLPGSinks(t *testing.T, srv *server, pg *pgtest.Server) *clPGSinks {
	t.Helper()
	s := &clPGSinks{ps: &pgScenario{srv: srv, pg: pg}}
	var pgs []pgSink
	for _, delivery := range []string{exactlyOnce, atLeastOnce} {
		for _, def := range clSinkDefs {
			c := clSinkQuery("pg", def, delivery)
			s.sinks = append(s.sinks, c)
			pgs = append(pgs, pgSink{sinkQuery: c.sinkQuery, schema: "clsink_" + def.base + "_" + deliveryTag(delivery), table: "cs_" + def.base})
		}
	}
	s.ps.create(t, pgs...)
	return s
}

func (s *clPGSinks) names() []string { return s.ps.names() }
func (s *clPGSinks) verify(t *testing.T, stage string, tLog, pLog []Row) {
	t.Helper()
	s.ps.verify(t, stage, tLog, pLog)
}
func (s *clPGSinks) epochs(t *testing.T) map[string][]int64 { return s.ps.epochs(t) }
func (s *clPGSinks) epochStates(*testing.T, cpObserver, []Row, []Row) int {
	return 0 // a PostgreSQL table holds only its last state
}

func (s *clPGSinks) checkPrefix(t *testing.T, rng *rand.Rand, tLog, pLog []Row) bool {
	t.Helper()
	eo := exactlyOnceSinks(s.ps.sinks)
	ps := eo[rng.IntN(len(eo))]
	c := s.sinks[slices.IndexFunc(s.sinks, func(c clSink) bool { return c.name == ps.name })]
	snap, ok := pgSnapshot(t, s.ps.pg, ps.pgSchema(), ps.pgTable(), true)
	if !ok || snap.epoch == 0 {
		return false
	}
	return checkEpochPrefix(t, s.ps.srv, c.ofTable(), "PostgreSQL", snap.epoch, snap.columns, snap.rows, tablePrefix(c.def.table, logOf(c.def.table, tLog, pLog)))
}

// clKafkaSinks: the sinks in Kafka topics (named after the sinks).
type clKafkaSinks struct {
	ks    *kafkaScenario
	sinks []clSink
}

func newCLKafkaSinks(t *testing.T, srv *server, ks *kafkaScenario) *clKafkaSinks {
	t.Helper()
	s := &clKafkaSinks{ks: ks}
	var kss []kafkaSink
	for _, delivery := range []string{exactlyOnce, atLeastOnce} {
		for _, def := range clSinkDefs {
			c := clSinkQuery("k", def, delivery)
			s.sinks = append(s.sinks, c)
			kss = append(kss, kafkaSink{sinkQuery: c.sinkQuery})
		}
	}
	ks.create(t, kss...)
	return s
}

func (s *clKafkaSinks) names() []string { return s.ks.names() }
func (s *clKafkaSinks) verify(t *testing.T, stage string, tLog, pLog []Row) {
	t.Helper()
	s.ks.verify(t, stage, tLog, pLog)
}
func (s *clKafkaSinks) epochs(t *testing.T) map[string][]int64 { return s.ks.epochs(t) }

// ofTable is the Kafka sinks of table, with expected taking its log first.
func (s *clKafkaSinks) ofTable(table string) *kafkaScenario {
	sub := &kafkaScenario{srv: s.ks.srv, broker: s.ks.broker}
	for _, c := range s.sinks {
		if c.def.table == table {
			sub.sinks = append(sub.sinks, kafkaSink{sinkQuery: c.ofTable()})
		}
	}
	return sub
}

func (s *clKafkaSinks) checkPrefix(t *testing.T, rng *rand.Rand, tLog, pLog []Row) bool {
	t.Helper()
	eo := exactlyOnceSinks(s.sinks)
	c := eo[rng.IntN(len(eo))]
	return s.ks.checkCommittedPrefix(t, kafkaSink{sinkQuery: c.ofTable()}, tablePrefix(c.def.table, logOf(c.def.table, tLog, pLog)))
}

func (s *clKafkaSinks) epochStates(t *testing.T, obs cpObserver, tLog, pLog []Row) int {
	t.Helper()
	n := 0
	for _, table := range []string{"t", "p"} {
		n += s.ofTable(table).checkEpochStates(t, obs, tablePrefix(table, logOf(table, tLog, pLog)))
	}
	return n
}

// requireSinkWitnesses fails t unless, from the oracle's view of the
// logs, every sink has rows taken back: an outer MIN's and MAX's extreme
// (agg), an outer group gone (agg, having), a group that passed HAVING
// and fails it now (having), a key that passed WHERE s > 0 and fails it
// now (pos); rows moved between windows, deleted, and windows emptied,
// none late (pkwin).
func requireSinkWitnesses(t *testing.T, tLog, pLog []Row) {
	t.Helper()
	rs := runningWitnesses(changelogInner, "k", tLog)
	us := upsertWitnesses(upsertSource, "id", clPKWindow.Window, pLog)
	t.Logf("t: %d rows: %v; p: %d rows: %+v", len(tLog), rs, len(pLog), us)
	requireWitnesses(t, "the logs", []witness{
		{"an outer MIN whose current extreme was taken back", rs.minTaken},
		{"an outer MAX whose current extreme was taken back", rs.maxTaken},
		{"an outer group whose every row was taken back", rs.groupsGone},
		{"an outer group that passed HAVING COUNT(*) > 1 and fails it now", rs.havingLeft},
		{"an inner row that passed WHERE s > 0 and fails it now", rs.filterLeft},
		{"a row of p moved to another window", us.moved},
		{"a row of p deleted", us.deletes},
		{"a window of p emptied", us.emptied},
	})
	if us.late != 0 {
		t.Errorf("%d changes of p are late: the crash test wants none (the order of a replay must not matter)", us.late)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// runChangelogSinkCrash runs the sinks setup creates (where: the external
// system) on a server with the tables t and p checkpointing every 200ms,
// under crash_test.go's load and kills; see the top of this file.
func runChangelogSinkCrash(t *testing.T, where string, seed uint64, setup func(t *testing.T, srv *server) clSinkSet) {
	begin := time.Now()
	kills := crashKills(t)
	n := max(clSinkRows, kills*crashRowsPerKill/2)
	tLog := genChangelogInput(seed, n)
	pLog := genUpsertLog(seed+1, n)
	var lastTS int64
	for _, r := range pLog {
		lastTS = max(lastTS, tsOf(r))
	}
	pLog = append(pLog, pk(-1, 0, lastTS+60_000)) // every window closes
	requireSinkWitnesses(t, tLog, pLog)

	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, changelogTableDDL+";\n"+upsertTableDDL)
	sinks := setup(t, srv)
	tChunks := idemChunks(t, "t", tLog, crashChunkRows, "clsink-t")
	pChunks := idemChunks(t, "p", pLog, crashChunkRows, "clsink-p")
	var chunks []idemChunk
	for i := 0; i < max(len(tChunks), len(pChunks)); i++ {
		if i < len(tChunks) {
			chunks = append(chunks, tChunks[i])
		}
		if i < len(pChunks) {
			chunks = append(chunks, pChunks[i])
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	poster := startCrashPoster(t, srv, chunks, kills)
	obs := cpObserver{}
	prefixChecks := 0
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(int) {
			obs.observe(t, srv, sinks.names())
			if sinks.checkPrefix(t, rng, tLog, pLog) {
				prefixChecks++
			}
		},
	})
	poster.wait(t)

	checkEndOffset(t, srv, "t", len(tLog))
	checkEndOffset(t, srv, "p", len(pLog))
	srv.waitRunning(t, sinks.names()...)
	sinks.verify(t, "final", tLog, pLog)
	obs.observe(t, srv, sinks.names())
	judged, epochs := 0, 0
	for name, e := range sinks.epochs(t) {
		epochs += len(e)
		judged += obs.checkEpochs(t, name, e)
	}
	states := sinks.epochStates(t, obs, tLog, pLog)
	t.Logf("%s changelog sinks crash recovery: kills=%d (under load %d, aimed at a request %d) mid-stream checks=%d rows=%d+%d chunks=%d resends=%d replayed=%d sinks=%d epochs committed=%d (seen completed %d, states checked %d) posting=%v elapsed=%v",
		where, kills, ks.underLoad, ks.aimed, prefixChecks, len(tLog), len(pLog), len(chunks), poster.stats.resends, poster.stats.replayed,
		len(sinks.names()), epochs, judged, states, poster.took.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// TestChangelogSinksPG: the queries over updating inputs into PostgreSQL
// in both delivery modes, through SIGKILLs; see the top of this file.
func TestChangelogSinksPG(t *testing.T) {
	pg := sharedPG(t)
	runChangelogSinkCrash(t, "PostgreSQL", testSeed(t, 1810), func(t *testing.T, srv *server) clSinkSet {
		return newCLPGSinks(t, srv, pg)
	})
}

// TestChangelogSinksKafka: the same into Kafka topics; see the top of
// this file.
func TestChangelogSinksKafka(t *testing.T) {
	b := startBroker(t)
	var s *clKafkaSinks
	runChangelogSinkCrash(t, "Kafka", testSeed(t, 1811), func(t *testing.T, srv *server) clSinkSet {
		s = newCLKafkaSinks(t, srv, &kafkaScenario{srv: srv, broker: b})
		return s
	})
	aborted := 0
	for _, c := range exactlyOnceSinks(s.sinks) {
		aborted += abortedRecords(t, b, c.name)
	}
	t.Logf("records of aborted transactions left out by read_committed reads: %d", aborted)
}
