package e2e

// The backups of docs/operations.md ("Backups and restore"), step by step
// as written there, against the real binary: stop-and-copy (SIGTERM, wait
// for the exit, cp -a, start), and the online copy of a paused server
// (kill -STOP, cp -a, kill -CONT). A second server started on the copy
// must serve what the original served at the moment of the copy, and go
// on from there as the original does.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// backupSQL is the table and the views of the backup tests: a windowed
// aggregation and a running one.
const backupSQL = `
CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1s"}';
CREATE VIEW per_window AS SELECT window_start, window_end, auction, COUNT(*) AS bids, SUM(price) AS volume
  FROM bids GROUP BY TUMBLE(ts, '10s'), auction;
CREATE VIEW per_auction AS SELECT auction, COUNT(*) AS bids, MAX(price) AS top FROM bids GROUP BY auction`

var backupViews = []string{"per_window", "per_auction"}

// backupRows are rows from..to-1 of one deterministic stream: 7
// auctions, 100 ms apart.
func backupRows(from, to int) []Row {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	var rows []Row
	for i := from; i < to; i++ {
		rows = append(rows, Row{"auction": i % 7, "price": (i * 37) % 1000, "ts": base + int64(i)*100})
	}
	return rows
}

// ingestBackupRows posts rows from..to-1 in requests of 500.
func ingestBackupRows(t *testing.T, s *server, from, to int) {
	t.Helper()
	for i := from; i < to; i += 500 {
		s.postRows(t, "bids", backupRows(i, min(i+500, to)))
	}
}

// run runs a command of the documented steps, as written there.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

// sameResults checks that both servers serve the same committed results
// of every backup view, counting rows bids in all, and that their tables
// end at the same offset.
func sameResults(t *testing.T, stage string, a, b *server, rows int) {
	t.Helper()
	a.checkpoint(t)
	b.checkpoint(t)
	for _, v := range backupViews {
		ra, rb := a.results(t, v), b.results(t, v)
		if d := diffCanonical(canonicalRows(ra.Rows), canonicalRows(rb.Rows), 10); d != "" {
			t.Errorf("%s: %s: the copy's results differ from the original's: %s", stage, v, d)
		}
		sum := int64(0)
		for _, r := range rb.Rows {
			n, err := strconv.ParseInt(fmt.Sprint(r["bids"]), 10, 64)
			if err != nil {
				t.Fatalf("%s: %s: bids %v: %v", stage, v, r["bids"], err)
			}
			sum += n
		}
		if sum != int64(rows) {
			t.Errorf("%s: %s: the copy counts %d bids, want %d", stage, v, sum, rows)
		}
	}
	ea, _ := a.endOffset(t, "bids")
	eb, ok := b.endOffset(t, "bids")
	if !ok || ea != eb || eb != int64(rows) {
		t.Errorf("%s: end offsets %d (original) and %d (copy), want %d", stage, ea, eb, rows)
	}
}

// serverOn prepares a server on the data directory dir (a copy).
func serverOn(t *testing.T, dir string) *server {
	t.Helper()
	s := newServer(t)
	s.dataDir = dir
	return s
}

// TestBackupStopAndCopy follows "Stop and copy": SIGTERM, wait for the
// process to exit (it takes a final checkpoint of every query), copy the
// data directory with cp -a, start the server again; a second server
// started on the copy serves the same results and takes new rows as the
// original does.
func TestBackupStopAndCopy(t *testing.T) {
	s := startServer(t)
	s.sql(t, backupSQL)
	s.waitRunning(t, backupViews...)
	ingestBackupRows(t, s, 0, 3000)

	// 1. Stop the server with SIGTERM and wait until it has exited.
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ps := s.waitExit(t, 90*time.Second); !ps.Success() {
		t.Fatalf("SIGTERM: the server exited with %v; log:\n%s", ps, s.runLog())
	}
	// 2. Copy the data directory.
	backup := filepath.Join(t.TempDir(), "streamsql-backup")
	run(t, "cp", "-a", s.dataDir, backup)
	// 3. Start the server again.
	s.start(t)

	// Restore: a server on the copy.
	restored := serverOn(t, backup)
	restored.start(t)
	restored.waitRunning(t, backupViews...)
	sameResults(t, "after the restore", s, restored, 3000)

	ingestBackupRows(t, s, 3000, 4000)
	ingestBackupRows(t, restored, 3000, 4000)
	sameResults(t, "after 1000 more rows into both", s, restored, 4000)
}

// TestBackupOnlineCopy follows "Online copy": POST /v1/checkpoints,
// kill -STOP the server, cp -a the data directory, kill -CONT it. The copy
// is what a SIGKILL at the pause would leave: a server on it has every
// row acknowledged before the pause (also those after the last
// checkpoint) and none after, and the results those rows make.
func TestBackupOnlineCopy(t *testing.T) {
	s := startServer(t)
	s.sql(t, backupSQL)
	s.waitRunning(t, backupViews...)
	ingestBackupRows(t, s, 0, 2000)
	// 1. Checkpoint (optional: less to replay from the copy).
	s.checkpoint(t)
	// Rows acknowledged after the checkpoint are in the copy too.
	ingestBackupRows(t, s, 2000, 2500)

	// 2. Pause the server, copy the data directory, let the server go on.
	pid := strconv.Itoa(s.cmd.Process.Pid)
	backup := filepath.Join(t.TempDir(), "streamsql-backup")
	run(t, "kill", "-STOP", pid)
	run(t, "cp", "-a", s.dataDir, backup)
	run(t, "kill", "-CONT", pid)

	// The original goes on; rows it takes now are not in the copy.
	ingestBackupRows(t, s, 2500, 3000)

	// Restore: a server on the copy, whose rows are the first 2,500.
	restored := serverOn(t, backup)
	restored.start(t)
	restored.waitRunning(t, backupViews...)
	if end, _ := restored.endOffset(t, "bids"); end != 2500 {
		t.Fatalf("the copy's table ends at offset %d, want 2500: the rows acknowledged before the pause", end)
	}
	ingestBackupRows(t, restored, 2500, 3000)
	sameResults(t, "the copy given the rows after the pause", s, restored, 3000)
}
