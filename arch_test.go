// Package streamsql_test checks the repository's dependency direction
// (DESIGN.md, "Import direction"): cmd -> http -> queries -> {planner, runtime, state},
// planner -> {parser, planner/plan, window}, runtime -> {planner/plan,
// window, state}; {planner, runtime, queries} -> value -> {planner/plan,
// window}; only parser imports the TiDB parser. Pure packages (value) also
// read no clock, start no goroutines and do no I/O (TestPurePackages).
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
	"slices"
	"strconv"
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
		"value":        {"github.com/", "golang.org/", mod + "/"}, // but allowed, below
		"planner/plan": {"github.com/pingcap/", "github.com/dgraph-io/", mod + "/parser", mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http"},
		"runtime":      {"github.com/pingcap/", mod + "/parser", mod + "/planner\x00", mod + "/queries", mod + "/http"},
		"state":        {"github.com/pingcap/", mod + "/parser", mod + "/planner", mod + "/runtime", mod + "/queries", mod + "/http"},
		"planner":      {mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http", "github.com/dgraph-io/"},
		"parser":       {mod + "/planner/plan", mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http"},
		"queries":      {mod + "/http", mod + "/cmd"},
		"http":         {mod + "/cmd"},
	}
	// Module packages a package forbidden the module may still use.
	allowed := map[string][]string{
		"value": {mod + "/planner/plan", mod + "/window"},
	}
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
					if (owner == "window" || owner == "value") && !strings.Contains(strings.Split(d, "/")[0], ".") {
						hit = false // the standard library
					}
					if slices.Contains(allowed[owner], d) {
						hit = false
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

// pure lists the packages that must stay pure (their doc.go says so): no
// I/O, no clock, no goroutines. Imports are checked by TestImportDirection;
// this checks the source of their non-test files.
var pure = []string{"value"}

// impureImports are standard packages a pure package must not import:
// files, the network, processes, the system.
var impureImports = []string{"os", "os/", "net", "net/", "syscall", "io/fs", "log", "log/", "runtime/debug", "unsafe", "plugin"}

// clockCalls are the time package's functions that read the clock or wait.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true, "Tick": true, "NewTicker": true, "NewTimer": true}

func TestPurePackages(t *testing.T) {
	for _, dir := range pure {
		for _, msg := range impurities(t, dir) {
			t.Errorf("%s is pure: %s", dir, msg)
		}
	}
}

// impurities lists what in the non-test Go files of dir breaks purity.
func impurities(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		timeName := "" // what the file calls package time
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range impureImports {
				if path == bad || strings.HasSuffix(bad, "/") && strings.HasPrefix(path, bad) {
					out = append(out, fmt.Sprintf("%s imports %s", fset.Position(imp.Pos()), path))
				}
			}
			if path == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				out = append(out, fmt.Sprintf("%s starts a goroutine", fset.Position(n.Pos())))
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && clockCalls[n.Sel.Name] {
					out = append(out, fmt.Sprintf("%s uses time.%s", fset.Position(n.Pos()), n.Sel.Name))
				}
			}
			return true
		})
	}
	return out
}
