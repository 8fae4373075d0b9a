package queries

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

func openSide(t *testing.T, dir string) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, FilePollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func writeSide(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(FilesDir(dir), name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	// A new modification time even within the file system's granularity.
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Duration(len(text)) * time.Second)
	os.Chtimes(p, later, later)
}

// waitRows checkpoints view until its committed results have n rows (at
// most 20 s: AS OF rows wait for the table side to go idle) and returns
// them as lines, sorted.
func waitRows(t *testing.T, e *Engine, view string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := e.Checkpoint(context.Background(), view); err != nil {
			t.Fatal(err)
		}
		_, rows, err := e.Results(view, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) >= n || time.Now().After(deadline) {
			var out []string
			for _, r := range rows {
				parts := make([]string, len(r))
				for i, v := range r {
					parts[i] = fmt.Sprint(JSONValue(v))
				}
				out = append(out, strings.Join(parts, "|"))
			}
			sort.Strings(out)
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func logEnd(t *testing.T, e *Engine, table string) int64 {
	t.Helper()
	ti, err := e.Table(table)
	if err != nil || ti.EndOffset == nil {
		t.Fatalf("table %s: %v, end offset %v", table, err, ti.EndOffset)
	}
	return *ti.EndOffset
}

const sideDDL = `CREATE TABLE side (k BIGINT, v VARCHAR(16), vt TIMESTAMP(3), PRIMARY KEY (k))
  ENGINE=file ENGINE_ATTRIBUTE='{"path": "side/s.csv", "format": "csv", "event_time": "vt", "idle_timeout": "100ms"}';
CREATE TABLE bids (id BIGINT, k BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE VIEW j AS SELECT b.id, s.k, s.v FROM bids b JOIN side s AS OF TIMESTAMP b.ts ON b.k = s.k`

// TestFileSideInput: a CSV side input joined AS OF the stream's time:
// rows before a reload join the first version (valid since always), rows
// after it the new one (a value changed, a key deleted, one added); the
// log holds each version once, also across a restart; a bad row keeps the
// last version and is reported as file:line:column.
func TestFileSideInput(t *testing.T) {
	dir := t.TempDir()
	writeSide(t, dir, "side/s.csv", "k,v\n1,one\n2,two\n")
	e := openSide(t, dir)
	exec(t, e, sideDDL)
	if n := logEnd(t, e, "side"); n != 2 {
		t.Fatalf("the first version logged %d rows, want 2", n)
	}
	ingest(t, e, "bids", `{"id": 1, "k": 1, "ts": "2020-01-01T00:00:00Z"}
{"id": 2, "k": 2, "ts": "2020-01-01T00:00:01Z"}
{"id": 3, "k": 3, "ts": "2020-01-01T00:00:02Z"}`)
	want := []string{"1|1|one", "2|2|two"}
	if got := waitRows(t, e, "j", 2); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("before the reload: %v, want %v", got, want)
	}

	// Unchanged content: nothing logged.
	e.pollSideFiles(time.Now())
	if n := logEnd(t, e, "side"); n != 2 {
		t.Fatalf("a poll of the unchanged file logged rows: end %d", n)
	}
	// A reload: 1 changes, 2 goes, 3 comes (3 rows logged).
	writeSide(t, dir, "side/s.csv", "v,k\nONE,1\nthree,3\n")
	before := time.Now()
	e.pollSideFiles(time.Now())
	if n := logEnd(t, e, "side"); n != 5 {
		t.Fatalf("the reload logged %d rows, want 3 (an upsert, an insert, a delete)", n-2)
	}
	later := before.Add(time.Hour).UTC().Format(time.RFC3339)
	ingest(t, e, "bids", fmt.Sprintf(`{"id": 4, "k": 1, "ts": %q}
{"id": 5, "k": 2, "ts": %q}
{"id": 6, "k": 3, "ts": %q}`, later, later, later))
	want = []string{"1|1|one", "2|2|two", "4|1|ONE", "6|3|three"}
	if got := waitRows(t, e, "j", 4); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after the reload: %v, want %v", got, want)
	}

	// A bad row: the table keeps its version, the error names the place.
	writeSide(t, dir, "side/s.csv", "k,v\n1,one\nx,two\n")
	e.pollSideFiles(time.Now())
	ti, _ := e.Table("side")
	if wantErr := filepath.Join(FilesDir(dir), "side/s.csv") + ":3:1: column k: \"x\" is not a BIGINT"; ti.FileError != wantErr {
		t.Errorf("file_error %q, want %q", ti.FileError, wantErr)
	}
	if n := logEnd(t, e, "side"); n != 5 {
		t.Errorf("a bad file logged rows: end %d", n)
	}
	writeSide(t, dir, "side/s.csv", "v,k\nONE,1\nthree,3\n") // back to the current version
	e.pollSideFiles(time.Now())
	if ti, _ := e.Table("side"); ti.FileError != "" || logEnd(t, e, "side") != 5 {
		t.Errorf("the current content again: file_error %q, end %d; want none and 5", ti.FileError, logEnd(t, e, "side"))
	}
	closeEngine(t, context.Background(), e)

	// A restart neither logs the version again nor loses it; a version a
	// crash left pending is logged once.
	e = openSide(t, dir)
	e.pollSideFiles(time.Now())
	if n := logEnd(t, e, "side"); n != 5 {
		t.Errorf("after a restart: end %d, want 5", n)
	}
	def := e.tableDef("side")
	v, err := parseSideFile(def, "p", []byte("k,v\n1,uno\n3,three\n"), time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.meta.PutCatalog(sidePendingKey(def.ID), encodeVersion(v)); err != nil {
		t.Fatal(err)
	}
	closeEngine(t, context.Background(), e)
	e = openSide(t, dir)
	defer closeEngine(t, context.Background(), e)
	if n := logEnd(t, e, "side"); n != 6 {
		t.Errorf("the pending version: end %d, want 6 (one upsert)", n)
	}
	if cur, _ := e.sideVersionAt(sideKey(def.ID)); cur == nil || cur.hash != v.hash {
		t.Errorf("the pending version is not current after the restart")
	}
	if p, _ := e.sideVersionAt(sidePendingKey(def.ID)); p != nil {
		t.Errorf("still pending after the restart")
	}
}

// TestFileSideInputErrors: files that cannot be a table's rows are
// refused at CREATE TABLE with file:line[:column] and the reason.
func TestFileSideInputErrors(t *testing.T) {
	for _, c := range []struct{ format, text, want string }{
		{"csv", "k,v\n1,a\n1,b\n", "s:3: the key of line 2 again (PRIMARY KEY k)"},
		{"csv", "k,w\n1,a\n", `s:1:3: header names "w", not a column of side (k, v)`},
		{"csv", "k,v\n,a\n", "s:2: column k: missing value for a key or NOT NULL column"},
		{"csv", "k,v\n1,\"a\n", "s:2:6: extraneous or missing \" in quoted-field"},
		{"ndjson", "{\"k\": 1, \"v\": \"a\"}\n\n{\"k\": \"x\"}\n", "s:3: column k:"},
		{"ndjson", "{\"k\": 1, \"_op\": \"delete\"}\n", "s:1: column _op: a side input file holds the table's rows"},
		{"ndjson", "{\"k\": 1, \"z\": 2}\n", "s:1: column z: unknown column"},
	} {
		dir := t.TempDir()
		writeSide(t, dir, "s", c.text)
		e := openSide(t, dir)
		_, err := e.Exec(context.Background(), fmt.Sprintf(`CREATE TABLE side (k BIGINT, v VARCHAR(16), PRIMARY KEY (k)) ENGINE=file ENGINE_ATTRIBUTE='{"path": "s", "format": %q}'`, c.format))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(FilesDir(dir), c.want)) {
			t.Errorf("%s %q: %v, want an error with %q", c.format, c.text, err, c.want)
		}
		if _, ok := e.tables["side"]; ok {
			t.Errorf("%s %q: the table was created", c.format, c.text)
		}
		closeEngine(t, context.Background(), e)
	}
}

