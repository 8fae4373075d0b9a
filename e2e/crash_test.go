package e2e

// Crash recovery under load: one server with frequent checkpoints, every
// view shape of the main scenario at parallelism 2, a poster goroutine
// posting the log in small chunks (each with its own Idempotency-Key,
// resent with the same key whenever it is not acknowledged), and the test
// SIGKILLing the server at random moments and restarting it on the same
// data directory. Once every chunk is acknowledged, every view's committed
// results must equal the oracle over the whole log exactly: nothing lost,
// nothing counted twice.
//
// STREAMSQL_CRASH_KILLS=N sets the number of kills (default 3; the full
// run uses at least 20).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	defaultCrashKills = 3
	crashRowsPerKill  = 800  // rows posted per kill (at least crashMinRows)
	crashMinRows      = 3000 //
	crashChunkRows    = 40   // rows per request
	// crashChunkPause spaces the chunks so that posting lasts about as long
	// as the kills do (a kill cycle is ~400ms of delay plus a restart).
	crashChunkPause = 25 * time.Millisecond
	crashMinDelay   = 50 * time.Millisecond  // between a restart and the next kill
	crashMaxDelay   = 700 * time.Millisecond //
	resendPause     = 20 * time.Millisecond  // before resending an unanswered chunk
)

// crashVariants are the variants of the crash test: parallelism 2, both
// emit modes.
var crashVariants = []variant{
	{"p2", 2, false},
	{"p2_owc", 2, true},
}

// idemChunk is a run of consecutive rows of one table's log posted as one
// NDJSON request with its own Idempotency-Key.
type idemChunk struct {
	table string
	key   string
	first int // index of rows[0] in its table's log
	rows  []Row
	body  []byte
}

// idemChunks cuts table's rows into chunks of size rows with keys
// prefix-0, prefix-1, ... and encodes them as posted (wireRows).
func idemChunks(t testing.TB, table string, rows []Row, size int, prefix string) []idemChunk {
	t.Helper()
	var out []idemChunk
	for start := 0; start < len(rows); start += size {
		part := rows[start:min(start+size, len(rows))]
		out = append(out, idemChunk{
			table: table,
			key:   prefix + "-" + strconv.Itoa(len(out)),
			first: start,
			rows:  part,
			body:  ndjson(t, wireRows(part, start)),
		})
	}
	return out
}

// ackChecker checks the acknowledgements of chunks posted in log order:
// each accepts all its rows, at offsets contiguous with the previous
// chunk's. A resend answered with the first answer passes too; a chunk
// appended twice does not (its offsets jump). The zero value expects the
// first chunk at offset 0 (a new table).
type ackChecker struct {
	next int64
}

func (a *ackChecker) check(c idemChunk, r response) (ingestAck, error) {
	var ack ingestAck
	if err := json.Unmarshal(r.body, &ack); err != nil {
		return ack, fmt.Errorf("chunk %s: decoding the acknowledgement %q: %v", c.key, truncate(r.body, 500), err)
	}
	n := int64(len(c.rows))
	if ack.Accepted != n || ack.LastOffset-ack.FirstOffset+1 != n {
		return ack, fmt.Errorf("chunk %s of %d rows (log rows %d..): acknowledged %+v (replayed: %v)", c.key, n, c.first, ack, r.replayed())
	}
	if ack.FirstOffset != a.next {
		return ack, fmt.Errorf("chunk %s (log rows %d..): first_offset %d, want %d, contiguous with the previous chunk (replayed: %v)", c.key, c.first, ack.FirstOffset, a.next, r.replayed())
	}
	a.next = ack.LastOffset + 1
	return ack, nil
}

// sendStats counts what sending chunks took.
type sendStats struct {
	resends  int // requests beyond the first per chunk
	replayed int // 200s that were the stored first answer (Idempotent-Replayed)
	// inFlight is true while a request is being sent (for a killer that
	// aims at one).
	inFlight atomic.Bool
}

