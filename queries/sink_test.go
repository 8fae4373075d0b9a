package queries

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/runtime/sink"
)

// memTarget is an external system in memory: tables of rows by key and
// progress records, shared by every publisher opened on it (so it
// outlives an engine restart). It can be down, and it can lose the answer
// to a commit it made.
type memTarget struct {
	mu       sync.Mutex
	rows     map[string]map[string]plan.Row // sink id -> key -> row
	progress map[string][]uint64            // sink id -> epochs committed
	applied  int                            // at-least-once batches
	down     error                          // every call fails with it
	// loseAnswer: the next CommitEpoch commits, then reports an error.
	loseAnswer bool
	// permanent: Open fails for good.
	permanent error
	// dupes counts CommitEpoch calls for an epoch already recorded.
	dupes int
	// deletes counts the deletes applied.
	deletes int
	// gate, when set, makes each CommitEpoch take a token from it first: a
	// sink that commits only as fast as the test feeds it (closed: at
	// once). Set before the engine starts.
	gate chan struct{}
}

func newMemTarget() *memTarget {
	return &memTarget{rows: map[string]map[string]plan.Row{}, progress: map[string][]uint64{}}
}

func (m *memTarget) factory(spec sink.Spec) (sink.Publisher, error) {
	return &memPublisher{m: m, spec: spec}, nil
}

func (m *memTarget) setDown(err error) { m.mu.Lock(); m.down = err; m.mu.Unlock() }

// table returns one sink's rows, keyed by their key values.
func (m *memTarget) table(prefix string) map[string]plan.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]plan.Row{}
	for id, rows := range m.rows {
		if strings.HasSuffix(id, "/"+prefix) || id == prefix {
			for k, r := range rows {
				out[k] = r
			}
		}
	}
	return out
}

type memPublisher struct {
	m    *memTarget
	spec sink.Spec
}

func (p *memPublisher) Open(context.Context) error {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.m.permanent != nil {
		return &sink.PermanentError{Err: p.m.permanent}
	}
	return p.m.down
}

func (p *memPublisher) Committed(context.Context) (uint64, error) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.m.down != nil {
		return 0, p.m.down
	}
	eps := p.m.progress[p.spec.SinkID]
	if len(eps) == 0 {
		return 0, nil
	}
	return eps[len(eps)-1], nil
}

func (p *memPublisher) apply(changes []sink.Change) {
	t := p.m.rows[p.spec.SinkID]
	if t == nil {
		t = map[string]plan.Row{}
		p.m.rows[p.spec.SinkID] = t
	}
	for _, c := range changes {
		k := fmt.Sprint(c.Key)
		if c.Row == nil {
			delete(t, k)
			p.m.deletes++
		} else {
			t[k] = slices.Clone(c.Row)
		}
	}
}

