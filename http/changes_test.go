package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestChangesStream: /changes over HTTP, as NDJSON and as SSE: the schema
// record first, then the snapshot, then changes as rows arrive; an SSE
// client resuming with Last-Event-ID gets the records after it.
func TestChangesStream(t *testing.T) {
	e := newEnv(t)
	e.sql(`CREATE TABLE t (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
		CREATE VIEW v AS SELECT k, COUNT(*) AS n FROM t GROUP BY k`)
	e.ingest("t", `{"k": 1, "ts": 1}`)
	e.checkpoint()
	open := func(query string, hdr ...string) (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequest("GET", e.url+"/v1/queries/v/changes"+query, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		return res, bufio.NewReader(res.Body)
	}
	next := func(rd *bufio.Reader) map[string]any {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
			if !strings.HasPrefix(line, "{") {
				continue // SSE id:/event: lines, blank lines
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			if m["type"] != "heartbeat" && m["type"] != "watermark" && m["type"] != "checkpoint" {
				return m
			}
		}
	}
	res, nd := open("?snapshot=true")
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("content type %q", ct)
	}
	if m := next(nd); m["type"] != "schema" {
		t.Fatalf("first record %v", m)
	}
	if m := next(nd); m["type"] != "snapshot" || m["row"].(map[string]any)["n"] != float64(1) {
		t.Fatalf("snapshot %v", m)
	}
	if m := next(nd); m["type"] != "snapshot_end" {
		t.Fatalf("after the snapshot %v", m)
	}
	res2, sse := open("", "Accept", "text/event-stream")
	if ct := res2.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	next(sse) // schema
	e.ingest("t", `{"k": 1, "ts": 2}`+"\n"+`{"k": 2, "ts": 3}`)
	var seqs []float64
	for range 2 {
		m := next(nd)
		if m["type"] != "change" || m["op"] != "upsert" {
			t.Fatalf("change %v", m)
		}
		s := next(sse)
		if s["seq"] != m["seq"] {
			t.Fatalf("NDJSON and SSE disagree: %v %v", m, s)
		}
		seqs = append(seqs, m["seq"].(float64))
	}
	// Resume after the first change: the second comes again, first.
	_, again := open("", "Accept", "text/event-stream", "Last-Event-ID", jsonNum(seqs[0]))
	next(again) // schema
	if m := next(again); m["seq"] != seqs[1] {
		t.Fatalf("resumed at %v, want seq %v", m["seq"], seqs[1])
	}
	e.problem(e.get("/v1/queries/v/changes?consistency=eventual"), 400, "consistency")
	e.problem(e.get("/v1/queries/nope/changes"), 404)
}

func jsonNum(f float64) string { b, _ := json.Marshal(uint64(f)); return string(b) }

// TestCheckpointsEmptyList: a query with no checkpoint yet lists [] (the
// console reads it as an array), not null.
func TestCheckpointsEmptyList(t *testing.T) {
	e := start(t, config{checkpoint: time.Hour})
	e.sql(`CREATE TABLE t (k BIGINT NOT NULL) ENGINE=http; CREATE VIEW v AS SELECT k FROM t`)
	if r := e.get("/v1/queries/v/checkpoints"); r.status != 200 || strings.TrimSpace(string(r.body)) != `{"checkpoints":[]}` {
		t.Fatalf("checkpoints before the first: %s", r)
	}
}
