package queries

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// TestStateShownAfterRestart: after a restart a query shows the watermark
// it had (restored with its sources' positions, before any new row) and
// the recent late rows of the late_rows it restores, running or stopped.
func TestStateShownAfterRestart(t *testing.T) {
	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, NoSampler: true}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http
		ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1s"}';
		CREATE VIEW v AS SELECT window_start, COUNT(*) AS n FROM t GROUP BY TUMBLE(ts, '10s')`)
	// 100 s, then two rows of the window [0 s, 10 s), closed long before.
	ingest(t, e, "t", `{"k": 1, "ts": 100000}
{"k": 2, "ts": 1000}
{"k": 3, "ts": 2000}
`)
	if _, err := e.Checkpoint(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	before, err := e.Query("v")
	if err != nil {
		t.Fatal(err)
	}
	if before.Watermark != "1970-01-01T00:01:39.000Z" || before.Counters["late_rows"] != 2 || len(before.RecentLateRows) != 2 {
		t.Fatalf("before the restart: watermark %v, late_rows %d, recent_late_rows %v", before.Watermark, before.Counters["late_rows"], before.RecentLateRows)
	}
	e.Close(ctx)

	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close(ctx) }()
	// A checkpoint's barrier follows whatever the sources sent at start
	// down every channel: once it completes, the sinks have it.
	if _, err := e.Checkpoint(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	after, err := e.Query("v")
	if err != nil {
		t.Fatal(err)
	}
	if after.Watermark != before.Watermark {
		t.Errorf("watermark after a restart: %v, want %v", after.Watermark, before.Watermark)
	}
	if after.Counters["late_rows"] != 2 || !reflect.DeepEqual(after.RecentLateRows, before.RecentLateRows) {
		t.Errorf("after a restart: late_rows %d, recent_late_rows %v, want %v", after.Counters["late_rows"], after.RecentLateRows, before.RecentLateRows)
	}
	if _, err := e.StopQuery(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	e.Close(ctx)
	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	stopped, err := e.Query("v")
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Counters["late_rows"] != 2 || !reflect.DeepEqual(stopped.RecentLateRows, before.RecentLateRows) {
		t.Errorf("stopped, after a restart: late_rows %d, recent_late_rows %v, want %v", stopped.Counters["late_rows"], stopped.RecentLateRows, before.RecentLateRows)
	}
}
