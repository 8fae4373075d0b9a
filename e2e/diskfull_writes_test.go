package e2e

// Disk full, continued: every write path answers 507 and leaves things as
// they were (TestDiskFullWrites), and a COUNT(DISTINCT) view whose set
// outgrows the room left checkpoints what changed and recovers by itself
// (TestDiskFullDistinct).

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiskFullWrites: with the data directory's file system full, every
// request that writes (CREATE TABLE, CREATE VIEW, CREATE OR REPLACE VIEW,
// INSERT INTO, DROP VIEW, DROP TABLE, stop, resume, DELETE of a query,
// POST /v1/checkpoints, ingest) answers 507 naming the condition
// (problem+json; the checkpoints' answer lists each query's error), and
// changes nothing: the catalog is as before, a query whose
// stop was refused still runs, one whose resume was refused is still
// stopped (and no job of it runs). Reads answer 200. Once space is freed
// every one of them succeeds, and a restart finds what they did.
func TestDiskFullWrites(t *testing.T) {
	mnt := mountTmpfs(t, 64<<20)
	s := newServer(t, "--disk-reserve", "16MiB")
	s.dataDir = filepath.Join(mnt, "data")
	s.start(t)
	s.sql(t, `CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL) ENGINE=http;
		CREATE TABLE unused (k BIGINT) ENGINE=http;
		CREATE TABLE ks (k BIGINT, n BIGINT, PRIMARY KEY (k)) ENGINE=kafka CONNECTION='127.0.0.1:9'
			ENGINE_ATTRIBUTE='{"topic": "ks", "delivery": "at_least_once"}';
		CREATE VIEW running AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;
		CREATE VIEW replaced AS SELECT k, SUM(v) AS s FROM t GROUP BY k;
		CREATE VIEW stopped AS SELECT k, MAX(v) AS m FROM t GROUP BY k;
		CREATE VIEW dropped AS SELECT k, MIN(v) AS m FROM t GROUP BY k;
		CREATE VIEW deleted AS SELECT k, COUNT(v) AS c FROM t GROUP BY k`)
	s.waitRunning(t, "running", "replaced", "stopped", "dropped", "deleted")
	s.postRows(t, "t", []Row{{"k": 1, "v": 2}})
	s.checkpoint(t)
	s.stopQuery(t, "stopped")

	filler := filepath.Join(mnt, "filler")
	fill(t, filler, -1)
	want507 := func(what string, r response) {
		t.Helper()
		if r.status != http.StatusInsufficientStorage {
			t.Errorf("%s on a full disk: %s, want 507", what, truncate(r.body, 600))
			return
		}
		if strings.HasPrefix(what, "POST /v1/checkpoints") {
			// Its answer lists every query's checkpoint, with their errors.
			if !strings.Contains(string(r.body), "disk full") {
				t.Errorf("%s on a full disk: %s does not say the disk is full", what, truncate(r.body, 600))
			}
			return
		}
		if p := parseProblem(t, what, r); !strings.Contains(p.Detail, "disk full") {
			t.Errorf("%s on a full disk: detail %q does not say the disk is full", what, p.Detail)
		}
	}
	sql := func(stmt string) response {
		return s.do(t, http.MethodPost, "/v1/sql", "application/sql", []byte(stmt))
	}
	writes := []struct {
		what string
		do   func() response
	}{
		{"CREATE TABLE", func() response { return sql("CREATE TABLE t2 (k BIGINT) ENGINE=http") }},
		{"CREATE VIEW", func() response { return sql("CREATE VIEW created AS SELECT k, COUNT(*) AS n FROM t GROUP BY k") }},
		{"CREATE OR REPLACE VIEW", func() response {
			return sql("CREATE OR REPLACE VIEW replaced AS SELECT k, SUM(v) + 1 AS s FROM t GROUP BY k")
		}},
		{"INSERT INTO", func() response { return sql("INSERT INTO ks SELECT k, COUNT(*) FROM t GROUP BY k") }},
		{"DROP VIEW", func() response { return sql("DROP VIEW dropped") }},
		{"DROP TABLE", func() response { return sql("DROP TABLE unused") }},
		{"POST /v1/queries/running/stop", func() response { return s.do(t, http.MethodPost, "/v1/queries/running/stop", "", nil) }},
		{"POST /v1/queries/stopped/resume", func() response {
			return s.do(t, http.MethodPost, "/v1/queries/stopped/resume", "", nil)
		}},
		{"DELETE /v1/queries/deleted", func() response { return s.do(t, http.MethodDelete, "/v1/queries/deleted", "", nil) }},
		{"POST /v1/checkpoints?query=replaced", func() response {
			return s.do(t, http.MethodPost, "/v1/checkpoints?query=replaced&timeout=10s", "", nil)
		}},
		{"ingest", func() response {
			return s.do(t, http.MethodPost, rowsPath("t"), "application/x-ndjson", ndjson(t, []Row{{"k": 2, "v": 3}}))
		}},
	}
	for _, w := range writes {
		want507(w.what, w.do())
	}
	if r := sql("SHOW TABLES"); r.status != http.StatusOK {
		t.Fatalf("SHOW TABLES on a full disk: %s", r)
	}
	// Nothing changed.
	names := func() string {
		var out []string
		for _, r := range s.sql(t, "SHOW TABLES")[0].Rows {
			out = append(out, fmt.Sprint(r["name"]))
		}
		return strings.Join(out, " ")
	}
	const before = "deleted dropped ks replaced running stopped t unused"
	if got := names(); got != before {
		t.Errorf("tables and views after the refused writes: %s, want %s", got, before)
	}
	if q := s.query(t, "running"); q.State != "running" && q.State != "retrying" {
		t.Errorf("query running after its stop was refused: state %q, want running or retrying", q.State)
	}
	if q := s.query(t, "stopped"); q.State != "stopped" {
		t.Errorf("query stopped after its resume was refused: state %q", q.State)
	}
	if q := s.query(t, "replaced"); !strings.Contains(q.SQL, "SUM(v) AS s") {
		t.Errorf("query replaced after CREATE OR REPLACE was refused: %s", q.SQL)
	}

	// Space back: each of them goes through.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if r := w.do(); r.status != http.StatusOK {
			t.Errorf("%s once space is back: %s", w.what, truncate(r.body, 600))
		}
	}
	const after = "created ks replaced running stopped t t2"
	if got := names(); got != after {
		t.Errorf("tables and views once the writes went through: %s, want %s", got, after)
	}
	check := func(stage string) {
		t.Helper()
		s.waitRunning(t, "stopped", "created", "replaced")
		if q := s.query(t, "running"); q.State != "stopped" {
			t.Errorf("%s: query running is %q, want stopped", stage, q.State)
		}
		if q := s.query(t, "replaced"); !strings.Contains(q.SQL, "SUM(v) + 1") {
			t.Errorf("%s: query replaced is %s", stage, q.SQL)
		}
	}
	check("once space is back")
	s.restart(t)
	check("after a restart")
}

