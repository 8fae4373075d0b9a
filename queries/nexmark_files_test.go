package queries

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime/source/nexmark"
)

// TestNexmarkQ10: the q10 example (every bid into CSV files partitioned
// by day and minute) over a bounded generator input, at parallelism 1
// and 2: the files, read with encoding/csv, hold every bid exactly once,
// each in the directory of its dt and hm (computed here from the bid's
// time), and every file is complete.
func TestNexmarkQ10(t *testing.T) {
	const events = 40000
	in := suiteInput{events: events}
	var want []string
	for _, b := range in.rows(nexmark.Bid) {
		ts := utc(b[nexmark.BidDateTime].I)
		dt, hm := ts.Format("2006-01-02"), ts.Format("15:04")
		want = append(want, line("dt="+dt+"/hm="+hm, b[nexmark.BidAuction].I, b[nexmark.BidBidder].I, b[nexmark.BidPrice].I,
			ts.Format("2006-01-02T15:04:05.000Z"), b[nexmark.BidExtra].S, dt, hm))
	}
	sort.Strings(want)
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			dir := t.TempDir()
			e := openNexmark(t, dir)
			defer closeEngine(t, context.Background(), e)
			text, err := exampleSQL("q10")
			if err != nil {
				t.Fatal(err)
			}
			exec(t, e, BenchTables(events))
			exec(t, e, fmt.Sprintf("SET parallelism = %d;\n%s", par, text))
			finishQuery(t, e, "fs_sink")
			got := readCSVTree(t, filepath.Join(FilesDir(dir), "nexmark", "q10", "bid"))
			if d := firstDiff(want, got); d != "" {
				t.Fatalf("%d rows in the files, want %d; %s", len(got), len(want), d)
			}
		})
	}
}

// finishQuery waits until query name has read all its bounded input and
// takes a last checkpoint (for a file sink: its files are in place).
func finishQuery(t *testing.T, e *Engine, name string) {
	t.Helper()
	e.mu.RLock()
	job := e.views[name].Job
	e.mu.RUnlock()
	select {
	case <-job.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the query did not finish its bounded input")
	}
	if _, err := e.Checkpoint(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if st := job.Status(); st.Err != nil {
		t.Fatalf("the query failed: %v", st.Err)
	}
}

// readCSVTree reads every CSV file under root (but _streamsql/): a line
// per row, its directory first, then its fields; sorted. A temporary, a
// file that does not parse or whose header is not the first line fails t.
func readCSVTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "_streamsql" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || !strings.HasSuffix(d.Name(), ".csv") {
			t.Errorf("%s: not a committed CSV file", rel)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s: %v (or no final newline)", rel, err)
			return nil
		}
		if strings.Join(recs[0], ",") != "auction,bidder,price,date_time,extra,dt,hm" {
			t.Errorf("%s: header %v", rel, recs[0])
		}
		for _, r := range recs[1:] {
			out = append(out, filepath.Dir(rel)+"|"+strings.Join(r, "|"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
