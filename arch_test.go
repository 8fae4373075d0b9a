// Package streamsql_test checks the repository's dependency direction
// (DESIGN.md, "Import direction"): cmd -> {http, pgwire} -> queries ->
// {planner, runtime, state} (http and pgwire beside each other); only parser imports the TiDB parser; the packages of
// onlyDeps depend on nothing but the packages listed there (runtime/op:
// planner/plan, window, value, funcs; funcs: planner/plan, value, window;
// value: planner/plan, window); and the pure packages (runtime/ckpt,
// runtime/op, funcs, value) import no I/O, take no locks, read no clock
// and start no goroutines (TestPurePackages, which TestPureCheck shows
// catching each); the end-to-end tests import of the module only its test
// servers (TestE2EImports).
package streamsql_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/streamsql/streamsql"

// deps returns, per package of the module, its transitive imports.
func deps(t *testing.T) map[string][]string {
	// Read every Go file so that the test cache sees a change to any import.
	filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			os.ReadFile(p)
		}
		return nil
	})
	out, err := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[f[0]] = f[1:]
	}
	return m
}

func TestImportDirection(t *testing.T) {
	all := deps(t)
	forbid := map[string][]string{
		// package (and its subpackages) -> prefixes it must never depend on
		"window":       {"github.com/", "golang.org/", mod + "/"},
		"runtime/ckpt": {"github.com/", "golang.org/", mod + "/"},
		"planner/plan": {"github.com/pingcap/", "github.com/dgraph-io/", mod + "/parser", mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http"},
		"runtime":      {"github.com/pingcap/", mod + "/parser", mod + "/planner\x00", mod + "/queries", mod + "/http"},
		"state":        {"github.com/pingcap/", mod + "/parser", mod + "/planner", mod + "/runtime", mod + "/queries", mod + "/http"},
		"planner":      {mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http", "github.com/dgraph-io/"},
		"parser":       {mod + "/planner/plan", mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http"},
		"queries":      {mod + "/http", mod + "/pgwire", mod + "/cmd"},
		"cluster":      {mod + "/"}, // the catalog log and server identity: franz-go and the standard library only
		"http":         {mod + "/pgwire", mod + "/cmd"},
		"pgwire":       {mod + "/http", mod + "/cmd"},
	}
	// The record formats (Avro, the Schema Registry): below runtime and
	// queries, which both use them; of the module, plan data and value
	// (pure) only.
	forbid["runtime/format"] = []string{mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http", mod + "/parser", mod + "/planner\x00", "github.com/dgraph-io/", "github.com/pingcap/"}
	for pkg, ds := range all {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		for owner, bad := range forbid {
			if rel != owner && !strings.HasPrefix(rel, owner+"/") {
				continue
			}
			if owner == "planner" && strings.HasPrefix(rel, "planner/plan") {
				continue // checked on its own
			}
			for _, d := range ds {
				for _, b := range bad {
					exact := strings.HasSuffix(b, "\x00")
					b = strings.TrimSuffix(b, "\x00")
					hit := d == b || (!exact && strings.HasPrefix(d, b))
					if (owner == "window" || owner == "runtime/ckpt") && !strings.Contains(strings.Split(d, "/")[0], ".") {
						hit = false // the standard library
					}
					if hit && !strings.HasPrefix(d, mod+"/"+owner) {
						t.Errorf("%s depends on %s (forbidden for %s)", pkg, d, owner)
					}
				}
			}
		}
	}
	// Only parser imports the TiDB parser directly.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "github.com/pingcap/tidb") && f[0] != mod+"/parser" {
				t.Errorf("%s imports %s: only parser may", f[0], imp)
			}
		}
	}
}

// onlyDeps: packages that may depend on nothing of the module but these
// (and the standard library, nothing else outside it).
var onlyDeps = map[string][]string{
	"funcs":      {mod + "/planner/plan", mod + "/value", mod + "/window"},
	"value":      {mod + "/planner/plan", mod + "/window"},
	"runtime/op": append([]string{mod + "/planner/plan", mod + "/window", mod + "/value", mod + "/funcs"}, hllDeps...),
}

// hllDeps: APPROX_COUNT_DISTINCT's HyperLogLog (runtime/op/aggs.go) and
// what it imports: computation only (encoding/binary, errors, fmt, iter,
// math, math/bits, slices), no I/O, clock or goroutine.
var hllDeps = []string{"github.com/axiomhq/hyperloglog", "github.com/dgryski/go-metro", "github.com/kamstrup/intmap"}

// TestPureDeps fails when a package of onlyDeps depends on more.
func TestPureDeps(t *testing.T) {
	all := deps(t)
	for owner, allowed := range onlyDeps {
		for _, d := range all[mod+"/"+owner] {
			std := !strings.Contains(strings.Split(d, "/")[0], ".")
			ok := std
			for _, a := range allowed {
				ok = ok || d == a
			}
			if !ok {
				t.Errorf("%s depends on %s: it may depend only on %v and the standard library", owner, d, allowed)
			}
		}
	}
}

// pure are the packages that must do no I/O, read no clock and start no
// goroutine (DESIGN.md): their inputs carry the time, and their callers
// perform what they answer.
var pure = []string{"runtime/ckpt", "funcs", "value", "runtime/op"}

// impure are what a pure package may not import, and the calls it may not
// make (package-qualified).
var (
	impureImports = []string{"os", "os/exec", "net", "net/http", "syscall", "io/fs", "io/ioutil", "log", "log/slog", "math/rand", "math/rand/v2", "crypto/rand", "unsafe", "io", "sync", "runtime"}
	impureCalls   = map[string][]string{
		"time": {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTicker", "NewTimer"},
	}
)

// pureImports are imports of impureImports that a pure package may still
// have, and why. runtime/op imports unsafe for unsafe.Sizeof in its state
// size estimates (constants) and for KeyBytes, an encoded key's bytes read
// without a copy on the per-row path, and GROUP_CONCAT's entries read
// without a copy while they are sorted (aggs.go: decodeShared): none is
// I/O, a clock or a goroutine.
var pureImports = map[string][]string{
	"runtime/op": {"unsafe"},
}

// TestPurePackages fails when a pure package's non-test file imports I/O,
// calls the clock or starts a goroutine.
func TestPurePackages(t *testing.T) {
	for _, dir := range pure {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
		findings:
			for _, p := range impurities(t, f) {
				for _, ok := range pureImports[dir] {
					if strings.HasSuffix(p, ": imports "+ok) {
						continue findings
					}
				}
				t.Errorf("%s: %s (a pure package)", f, p)
			}
		}
	}
}

// impurities lists what in file f a pure package may not have.
func impurities(t *testing.T, f string) []string {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, f, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	names := map[string]string{} // local name -> import path
	for _, imp := range file.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		for _, bad := range impureImports {
			if path == bad {
				found = append(found, fmt.Sprintf("%s: imports %s", fset.Position(imp.Pos()), path))
			}
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found = append(found, fmt.Sprintf("%s: starts a goroutine", fset.Position(n.Pos())))
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				for _, fn := range impureCalls[names[id.Name]] {
					if n.Sel.Name == fn {
						found = append(found, fmt.Sprintf("%s: uses %s.%s", fset.Position(n.Pos()), names[id.Name], fn))
					}
				}
			}
		}
		return true
	})
	return found
}