// TestDiskFullDistinct: a COUNT(DISTINCT) view of 250,000 distinct 40-byte
// values (a set of about 10 MiB) on a file system left with about 17.5 MiB
// free, ingest going on (it stops at 16 MiB): checkpoints, which may use
// down to 8 MiB, go on completing (they write the values added, not the
// set, whose base the state log wrote before), and once the file system
// is filled to the last byte and freed again the query recovers by
// itself. Every checkpoint rewrote the set, so none fit, and each failed
// one was kept and sent again with the next: 30 of them made the retry
// need more than the whole file system, and the query stayed retrying
// after the space was freed and ingest had stopped.
func TestDiskFullDistinct(t *testing.T) {
	mnt := mountTmpfs(t, 160<<20)
	s := newServer(t, "--disk-reserve", "16MiB")
	s.dataDir = filepath.Join(mnt, "data")
	s.start(t)
	s.sql(t, `CREATE TABLE t (k BIGINT NOT NULL, u VARCHAR(64) NOT NULL) ENGINE=http;
		CREATE VIEW d AS SELECT k, COUNT(DISTINCT u) AS n, COUNT(*) AS c FROM t GROUP BY k`)
	s.waitRunning(t, "d")
	n := 0
	post := func(rows int) response {
		batch := make([]Row, rows)
		for i := range batch {
			batch[i] = Row{"k": 1, "u": fmt.Sprintf("%040d", n+i)}
		}
		r := s.do(t, http.MethodPost, rowsPath("t"), "application/x-ndjson", ndjson(t, batch))
		if r.status == http.StatusOK {
			n += rows
		}
		return r
	}
	for n < 250_000 {
		expectOK(t, "ingest", post(5000))
	}
	// A task's state log is rebased (the whole set written again) when
	// its deltas outgrow twice its last base, which may fall on any
	// checkpoint while the set grows; the first checkpoint after a
	// restart is always a base. Take it while there is room, so that the
	// checkpoints below write the values added.
	s.checkpoint(t)
	s.restart(t)
	s.waitRunning(t, "d")
	s.checkpoint(t)

	// About 17.5 MiB free: ingest goes on, checkpoints must fit in 9.5.
	filler := filepath.Join(mnt, "filler")
	fill(t, filler, freeSpace(t, mnt)-35<<19)
	for i := range 30 {
		if r := post(200); r.status != http.StatusOK {
			t.Logf("ingest %d refused with %.1f MiB free: %s", i, float64(freeSpace(t, mnt))/(1<<20), truncate(r.body, 300))
			break
		}
		if r := s.do(t, http.MethodPost, "/v1/checkpoints?timeout=30s", "", nil); r.status != http.StatusOK {
			t.Errorf("checkpoint %d with %.1f MiB free (the set takes about 10): %s", i, float64(freeSpace(t, mnt))/(1<<20), truncate(r.body, 600))
		}
	}

	// Full to the last byte, rows waiting in the log, then freed.
	filler2 := filepath.Join(mnt, "filler2")
	fill(t, filler2, -1)
	if r := post(2000); r.status != http.StatusInsufficientStorage {
		t.Fatalf("ingest on a full disk: %s", r)
	}
	time.Sleep(3 * time.Second) // checkpoints fail meanwhile
	for _, f := range []string{filler2, filler} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		q := s.query(t, "d")
		h := s.checkpointHistory(t, "d")
		if q.State == "running" && len(h) > 0 && h[0].Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after space was freed: state %q, error %v, newest checkpoint %+v", q.State, q.raw["error"], h[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	expectOK(t, "ingest once space is back", post(2000))
	s.checkpoint(t)
	rows := s.results(t, "d").Rows
	if len(rows) != 1 || fmt.Sprint(rows[0]["n"]) != fmt.Sprint(n) || fmt.Sprint(rows[0]["c"]) != fmt.Sprint(n) {
		t.Fatalf("results %v, want one row counting %d values", rows, n)
	}
	s.restart(t)
	s.waitRunning(t, "d")
	if rows := s.results(t, "d").Rows; len(rows) != 1 || fmt.Sprint(rows[0]["n"]) != fmt.Sprint(n) {
		t.Fatalf("after a restart: results %v, want %d values", rows, n)
	}
}
