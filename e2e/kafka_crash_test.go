package e2e

// Kafka sources and sinks through failures: SIGKILL of the server at
// random moments while records are produced (the source's offsets must
// be restored exactly) or rows posted (sinks in both delivery modes), a
// crash at each of the sink's fault points, and the broker stopped and
// killed under load. The broker runs in a process of its own
// (internal/kafkatest) and lives through the server's deaths.

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/kafkatest"
)

const (
	kafkaChunkRecords = 40
	kafkaChunkPause   = 25 * time.Millisecond // between chunks produced under kills
)

// produceLoad produces n items from its own goroutine, pause apart: the
// load of runKills, for the loads below. send produces item i and logs
// what the broker took; it is called with sendMu held, so that holding
// sendMu, the log has every record the broker has.
type produceLoad struct {
	n        int
	send     func(i int) error
	pause    time.Duration
	what     string // the items, for messages
	sendMu   sync.Mutex
	sent     atomic.Int64
	inFlight atomic.Bool
	err      error // set before done is closed
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

// startProduceLoad starts the load; it is stopped when the test ends.
func startProduceLoad(t *testing.T, n int, what string, pause time.Duration, send func(i int) error) *produceLoad {
	l := &produceLoad{n: n, send: send, what: what, pause: pause, stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	t.Cleanup(func() { l.once.Do(func() { close(l.stop) }); <-l.done })
	return l
}

func (l *produceLoad) run() {
	defer close(l.done)
	for i := range l.n {
		if i > 0 {
			select {
			case <-l.stop:
				l.err = errors.New("stopped")
				return
			case <-time.After(l.pause):
			}
		}
		l.sendMu.Lock()
		l.inFlight.Store(true)
		err := l.send(i)
		l.inFlight.Store(false)
		l.sendMu.Unlock()
		if err != nil {
			l.err = err
			return
		}
		l.sent.Add(1)
	}
}

func (l *produceLoad) finished() <-chan struct{} { return l.done }
func (l *produceLoad) failure() error            { return l.err }
func (l *produceLoad) busy() bool                { return l.inFlight.Load() }
func (l *produceLoad) pending() bool             { return l.sent.Load() < int64(l.n) }

// wait waits until every item is produced; an error fails t.
func (l *produceLoad) wait(t *testing.T) {
	t.Helper()
	<-l.done
	if l.err != nil {
		t.Fatalf("producing: %v (%d of %d %s produced)", l.err, l.sent.Load(), l.n, l.what)
	}
}

// kafkaLoad produces chunks into the source topic and adds them to its
// log.
type kafkaLoad struct {
	*produceLoad
	log *kafkaLog
}

// startKafkaLoad starts producing chunks with p into log; the load is
// stopped when the test ends.
func startKafkaLoad(t *testing.T, p *kafkatest.Producer, log *kafkaLog, chunks []kafkaChunk, pause time.Duration) *kafkaLoad {
	return &kafkaLoad{log: log, produceLoad: startProduceLoad(t, len(chunks), "chunks", pause, func(i int) error {
		sent, err := p.Send(chunks[i].recs, chunks[i].txn)
		if err == nil {
			log.add(chunks[i], sent)
		}
		return err
	})}
}

// prefix is kafkaPrefix over the load's log, read with every record the
// broker has in it.
func (l *kafkaLoad) prefix(c checkpointStat) ([]Row, string, error) {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	return kafkaPrefix(l.log)(c)
}

// checkKafkaPrefix checks a view over the Kafka source mid-stream: its
// committed results must equal the oracle over exactly the records below
// the per-partition offsets its committed checkpoint recorded. It reports
// false when stableCommitted found nothing to check.
func checkKafkaPrefix(t *testing.T, srv *server, vi viewInstance, l *kafkaLoad) bool {
	t.Helper()
	id, got, offsets, ok := stableCommitted(t, srv, vi.name)
	if !ok {
		return false
	}
	in, what, err := l.prefix(checkpointStat{Offsets: offsets})
	if err != nil {
		t.Errorf("%s: checkpoint %d recorded offsets %v: none per partition (bids[0], ...)", vi.name, id, offsets)
		return true
	}
	want := vi.expected(in)
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: committed results at checkpoint %d differ from the oracle over %s (%d rows served, %d expected): %s",
			vi.name, id, what, len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
	}
	return true
}

// TestKafkaSourceCrash: views over the Kafka source (kafkaSourceViews)
// checkpointing every 200ms while records are produced into three
// partitions (outside transactions, committed, aborted, undecodable ones
// among them) and the server is SIGKILLed at random moments
// (STREAMSQL_CRASH_KILLS) and restarted. Before each kill two random
// views are checked against the oracle over exactly the records below the
// offsets their committed checkpoint recorded; at the end every view equals
// the oracle over every committed decodable record (no row twice, none
// missing: the append-only views show either), bad_records counts each
// bad record once, and the offsets are the topic's end. The issue's
// Kafka-to-Kafka counts (exactly once) and sessions (at least once) go
// through the same kills: mid-stream and for every epoch seen, the
// exactly-once topic's state equals the oracle over the records below
// that checkpoint's offsets; at the end both equal it over all.
func TestKafkaSourceCrash(t *testing.T) {
	begin := time.Now()
	kills := crashKills(t)
	seed := testSeed(t, 520)
	b := startBroker(t)
	log := &kafkaLog{}
	p := newProducer(t, b, kafkaBidsTopic, kafkaBidsPartitions)
	chunks := genKafkaChunks(seed, max(2000, kills*crashRowsPerKill), kafkaChunkRecords)
	// The first chunk before the views: the topic exists.
	produceChunk(t, p, log, chunks[0])
	sc := &scenario{srv: startServer(t, "--checkpoint-interval", "200ms")}
	sc.srv.sql(t, kafkaBidsDDL(b.Addr(), kafkaBidsTopic, ""))
	sc.create(t, kafkaSourceViews())
	srv := sc.srv
	ks := &kafkaScenario{srv: srv, broker: b}
	ks.create(t, countsSink(exactlyOnce), kafkaBidSink(bidInstance("session_bidder", variants[1]), atLeastOnce))
	load := startKafkaLoad(t, p, log, chunks[1:], kafkaChunkPause)

	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	obs := cpObserver{}
	prefixChecks := 0
	kst := runKills(t, srv, load, kills, rng, crashHooks{
		beforeKill: func(int) {
			for range 2 {
				if checkKafkaPrefix(t, srv, sc.views[rng.IntN(len(sc.views))], load) {
					prefixChecks++
				}
			}
			obs.observe(t, srv, ks.names())
			if ks.checkCommittedPrefix(t, ks.sinks[0], load.prefix) {
				prefixChecks++
			}
		},
	})
	load.wait(t)

	srv.waitRunning(t, append(instanceNames(sc.views), ks.names()...)...)
	sc.verifyKafka(t, "final", b, log, false)
	ks.verify(t, "final_sinks", sc.posted, nil)
	obs.observe(t, srv, ks.names())
	epochs := ks.progress(t, ks.sinks[0])
	judged := obs.checkEpochs(t, ks.sinks[0].name, epochs)
	states := ks.checkEpochStates(t, obs, kafkaPrefix(log))
	t.Logf("Kafka source crash summary: kills=%d (under load %d, aimed at a send %d) mid-stream checks=%d rows=%d bad=%d aborted=%d chunks=%d views=%d; sink %s: epochs=%d (seen completed %d, state checked %d) elapsed=%v",
		kills, kst.underLoad, kst.aimed, prefixChecks, len(sc.posted), len(log.bad), log.aborted, len(chunks), len(sc.views),
		ks.sinks[0].name, len(epochs), judged, states, time.Since(begin).Round(time.Millisecond))
}

// TestKafkaSinkCrashRecovery: TestPGCrashRecovery for Kafka sinks. Sinks
// of a tumble with every aggregate, sessions with HAVING, a running
// aggregate with HAVING and an append-only query (keyed by _row_id),
// exactly once, and of HOP with HAVING, the sessions and the append-only
// query at least once, at parallelism 2, checkpointing every 200ms, while
// the log is posted in chunks with Idempotency-Keys and the server is
// SIGKILLed at random moments (STREAMSQL_CRASH_KILLS). Before each kill a
// random exactly-once topic is checked, at the last epoch of its progress
// topic, against the oracle over that epoch's log prefix. At the end every
// topic equals the oracle over the whole log (the latest record per key);
// each exactly-once sink recorded each epoch once, increasing, none of a
// checkpoint seen failed.
func TestKafkaSinkCrashRecovery(t *testing.T) {
	b := startBroker(t)
	var ks *kafkaScenario
	runSinkCrash(t, "Kafka", testSeed(t, 530), func(t *testing.T, srv *server) crashSinkSet {
		ks = &kafkaScenario{srv: srv, broker: b}
		p2 := variants[1]
		for _, base := range []string{"tumble_auction", "session_bidder", "running_having", "passthrough"} {
			ks.create(t, kafkaBidSink(bidInstance(base, p2), exactlyOnce))
		}
		for _, base := range []string{"hop_div", "session_bidder", "passthrough"} {
			ks.create(t, kafkaBidSink(bidInstance(base, p2), atLeastOnce))
		}
		return ks
	})
	aborted := 0
	for _, s := range exactlyOnceSinks(ks.sinks) {
		aborted += abortedRecords(t, b, s.sinkTopic())
	}
	t.Logf("records of aborted transactions left out by read_committed reads: %d", aborted)
}

func (ks *kafkaScenario) checkPrefix(t *testing.T, rng *rand.Rand, log []Row) bool {
	t.Helper()
	eo := exactlyOnceSinks(ks.sinks)
	return ks.checkCommittedPrefix(t, eo[rng.IntN(len(eo))], httpPrefix(log))
}

func (ks *kafkaScenario) epochs(t *testing.T) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for _, s := range exactlyOnceSinks(ks.sinks) {
		out[s.name] = ks.progress(t, s)
	}
	return out
}

