package file

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

var testCols = plan.Schema{
	{Name: "id", Type: plan.TypeBigint}, {Name: "name", Type: plan.TypeVarchar},
	{Name: "price", Type: plan.TypeDouble}, {Name: "ts", Type: plan.TypeTimestamp},
	{Name: "ok", Type: plan.TypeBoolean}, {Name: "day", Type: plan.TypeVarchar},
}

// testSpec is a sink of testCols partitioned by the columns of
// partitionBy (comma-separated), as the planner binds them.
func testSpec(dir, format, partitionBy string) sink.Spec {
	attrs := map[string]string{"path": dir, "format": format}
	s := sink.Spec{Table: "out", Engine: "file", Attrs: attrs, Columns: testCols, SinkID: "inst/1/out", ExactlyOnce: true}
	if partitionBy != "" {
		attrs["partition_by"] = partitionBy
		for _, c := range strings.Split(partitionBy, ",") {
			i := testCols.Index(c)
			s.Partition = append(s.Partition, &plan.ColRef{Index: i, Name: c, T: testCols[i].Type})
			s.PartitionNames = append(s.PartitionNames, c)
		}
	}
	return s
}

// epochRows makes n rows of epoch e, ids e*1000+i, over three days.
func epochRows(e, n int) []sink.Change {
	var out []sink.Change
	for i := range n {
		id := int64(e*1000 + i)
		name := plan.Str(fmt.Sprintf("n,\"%d\"\n", i))
		if i%5 == 0 {
			name = plan.Null
		}
		if i%7 == 0 {
			name = plan.Str("")
		}
		row := plan.Row{plan.Int(id), name, plan.Float(float64(i) / 4), plan.Time(1_700_000_000_000 + id), plan.Bool(i%2 == 0),
			plan.Str(fmt.Sprintf("2026-12-0%d", 1+i%3))}
		out = append(out, sink.Change{Key: plan.Row{}, Row: row})
	}
	return out
}

