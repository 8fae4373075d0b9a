package e2e

// PostgreSQL sinks through failures: SIGKILL of the server at random
// moments under load (TestCrashRecovery's poster and killer), a crash at
// each of the sink's fault points, and PostgreSQL itself stopped and
// killed under load. Afterwards every sink's table must equal the oracle
// over the whole log, and exactly-once sinks must have recorded each
// epoch once, increasing, and only epochs of checkpoints that completed.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cpObserver keeps every checkpoint seen in the queries' histories (GET
// /v1/queries/{name}/checkpoints, the recent ones of the running
// process), its last status and its offsets, per query, across restarts:
// ids never repeat.
type cpObserver map[string]map[int64]checkpointStat

func (o cpObserver) observe(t *testing.T, srv *server, names []string) {
	t.Helper()
	for _, n := range names {
		if o[n] == nil {
			o[n] = map[int64]checkpointStat{}
		}
		for _, c := range srv.checkpointHistory(t, n) {
			if id, err := c.ID.Int64(); err == nil {
				o[n][id] = c
			}
		}
	}
}

// checkEpochs checks every epoch sink name recorded (in PostgreSQL or
// Kafka) against the checkpoints of its query seen: a checkpoint seen
// failed must never be committed (one completing after it was seen in progress, or never
// seen, cannot be judged). It returns how many epochs were seen completed.
func (o cpObserver) checkEpochs(t *testing.T, name string, epochs []int64) int {
	t.Helper()
	seen := 0
	for _, e := range epochs {
		switch st := o[name][e].Status; st {
		case "completed":
			seen++
		case "", "in_progress":
		default:
			t.Errorf("%s: epoch %d is committed, but checkpoint %d was %q", name, e, e, st)
		}
	}
	return seen
}

// completedSince reports whether a checkpoint of the query that started
// after since has completed.
func completedSince(t *testing.T, srv *server, name string, since time.Time) bool {
	t.Helper()
	for _, c := range srv.checkpointHistory(t, name) {
		started, err := time.Parse(time.RFC3339Nano, c.Started)
		if err != nil {
			t.Fatalf("GET /v1/queries/%s/checkpoints: started %q: %v", name, c.Started, err)
		}
		if c.Status == "completed" && started.After(since) {
			return true
		}
	}
	return false
}

// checkCommittedPrefix checks an exactly-once sink mid-stream: its table,
// read in one snapshot with the last epoch recorded, must equal the oracle
// over the log prefix that epoch's checkpoint read (checkEpochPrefix).
func (ps *pgScenario) checkCommittedPrefix(t *testing.T, s pgSink, log []Row) bool {
	t.Helper()
	snap, ok := pgSnapshot(t, ps.pg, s.pgSchema(), s.pgTable(), true)
	if !ok || snap.epoch == 0 {
		return false
	}
	return checkEpochPrefix(t, ps.srv, s.sinkQuery, "PostgreSQL", snap.epoch, snap.columns, snap.rows, httpPrefix(log))
}

// checkEpochPrefix checks the contents of exactly-once sink s as of its
// epoch (cols and rows, read from where) against the oracle over the rows
// that epoch's checkpoint read (checkAtCheckpoint). It reports false when
// there was nothing to check: that checkpoint is not in the history of the
// running process.
func checkEpochPrefix(t *testing.T, srv *server, s sinkQuery, where string, epoch int64, cols []string, rows []map[string]any, prefix logPrefix) bool {
	t.Helper()
	for _, c := range srv.checkpointHistory(t, s.name) {
		if id, _ := c.ID.Int64(); id == epoch {
			return checkAtCheckpoint(t, s, where, c, cols, rows, prefix)
		}
	}
	return false
}

// logPrefix gives the input a checkpoint had read, from the offsets it
// recorded, and says what that is; errNoOffsets when it recorded none to
// tell.
type logPrefix func(c checkpointStat) ([]Row, string, error)

var errNoOffsets = errors.New("no offsets recorded")

