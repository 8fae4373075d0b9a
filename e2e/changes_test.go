package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// changeStream reads a /changes stream (NDJSON) into a channel of records
// until the connection ends.
func changeStream(t *testing.T, s *server, query string) <-chan map[string]any {
	t.Helper()
	resp, err := http.Get(s.base + "/v1/queries/v/changes" + query)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("changes%s: status %d", query, resp.StatusCode)
	}
	ch := make(chan map[string]any, 1024)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ch <- m
			}
		}
	}()
	return ch
}

// drain reads records until quiet has passed without one, the stream
// ends or upTo says so, applying them to rows (key k -> count n).
func drain(ch <-chan map[string]any, rows map[float64]float64, quiet time.Duration, upTo func(map[string]any) bool) {
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return
			}
			switch m["type"] {
			case "snapshot", "change":
				k := m["key"].(map[string]any)["k"].(float64)
				if m["op"] == "delete" {
					delete(rows, k)
				} else {
					rows[k] = m["row"].(map[string]any)["n"].(float64)
				}
			}
			if upTo != nil && upTo(m) {
				return
			}
		case <-time.After(quiet):
			return
		}
	}
}

// TestChangesCommittedThroughCrash: a committed /changes reader never sees
// a value that a crash rolls back. Rows counted after the last checkpoint
// reach a latest reader; the server is killed; the committed reader's
// rows are exactly the committed results the restarted server reads at its
// marker, and the latest reader had seen values they do not have.
func TestChangesCommittedThroughCrash(t *testing.T) {
	s := newServer(t, "--checkpoint-interval", "1h")
	s.start(t)
	s.sql(t, `CREATE TABLE t (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE VIEW v AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
	rows := func(keys ...int) []Row {
		var out []Row
		for _, k := range keys {
			out = append(out, Row{"k": k, "ts": "2024-01-01T00:00:00.000Z"})
		}
		return out
	}
	committed := changeStream(t, s, "?consistency=committed&snapshot=true")
	var first []int
	for k := 0; k < 20; k++ {
		first = append(first, k)
	}
	s.postRows(t, "t", rows(first...))
	s.checkpoint(t)
	latest := changeStream(t, s, "?snapshot=true")
	// Uncommitted: keys 0..9 counted again, keys 100..109 new.
	s.postRows(t, "t", rows(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109))
	seenLatest := map[float64]float64{}
	drain(latest, seenLatest, 10*time.Second, func(map[string]any) bool { return seenLatest[109] == 1 && seenLatest[9] == 2 })
	if seenLatest[109] != 1 || seenLatest[9] != 2 {
		t.Fatalf("the latest reader never saw the uncommitted counts: %v", seenLatest)
	}
	seenCommitted := map[float64]float64{}
	drain(committed, seenCommitted, 500*time.Millisecond, nil)
	s.kill(t)
	drain(committed, seenCommitted, time.Second, nil) // whatever was in flight
	s.start(t)
	rs := s.results(t, "v")
	atMarker := map[float64]float64{}
	num := func(v any) float64 {
		f, err := v.(json.Number).Float64()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, r := range rs.Rows {
		atMarker[num(r["k"])] = num(r["n"])
	}
	if len(atMarker) != 20 {
		t.Fatalf("committed results after the restart: %v", atMarker)
	}
	if fmt.Sprint(seenCommitted) != fmt.Sprint(atMarker) {
		t.Fatalf("the committed reader showed\n%v\nthe crash left\n%v", seenCommitted, atMarker)
	}
}
