package e2e

// File side inputs (ENGINE=file with a PRIMARY KEY) in the real server:
// a CSV file joined AS OF the stream's time, reloaded when it changes,
// through SIGKILL and restart.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// writeSideFile replaces the side input file at path (a new name renamed
// over it, so the poller never reads half of it).
func writeSideFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// sideRows checkpoints and reads view's committed rows as id|label lines,
// until there are n of them (at most 30 s).
func sideRows(t *testing.T, srv *server, view string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		srv.checkpoint(t)
		rs := srv.results(t, view)
		if len(rs.Rows) >= n || time.Now().After(deadline) {
			var out []string
			for _, r := range rs.Rows {
				out = append(out, fmt.Sprintf("%v|%v", r["id"], r["label"]))
			}
			sort.Strings(out)
			return out
		}
		time.Sleep(pollInterval)
	}
}

// TestFileSideInput: a CSV side input in the data directory joined AS OF
// the stream's event time. Rows before the reload join the first version
// (valid since always); the file is replaced (a label changed, a key
// removed, one added) and the server polls it in; rows with later times
// join the new version. A bad row in the file leaves the table as it
// was, shows file_error naming file:line:column, and the server goes on
// serving. After a SIGKILL and restart the log is unchanged (no version
// logged twice) and the results equal the oracle.
func TestFileSideInput(t *testing.T) {
	srv := startServer(t, "--checkpoint-interval", "200ms")
	side := filepath.Join(srv.dataDir, "files", "side", "labels.csv")
	writeSideFile(t, side, "id,label\n1,one\n2,two\n")
	srv.sql(t, `CREATE TABLE labels (id BIGINT, label VARCHAR(16), vt TIMESTAMP(3), PRIMARY KEY (id))
  ENGINE=file ENGINE_ATTRIBUTE='{"path": "side/labels.csv", "format": "csv", "event_time": "vt", "idle_timeout": "200ms"}';
CREATE TABLE events (id BIGINT, k BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE VIEW enriched AS SELECT e.id, l.label FROM events e JOIN labels l AS OF TIMESTAMP e.ts ON e.k = l.id`)
	early := Timestamp(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	srv.postRows(t, "events", []Row{{"id": 1, "k": 1, "ts": early}, {"id": 2, "k": 2, "ts": early + 1}, {"id": 3, "k": 3, "ts": early + 2}})
	want := []string{"1|one", "2|two"}
	if got := sideRows(t, srv, "enriched", len(want)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("first version: %v, want %v", got, want)
	}
	end1, _ := srv.endOffset(t, "labels")

	reload := time.Now()
	writeSideFile(t, side, "label,id\nONE,1\nthree,3\n")
	deadline := time.Now().Add(15 * time.Second)
	for {
		if end, _ := srv.endOffset(t, "labels"); end == end1+3 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the reload was not logged within 15 s: end offset %d, want %d (an upsert, an insert, a delete)", end, end1+3)
		}
		time.Sleep(pollInterval)
	}
	later := Timestamp(reload.Add(time.Hour).UnixMilli())
	srv.postRows(t, "events", []Row{{"id": 4, "k": 1, "ts": later}, {"id": 5, "k": 2, "ts": later + 1}, {"id": 6, "k": 3, "ts": later + 2}})
	want = []string{"1|one", "2|two", "4|ONE", "6|three"}
	if got := sideRows(t, srv, "enriched", len(want)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after the reload: %v, want %v", got, want)
	}

	writeSideFile(t, side, "id,label\n1,uno\nx,dos\n")
	wantErr := side + ":3:1: column id: \"x\" is not a BIGINT"
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(pollInterval) {
		if e, _ := srv.table(t, "labels")["file_error"].(string); e == wantErr {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("file_error %q, want %q", e, wantErr)
		}
	}
	if end, _ := srv.endOffset(t, "labels"); end != end1+3 {
		t.Errorf("a bad file changed the log: end offset %d, want %d", end, end1+3)
	}

	writeSideFile(t, side, "label,id\nONE,1\nthree,3\n") // the current version again
	srv.restart(t)
	srv.waitRunning(t, "enriched")
	srv.postRows(t, "events", []Row{{"id": 7, "k": 3, "ts": later + 3}})
	want = append(want, "7|three")
	sort.Strings(want)
	if got := sideRows(t, srv, "enriched", len(want)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after the restart: %v, want %v", got, want)
	}
	if end, _ := srv.endOffset(t, "labels"); end != end1+3 {
		t.Errorf("after the restart the log ends at %d, want %d: a version logged again", end, end1+3)
	}
	if e, _ := srv.table(t, "labels")["file_error"].(string); e != "" {
		t.Errorf("file_error %q with a good file", e)
	}
}
