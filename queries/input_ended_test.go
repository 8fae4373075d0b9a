package queries

import (
	"context"
	"testing"
	"time"
)

// TestInputEnded: once a query's bounded source has ended, its watermark
// is past every event time: the API says so (input_ended) instead of
// showing a null watermark as if none had been seen yet.
func TestInputEnded(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exec(t, e, `CREATE TABLE b (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256), date_time TIMESTAMP(3), extra VARCHAR(256))
		ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid", "event_time": "date_time", "events": 50}';
		CREATE VIEW v AS SELECT window_start, COUNT(*) AS n FROM b GROUP BY TUMBLE(date_time, '1s')`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		q, err := e.Query("v")
		if err != nil {
			t.Fatal(err)
		}
		if q.InputEnded {
			if q.Watermark != nil {
				t.Fatalf("input ended with watermark %v", q.Watermark)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the bounded source never ended: watermark %v, counters %v", q.Watermark, q.Counters)
		}
		e.Checkpoint(ctx, "v") // a checkpoint covers what was read: progress without a sleep
	}
}
