package e2e

// File sinks (ENGINE=file) through SIGKILL cycles: every committed file
// holds whole rows, and together the files hold every row of the log
// exactly once; no temporary is ever under a final name.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fileSink is one file sink table and the query writing it.
type fileSink struct {
	name, format string
	path         string // as in ENGINE_ATTRIBUTE
	dir          string // where the files are
	parallelism  int
	// partition is the partition_by ("hm" when empty) and level the name
	// of its directory level ("hm=<minute>").
	partition, level string
	delivery         string // "" for the default (exactly_once)
}

type fileScenario struct {
	srv   *server
	sinks []fileSink
}

// create makes sink s: bids as they are, with the minute of ts
// (DATE_FORMAT) to partition by, as Nexmark q10 does.
func (sc *fileScenario) create(t *testing.T, s fileSink) {
	t.Helper()
	if s.partition == "" {
		s.partition, s.level = "hm", "hm"
	}
	delivery := ""
	if s.delivery != "" {
		delivery = fmt.Sprintf(`, "delivery": %q`, s.delivery)
	}
	sc.srv.sql(t, fmt.Sprintf(`CREATE TABLE %s (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(32), ts TIMESTAMP(3), hm VARCHAR(8))
  ENGINE=file ENGINE_ATTRIBUTE='{"path": %q, "format": %q, "partition_by": %q%s}';
INSERT INTO %s SELECT /*+ SET_VAR(parallelism=%d) */ auction, bidder, price, channel, ts, DATE_FORMAT(ts, '%%H:%%i') FROM bids`,
		s.name, s.path, s.format, strings.ReplaceAll(s.partition, "'", "''"), delivery, s.name, s.parallelism))
	sc.sinks = append(sc.sinks, s)
}

func (sc *fileScenario) names() []string {
	var ns []string
	for _, s := range sc.sinks {
		ns = append(ns, s.name)
	}
	return ns
}

// fileRow is a bid as a file holds it, and the epoch of its file.
type fileRow struct {
	key   string // auction|bidder|price|channel|ts
	epoch int64
}

var filePartName = regexp.MustCompile(`^part-[0-9a-f]{16}-(\d{20})-(\d{4})\.(ndjson|csv)$`)