// sendChunk posts c until it gets a 200, resending it with the same key
// after a transport error (the server died or is down) or a 503, until
// deadline or until stop is closed. Any other status is an error.
func sendChunk(srv *server, c idemChunk, deadline time.Time, stop <-chan struct{}, st *sendStats) (response, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			st.resends++
			select {
			case <-stop:
				return response{}, errors.New("stopped")
			case <-time.After(resendPause):
			}
		}
		st.inFlight.Store(true)
		r, err := srv.postIdem(c.table, c.key, c.body)
		st.inFlight.Store(false)
		if err == nil && r.status == http.StatusOK {
			if r.replayed() {
				st.replayed++
			}
			return r, nil
		}
		if err == nil && r.status != http.StatusServiceUnavailable {
			return r, fmt.Errorf("chunk %s: got %s, want 200", c.key, truncate([]byte(r.String()), 2000))
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("chunk %s: not acknowledged after %d attempts by the deadline (last: %v, %v)", c.key, attempt+1, err, r)
		}
	}
}

// crashKills is STREAMSQL_CRASH_KILLS, or the default.
func crashKills(t *testing.T) int {
	t.Helper()
	s := os.Getenv("STREAMSQL_CRASH_KILLS")
	if s == "" {
		return defaultCrashKills
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("STREAMSQL_CRASH_KILLS=%q: want a number of kills", s)
	}
	return n
}

