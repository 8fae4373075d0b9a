package queries

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/state"
)

func exec(t *testing.T, e *Engine, sql string) []Result {
	t.Helper()
	res, err := e.Exec(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

func ingest(t *testing.T, e *Engine, table, ndjson string) {
	t.Helper()
	if _, err := e.Ingest(context.Background(), table, ndjson, ""); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, e *Engine, view string) int64 {
	t.Helper()
	_, rows, err := e.Results(view, true)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range rows {
		n += r[1].I
	}
	return n
}

// TestTruncateLogs: rows older than the retention are deleted only below
// the offset every reading query resumes from; a new view reads the
// retained rows; a restart resumes without needing the deleted ones.
func TestTruncateLogs(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Open(Config{DataDir: dir, CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"retention": "1ms"}';
		CREATE VIEW a AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
	ingest(t, e, "t", strings.Repeat(`{"k": 1}`+"\n", 10))
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	ingest(t, e, "t", strings.Repeat(`{"k": 1}`+"\n", 5)) // not yet checkpointed by a
	e.truncateLogs(time.Now().Add(time.Second))
	l, err := e.meta.Log(e.tables["t"].ID)
	if err != nil {
		t.Fatal(err)
	}
	if l.Start() != 10 {
		t.Fatalf("log start %d, want 10: the rows a still needs must stay", l.Start())
	}
	if _, err := l.Read(0, 1, func(int64, []byte) error { return nil }); !errors.Is(err, state.ErrTruncated) {
		t.Fatalf("reading below the start: %v, want ErrTruncated", err)
	}
	exec(t, e, `CREATE VIEW b AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if a, b := count(t, e, "a"), count(t, e, "b"); a != 15 || b != 5 {
		t.Fatalf("a counts %d (want 15), b counts the 5 retained rows: %d", a, b)
	}
	e.truncateLogs(time.Now().Add(time.Second))
	if l.Start() != 15 {
		t.Fatalf("log start %d, want 15 once every view has checkpointed past it", l.Start())
	}
	e.Close(ctx)

	e, err = Open(Config{DataDir: dir, CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	ingest(t, e, "t", `{"k": 1}`)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if a, b := count(t, e, "a"), count(t, e, "b"); a != 16 || b != 6 {
		t.Fatalf("after restart: a %d (want 16), b %d (want 6)", a, b)
	}
}

// TestCloseWhileMaintaining closes the engine while its maintenance loop
// ticks: Close holds e.mu through the views' final checkpoints, and the
// loop's maintain needs e.mu, so Close must not wait for the loop while
// holding it. The final checkpoint's sync is held while the loop's tick
// (injected: Config.MaintainTicks) comes, so that the tick falls inside
// Close.
func TestCloseWhileMaintaining(t *testing.T) {
	rec := &state.SyncRecorder{}
	ticks := make(chan time.Time, 1)
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, WrapSync: rec.Wrap,
		MaintainTicks: ticks})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http;
		CREATE VIEW a AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
	started, release := rec.HoldNext()
	defer release()
	closed := make(chan struct{})
	go func() {
		e.Close(context.Background())
		close(closed)
	}()
	select {
	case <-started: // Close is in the final checkpoint, holding e.mu
	case <-time.After(10 * time.Second):
		t.Fatal("Close took no final checkpoint")
	}
	// The loop's tick, while Close holds e.mu (buffered: a loop that Close
	// stopped first, as it must, never takes it).
	ticks <- time.Now()
	release()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: it waits for the maintenance loop while holding e.mu, which the loop's maintain is waiting for")
	}
}

// TestDataDirLock: a second engine on the same data directory is refused
// with a message naming the directory and the holder; once the first
// closes, it opens.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir, CheckpointInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(Config{DataDir: dir, CheckpointInterval: time.Second})
	if err == nil || !strings.Contains(err.Error(), "is in use by process "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second open: %v", err)
	}
	e.Close(context.Background())
	e, err = Open(Config{DataDir: dir, CheckpointInterval: time.Second})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	e.Close(context.Background())
}
