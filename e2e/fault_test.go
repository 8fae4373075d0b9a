package e2e

// Fault points (internal/fault): for each named crash point, a server is
// started with STREAMSQL_FAULT arming it, driven (views checkpointing every
// 200ms, chunks posted with Idempotency-Keys) until the process kills
// itself there, then restarted without the fault. The chunk in flight when
// it died is resent with its key, the rest of the log posted, and every
// view's committed results must equal the oracle over the whole log, with
// rows_in and the table's end offset equal to the number of rows.

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	faultRows      = 2400
	faultChunkRows = 100
	faultPause     = 40 * time.Millisecond // between chunks while driving
	// faultDeathTimeout bounds the time from the first request that can
	// reach the armed point until the process is gone.
	faultDeathTimeout = 20 * time.Second
	faultPostTimeout  = 30 * time.Second // for acknowledging chunks after the restart
)

type faultCase struct {
	point string // the fault point
	hit   int    // which hit of it kills (STREAMSQL_FAULT=point@hit)
	// onRestart arms the point only on a restart after a completed
	// checkpoint (restore.during is reached only when there is state to
	// restore).
	onRestart bool
	// ingest: the process dies inside an ingest request, the hit-th one
	// (each chunk is posted alone, so it is one append group).
	ingest bool
}

func (fc faultCase) spec() string { return fc.point + "@" + strconv.Itoa(fc.hit) }

// The hit counts put the crash part-way through posting: the views have
// 3 tasks each (a source and 2 aggregation tasks), 4 views checkpoint every
// 200ms.
var faultCases = []faultCase{
	{point: "ingest.after_write", hit: 7, ingest: true},
	{point: "ingest.after_sync", hit: 7, ingest: true},
	{point: "checkpoint.after_state", hit: 30},
	{point: "checkpoint.before_marker", hit: 10},
	{point: "checkpoint.after_marker", hit: 10},
	// Early in the restore (a source's chained operators, restored while
	// the job is built) and later (aggregation tasks restoring on their own
	// goroutines). Both have so far always fired before the API listened.
	{point: "restore.during", hit: 2, onRestart: true},
	{point: "restore.during", hit: 9, onRestart: true},
}

// faultViews are the views of the fault tests: a tumble, a hop in
// on_window_close mode, sessions with HAVING and a running aggregate, at
// parallelism 2.
func faultViews() []viewInstance {
	return []viewInstance{
		{name: "tumble_auction_p2", def: viewByBase("tumble_auction"), v: variants[1]},
		{name: "hop_nodiv_p2_owc", def: viewByBase("hop_nodiv"), v: variants[3]},
		{name: "session_bidder_p2", def: viewByBase("session_bidder"), v: variants[1]},
		{name: "running_auction_p2", def: viewByBase("running_auction"), v: variants[1]},
	}
}

func TestFaultPoints(t *testing.T) {
	for i, fc := range faultCases {
		t.Run(fc.spec(), func(t *testing.T) {
			t.Parallel()
			runFault(t, fc, testSeed(t, 200+uint64(i)))
		})
	}
}