// httpPrefix is the prefix of the HTTP table bids' log (every row, in log
// order, acknowledged or not yet) below the offset a checkpoint recorded.
func httpPrefix(log []Row) logPrefix {
	return func(c checkpointStat) ([]Row, string, error) {
		off, ok := c.Offsets["bids"]
		switch {
		case !ok:
			return nil, "", errNoOffsets
		case off > int64(len(log)):
			return nil, "", fmt.Errorf("offset %d recorded for bids, beyond the %d rows of the log", off, len(log))
		}
		return log[:off], fmt.Sprintf("the %d rows before its offset", off), nil
	}
}

// checkAtCheckpoint checks the contents of exactly-once sink s as of the
// epoch of checkpoint c (cols and rows, read from where) against the
// oracle over the input c had read (prefix); false when c recorded no
// offsets.
func checkAtCheckpoint(t *testing.T, s sinkQuery, where string, c checkpointStat, cols []string, rows []map[string]any, prefix logPrefix) bool {
	t.Helper()
	if c.Status != "completed" {
		t.Errorf("%s: epoch %s is committed in %s, but checkpoint %s is %q", s.name, c.ID, where, c.ID, c.Status)
		return true
	}
	in, what, err := prefix(c)
	if errors.Is(err, errNoOffsets) {
		return false
	}
	if err != nil {
		t.Errorf("%s: checkpoint %s: %v", s.name, c.ID, err)
		return true
	}
	want := s.expected(in, nil)
	if diffs := diffResult(want, cols, rows); len(diffs) > 0 {
		t.Errorf("%s: %s at epoch %s differs from the oracle over %s (%d rows, %d expected): %s",
			s.name, where, c.ID, what, len(rows), len(want.Rows), formatDiffs(diffs, 5))
	}
	return true
}

// checkEndOffset checks that table's log holds n rows: every row exactly
// once.
func checkEndOffset(t *testing.T, srv *server, table string, n int) {
	t.Helper()
	if end, ok := srv.endOffset(t, table); !ok || end != int64(n) {
		t.Errorf("table %s: end_offset %d (reported: %v), want %d: every row exactly once", table, end, ok, n)
	}
}

// exactlyOnceSinks are the exactly-once sinks among sinks (of any
// engine).
func exactlyOnceSinks[S interface{ query() sinkQuery }](sinks []S) []S {
	var out []S
	for _, s := range sinks {
		if s.query().delivery == exactlyOnce {
			out = append(out, s)
		}
	}
	return out
}

// TestPGCrashRecovery: TestCrashRecovery for PostgreSQL sinks. Sinks of
// a tumble with every aggregate, sessions with HAVING, a running aggregate
// with HAVING and an append-only query (rows keyed by _row_id), exactly
// once, and of HOP with HAVING, the sessions and the append-only query at
// least once, all at parallelism 2, checkpointing every 200ms, while the
// log is posted in chunks with Idempotency-Keys and the server is
// SIGKILLed at random moments (STREAMSQL_CRASH_KILLS). Before each kill
// a random exactly-once table is checked, in one snapshot with its last
// epoch, against the oracle over the log prefix of that epoch's
// checkpoint. At the end every table equals the oracle over the whole log;
// exactly-once sinks recorded each epoch once, increasing, none of a
// checkpoint seen failed.
func TestPGCrashRecovery(t *testing.T) {
	pg := sharedPG(t)
	runSinkCrash(t, "PostgreSQL", testSeed(t, 410), func(t *testing.T, srv *server) crashSinkSet {
		ps := &pgScenario{srv: srv, pg: pg}
		p2 := variants[1]
		for _, base := range []string{"tumble_auction", "session_bidder", "running_having", "passthrough"} {
			ps.create(t, bidSink("crash", bidInstance(base, p2), exactlyOnce))
		}
		for _, base := range []string{"hop_div", "session_bidder", "passthrough"} {
			ps.create(t, bidSink("crash", bidInstance(base, p2), atLeastOnce))
		}
		return ps
	})
}