func TestCrashRecovery(t *testing.T) {
	begin := time.Now()
	kills := crashKills(t)
	seed := testSeed(t, 10)
	rows := genBids(seed, max(crashMinRows, kills*crashRowsPerKill))
	sc := newScenario(t, instances(bidViews(), crashVariants), "--checkpoint-interval", "200ms")
	srv := sc.srv
	chunks := idemChunks(t, "bids", rows, crashChunkRows, "crash")
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	poster := startCrashPoster(t, srv, chunks, kills)

	// Before each kill two random views are checked mid-stream
	// (checkCommittedPrefix); one view is stopped before the first kill and
	// resumed after the second restart (stopProbe).
	prefixChecks := 0
	var probe stopProbe
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(k int) {
			for range 2 {
				vi := sc.views[rng.IntN(len(sc.views))]
				if !probe.holds(vi.name) && sc.checkCommittedPrefix(t, vi, rows) {
					prefixChecks++
				}
			}
			probe.beforeKill(t, srv, k, kills, func() string { return sc.views[rng.IntN(len(sc.views))].name })
		},
		afterRestart: func(k int) { probe.afterRestart(t, srv, k) },
	})
	poster.wait(t)

	if end, ok := srv.endOffset(t, "bids"); !ok || end != int64(len(rows)) {
		t.Errorf("table bids: end_offset %d (reported: %v), want %d: every row exactly once", end, ok, len(rows))
	}
	sc.posted = rows
	srv.waitRunning(t, instanceNames(sc.views)...)
	sc.verify(t, "final")
	t.Logf("crash recovery summary: kills=%d (under load %d, aimed at a request %d) mid-stream checks=%d rows=%d chunks=%d resends=%d replayed=%d views=%d posting=%v elapsed=%v",
		kills, ks.underLoad, ks.aimed, prefixChecks, len(rows), len(chunks), poster.stats.resends, poster.stats.replayed, len(sc.views), poster.took.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// crashPoster posts chunks in order, one at a time, from its own
// goroutine, crashChunkPause (or its pause) apart; each is resent with its key until it
// is acknowledged (sendChunk), and every acknowledgement is checked
// against its table's log so far (one ackChecker per table).
type crashPoster struct {
	srv    *server
	chunks []idemChunk
	limit  time.Time     // posting must be done by then
	pause  time.Duration // between chunks
	acked  atomic.Int64
	stats  sendStats
	// err and took are set before done is closed.
	err  error
	took time.Duration
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startCrashPoster starts posting chunks to srv, with a deadline that
// allows for kills restarts; the poster is stopped when the test ends.
func startCrashPoster(t *testing.T, srv *server, chunks []idemChunk, kills int) *crashPoster {
	t.Helper()
	return startPoster(t, srv, chunks, 90*time.Second+time.Duration(kills)*5*time.Second, crashChunkPause)
}

// startPoster starts posting chunks to srv, pause apart, all within
// limit; the poster is stopped when the test ends.
func startPoster(t *testing.T, srv *server, chunks []idemChunk, limit, pause time.Duration) *crashPoster {
	t.Helper()
	p := &crashPoster{srv: srv, chunks: chunks, limit: time.Now().Add(limit), pause: pause,
		stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	t.Cleanup(func() { p.halt(t) }) // after a failure: before the server is killed for good
	return p
}

func (p *crashPoster) run() {
	start := time.Now()
	defer close(p.done)
	defer func() { p.took = time.Since(start) }()
	acks := map[string]*ackChecker{}
	for i, c := range p.chunks {
		if i > 0 {
			select {
			case <-p.stop:
				p.err = errors.New("stopped")
				return
			case <-time.After(p.pause):
			}
		}
		r, err := sendChunk(p.srv, c, p.limit, p.stop, &p.stats)
		if err == nil {
			if acks[c.table] == nil {
				acks[c.table] = &ackChecker{}
			}
			_, err = acks[c.table].check(c, r)
		}
		if err != nil {
			p.err = err
			return
		}
		p.acked.Add(1)
	}
}

// halt stops the poster and waits for it.
func (p *crashPoster) halt(t *testing.T) {
	p.once.Do(func() {
		close(p.stop)
		select {
		case <-p.done:
		case <-time.After(requestTimeout + time.Second):
			t.Error("the poster did not stop")
		}
	})
}

// wait waits until every chunk is acknowledged; a posting error fails t.
func (p *crashPoster) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(time.Until(p.limit) + requestTimeout):
		t.Fatalf("the poster did not finish (%d of %d chunks acknowledged)", p.acked.Load(), len(p.chunks))
	}
	if p.err != nil {
		t.Fatalf("posting: %v", p.err)
	}
}

// crashHooks are what a crash test does around each kill.
type crashHooks struct {
	beforeKill func(k int) // after the random delay, before aiming and killing
	// afterLaunch, if set, runs once the new process is started, before it
	// answers (its listener may not be open yet): a request it sends waits
	// in the listener's backlog while the data directory opens and is
	// served at once after, as a rule before the restored queries' first
	// barrier publishes anything.
	afterLaunch  func(k int)
	afterRestart func(k int) // once the restarted server answers /healthz
}

// killStats counts kills that hit the server while chunks were still
// unacknowledged, and kills aimed at a request in flight.
type killStats struct{ underLoad, aimed int }

// killLoad is the load runKills kills the server under: a crashPoster,
// or records produced into Kafka.
type killLoad interface {
	finished() <-chan struct{} // closed once the load is done
	failure() error            // why it ended early, once finished
	busy() bool                // a request is in flight
	pending() bool             // some of the load is not done yet
}

func (p *crashPoster) finished() <-chan struct{} { return p.done }
func (p *crashPoster) failure() error            { return p.err }
func (p *crashPoster) busy() bool                { return p.stats.inFlight.Load() }
func (p *crashPoster) pending() bool             { return p.acked.Load() < int64(len(p.chunks)) }

// runKills SIGKILLs and restarts srv kills times under load p: a random
// delay after each restart (crashMinDelay..crashMaxDelay), then, every
// other kill, a wait (up to aimLimit) for a request in flight, landing
// 0-8ms into it, so that some in-flight chunks are appended before the
// kill and some are not.
func runKills(t *testing.T, srv *server, p killLoad, kills int, rng *rand.Rand, h crashHooks) killStats {
	t.Helper()
	const aimLimit = 500 * time.Millisecond
	var ks killStats
	for k := 0; k < kills; k++ {
		delay := crashMinDelay + time.Duration(rng.Int64N(int64(crashMaxDelay-crashMinDelay)+1))
		select {
		case <-time.After(delay):
		case <-p.finished():
			if err := p.failure(); err != nil {
				t.Fatalf("the load failed before kill %d: %v", k+1, err)
			}
			// Every chunk is in: the remaining kills hit an idle server.
			time.Sleep(delay)
		}
		if h.beforeKill != nil {
			h.beforeKill(k)
		}
		if k%2 == 1 {
			for limit := time.Now().Add(aimLimit); !p.busy() && time.Now().Before(limit); {
				time.Sleep(200 * time.Microsecond)
			}
			if p.busy() {
				ks.aimed++
				time.Sleep(time.Duration(rng.Int64N(int64(8 * time.Millisecond))))
			}
		}
		if p.pending() {
			ks.underLoad++
		}
		srv.kill(t)
		srv.launch(t)
		if h.afterLaunch != nil {
			h.afterLaunch(k)
		}
		srv.awaitStart(t)
		if h.afterRestart != nil {
			h.afterRestart(k)
		}
	}
	return ks
}

// stopProbe stops one view before the first kill (when there are at least
// two) and resumes it after the second restart: across the restart in
// between it must stay stopped, its committed results unchanged.
type stopProbe struct {
	name string   // the view stopped now, if any
	rows []string // its committed results when it was stopped
}

// holds reports whether view name is stopped by the probe now.
func (sp *stopProbe) holds(name string) bool { return sp.name != "" && sp.name == name }

func (sp *stopProbe) beforeKill(t *testing.T, srv *server, k, kills int, pick func() string) {
	t.Helper()
	if k != 0 || kills < 2 {
		return
	}
	sp.name = pick()
	srv.stopQuery(t, sp.name)
	sp.rows = canonicalRows(srv.results(t, sp.name).Rows)
}

func (sp *stopProbe) afterRestart(t *testing.T, srv *server, k int) {
	t.Helper()
	if sp.name == "" {
		return
	}
	if q := srv.query(t, sp.name); q.State != "stopped" {
		t.Errorf("after restart %d: %s is %q, want stopped (it was stopped before the kill)", k+1, sp.name, q.State)
	}
	if d := diffCanonical(sp.rows, canonicalRows(srv.results(t, sp.name).Rows), 5); d != "" {
		t.Errorf("after restart %d: committed results of the stopped view %s changed: %s", k+1, sp.name, d)
	}
	if k == 1 {
		srv.resumeQuery(t, sp.name)
		sp.name = ""
	}
}

// committedCheckpoint is the checkpoint a query's results are committed at
// (sinks.results.committed_checkpoint, else last_checkpoint), 0 if none.
func committedCheckpoint(q queryInfo) int64 {
	var v any = q.raw["last_checkpoint"]
	if sinks, ok := q.raw["sinks"].(map[string]any); ok {
		if res, ok := sinks["results"].(map[string]any); ok {
			if c, ok := res["committed_checkpoint"]; ok {
				v = c
			}
		}
	}
	n, _ := strconv.ParseInt(jsonText(v), 10, 64)
	return n
}

// stableCommitted reads a running view's committed results together with
// the checkpoint they are committed at and the source offsets that
// checkpoint recorded (per table). It reports false when it found no
// stable committed checkpoint with recorded offsets (one taken before this
// process started, or a checkpoint completing during every attempt).
func stableCommitted(t *testing.T, srv *server, name string) (int64, resultSet, map[string]int64, bool) {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			time.Sleep(pollInterval)
		}
		before := committedCheckpoint(srv.query(t, name))
		got := srv.results(t, name)
		if before == 0 || committedCheckpoint(srv.query(t, name)) != before {
			continue // results may be from another checkpoint
		}
		for _, c := range srv.checkpointHistory(t, name) {
			if id, _ := c.ID.Int64(); id == before && c.Status == "completed" && len(c.Offsets) > 0 {
				return before, got, c.Offsets, true
			}
		}
	}
	return 0, resultSet{}, nil, false
}

