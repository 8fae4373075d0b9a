package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime"
)

type changeJSON struct {
	Type string         `json:"type"`
	Seq  uint64         `json:"seq"`
	Op   string         `json:"op"`
	Key  map[string]any `json:"key"`
	Row  map[string]any `json:"row"`
	ID   uint64         `json:"id"`
}

// readChanges reads a stream until it has n change records (or fails).
func readChanges(t *testing.T, s *ChangeStream, n int) []changeJSON {
	t.Helper()
	var out []changeJSON
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(out) < n {
		recs, err := s.Next(ctx, 100*time.Millisecond)
		if err != nil {
			t.Fatalf("after %d changes: %v", len(out), err)
		}
		for _, r := range recs {
			var c changeJSON
			if err := json.Unmarshal(r.JSON, &c); err != nil {
				t.Fatal(err)
			}
			if c.Type == "change" {
				out = append(out, c)
			}
		}
	}
	return out
}

const changesSQL = `CREATE TABLE t (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
	CREATE VIEW v AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`

func ingestKeys(t *testing.T, e *Engine, from, to int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, `{"k": %d, "ts": %d}`+"\n", i, i)
	}
	ingest(t, e, "t", b.String())
}

// TestChangesResume: a reader that reconnects from the seq after the last
// one it got misses nothing and gets nothing twice.
func TestChangesResume(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exec(t, e, changesSQL)
	s1, err := e.Changes("v", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ingestKeys(t, e, 0, 50)
	first := readChanges(t, s1, 20)[:20] // what the reader took before it went away
	// Reconnect after the 20th change; more arrive meanwhile.
	ingestKeys(t, e, 50, 100)
	s2, err := e.Changes("v", ChangesOptions{From: first[19].Seq + 1})
	if err != nil {
		t.Fatal(err)
	}
	rest := readChanges(t, s2, 80)
	all := append(first, rest...)
	seen := map[float64]bool{}
	for i, c := range all {
		if i > 0 && c.Seq <= all[i-1].Seq {
			t.Fatalf("seq %d after %d", c.Seq, all[i-1].Seq)
		}
		k := c.Key["k"].(float64)
		if seen[k] || c.Row["n"] != float64(1) {
			t.Fatalf("change %d: key %v twice or count %v", i, k, c.Row["n"])
		}
		seen[k] = true
	}
	if len(seen) != 100 {
		t.Fatalf("%d keys seen, want 100", len(seen))
	}
	// A seq from before the log (another run of the server) is gone.
	if _, err := e.Changes("v", ChangesOptions{From: 1}); err == nil || !strings.Contains(err.Error(), "not in query v's change log") {
		t.Fatalf("from=1: %v", err)
	}
}

// TestChangesLagged: a reader that does not keep up is told it lagged;
// the query does not wait for it.
func TestChangesLagged(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, ChangeLogSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exec(t, e, changesSQL)
	slow, err := e.Changes("v", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ingestKeys(t, e, 0, 100)
	if _, err := e.Checkpoint(context.Background(), "v"); err != nil {
		t.Fatal(err) // the query went on: 100 changes into a log of 16
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var last []ChangeRecord
	for {
		recs, err := slow.Next(ctx, 50*time.Millisecond)
		last = append(last, recs...)
		if errors.Is(err, runtime.ErrLagged) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if l := last[len(last)-1]; l.Type != "lagged" {
		t.Fatalf("last record %s, want lagged", l.JSON)
	}
}

// TestChangesCommitted: a committed reader sees only what checkpoints
// made durable: after a crash (the job stopped without a checkpoint)
// every value it saw is in the committed results, and rows ingested after
// the last checkpoint never reached it.
func TestChangesCommitted(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, changesSQL)
	s, err := e.Changes("v", ChangesOptions{Committed: true, Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	ingestKeys(t, e, 0, 30)
	if _, err := e.Checkpoint(context.Background(), "v"); err != nil {
		t.Fatal(err)
	}
	// Rows after the checkpoint: published to latest, never committed.
	ingestKeys(t, e, 1000, 1010)
	got := map[float64]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < 30 {
		recs, err := s.Next(ctx, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			var c changeJSON
			json.Unmarshal(r.JSON, &c)
			if c.Type == "change" || c.Type == "snapshot" {
				got[c.Key["k"].(float64)] = true
			}
		}
	}
	// Give the uncommitted rows every chance to leak.
	if recs, err := s.Next(ctx, 300*time.Millisecond); err != nil || len(recs) != 0 {
		for _, r := range recs {
			if strings.Contains(string(r.JSON), `"type":"change"`) {
				t.Fatalf("committed reader got an uncommitted change: %s", r.JSON)
			}
		}
	}
	// Crash: stop the job without a checkpoint, then restart.
	e.views["v"].Job.Stop()
	e.Close(context.Background())
	e, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[float64]bool{}
	for _, r := range rows {
		committed[float64(r[0].I)] = true
	}
	for k := range got {
		if !committed[k] {
			t.Fatalf("the committed reader saw key %v, which the crash rolled back", k)
		}
	}
	for k := range committed {
		if k >= 1000 {
			t.Fatalf("key %v committed without a checkpoint", k)
		}
	}
}

// TestChangesLargeSnapshot: a snapshot of more rows than one chunk goes
// out over several reads (the stream's first bytes do not wait for the
// whole snapshot to be encoded), each row once, snapshot_end after the
// last, then the changes.
func TestChangesLargeSnapshot(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exec(t, e, changesSQL)
	watch, err := e.Changes("v", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*snapshotChunk + 500
	ingestKeys(t, e, 0, n)
	readChanges(t, watch, n) // every row is in the latest results

	s, err := e.Changes("v", ChangesOptions{Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := map[float64]bool{}
	reads, ended := 0, false
	for !ended {
		recs, err := s.Next(ctx, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if len(recs) > snapshotChunk+1 {
			t.Fatalf("read %d returned %d records: the snapshot was encoded at once", reads, len(recs))
		}
		for _, r := range recs {
			var c struct {
				changeJSON
				Rows int `json:"rows"`
			}
			if err := json.Unmarshal(r.JSON, &c); err != nil {
				t.Fatal(err)
			}
			switch c.Type {
			case "snapshot":
				if ended {
					t.Fatal("a snapshot record after snapshot_end")
				}
				k := c.Key["k"].(float64)
				if seen[k] {
					t.Fatalf("key %v twice in the snapshot", k)
				}
				seen[k] = true
			case "snapshot_end":
				ended = true
				if c.Rows != n {
					t.Fatalf("snapshot_end says %d rows, want %d", c.Rows, n)
				}
			case "change":
				t.Fatalf("a change before snapshot_end: %s", r.JSON)
			}
		}
	}
	if len(seen) != n || reads < 3 {
		t.Fatalf("%d keys in the snapshot over %d reads, want %d over at least 3", len(seen), reads, n)
	}
	ingestKeys(t, e, n, n+1)
	if c := readChanges(t, s, 1); c[0].Key["k"] != float64(n) {
		t.Fatalf("the change after the snapshot: %+v", c[0])
	}
}