func runFault(t *testing.T, fc faultCase, seed uint64) {
	rows := genBids(seed, faultRows)
	chunks := idemChunks(t, "bids", rows, faultChunkRows, fc.point)
	arm := []string{"STREAMSQL_FAULT=" + fc.spec()}

	srv := newServer(t, "--checkpoint-interval", "200ms")
	if !fc.onRestart {
		srv.env = arm
	}
	srv.start(t)
	sc := &scenario{srv: srv}
	srv.sql(t, bidsDDL)
	sc.create(t, faultViews())
	names := instanceNames(sc.views)

	cs := &chunkSender{srv: srv}
	next := 0 // the next chunk to post

	healthy := true
	if fc.onRestart {
		next, healthy = cs.armOnRestart(t, chunks, arm)
	}

	// Drive the server until it dies.
	inFlight := -1 // the chunk whose request got no answer
	deathLimit := time.Now().Add(faultDeathTimeout)
	if healthy {
		next, inFlight = cs.driveUntilDeath(t, chunks, next, deathLimit)
	}
	expectFaultDeath(t, srv, fc.point, deathLimit)
	t.Logf("%s: died with %d of %d chunks acknowledged; in flight: %d; serving before it died: %v",
		fc.spec(), next, len(chunks), inFlight, healthy)

	if fc.ingest {
		// Each chunk is one append group: the hit-th request is the one
		// that died, and it got no 200 (it got no answer at all).
		if inFlight != fc.hit-1 {
			t.Fatalf("the process died with chunk %d in flight, want chunk %d (the %d-th append)", inFlight, fc.hit-1, fc.hit)
		}
	}

	// Restart without the fault; resend the unanswered chunk with its key.
	srv.env = nil
	srv.start(t)
	srv.waitRunning(t, names...)
	if inFlight >= 0 {
		c := chunks[inFlight]
		r := cs.post(t, c)
		switch fc.point {
		case "ingest.after_sync":
			// The key is committed in the same sync as the rows: the
			// resend must get the first answer and append nothing.
			if !r.replayed() {
				t.Errorf("resend of chunk %s, synced before the crash: no Idempotent-Replayed header, so it was appended again (%s)", c.key, r)
			}
		case "ingest.after_write":
			// Unsynced rows may or may not have survived the crash (SIGKILL
			// keeps the page cache); either way the rows are in the log
			// exactly once now, and a second resend appends nothing.
			t.Logf("resend of chunk %s after the crash: replayed %v", c.key, r.replayed())
			again, err := sendChunk(srv, c, time.Now().Add(faultPostTimeout), nil, &cs.stats)
			if err != nil {
				t.Fatal(err)
			}
			if !again.replayed() || string(again.body) != string(r.body) {
				t.Errorf("second resend of chunk %s: got %s (replayed %v), want the first answer %s again", c.key, again, again.replayed(), r)
			}
		}
		next = inFlight + 1
	}
	for ; next < len(chunks); next++ {
		cs.post(t, chunks[next])
	}

	if end, ok := srv.endOffset(t, "bids"); !ok || end != int64(len(rows)) {
		t.Errorf("table bids: end_offset %d (reported: %v), want %d: every row exactly once", end, ok, len(rows))
	}
	sc.posted = rows
	sc.verify(t, "after_restart")
}

// chunkSender posts chunks of one table's log in order from the test's
// goroutine (sendChunk: resent with their key until acknowledged) and
// checks every acknowledgement against the log so far.
type chunkSender struct {
	srv   *server
	ac    ackChecker
	stats sendStats
}

// post sends c until it is acknowledged, within faultPostTimeout, and
// returns the answer.
func (cs *chunkSender) post(t *testing.T, c idemChunk) response {
	t.Helper()
	r, err := sendChunk(cs.srv, c, time.Now().Add(faultPostTimeout), nil, &cs.stats)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ac.check(c, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// armOnRestart makes state to restore: a third of the log posted and
// checkpointed, more chunks acknowledged after it (up to half the log);
// then SIGKILL, and a start with env arm, without waiting for the API
// (the process may die before it serves). It returns the next chunk to
// post and whether the server answered /healthz.
func (cs *chunkSender) armOnRestart(t *testing.T, chunks []idemChunk, arm []string) (int, bool) {
	t.Helper()
	next := 0
	for ; next < len(chunks)/3; next++ {
		cs.post(t, chunks[next])
	}
	cs.srv.checkpoint(t)
	for ; next < len(chunks)/2; next++ {
		cs.post(t, chunks[next])
	}
	cs.srv.kill(t)
	cs.srv.env = arm
	cs.srv.launch(t)
	return next, cs.srv.waitHealthy(t)
}

// driveUntilDeath posts chunks from next on, faultPause apart, each once,
// until a request gets no answer (a transport error: the process is
// going, and that chunk is in flight), every chunk is acknowledged, or
// deadline. It returns the next chunk to post and the chunk in flight
// (-1 if none).
func (cs *chunkSender) driveUntilDeath(t *testing.T, chunks []idemChunk, next int, deadline time.Time) (int, int) {
	t.Helper()
	for ; next < len(chunks) && time.Now().Before(deadline); next++ {
		r, err := cs.srv.postIdem(chunks[next].table, chunks[next].key, chunks[next].body)
		if err != nil {
			t.Logf("chunk %s got no answer: %v", chunks[next].key, err)
			return next, next
		}
		if r.status != http.StatusOK {
			t.Fatalf("chunk %s: got %s, want 200", chunks[next].key, truncate([]byte(r.String()), 2000))
		}
		if _, err := cs.ac.check(chunks[next], r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(faultPause)
	}
	return next, -1
}

// expectFaultDeath waits until deadline (and a second) for the server to
// end by itself, and checks that it died of SIGKILL at fault point point.
func expectFaultDeath(t *testing.T, srv *server, point string, deadline time.Time) {
	t.Helper()
	ps := srv.waitExit(t, time.Until(deadline)+time.Second)
	if !killedBySIGKILL(ps) {
		t.Fatalf("the server ended with %v, want SIGKILL from fault point %s", ps, point)
	}
	if want := "fault: crashing at " + point; !strings.Contains(srv.runLog(), want) {
		t.Errorf("the server's log does not say %q: it died elsewhere", want)
	}
}