// TestKafkaSinkFaultPoints: TestPGFaultPoints for Kafka sinks (exactly
// once: a tumble, sessions with HAVING; at least once: a running aggregate
// with HAVING): a crash with an epoch's records produced in its
// transaction, not committed (the restart fences the transactional id,
// which aborts it), and one after the commit, the engine not told (the
// restart reads the epoch back from the progress topic and does not
// publish it again). Every topic equals the oracle; each epoch is in its
// progress topic once.
func TestKafkaSinkFaultPoints(t *testing.T) {
	for i, point := range pgFaultPoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			var ks *kafkaScenario
			seed := testSeed(t, 540+uint64(i))
			runSinkFault(t, faultCase{point: point, hit: 3, onRestart: true}, seed, pgFaultRows,
				func(t *testing.T, srv *server, _ string) sinkSet {
					ks = &kafkaScenario{srv: srv, broker: b}
					p2 := variants[1]
					ks.create(t, kafkaBidSink(bidInstance("tumble_auction", p2), exactlyOnce),
						kafkaBidSink(bidInstance("session_bidder", p2), exactlyOnce),
						kafkaBidSink(bidInstance("running_having", p2), atLeastOnce))
					return ks
				})
			obs := cpObserver{}
			obs.observe(t, ks.srv, ks.names())
			t.Logf("the state after each of %d epochs checked", ks.checkEpochStates(t, obs, httpPrefix(genBids(seed, pgFaultRows))))
			// The epoch that died in its transaction was aborted when the
			// restart fenced the transactional id.
			aborted := 0
			for _, s := range ks.sinks[:2] {
				aborted += abortedRecords(t, b, s.sinkTopic()) + abortedRecords(t, b, s.progressTopic())
			}
			t.Logf("%s: %d records of aborted transactions left out by read_committed reads", point, aborted)
			if point == "sink.before_commit" && aborted == 0 {
				t.Errorf("%s: no record of an aborted transaction in the exactly-once sinks' topics: the epoch the server died in was not written", point)
			}
		})
	}
}