// readFileSink reads every file of sink s: its rows, the progress file's
// epoch, and the temporaries there are. A file that does not parse whole
// (a temporary under a final name, a torn write) fails t.
func readFileSink(t *testing.T, s fileSink) (rows []fileRow, progress int64, temps []string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(s.dir, "_streamsql"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			b, err := os.ReadFile(filepath.Join(s.dir, "_streamsql", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				Epoch int64 `json:"epoch"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatalf("sink %s: progress file %s: %v", s.name, e.Name(), err)
			}
			progress = max(progress, p.Epoch)
		}
	}
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, path)
		if d.IsDir() {
			if rel == "_streamsql" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			temps = append(temps, rel)
			return nil
		}
		m := filePartName.FindStringSubmatch(d.Name())
		if m == nil || m[3] != s.format {
			t.Errorf("sink %s: file %s is not named as a part file", s.name, rel)
			return nil
		}
		epoch, _ := strconv.ParseInt(m[1], 10, 64)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, r := range parseSinkFile(t, s, rel, b) {
			// The partition is the minute of ts.
			ts, err := time.Parse(timestampLayout, r["ts"])
			if err != nil {
				t.Errorf("sink %s: %s: ts %q: %v", s.name, rel, r["ts"], err)
				continue
			}
			if want := s.level + "=" + ts.Format("15:04"); filepath.Dir(rel) != want || r["hm"] != ts.Format("15:04") {
				t.Errorf("sink %s: a row of ts %s (hm %q) in %s, want directory %s", s.name, r["ts"], r["hm"], rel, want)
			}
			rows = append(rows, fileRow{key: strings.Join([]string{r["auction"], r["bidder"], r["price"], r["channel"], r["ts"]}, "|"), epoch: epoch})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("sink %s: %v", s.name, err)
	}
	return rows, progress, temps
}

// parseSinkFile parses a whole file (encoding/json, encoding/csv): its
// rows as text by column.
func parseSinkFile(t *testing.T, s fileSink, rel string, b []byte) []map[string]string {
	t.Helper()
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Errorf("sink %s: file %s does not end in a newline: a partial file under a final name", s.name, rel)
		return nil
	}
	var out []map[string]string
	switch s.format {
	case "ndjson":
		for i, line := range bytes.Split(b[:len(b)-1], []byte("\n")) {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Errorf("sink %s: %s line %d: %v", s.name, rel, i+1, err)
				return nil
			}
			r := map[string]string{}
			for k, v := range m {
				switch v := v.(type) {
				case nil:
					r[k] = "NULL"
				case float64:
					r[k] = strconv.FormatFloat(v, 'f', -1, 64)
				default:
					r[k] = fmt.Sprint(v)
				}
			}
			out = append(out, r)
		}
	case "csv":
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil || len(recs) == 0 {
			t.Errorf("sink %s: %s: %v", s.name, rel, err)
			return nil
		}
		for _, rec := range recs[1:] {
			r := map[string]string{}
			for i, h := range recs[0] {
				r[h] = rec[i]
			}
			if r["channel"] == "" {
				r["channel"] = "NULL" // the generator makes no empty channels
			}
			out = append(out, r)
		}
	}
	return out
}

// bidKey is a log row as parseSinkFile renders it.
func bidKey(r Row) string {
	ch := "NULL"
	if c, ok := r["channel"].(string); ok {
		ch = c
	}
	return strings.Join([]string{fmt.Sprint(r["auction"]), fmt.Sprint(r["bidder"]), fmt.Sprint(r["price"]), ch, fmt.Sprint(r["ts"])}, "|")
}

// checkExactlyOnce compares the rows of files (of epochs up to through,
// all when through < 0) with log: each row as many times as in log.
func checkExactlyOnce(t *testing.T, s fileSink, what string, rows []fileRow, through int64, log []Row) {
	t.Helper()
	want := map[string]int{}
	for _, r := range log {
		want[bidKey(r)]++
	}
	got := map[string]int{}
	n := 0
	for _, r := range rows {
		if through < 0 || r.epoch <= through {
			got[r.key]++
			n++
		}
	}
	var diffs []string
	for k, w := range want {
		if got[k] != w {
			diffs = append(diffs, fmt.Sprintf("%s: %d times, want %d", k, got[k], w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %d times, not in the log", k, g))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		t.Errorf("sink %s %s: %d rows in its files, %d in the log; %d differ: %s", s.name, what, n, len(log), len(diffs), strings.Join(diffs[:min(5, len(diffs))], "; "))
	}
}

func (sc *fileScenario) verify(t *testing.T, stage string, bids, _ []Row) {
	t.Helper()
	sc.srv.checkpointAndCheck(t, stage, sc.names(), func(t *testing.T, name string, cp checkpointInfo) {
		s := sc.sinks[slices.Index(sc.names(), name)]
		q := sc.srv.query(t, name)
		rows, progress, temps := readFileSink(t, s)
		// An epoch without changes writes no files and no progress: the
		// progress file holds the last epoch with files, which is the
		// epoch the checkpoint's answer reports committed.
		epochs := sc.epochs(t)[name]
		if n := len(epochs); n > 0 && epochs[n-1] != progress {
			t.Errorf("sink %s: progress file at epoch %d, files up to epoch %d", name, progress, epochs[n-1])
		}
		checkSinkEpochs(t, sc.srv, name, q, cp, epochs, "its files")
		if len(temps) > 0 {
			t.Errorf("sink %s: temporaries left with the query running: %v", name, temps)
		}
		checkExactlyOnce(t, s, "at the end", rows, -1, bids)
	})
}

// checkPrefix checks a random sink mid-stream: the files of the epochs up
// to the one its progress file records hold the log prefix that epoch's
// checkpoint read, each row once.
func (sc *fileScenario) checkPrefix(t *testing.T, rng *rand.Rand, log []Row) bool {
	t.Helper()
	s := sc.sinks[rng.IntN(len(sc.sinks))]
	rows, progress, _ := readFileSink(t, s)
	if progress == 0 {
		return false
	}
	for _, c := range sc.srv.checkpointHistory(t, s.name) {
		if id, _ := c.ID.Int64(); id == progress {
			if c.Status != "completed" {
				t.Errorf("sink %s: epoch %d is committed, but checkpoint %d is %q", s.name, id, id, c.Status)
				return true
			}
			in, _, err := httpPrefix(log)(c)
			if err != nil {
				return false
			}
			checkExactlyOnce(t, s, fmt.Sprintf("at epoch %d", progress), rows, progress, in)
			return true
		}
	}
	return false
}

// epochs are the epochs of the files of each sink, in order.
func (sc *fileScenario) epochs(t *testing.T) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for _, s := range sc.sinks {
		rows, _, _ := readFileSink(t, s)
		var es []int64
		for _, r := range rows {
			es = append(es, r.epoch)
		}
		slices.Sort(es)
		out[s.name] = slices.Compact(es)
	}
	return out
}

// TestFileSinkCrashRecovery: TestCrashRecovery for file sinks. An NDJSON
// sink at an absolute path and a CSV one at a path relative to the data
// directory (both partitioned by the minute of the row: a column the
// query computes, and an expression of partition_by; parallelism 2 and 1) are written while the log is posted in chunks with
// Idempotency-Keys and the server is SIGKILLed at random moments
// (STREAMSQL_CRASH_KILLS). Before each kill a random sink's files up to
// its recorded epoch equal the log prefix that epoch's checkpoint read; at
// the end the files hold every row of the log exactly once, every file
// parses whole, no temporary is left, and no epoch of a checkpoint seen
// failed has files.
func TestFileSinkCrashRecovery(t *testing.T) {
	out := t.TempDir()
	runSinkCrash(t, "file", testSeed(t, 470), func(t *testing.T, srv *server) crashSinkSet {
		sc := &fileScenario{srv: srv}
		sc.create(t, fileSink{name: "fs_ndjson", format: "ndjson", path: filepath.Join(out, "ndjson"), dir: filepath.Join(out, "ndjson"), parallelism: 2})
		sc.create(t, fileSink{name: "fs_csv", format: "csv", path: "csv/out", dir: filepath.Join(srv.dataDir, "files", "csv", "out"), parallelism: 1,
			partition: "DATE_FORMAT(ts, '%H:%i') AS minute", level: "minute"})
		return sc
	})
}

// TestFileSinkFaultPoints: a crash at each of the file sink's points (all
// temporaries written and none renamed; one file renamed; the epoch
// recorded, the runtime not told), then a restart: the files hold every
// row once.
func TestFileSinkFaultPoints(t *testing.T) {
	for i, point := range []string{"sink.before_commit/file", "sink.after_rename/file", "sink.after_commit/file"} {
		t.Run(point, func(t *testing.T) {
			out := t.TempDir()
			runSinkFault(t, faultCase{point: point, hit: 3, onRestart: true}, testSeed(t, 480+uint64(i)), pgFaultRows,
				func(t *testing.T, srv *server, prefix string) sinkSet {
					sc := &fileScenario{srv: srv}
					sc.create(t, fileSink{name: "fs_" + strings.NewReplacer("/", "_", ".", "_").Replace(prefix), format: "ndjson", path: out, dir: out, parallelism: 2})
					return sc
				})
		})
	}
}