// crashSinkSet is a sinkSet that runSinkCrash checks mid-stream and by
// the epochs its exactly-once sinks recorded.
type crashSinkSet interface {
	sinkSet
	// checkPrefix checks a random exactly-once sink mid-stream against
	// the oracle over the prefix of log its last epoch read; false when
	// there was nothing to check.
	checkPrefix(t *testing.T, rng *rand.Rand, log []Row) bool
	// epochs checks and returns the epochs each exactly-once sink
	// recorded, in commit order, by sink.
	epochs(t *testing.T) map[string][]int64
}

func (ps *pgScenario) checkPrefix(t *testing.T, rng *rand.Rand, log []Row) bool {
	t.Helper()
	eo := exactlyOnceSinks(ps.sinks)
	return ps.checkCommittedPrefix(t, eo[rng.IntN(len(eo))], log)
}

func (ps *pgScenario) epochs(t *testing.T) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for _, s := range exactlyOnceSinks(ps.sinks) {
		out[s.name] = pgProgress(t, ps.pg, s.pgSchema())
	}
	return out
}

// epochStateChecker is a crashSinkSet that can check its exactly-once
// sinks' state after each epoch whose checkpoint obs saw completed
// against the oracle over the input that checkpoint read (prefix), and
// returns how many epochs it checked.
type epochStateChecker interface {
	checkEpochStates(t *testing.T, obs cpObserver, prefix logPrefix) int
}

// runSinkCrash runs the sinks setup creates (where: the external system)
// on a server with the bids table checkpointing every 200ms, while the
// log is posted in chunks with Idempotency-Keys and the server is
// SIGKILLed at random moments (STREAMSQL_CRASH_KILLS), checking a random
// exactly-once sink before each kill. At the end every sink equals the
// oracle over the whole log, and no epoch of a checkpoint seen failed is
// recorded.
func runSinkCrash(t *testing.T, where string, seed uint64, setup func(t *testing.T, srv *server) crashSinkSet) {
	begin := time.Now()
	kills := crashKills(t)
	rows := genBids(seed, max(crashMinRows, kills*crashRowsPerKill))
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, bidsDDL)
	sinks := setup(t, srv)
	chunks := idemChunks(t, "bids", rows, crashChunkRows, "sinkcrash")
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	poster := startCrashPoster(t, srv, chunks, kills)

	obs := cpObserver{}
	prefixChecks := 0
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(int) {
			obs.observe(t, srv, sinks.names())
			if sinks.checkPrefix(t, rng, rows) {
				prefixChecks++
			}
		},
	})
	poster.wait(t)

	checkEndOffset(t, srv, "bids", len(rows))
	srv.waitRunning(t, sinks.names()...)
	sinks.verify(t, "final", rows, nil)
	obs.observe(t, srv, sinks.names())
	judged, epochs := 0, 0
	for name, e := range sinks.epochs(t) {
		epochs += len(e)
		judged += obs.checkEpochs(t, name, e)
	}
	if c, ok := sinks.(epochStateChecker); ok {
		t.Logf("%s: the state after each of %d epochs checked", where, c.checkEpochStates(t, obs, httpPrefix(rows)))
	}
	t.Logf("%s crash recovery summary: kills=%d (under load %d, aimed at a request %d) mid-stream checks=%d rows=%d chunks=%d resends=%d replayed=%d sinks=%d epochs committed=%d (seen completed %d) posting=%v elapsed=%v",
		where, kills, ks.underLoad, ks.aimed, prefixChecks, len(rows), len(chunks), poster.stats.resends, poster.stats.replayed, len(sinks.names()),
		epochs, judged, poster.took.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// pgFaultRows: half the log is posted before the restart with the point
// armed; the third exactly-once commit after it (the second epoch of one
// of the two sinks) has come about 10 chunks later.
const pgFaultRows = 3600

// pgFaultPoints are the sink's crash points (internal/fault).
var pgFaultPoints = []string{"sink.before_commit", "sink.after_commit"}

// TestPGFaultPoints: for each sink fault point, a server whose
// exactly-once sinks (a tumble, sessions with HAVING) and an
// at-least-once one (a running aggregate with HAVING) have committed
// part of the log is SIGKILLed and restarted with the point armed, driven
// until it dies there (an epoch written in its PostgreSQL transaction but
// not committed; or committed with its progress record, the engine not
// told), restarted without it; the chunk in flight is resent and the rest
// posted. Every table equals the oracle; each epoch is recorded once.
func TestPGFaultPoints(t *testing.T) {
	for i, point := range pgFaultPoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			pg := sharedPG(t)
			runSinkFault(t, faultCase{point: point, hit: 3, onRestart: true}, testSeed(t, 420+uint64(i)), pgFaultRows,
				func(t *testing.T, srv *server, prefix string) sinkSet {
					ps := &pgScenario{srv: srv, pg: pg}
					p2 := variants[1]
					ps.create(t, bidSink(prefix, bidInstance("tumble_auction", p2), exactlyOnce),
						bidSink(prefix, bidInstance("session_bidder", p2), exactlyOnce),
						bidSink(prefix, bidInstance("running_having", p2), atLeastOnce))
					return ps
				})
		})
	}
}

