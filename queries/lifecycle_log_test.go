package queries

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/runtime/sink"
)

// logRecord is one captured log record: its level, message and attributes
// as text.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// captureHandler is a slog.Handler that keeps every record.
type captureHandler struct {
	mu    *sync.Mutex
	recs  *[]logRecord
	attrs []slog.Attr
}

func newCapture() *captureHandler {
	return &captureHandler{mu: &sync.Mutex{}, recs: &[]logRecord{}}
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &captureHandler{mu: h.mu, recs: h.recs, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *captureHandler) WithGroup(string) slog.Handler { return h }

// find returns the records with message msg whose attributes include
// every pair of want.
func (h *captureHandler) find(msg string, want map[string]string) []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
next:
	for _, r := range *h.recs {
		if r.msg != msg {
			continue
		}
		for k, v := range want {
			if r.attrs[k] != v {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

func (h *captureHandler) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range *h.recs {
		fmt.Fprintf(&b, "%s %q %v\n", r.level, r.msg, r.attrs)
	}
	return b.String()
}

// TestLifecycleLogs: the server log says when a query is created,
// replaced, stopped, resumed, recovered (with the checkpoint and how long
// the restore took), dropped and failed (with the reason), and when its
// sink is retrying and recovered.
func TestLifecycleLogs(t *testing.T) {
	ctx := context.Background()
	logs := newCapture()
	m := newMemTarget()
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, Publisher: m.factory,
		Logger: slog.New(logs), NoSampler: true, SinkLimits: runtime.SinkLimits{MaxPendingEpochs: 100, MaxPendingBytes: 1 << 30, BackoffMax: 20 * time.Millisecond}}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close(ctx) }()
	expect := func(msg string, want map[string]string, also ...string) logRecord {
		t.Helper()
		found := logs.find(msg, want)
		if len(found) != 1 {
			t.Fatalf("%d records %q with %v, want 1; the log:\n%s", len(found), msg, want, logs)
		}
		for _, k := range also {
			if _, ok := found[0].attrs[k]; !ok {
				t.Errorf("record %q has no %s: %v", msg, k, found[0].attrs)
			}
		}
		return found[0]
	}
	exec(t, e, fmt.Sprintf(sinkSQL, "exactly_once"))
	vid, sid := e.views["v"].Record.ID, e.views["pg_out"].Record.ID
	expect("query created", map[string]string{"query": "v", "id": fmt.Sprint(vid)})
	expect("query created", map[string]string{"query": "pg_out", "id": fmt.Sprint(sid), "sink": "pg_out"})

	exec(t, e, `CREATE OR REPLACE VIEW v AS SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction`)
	nid := e.views["v"].Record.ID
	expect("query replaced", map[string]string{"query": "v", "id": fmt.Sprint(nid), "replaced_id": fmt.Sprint(vid)})

	ingest(t, e, "bids", bidsNDJSON(rand.New(rand.NewSource(1)), 50, 0))
	q, err := e.StopQuery(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	expect("query stopped", map[string]string{"query": "v", "checkpoint": fmt.Sprint(q.LastCheckpoint)})
	if _, err := e.ResumeQuery("v"); err != nil {
		t.Fatal(err)
	}
	expect("query resumed", map[string]string{"query": "v"})
	// Every task has restored its state once a checkpoint completes.
	if _, err := e.Checkpoint(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	expect("query recovered", map[string]string{"query": "v", "id": fmt.Sprint(nid), "checkpoint": fmt.Sprint(q.LastCheckpoint)}, "restore_ms")

	// The sink's target goes down, comes back, then fails for good.
	m.setDown(errors.New("connection refused"))
	short, cancel := context.WithTimeout(ctx, time.Second)
	e.Checkpoint(short, "pg_out")
	cancel()
	if len(logs.find("sink unavailable, retrying", map[string]string{"query": "pg_out", "sink": "pg_out"})) == 0 {
		t.Fatalf("no retrying record of the sink; the log:\n%s", logs)
	}
	m.setDown(nil)
	if _, err := e.Checkpoint(ctx, "pg_out"); err != nil {
		t.Fatal(err)
	}
	expect("sink recovered", map[string]string{"query": "pg_out", "sink": "pg_out"}, "after")
	ingest(t, e, "bids", bidsNDJSON(rand.New(rand.NewSource(2)), 50, 30000))
	m.setDown(&sink.PermanentError{Err: errors.New(`relation "pg_out" does not exist`)})
	job := e.views["pg_out"].Job
	e.Checkpoint(ctx, "pg_out")
	<-job.Stopped()
	r := expect("query failed", map[string]string{"query": "pg_out", "id": fmt.Sprint(sid)}, "reason")
	if r.level != slog.LevelError || !strings.Contains(r.attrs["reason"], `relation "pg_out" does not exist`) {
		t.Errorf("query failed: %v %v", r.level, r.attrs)
	}

	exec(t, e, "DROP VIEW v")
	expect("query dropped", map[string]string{"query": "v", "id": fmt.Sprint(nid)})

	// A restart recovers every running query from its checkpoint.
	e.Close(ctx)
	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	if len(logs.find("query recovered", map[string]string{"query": "v"})) != 1 {
		t.Errorf("a dropped query recovered at the restart; the log:\n%s", logs)
	}
}
