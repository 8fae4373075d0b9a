package e2e

// A SIGKILL can leave an empty Badger memtable file (NNNNN.mem): Badger
// creates one with O_CREATE before truncating it to its size, and deletes
// a flushed one by truncating it to 0, closing it and only then removing
// it (ristretto z.MmapFile.Delete). A restart flushes the previous run's
// memtable right after opening the store and deletes it, so a kill soon
// after a restart lands in that window. Badger v4's Open then fails
// ("while opening memtables err: while opening fid: N err: Create a new
// file": openMemTables treats the z.NewFile that OpenMmapFile returns for
// an empty file as an error; dgraph-io/badger#2207), and the server does
// not start again. TestFaultPoints/restore.during@N meets it now and then.
// This test makes that state directly: after a SIGKILL it adds an empty
// memtable file to both stores, then restarts.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

func TestRestartAfterTornMemtable(t *testing.T) {
	rows := genBids(testSeed(t, 500), 600)
	sc := newScenario(t, []viewInstance{{name: "tumble_auction_p1", def: viewByBase("tumble_auction"), v: variants[0]}})
	sc.post(t, rows)
	sc.verify(t, "before_kill")
	before := canonicalRows(sc.srv.results(t, "tumble_auction_p1").Rows)
	sc.srv.kill(t)

	for _, store := range []string{"state", "meta"} {
		dir := filepath.Join(sc.srv.dataDir, store)
		mems, err := filepath.Glob(filepath.Join(dir, "*.mem"))
		if err != nil || len(mems) == 0 {
			t.Fatalf("%s: no memtable files (%v): the data directory layout changed; adapt this test", dir, err)
		}
		sort.Strings(mems)
		fid, err := strconv.Atoi(filepath.Base(mems[len(mems)-1])[:5])
		if err != nil {
			t.Fatalf("%s: memtable file name %s: %v", dir, mems[len(mems)-1], err)
		}
		torn := filepath.Join(dir, fmt.Sprintf("%05d.mem", fid+1))
		if err := os.WriteFile(torn, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	sc.srv.launch(t)
	if !sc.srv.waitHealthy(t) {
		ps := sc.srv.waitExit(t, killTimeout)
		t.Fatalf("after a SIGKILL that left an empty memtable file (as one landing while Badger creates it does), the server does not start: %v\n%s", ps, sc.srv.runLog())
	}
	sc.srv.waitRunning(t, instanceNames(sc.views)...)
	if d := diffCanonical(before, canonicalRows(sc.srv.results(t, "tumble_auction_p1").Rows), 5); d != "" {
		t.Errorf("committed results changed across the restart: %s", d)
	}
	sc.verify(t, "after_restart")
}