// sinkSet is a server's external sinks: PostgreSQL tables (pgScenario)
// or Kafka topics (kafkaScenario).
type sinkSet interface {
	names() []string
	// verify checkpoints and checks every sink against the oracle over
	// bids and auctions, one subtest per sink under stage.
	verify(t *testing.T, stage string, bids, auctions []Row)
}

// runSinkFault runs fault case fc against the sinks setup creates (on a
// server with the bids table; prefix tells the test case's sinks apart)
// over a log of n rows: committed state first, the point armed on a
// restart, chunks posted until it fires, a restart without it, the chunk
// in flight resent and the rest posted; then every sink equals the oracle.
func runSinkFault(t *testing.T, fc faultCase, seed uint64, n int, setup func(t *testing.T, srv *server, prefix string) sinkSet) {
	rows := genBids(seed, n)
	chunks := idemChunks(t, "bids", rows, faultChunkRows, fc.point)
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, bidsDDL)
	sinks := setup(t, srv, strings.ReplaceAll(fc.point, ".", "_"))

	// Committed state first (so that the restart reads progress back),
	// then the point armed on a restart, and chunks until it fires.
	cs := &chunkSender{srv: srv}
	next, healthy := cs.armOnRestart(t, chunks, []string{"STREAMSQL_FAULT=" + fc.spec()})
	inFlight := -1
	deathLimit := time.Now().Add(faultDeathTimeout)
	if healthy {
		next, inFlight = cs.driveUntilDeath(t, chunks, next, deathLimit)
	}
	expectFaultDeath(t, srv, fc.point, deathLimit)
	t.Logf("%s: died with %d of %d chunks acknowledged; in flight: %d; serving before it died: %v", fc.spec(), next, len(chunks), inFlight, healthy)

	srv.env = nil
	srv.start(t)
	srv.waitRunning(t, sinks.names()...)
	if inFlight >= 0 {
		cs.post(t, chunks[inFlight])
		next = inFlight + 1
	}
	for ; next < len(chunks); next++ {
		cs.post(t, chunks[next])
	}
	checkEndOffset(t, srv, "bids", len(rows))
	sinks.verify(t, "after_restart", rows, nil)
}

const (
	pgDownRows   = 6000
	pgDownPause  = 60 * time.Millisecond // between chunks: posting lasts ~10s
	pgOutage     = 2500 * time.Millisecond
	pgDownWithin = 15 * time.Second // for a checkpoint to complete, and for each query to show retrying
)