const (
	kafkaOutage      = 2500 * time.Millisecond
	kafkaDownWithin  = 15 * time.Second // for each query to show retrying
	kafkaBackWithin  = 30 * time.Second // for each query to run again
	kafkaOutageParts = 3                // the log is produced in this many parts around the outages
)

// TestKafkaBrokerRestart: the broker stopped (a clean shutdown) and later
// killed, each time for a few seconds, between parts of the log produced
// into the Kafka source; views over the source and Kafka-to-Kafka sinks
// (the counts exactly once, a tumble at least once) read and
// write it. Meanwhile every query shows state retrying with an error
// naming the broker or the topic; once the broker is back on its data
// directory every query runs again by itself, without a restart of the
// server. Nothing is lost or doubled: every view and every sink topic
// equals the oracle over every committed decodable record.
func TestKafkaBrokerRestart(t *testing.T) {
	seed := testSeed(t, 550)
	b := startBroker(t)
	log := &kafkaLog{}
	p := newProducer(t, b, kafkaBidsTopic, kafkaBidsPartitions)
	chunks := genKafkaChunks(seed, 1800, kafkaChunkRecords)
	produceChunk(t, p, log, chunks[0])
	srv := startServer(t, "--checkpoint-interval", "200ms")
	srv.sql(t, kafkaBidsDDL(b.Addr(), kafkaBidsTopic, ""))
	sc := &scenario{srv: srv}
	sc.create(t, []viewInstance{bidInstance("tumble_auction", variants[1]), bidInstance("session_bidder", variants[0]), {name: "meta_p1", def: metaView, v: variants[0]}})
	ks := &kafkaScenario{srv: srv, broker: b}
	ks.create(t, countsSink(exactlyOnce), kafkaBidSink(bidInstance("tumble_auction", variants[1]), atLeastOnce))
	names := append(instanceNames(sc.views), ks.names()...)
	down := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(b.Addr()) + `|` + kafkaBidsTopic + `|broker|kafka`)

	next := 1
	for part, how := range []string{"stop", "kill", ""} {
		for ; next < (part+1)*len(chunks)/kafkaOutageParts; next++ {
			produceChunk(t, p, log, chunks[next])
		}
		if how == "" {
			break
		}
		// The queries read what is there before the broker goes.
		sc.verifyKafka(t, "before_"+how, b, log, true)
		began := time.Now()
		if how == "stop" {
			if err := b.Stop(); err != nil {
				t.Fatal(err)
			}
		} else {
			b.Kill()
		}
		for _, name := range names {
			waitRetrying(t, srv, name, kafkaDownWithin, down)
		}
		for time.Since(began) < kafkaOutage {
			time.Sleep(pollInterval)
		}
		if err := b.Restart(); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			q := waitQuery(t, srv, name, kafkaBackWithin, func(q queryInfo) bool { return q.State == "running" })
			if q.State != "running" {
				t.Fatalf("broker %s: %s is %q (error %q) %v after the broker came back, want running", how, name, q.State, queryError(q), kafkaBackWithin)
			}
		}
		t.Logf("broker %s: down for %v; every query running %v after it came back", how, time.Since(began).Round(time.Millisecond), time.Since(began).Round(time.Millisecond)-kafkaOutage)
	}
	sc.verifyKafka(t, "final", b, log, false)
	ks.verify(t, "final_sinks", sc.posted, nil)
}