// TestPureCheck shows that the purity check catches what it is for.
func TestPureCheck(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.go")
	src := "package bad\n\nimport (\n\t\"net\"\n\tclock \"time\"\n\t\"os\"\n)\n\n" +
		"func f() { go func() {}(); _ = clock.Now(); _, _ = os.Open(\"x\"); _ = net.IPv4len; _ = clock.Second }\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := impurities(t, f)
	want := []string{"imports net", "imports os", "starts a goroutine", "uses time.Now"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %d findings (%q)", got, len(want), want)
	}
	for i, w := range want {
		if !strings.HasSuffix(got[i], w) {
			t.Errorf("finding %d: %q, want one ending in %q", i, got[i], w)
		}
	}
}

// TestE2EImports: the end-to-end tests share no code with the engine
// (e2e/doc.go): of the module they import only the test servers of
// internal/pgtest, internal/kafkatest and internal/storetest.
func TestE2EImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}`, "./e2e").Output()
	if err != nil {
		t.Fatalf("go list ./e2e: %v", err)
	}
	allowed := []string{mod + "/internal/pgtest", mod + "/internal/kafkatest", mod + "/internal/storetest"}
	n := 0
	for _, imp := range strings.Fields(string(out)) {
		if imp != mod && !strings.HasPrefix(imp, mod+"/") {
			continue
		}
		n++
		ok := false
		for _, a := range allowed {
			ok = ok || imp == a
		}
		if !ok {
			t.Errorf("e2e imports %s: of the module it may import only %q", imp, allowed)
		}
	}
	if n == 0 {
		t.Errorf("go list found no import of the module in e2e (want %q): the check reads nothing", allowed)
	}
}