// TestPGRestartDuringLoad: PostgreSQL stopped (fast shutdown) and later
// killed (immediate shutdown) while rows are posted, each time for a few
// seconds, then started again. Meanwhile every sink's query shows state
// retrying with an error naming PostgreSQL or the sink, and an
// exactly-once query keeps completing checkpoints (its epochs are
// journaled); once PostgreSQL is back every query runs again by itself.
// Nothing is lost: every table equals the oracle over the whole log.
func TestPGRestartDuringLoad(t *testing.T) {
	pg := startPG(t)
	rows := genBids(testSeed(t, 430), pgDownRows)
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, bidsDDL)
	ps := &pgScenario{srv: srv, pg: pg}
	p2 := variants[1]
	ps.create(t, bidSink("down", bidInstance("tumble_auction", p2), exactlyOnce),
		bidSink("down", bidInstance("session_bidder", p2), exactlyOnce),
		bidSink("down", bidInstance("running_having", p2), atLeastOnce),
		bidSink("down", bidInstance("hop_div", p2), atLeastOnce))
	eoName := ps.sinks[0].name
	chunks := idemChunks(t, "bids", rows, crashChunkRows, "pgdown")
	poster := startPoster(t, srv, chunks, 2*time.Minute, pgDownPause)

	for i, how := range []string{"stop", "kill"} {
		// Part of the log in first.
		for want := int64((1 + 2*i) * len(chunks) / 5); poster.acked.Load() < want; {
			select {
			case <-poster.done:
				t.Fatalf("posting ended (%v) with %d of %d chunks acknowledged", poster.err, poster.acked.Load(), len(chunks))
			case <-time.After(pollInterval):
			}
		}
		down := time.Now()
		if how == "stop" {
			pg.Stop()
		} else {
			pg.Kill()
		}
		// Checkpoints go on while the sink cannot commit: one started after
		// PostgreSQL went down completes.
		q := waitQuery(t, srv, eoName, pgDownWithin, func(queryInfo) bool { return completedSince(t, srv, eoName, down) })
		if !completedSince(t, srv, eoName, down) {
			t.Errorf("PostgreSQL %s: no checkpoint of %s started since completed within %v (state %q): epochs should be journaled while the sink lags", how, eoName, pgDownWithin, q.State)
		}
		for _, s := range ps.sinks {
			name := s.name
			q := waitQuery(t, srv, name, pgDownWithin, func(q queryInfo) bool { return q.State == "retrying" && queryError(q) != "" })
			if q.State != "retrying" {
				t.Errorf("PostgreSQL %s for %v: %s is %q (error %q), want retrying with an error", how, time.Since(down).Round(time.Millisecond), name, q.State, queryError(q))
				continue
			}
			re := regexp.MustCompile(`(?i)postgres|` + regexp.QuoteMeta(s.name) + `|` + regexp.QuoteMeta(s.pgTable()))
			if msg := queryError(q); !re.MatchString(msg) {
				t.Errorf("%s retrying with error %q: it names neither PostgreSQL nor the sink", name, msg)
			} else if s.name == eoName {
				t.Logf("PostgreSQL %s: %s retrying: %s", how, name, msg)
			}
		}
		for time.Since(down) < pgOutage {
			time.Sleep(pollInterval)
		}
		if err := pg.Start(); err != nil {
			t.Fatal(err)
		}
		t.Logf("PostgreSQL %s: down for %v; %d of %d chunks acknowledged when it came back", how, time.Since(down).Round(time.Millisecond), poster.acked.Load(), len(chunks))
		srv.waitRunning(t, ps.names()...)
	}
	poster.wait(t)
	checkEndOffset(t, srv, "bids", len(rows))
	ps.verify(t, "final", rows, nil)
}

// waitQuery polls GET /v1/queries/{name} until ok holds, for at most
// within, and returns the last answer.
func waitQuery(t *testing.T, srv *server, name string, within time.Duration, ok func(queryInfo) bool) queryInfo {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		q := srv.query(t, name)
		if ok(q) || time.Now().After(deadline) {
			return q
		}
		time.Sleep(pollInterval)
	}
}