// checkCommittedPrefix checks a running view mid-stream: its committed
// results must equal the oracle over exactly the log prefix its committed
// checkpoint read (the offset that checkpoint recorded for bids), where log
// holds every row in log order, acknowledged or not yet. It reports false
// when stableCommitted found nothing to check.
func (sc *scenario) checkCommittedPrefix(t *testing.T, vi viewInstance, log []Row) bool {
	t.Helper()
	id, got, offsets, ok := stableCommitted(t, sc.srv, vi.name)
	if !ok {
		return false
	}
	off, ok := offsets["bids"]
	if !ok {
		return false
	}
	if off > int64(len(log)) {
		t.Errorf("%s: checkpoint %d recorded offset %d for bids, beyond the %d rows of the log", vi.name, id, off, len(log))
		return true
	}
	prefix := log[:off]
	if vi.def.kind == procTime {
		var total int64
		for _, r := range got.Rows {
			n, _ := strconv.ParseInt(jsonText(r["n"]), 10, 64)
			total += n
		}
		if total != off {
			t.Errorf("%s at checkpoint %d (offset %d): sum of COUNT(*) = %d, want %d", vi.name, id, off, total, off)
		}
		return true
	}
	want := vi.expected(prefix)
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: committed results at checkpoint %d differ from the oracle over the %d rows before its offset (%d rows served, %d expected): %s",
			vi.name, id, off, len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
	}
	return true
}