// readDir reads every committed (final) file under dir: rows by id as
// their JSON maps; no temporary may be there (unless tmpOK).
func readDir(t *testing.T, dir, format string, tmpOK bool) map[int64]map[string]any {
	t.Helper()
	out := map[int64]map[string]any{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if strings.HasPrefix(rel, ProgressDir+"/") {
			return nil
		}
		if strings.HasSuffix(rel, ".tmp") {
			if !tmpOK {
				t.Errorf("temporary %s left", rel)
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, r := range decodeFile(t, rel, format, b) {
			id := int64(r["id"].(float64))
			if _, dup := out[id]; dup {
				t.Errorf("row %d twice (again in %s)", id, rel)
			}
			if day := r["day"].(string); !strings.Contains(rel, "day="+day+"/") && strings.Contains(rel, "day=") {
				t.Errorf("row %d of day %s in %s", id, day, rel)
			}
			out[id] = r
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeFile decodes a file with the standard library (the oracle).
func decodeFile(t *testing.T, name, format string, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	switch format {
	case "ndjson":
		dec := json.NewDecoder(bytes.NewReader(b))
		for dec.More() {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, m)
		}
		if !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s: no newline at the end", name)
		}
	case "csv":
		r := csv.NewReader(bytes.NewReader(b))
		recs, err := r.ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, rec := range recs[1:] {
			m := map[string]any{}
			for i, h := range recs[0] {
				m[h] = rec[i]
			}
			var id float64
			fmt.Sscan(rec[0], &id)
			m["id"] = id
			out = append(out, m)
		}
	default:
		out = decodeParquet(t, name, b)
	}
	return out
}

// wantJSON is a row as the API writes it, through encoding/json.
func wantJSON(t *testing.T, r plan.Row) map[string]any {
	m := map[string]any{}
	for i, c := range testCols {
		m[c.Name] = r[i].JSON()
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func checkRows(t *testing.T, got map[int64]map[string]any, want []sink.Change, format string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d rows in files, want %d", len(got), len(want))
	}
	for _, ch := range want {
		id := ch.Row[0].I
		g, ok := got[id]
		if !ok {
			t.Errorf("row %d missing", id)
			continue
		}
		w := wantJSON(t, ch.Row)
		if format == "csv" {
			for k, v := range w {
				switch v := v.(type) {
				case nil:
					w[k] = ""
				case bool:
					w[k] = fmt.Sprint(v)
				case float64:
					if k != "id" {
						w[k] = fmt.Sprint(v)
					}
				}
			}
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("row %d: got %v, want %v", id, g, w)
		}
	}
}

func open(t *testing.T, spec sink.Spec) *Publisher {
	t.Helper()
	p, err := New(spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommitEpochs(t *testing.T) {
	ctx := context.Background()
	for _, format := range []string{"ndjson", "csv", "parquet"} {
		for _, pb := range []string{"", "day", "day,ok"} {
			t.Run(format+"/"+pb, func(t *testing.T) {
				dir := t.TempDir()
				p := open(t, testSpec(dir, format, pb))
				p.maxBytes = 2000 // several parts per partition
				if n, err := p.Committed(ctx); err != nil || n != 0 {
					t.Fatalf("Committed = %d, %v; want 0", n, err)
				}
				var all []sink.Change
				for _, e := range []int{3, 5} {
					ch := epochRows(e, 100)
					all = append(all, ch...)
					if err := p.CommitEpoch(ctx, uint64(e), ch); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.CommitEpoch(ctx, 5, epochRows(5, 1)); !errors.Is(err, sink.ErrCommitted) {
					t.Errorf("epoch 5 again: %v, want ErrCommitted", err)
				}
				checkRows(t, readDir(t, dir, format, false), all, format)
				q := open(t, testSpec(dir, format, pb))
				if n, err := q.Committed(ctx); err != nil || n != 5 {
					t.Errorf("a new publisher's Committed = %d, %v; want 5", n, err)
				}
				other := testSpec(dir, format, pb)
				other.SinkID = "inst/2/out"
				if n, err := open(t, other).Committed(ctx); err != nil || n != 0 {
					t.Errorf("another sink's Committed = %d, %v; want 0", n, err)
				}
				if pb != "" {
					ents, _ := os.ReadDir(dir)
					var names []string
					for _, e := range ents {
						names = append(names, e.Name())
					}
					want := []string{ProgressDir, "day=2026-12-01", "day=2026-12-02", "day=2026-12-03"}
					if !slices.Equal(names, want) {
						t.Errorf("directories %v, want %v", names, want)
					}
				}
			})
		}
	}
}

// crash is the panic of a simulated crash.
type crash string

// TestCrashPoints: a commit cut short at each point (a panic where the
// process would die), then a new publisher over the same directory
// (Open, Committed, the epoch committed again when it is not recorded):
// every row is in the files exactly once, no temporary is left, and no
// file visible under a final name is ever partial.
func TestCrashPoints(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		point string
		hit   int
	}{
		{"sink.before_commit", 1}, // temporaries written, none renamed
		{"sink.after_rename", 1},  // one file renamed, the others not
		{"sink.after_rename", 2},
		{"sink.after_rename", -1}, // every file renamed, no progress record
		{"sink.after_commit", 1},  // recorded, the runtime not told
	}
	for _, format := range []string{"ndjson", "csv"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s@%d", format, c.point, c.hit), func(t *testing.T) {
				dir := t.TempDir()
				p := open(t, testSpec(dir, format, "day"))
				p.maxBytes = 1500
				first := epochRows(1, 50)
				if err := p.CommitEpoch(ctx, 1, first); err != nil {
					t.Fatal(err)
				}
				second := epochRows(2, 100)
				var files []file
				if err := p.files(2, second, func(f file) error { files = append(files, f); return nil }); err != nil {
					t.Fatal(err)
				}
				if len(files) < 4 {
					t.Fatalf("epoch 2 makes %d files; the test wants several", len(files))
				}
				if c.hit < 0 {
					c.hit = len(files)
				}
				hits := 0
				p.point = func(name string) {
					if name == c.point {
						if hits++; hits == c.hit {
							panic(crash(name))
						}
					}
				}
				func() {
					defer func() {
						if r := recover(); r == nil {
							t.Fatalf("no crash at %s@%d", c.point, c.hit)
						} else if _, ok := r.(crash); !ok {
							panic(r)
						}
					}()
					p.CommitEpoch(ctx, 2, second)
				}()
				// What a reader sees after the crash: whole files only, each row once.
				seen := readDir(t, dir, format, true)
				for id := range seen {
					if id >= 2000 && c.point == "sink.before_commit" {
						t.Errorf("row %d visible before any rename", id)
					}
				}
				// The restart: the committer reads progress and commits again what is not recorded.
				q := open(t, testSpec(dir, format, "day"))
				q.maxBytes = 1500
				n, err := q.Committed(ctx)
				if err != nil {
					t.Fatal(err)
				}
				wantN := uint64(1)
				if c.point == "sink.after_commit" {
					wantN = 2
				}
				if n != wantN {
					t.Fatalf("Committed after the crash = %d, want %d", n, wantN)
				}
				if n < 2 {
					if err := q.CommitEpoch(ctx, 2, second); err != nil {
						t.Fatal(err)
					}
				}
				checkRows(t, readDir(t, dir, format, false), append(first, second...), format)
				if n, _ := q.Committed(ctx); n != 2 {
					t.Errorf("Committed at the end = %d, want 2", n)
				}
			})
		}
	}
}

func TestPartitionNames(t *testing.T) {
	var e encoder
	vals := []plan.Value{
		plan.Null, plan.Str(""), plan.Str("__NULL__"), plan.Str("__EMPTY__"), plan.Str("."), plan.Str(".."), plan.Str("../etc"),
		plan.Str("a/b"), plan.Str("a%2Fb"), plan.Str("a\x00b"), plan.Str("a\\b"), plan.Str("_x"), plan.Str("x_"), plan.Str(".hidden"),
		plan.Str(strings.Repeat("long", 100)), plan.Str(strings.Repeat("long", 100) + "!"),
		plan.Int(-3), plan.Float(math.NaN()), plan.Float(0.5), plan.Bool(true), plan.Time(0),
	}
	seen := map[string]plan.Value{}
	for _, v := range vals {
		n := string(e.appendPartition(nil, "c", v))
		if strings.ContainsAny(n, "/\\\x00") || n == "." || n == ".." || strings.HasPrefix(n, ".") || len(n) > 255 {
			t.Errorf("%v: directory name %q is not one safe path element", v, n)
		}
		if w, dup := seen[n]; dup {
			t.Errorf("%v and %v both make %q", v, w, n)
		}
		seen[n] = v
	}
	for v, want := range map[string]string{"2026-12-02": "c=2026-12-02", "10:05": "c=10:05", "..": "c=%2E.", "a/b": "c=a%2Fb"} {
		if n := string(e.appendPartition(nil, "c", plan.Str(v))); n != want {
			t.Errorf("%q: %q, want %q", v, n, want)
		}
	}
	// A level without a name (an expression without an alias) is the value alone.
	seen = map[string]plan.Value{}
	for _, v := range vals {
		n := string(e.appendPartition(nil, "", v))
		if strings.ContainsAny(n, "/\\\x00") || n == "" || strings.HasPrefix(n, ".") || len(n) > 255 {
			t.Errorf("%v: directory name %q is not one safe path element", v, n)
		}
		if w, dup := seen[n]; dup {
			t.Errorf("%v and %v both make %q", v, w, n)
		}
		seen[n] = v
	}
}

func TestResolve(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/a/b/../c", "/a/c"}, {"out", "/data/files/out"}, {"x/./y", "/data/files/x/y"},
	} {
		if got, err := Resolve(c.path, "/data/files"); err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
	for _, p := range []string{"../x", "a/../../x", "."} {
		if got, err := Resolve(p, "/data/files"); err == nil {
			t.Errorf("Resolve(%q) = %q, want an error", p, got)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, nil, 0o644)
	p, err := New(testSpec(f, "ndjson", ""), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Open(context.Background()); !sink.IsPermanent(err) {
		t.Errorf("Open of a file path: %v, want a permanent error", err)
	}
	s := testSpec(dir, "ndjson", "")
	s.ExactlyOnce = false
	if _, err := New(s, dir); !sink.IsPermanent(err) {
		t.Errorf("at_least_once: %v, want a permanent error", err)
	}
}

// TestAtMostOnceApply: an at_most_once file sink writes each Apply's rows
// as new whole files at once, with no progress file; a write cut short
// by a crash (after one of its files was renamed) leaves that file and an
// orphan temporary, which the next Open deletes; a write after the
// restart never replaces a file (its names are new), so each row is in
// the files at most once. An exactly_once sink refuses Apply, and the
// publisher refuses at_least_once.
func TestAtMostOnceApply(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec := testSpec(dir, "ndjson", "day")
	spec.ExactlyOnce, spec.Attrs["delivery"] = false, "at_most_once"
	p := open(t, spec)
	p.maxBytes = 1500
	first := epochRows(1, 60)
	if err := p.Apply(ctx, first); err != nil {
		t.Fatal(err)
	}
	checkRows(t, readDir(t, dir, "ndjson", false), first, "ndjson")
	if _, err := os.Stat(p.progress); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an at_most_once sink wrote a progress file (%v)", err)
	}

	// A crash after the first rename of the second write.
	second := epochRows(2, 100)
	p.point = func(name string) {
		if name == "sink.after_rename" {
			panic(crash(name))
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("no crash at sink.after_rename")
			} else if _, ok := r.(crash); !ok {
				panic(r)
			}
		}()
		p.Apply(ctx, second)
	}()
	seen := readDir(t, dir, "ndjson", true)
	partial := len(seen) - len(first)
	if partial <= 0 || partial >= len(second) {
		t.Fatalf("after the crash %d of the second write's %d rows are in files; the test wants some, not all", partial, len(second))
	}

	// The restart: Open deletes the orphans; the next write (the runtime
	// skips the replay of the second) lands in new files beside the old.
	q := open(t, spec)
	q.maxBytes = 1500
	third := epochRows(3, 40)
	if err := q.Apply(ctx, third); err != nil {
		t.Fatal(err)
	}
	got := readDir(t, dir, "ndjson", false) // no temporary left; no row twice
	var want []sink.Change
	want = append(want, first...)
	for _, ch := range second {
		if _, ok := seen[ch.Row[0].I]; ok {
			want = append(want, ch)
		}
	}
	checkRows(t, got, append(want, third...), "ndjson")

	eo := open(t, testSpec(t.TempDir(), "ndjson", ""))
	if err := eo.Apply(ctx, first); err == nil || !sink.IsPermanent(err) {
		t.Errorf("Apply on an exactly_once sink: %v, want a permanent error", err)
	}
	alo := testSpec(t.TempDir(), "ndjson", "")
	alo.ExactlyOnce, alo.Attrs["delivery"] = false, "at_least_once"
	if _, err := New(alo, t.TempDir()); err == nil || !strings.Contains(err.Error(), "exactly_once or at_most_once") {
		t.Errorf("an at_least_once file sink: %v, want a refusal", err)
	}
}
