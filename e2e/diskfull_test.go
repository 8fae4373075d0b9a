package e2e

// Disk full: the data directory on a small tmpfs, filled by ingest until
// the server refuses it, then by a filler file to the last byte. Ingest
// must get 507 problem+json naming the condition with nothing of the
// request appended, checkpoints must fail and be recorded as failed with
// the error (the query showing retrying), the server must stay up, and
// once the fillers are deleted everything must resume by itself: ingest
// accepted, checkpoints completing, results equal to what was
// acknowledged, also after a SIGKILL and restart (no checkpoint corrupted).

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

const (
	diskMount     = 96 << 20 // the tmpfs
	diskReserve   = 16 << 20 // --disk-reserve
	diskHeadroom  = 20 << 20 // what ingest may fill before the reserve
	diskChunkRows = 400
	diskPad       = 1000 // bytes of padding per row
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and
// unmounts it when the test ends (registered before any server, so after
// the server is gone).
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs for the data directory (mount -t tmpfs); run as root")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// freeSpace is what statfs says is available on dir's file system.
func freeSpace(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill writes zeros to path: n bytes, or until the file system is full
// when n < 0 (then the error must be ENOSPC).
func fill(t *testing.T, path string, n int64) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var written int64
	for n < 0 || written < n {
		b := buf
		if n >= 0 && n-written < int64(len(b)) {
			b = b[:n-written]
		}
		k, err := f.Write(b)
		written += int64(k)
		if err != nil {
			if n < 0 && errors.Is(err, syscall.ENOSPC) {
				return written
			}
			t.Fatalf("filling %s: %v after %d bytes", path, err, written)
		}
	}
	return written
}

// diskRows is one chunk of rows: v runs on from first.
func diskRows(first, n int) []Row {
	pad := strings.Repeat("p", diskPad)
	rows := make([]Row, n)
	for i := range rows {
		v := first + i
		rows[i] = Row{"k": v % 13, "v": v, "pad": pad}
	}
	return rows
}

// diskOracle: view c (COUNT and SUM per k) and view sel (the rows with v
// divisible by 4) over v = 0..n-1, as sorted canonical lines.
func diskOracle(n int) (c, sel []string) {
	cnt, sum := map[int]int{}, map[int]int{}
	for v := 0; v < n; v++ {
		cnt[v%13]++
		sum[v%13] += v
		if v%4 == 0 {
			sel = append(sel, fmt.Sprintf("%d,%d", v%13, v))
		}
	}
	for k := range cnt {
		c = append(c, fmt.Sprintf("%d,%d,%d", k, cnt[k], sum[k]))
	}
	sort.Strings(c)
	sort.Strings(sel)
	return c, sel
}

// diskResults reads views c and sel (committed) as canonical lines.
func diskResults(t *testing.T, s *server) (c, sel []string) {
	t.Helper()
	for _, r := range s.results(t, "c").Rows {
		c = append(c, fmt.Sprintf("%v,%v,%v", r["k"], r["n"], r["s"]))
	}
	for _, r := range s.results(t, "sel").Rows {
		sel = append(sel, fmt.Sprintf("%v,%v", r["k"], r["v"]))
	}
	sort.Strings(c)
	sort.Strings(sel)
	return c, sel
}

// checkDiskResults compares both views with the oracle over the first n
// rows.
func checkDiskResults(t *testing.T, s *server, stage string, n int) {
	t.Helper()
	wantC, wantSel := diskOracle(n)
	gotC, gotSel := diskResults(t, s)
	if strings.Join(gotC, " ") != strings.Join(wantC, " ") {
		t.Fatalf("%s: view c over %d acknowledged rows:\n got %v\nwant %v", stage, n, gotC, wantC)
	}
	if len(gotSel) != len(wantSel) || strings.Join(gotSel, " ") != strings.Join(wantSel, " ") {
		t.Fatalf("%s: view sel has %d rows, want %d (the oracle over %d acknowledged rows)", stage, len(gotSel), len(wantSel), n)
	}
}

func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, diskMount)
	s := newServer(t, "--disk-reserve", fmt.Sprintf("%dMiB", diskReserve>>20))
	s.dataDir = filepath.Join(mnt, "data")
	s.start(t)
	s.sql(t, `CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL, pad VARCHAR(2000)) ENGINE=http;
		CREATE VIEW c AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k;
		CREATE VIEW sel AS SELECT k, v FROM t WHERE v % 4 = 0`)
	s.waitRunning(t, "c", "sel")

	// Leave room for diskHeadroom of ingest above the reserve.
	filler := filepath.Join(mnt, "filler")
	fill(t, filler, freeSpace(t, mnt)-diskReserve-diskHeadroom)

	// Ingest until refused.
	acked := 0
	post := func(chunk int) response {
		body := ndjson(t, diskRows(acked, diskChunkRows))
		r, err := s.postIdem("t", fmt.Sprintf("chunk-%d", chunk), body)
		if err != nil {
			t.Fatalf("chunk %d: %v%s", chunk, err, s.exitNote())
		}
		return r
	}
	var refused response
	chunk := 0
	for ; ; chunk++ {
		if chunk > 4*diskHeadroom/(diskChunkRows*diskPad) {
			t.Fatalf("%d chunks accepted, %d MiB free: ingest was never refused", chunk, freeSpace(t, mnt)>>20)
		}
		r := post(chunk)
		if r.status == http.StatusOK {
			acked += diskChunkRows
			continue
		}
		refused = r
		break
	}
	t.Logf("ingest refused after %d rows, %.1f MiB free", acked, float64(freeSpace(t, mnt))/(1<<20))
	checkDiskFullProblem(t, "ingest at the reserve", refused, "ingest stops")
	if end, ok := s.endOffset(t, "t"); !ok || end != int64(acked) {
		t.Fatalf("table t ends at %d (reported: %v) after %d acknowledged rows: a refused request appended something", end, ok, acked)
	}
	// Checkpoints go on below the ingest reserve.
	s.checkpoint(t)
	checkDiskResults(t, s, "checkpoint after ingest was refused", acked)

	// Now fill the file system to the last byte: checkpoints fail.
	filler2 := filepath.Join(mnt, "filler2")
	fill(t, filler2, -1)
	if r := post(chunk); r.status != http.StatusInsufficientStorage {
		t.Fatalf("ingest on a full disk: %s, want 507", r)
	}
	r := s.do(t, http.MethodPost, "/v1/checkpoints?timeout=10s", "", nil)
	if r.status != http.StatusInsufficientStorage || !strings.Contains(string(r.body), "disk full") {
		t.Fatalf("POST /v1/checkpoints on a full disk: %s, want 507 naming disk full", truncate(r.body, 2000))
	}
	for _, name := range []string{"c", "sel"} {
		q := s.query(t, name)
		if errText, _ := q.raw["error"].(string); q.State != "retrying" || !strings.Contains(errText, "disk full") {
			t.Fatalf("query %s on a full disk: state %q, error %q; want retrying, naming disk full", name, q.State, errText)
		}
		h := s.checkpointHistory(t, name)
		if len(h) == 0 || h[0].Status != "failed" || !strings.Contains(h[0].Error, "disk full") {
			t.Fatalf("query %s: newest checkpoint %+v, want failed with the disk-full error", name, h)
		}
	}
	if got := s.status(t, "/healthz"); got != http.StatusOK {
		t.Fatalf("/healthz on a full disk: %d", got)
	}
	if m := s.do(t, http.MethodGet, "/metrics", "", nil); !strings.Contains(string(m.body), "\nstreamsql_disk_free_bytes 0\n") {
		t.Fatalf("/metrics on a full disk has no streamsql_disk_free_bytes 0")
	}

	// Free the space: everything resumes by itself.
	for _, f := range []string{filler2, filler} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	r = post(chunk) // the refused chunk again, with its key
	if r.status != http.StatusOK || r.replayed() {
		t.Fatalf("the refused chunk once space is free: %s (replayed %v), want a fresh 200", r, r.replayed())
	}
	acked += diskChunkRows
	for chunk++; chunk%5 != 0; chunk++ {
		expectOK(t, "ingest after space was freed", post(chunk))
		acked += diskChunkRows
	}
	s.checkpoint(t)
	for _, name := range []string{"c", "sel"} {
		if q := s.query(t, name); q.State != "running" {
			t.Fatalf("query %s once space is free: state %q, error %v", name, q.State, q.raw["error"])
		}
		if h := s.checkpointHistory(t, name); h[0].Status != "completed" {
			t.Fatalf("query %s: newest checkpoint %+v once space is free", name, h[0])
		}
	}
	checkDiskResults(t, s, "after space was freed", acked)

	// A restart reads the last checkpoint: nothing corrupted.
	s.restart(t)
	s.waitRunning(t, "c", "sel")
	checkDiskResults(t, s, "after a restart", acked)
	for chunk++; chunk%5 != 0; chunk++ {
		expectOK(t, "ingest after the restart", post(chunk))
		acked += diskChunkRows
	}
	s.checkpoint(t)
	checkDiskResults(t, s, "after the restart and more rows", acked)
	if end, _ := s.endOffset(t, "t"); end != int64(acked) {
		t.Fatalf("table t ends at %d, %d rows acknowledged", end, acked)
	}

	// A start on a full disk: opening Badger there would die of SIGBUS
	// (its memtable replay and flushes write through mmap), so the server
	// refuses to start, naming the condition; with space it starts again.
	fill(t, filler2, -1)
	s.kill(t)
	s.launch(t)
	ps := s.waitExit(t, startTimeout)
	if log := s.runLog(); ps.Success() || !strings.Contains(log, "disk full") || strings.Contains(log, "SIGBUS") {
		t.Fatalf("start on a full disk: exit %v, log:\n%s", ps, log)
	}
	if err := os.Remove(filler2); err != nil {
		t.Fatal(err)
	}
	s.start(t)
	s.waitRunning(t, "c", "sel")
	checkDiskResults(t, s, "after a refused start on a full disk", acked)
}

// checkDiskFullProblem checks a refused ingest: 507 problem+json naming
// the disk-full condition.
func checkDiskFullProblem(t *testing.T, what string, r response, mention string) {
	t.Helper()
	if r.status != http.StatusInsufficientStorage {
		t.Fatalf("%s: %s, want 507", what, r)
	}
	p := parseProblem(t, what, r)
	if !strings.Contains(p.Detail, "disk full") || !strings.Contains(p.Detail, mention) || !strings.Contains(p.Detail, "none of the") {
		t.Fatalf("%s: detail %q does not say the disk is full, that %s, and that nothing was appended", what, p.Detail, mention)
	}
}