// TestSideChanges: a reload's log rows, against a hand-made oracle.
func TestSideChanges(t *testing.T) {
	def := &plan.TableDef{Name: "s", Columns: plan.Schema{{Name: "k", Type: plan.TypeBigint}, {Name: "v", Type: plan.TypeVarchar}, {Name: "t", Type: plan.TypeTimestamp}},
		PrimaryKey: []string{"k"}, EventTime: 2, Attrs: map[string]string{"format": "csv"}}
	old, err := parseSideFile(def, "f", []byte("k,v\n1,a\n2,b\n3,c\n"), plan.MinTime)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseSideFile(def, "f", []byte("k,v\n3,c\n1,A\n4,d\n"), 5000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range changes(def, old, v) {
		r, err := decodeRowForTest(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(r))
	}
	want := []string{
		fmt.Sprint(plan.Row{plan.Int(1), plan.Str("A"), plan.Time(5000), plan.Bool(false)}), // changed (3 is not: only its time would differ)
		fmt.Sprint(plan.Row{plan.Int(4), plan.Str("d"), plan.Time(5000), plan.Bool(false)}),
		fmt.Sprint(plan.Row{plan.Int(2), plan.Null, plan.Time(5000), plan.Bool(true)}), // deleted at the version's time
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(changes(def, v, v)); n != 0 {
		t.Errorf("no change: %d rows", n)
	}
}

func decodeRowForTest(b []byte) (plan.Row, error) { return value.DecodeRow(b) }