func (p *memPublisher) CommitEpoch(ctx context.Context, epoch uint64, changes []sink.Change) error {
	if p.m.gate != nil {
		select {
		case <-p.m.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.m.down != nil {
		return p.m.down
	}
	eps := p.m.progress[p.spec.SinkID]
	if slices.Contains(eps, epoch) {
		p.m.dupes++
		return sink.ErrCommitted
	}
	if len(eps) > 0 && epoch < eps[len(eps)-1] {
		return fmt.Errorf("epoch %d after %d", epoch, eps[len(eps)-1])
	}
	seen := map[string]bool{}
	for _, c := range changes {
		if k := fmt.Sprint(c.Key); seen[k] {
			return fmt.Errorf("key %s twice in epoch %d", k, epoch)
		} else {
			seen[k] = true
		}
	}
	p.apply(changes)
	p.m.progress[p.spec.SinkID] = append(eps, epoch)
	if p.m.loseAnswer {
		p.m.loseAnswer = false
		return errors.New("connection reset while committing")
	}
	return nil
}

func (p *memPublisher) Apply(_ context.Context, changes []sink.Change) error {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.m.down != nil {
		return p.m.down
	}
	p.apply(changes)
	p.m.applied++
	return nil
}

func (p *memPublisher) Close() {}

// sinkSQL is a windowed aggregation with HAVING (groups come and go:
// upserts and deletes) as a view and as an INSERT into a sink table.
const sinkSQL = `CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL)
	ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE VIEW v AS SELECT window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS volume
	FROM bids GROUP BY TUMBLE(ts, '10s'), auction HAVING COUNT(*) %% 3 <> 0;
CREATE TABLE pg_out (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, n BIGINT, volume DOUBLE,
	PRIMARY KEY (window_start, window_end, auction)) ENGINE=postgres CONNECTION='postgres://x@127.0.0.1:1/db'
	ENGINE_ATTRIBUTE='{"delivery": "%s"}';
INSERT INTO pg_out SELECT window_start, window_end, auction, COUNT(*), SUM(price)
	FROM bids GROUP BY TUMBLE(ts, '10s'), auction HAVING COUNT(*) %% 3 <> 0`

func bidsNDJSON(rng *rand.Rand, n int, t0 int64) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"auction": %d, "price": %d, "ts": %d}`+"\n", rng.Intn(7), rng.Intn(100), t0+int64(rng.Intn(25000)))
	}
	return b.String()
}

// checkSinkEqualsView compares the sink's rows with the view's committed
// results (the same query into the built-in results table).
func checkSinkEqualsView(t *testing.T, e *Engine, m *memTarget) {
	t.Helper()
	compareWithView(t, e, m.table("pg_out"))
}

// compareWithView compares rows of pg_out keyed by (window_start,
// window_end, auction) with the view's committed results.
func compareWithView(t *testing.T, e *Engine, got map[string]plan.Row) {
	t.Helper()
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]plan.Row{}
	for _, r := range rows {
		r[4] = plan.Float(float64(r[4].I)) // volume: BIGINT into DOUBLE
		want[fmt.Sprint(plan.Row{r[0], r[1], r[2]})] = r
	}
	if len(want) == 0 {
		t.Fatal("the view has no rows: the test proves nothing")
	}
	if len(got) != len(want) {
		t.Fatalf("sink has %d rows, the view %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("key %s: sink %v, view %v", k, g, w)
		}
	}
}

func checkEpochsOnce(t *testing.T, m *memTarget) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, eps := range m.progress {
		for i := 1; i < len(eps); i++ {
			if eps[i] <= eps[i-1] {
				t.Fatalf("sink %s: epochs %v not increasing", id, eps)
			}
		}
	}
}

func TestSinkDeliveryMatchesView(t *testing.T) {
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			m := newMemTarget()
			ctx := context.Background()
			cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, Publisher: m.factory}
			e, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			exec(t, e, fmt.Sprintf(sinkSQL, mode))
			rng := rand.New(rand.NewSource(1))
			// Small overlapping chunks, each processed before the next
			// arrives: groups cross HAVING's line both ways (deletes).
			for i := 0; i < 12; i++ {
				ingest(t, e, "bids", bidsNDJSON(rng, 40, int64(i)*5000))
				if _, err := e.Checkpoint(ctx, "pg_out"); err != nil {
					t.Fatal(err)
				}
				if i%3 == 2 {
					if _, err := e.Checkpoint(ctx, ""); err != nil {
						t.Fatal(err)
					}
					checkSinkEqualsView(t, e, m)
				}
			}
			// A restart: the sink goes on from its progress.
			e.Close(ctx)
			if e, err = Open(cfg); err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			ingest(t, e, "bids", bidsNDJSON(rng, 300, 60000))
			infos, err := e.Checkpoint(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			checkSinkEqualsView(t, e, m)
			checkEpochsOnce(t, m)
			for _, ci := range infos {
				if ci.Query == "pg_out" && ci.Sinks["pg_out"].(map[string]any)["committed"] != true {
					t.Fatalf("checkpoint response: %+v", ci)
				}
			}
			if m.deletes == 0 {
				t.Fatal("no deletes reached the sink: the test proves less than it should")
			}
			if mode == "exactly_once" && m.dupes != 0 {
				t.Fatalf("%d epochs committed twice", m.dupes)
			}
		})
	}
}

// sinkEngine runs sinkSQL (exactly_once) into m, closed when the test
// ends.
func sinkEngine(t *testing.T, m *memTarget) *Engine {
	t.Helper()
	return sinkEngineLimits(t, m, runtime.SinkLimits{})
}

// sinkEngineLimits is sinkEngine with the sink's journal bounds and
// retry waits lim.
func sinkEngineLimits(t *testing.T, m *memTarget, lim runtime.SinkLimits) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, Publisher: m.factory,
		SinkLimits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	exec(t, e, fmt.Sprintf(sinkSQL, "exactly_once"))
	return e
}

// TestSinkRetriesAndBackpressure: with the target down the query shows
// retrying, checkpoints go on up to the journal's bound, then block;
// once it is back everything is committed, in order, once.
func TestSinkRetriesAndBackpressure(t *testing.T) {
	m := newMemTarget()
	ctx := context.Background()
	e := sinkEngineLimits(t, m, runtime.SinkLimits{MaxPendingEpochs: 3, MaxPendingBytes: 1 << 30, BackoffMax: 200 * time.Millisecond})
	m.setDown(errors.New("connection refused"))
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 3; i++ {
		ingest(t, e, "bids", bidsNDJSON(rng, 100, int64(i)*20000))
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		infos, err := e.Checkpoint(short, "pg_out")
		cancel()
		if err != nil {
			t.Fatalf("checkpoint %d with the target down: %v", i, err)
		}
		if s := infos[0].Sinks["pg_out"].(map[string]any); s["committed"] != false || !strings.Contains(s["error"].(string), "connection refused") {
			t.Fatalf("sink reported %v while down", s)
		}
	}
	q, _ := e.Query("pg_out")
	if q.State != runtime.StateRetrying || !strings.Contains(q.Error, "connection refused") {
		t.Fatalf("state %q error %q, want retrying with the sink's error", q.State, q.Error)
	}
	if s := sinkMetrics(t, e); s.PendingEpochs != 3 || s.PendingBytes <= 0 || s.CommitLag <= 0 {
		t.Fatalf("sink metrics while down: %+v", s)
	}
	// Three epochs journaled: the next checkpoint cannot complete.
	ingest(t, e, "bids", bidsNDJSON(rng, 100, 60000))
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := e.Checkpoint(short, "pg_out")
	cancel()
	if err == nil {
		t.Fatal("a checkpoint completed past the journal's bound")
	}
	m.setDown(nil)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	checkSinkEqualsView(t, e, m)
	checkEpochsOnce(t, m)
	if q, _ := e.Query("pg_out"); q.State != runtime.StateRunning {
		t.Fatalf("state %q after the target came back", q.State)
	}
	if s := sinkMetrics(t, e); s.PendingEpochs != 0 || s.CommitLag != 0 {
		t.Fatalf("sink metrics once caught up: %+v", s)
	}
}

// sinkMetrics returns the metrics of query pg_out's sink.
func sinkMetrics(t *testing.T, e *Engine) runtime.SinkMetrics {
	t.Helper()
	for _, q := range e.Metrics() {
		if q.Name == "pg_out" && len(q.Metrics.Sinks) == 1 {
			return q.Metrics.Sinks[0]
		}
	}
	t.Fatal("no metrics of sink pg_out")
	return runtime.SinkMetrics{}
}

// TestSinkUnknownCommitOutcome: a commit whose answer is lost is found
// in the progress records, not committed twice.
func TestSinkUnknownCommitOutcome(t *testing.T) {
	m := newMemTarget()
	ctx := context.Background()
	e := sinkEngine(t, m)
	rng := rand.New(rand.NewSource(3))
	ingest(t, e, "bids", bidsNDJSON(rng, 300, 0))
	m.mu.Lock()
	m.loseAnswer = true
	m.mu.Unlock()
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	checkSinkEqualsView(t, e, m)
	if m.dupes != 0 {
		t.Fatalf("the epoch whose answer was lost was sent again %d times", m.dupes)
	}
}

func TestInsertRefusals(t *testing.T) {
	m := newMemTarget()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, Publisher: m.factory})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exec(t, e, `CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL)
		ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE TABLE wrongkey (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, n BIGINT,
			PRIMARY KEY (window_start, auction)) ENGINE=postgres CONNECTION='postgres://x@h/db';
		CREATE TABLE joined (auction BIGINT, price BIGINT, PRIMARY KEY (auction)) ENGINE=postgres CONNECTION='postgres://x@h/db';
		CREATE TABLE pg_rows (_row_id VARCHAR(255), auction BIGINT, price BIGINT, PRIMARY KEY (_row_id)) ENGINE=postgres CONNECTION='postgres://x@h/db'`)
	for _, c := range []struct{ sql, want string }{
		{`INSERT INTO wrongkey SELECT window_start, window_end, auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '10s'), auction`,
			"PRIMARY KEY (window_start, auction) does not match the query's upsert key (window_start, window_end, auction)"},
		{`INSERT INTO wrongkey SELECT window_start, window_end, COUNT(*) AS a, COUNT(*) AS b FROM bids GROUP BY TUMBLE(ts, '10s'), auction`,
			"auction is not selected"},
		{`INSERT INTO joined SELECT auction, price FROM bids`, "give joined a column _row_id VARCHAR(255) and PRIMARY KEY (_row_id)"},
		{`INSERT INTO pg_rows SELECT auction FROM bids`, "the query has 1 columns (auction), the table 2 besides _row_id"},
		{`INSERT INTO bids SELECT auction, price, ts FROM bids`, "INSERT ... SELECT writes sink tables"},
		{`SELECT * FROM pg_rows`, "sink table"},
		{`CREATE VIEW w AS SELECT * FROM pg_rows`, "pg_rows is a sink table (ENGINE=postgres)"},
	} {
		_, err := e.Exec(context.Background(), c.sql)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.sql, err, c.want)
		}
	}
	// A target that cannot work is refused at once; the statement names why.
	m.permanent = errors.New(`column "auction" has type text, want bigint`)
	if _, err := e.Exec(context.Background(), `INSERT INTO pg_rows SELECT auction, price FROM bids`); err == nil || !strings.Contains(err.Error(), `has type text`) {
		t.Fatalf("permanent target error: %v", err)
	}
	m.permanent = nil
	exec(t, e, `INSERT INTO pg_rows SELECT auction, price FROM bids`)
	for _, c := range []struct{ sql, want string }{
		{`INSERT INTO pg_rows SELECT auction, price FROM bids`, "already writes it"},
		{`DROP TABLE pg_rows`, "written by query pg_rows"},
		{`DROP VIEW pg_rows`, "not a view"},
	} {
		_, err := e.Exec(context.Background(), c.sql)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.sql, err, c.want)
		}
	}
	if err := e.DropQuery("pg_rows"); err != nil {
		t.Fatal(err)
	}
	exec(t, e, `DROP TABLE pg_rows`)
}

// TestSinkSlowBackpressure: an exactly_once sink that commits slower than
// epochs come. While it lags, checkpoints keep completing (their epochs
// journaled, pending) up to the journal's byte bound; then the sink task
// waits at the checkpoint barrier: the checkpoint waits, the sink stage's
// input queue fills and the source stops reading (the rows wait in the
// durable log, not in memory), and the pending bytes never pass the bound.
// The wait is reported as the checkpoint's alignment time. Once the sink
// speeds up everything is delivered, each epoch once, and its table
// equals the view's results of the same query.
func TestSinkSlowBackpressure(t *testing.T) {
	const bound = 8 << 10
	m := newMemTarget()
	m.gate = make(chan struct{}, 1000)
	ctx := context.Background()
	e := sinkEngineLimits(t, m, runtime.SinkLimits{MaxPendingEpochs: 1000, MaxPendingBytes: bound, BackoffMax: 50 * time.Millisecond})
	e.mu.RLock()
	job := e.views["pg_out"].Job
	e.mu.RUnlock()
	var maxBytes int64
	var maxEpochs int
	sample := func() runtime.SinkMetrics {
		t.Helper()
		s := sinkMetrics(t, e)
		maxBytes, maxEpochs = max(maxBytes, s.PendingBytes), max(maxEpochs, s.PendingEpochs)
		if s.PendingBytes > bound {
			t.Fatalf("pending journal bytes %d past the bound %d", s.PendingBytes, bound)
		}
		return s
	}
	rng := rand.New(rand.NewSource(4))
	chunk := 0
	post := func() { // 30 bids in order, on up to 30 auctions: one epoch of about 2 KiB
		var b strings.Builder
		for range 30 {
			fmt.Fprintf(&b, `{"auction": %d, "price": %d, "ts": %d}`+"\n", rng.Intn(50), rng.Intn(100), int64(chunk)*1000+int64(rng.Intn(1000)))
		}
		ingest(t, e, "bids", b.String())
		chunk++
	}

	// The sink commits one epoch for every three checkpoints.
	completed := 0
	for {
		if chunk == 60 {
			t.Fatalf("%d checkpoints completed, pending %+v: the bound never held one back", completed, sample())
		}
		post()
		if chunk%3 == 0 {
			m.gate <- struct{}{}
		}
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err := job.Checkpoint(short)
		cancel()
		sample()
		if err != nil {
			break // held back at the sink
		}
		completed++
	}
	m.mu.Lock()
	committed := len(m.progress[e.sinkID(e.views["pg_out"].Record)])
	m.mu.Unlock()
	if completed < 3 || committed >= completed {
		t.Fatalf("%d checkpoints completed, %d epochs committed: want checkpoints going on while the sink lags", completed, committed)
	}
	blocked := sample()
	t.Logf("held back after %d checkpoints (%d epochs committed): %d epochs, %d bytes pending (bound %d)", completed, committed, blocked.PendingEpochs, blocked.PendingBytes, bound)

	// Ingest goes on: the rows stop in the log once the queues are full.
	for range 40 {
		post()
	}
	waitFor(t, "the sink stage's input queue to fill", func() bool {
		for _, q := range e.Metrics() {
			if q.Name == "pg_out" {
				return q.Metrics.Stages[1].QueueFill == 1
			}
		}
		return false
	})
	tbl, err := e.Table("bids")
	if err != nil {
		t.Fatal(err)
	}
	if st := job.Status(); st.Offsets["bids"] >= *tbl.EndOffset {
		t.Fatalf("the source read to %d of %d rows while the sink held it back", st.Offsets["bids"], *tbl.EndOffset)
	}
	if s := sample(); s.PendingEpochs != blocked.PendingEpochs || s.PendingBytes != blocked.PendingBytes {
		t.Fatalf("pending went from %+v to %+v while held back", blocked, s)
	}

	// The sink speeds up: the held checkpoint completes, then everything
	// is delivered.
	close(m.gate)
	post()
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	sample()
	checkSinkEqualsView(t, e, m)
	checkEpochsOnce(t, m)
	if m.dupes != 0 {
		t.Fatalf("%d epochs committed twice", m.dupes)
	}
	if s := sample(); s.PendingEpochs != 0 || s.PendingBytes != 0 {
		t.Fatalf("still pending after catching up: %+v", s)
	}

	// The checkpoint held back reports how long: its alignment time.
	hist, err := e.Checkpoints("pg_out")
	if err != nil {
		t.Fatal(err)
	}
	var longest float64
	for _, h := range hist {
		if h.Status == "completed" {
			longest = max(longest, h.Alignment)
		}
	}
	if longest < 1000 {
		t.Fatalf("longest alignment of a completed checkpoint %.3f ms, want at least the second it was held back: %+v", longest, hist)
	}
	if cm := job.CheckpointMetrics(); cm.AlignmentSum*1000 < longest || cm.AlignmentBuckets[len(cm.AlignmentBuckets)-1] != cm.Completed {
		t.Fatalf("alignment histogram: sum %v s, buckets %v, %d completed", cm.AlignmentSum, cm.AlignmentBuckets, cm.Completed)
	}
	q, err := e.Query("pg_out")
	if err != nil {
		t.Fatal(err)
	}
	if q.Checkpointing == nil || q.Checkpointing.Completed != uint64(completed)+2 || q.State != runtime.StateRunning {
		t.Fatalf("query info: state %s, checkpointing %+v (%d completed before the hold)", q.State, q.Checkpointing, completed)
	}
	t.Logf("longest alignment %.1f ms; pending at most %d epochs, %d bytes", longest, maxEpochs, maxBytes)
}
