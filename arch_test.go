// Package streamsql_test checks the repository's dependency direction
// (DESIGN.md, "Import direction"): cmd -> http -> queries -> {planner, runtime, state},
// planner -> {parser, planner/plan, window}, runtime -> {planner/plan,
// window, state}; only parser imports the TiDB parser; funcs (the function
// registry, imported by planner and runtime) is pure: planner/plan and the
// standard library, no clock, no goroutines, no I/O.
package streamsql_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
		"planner/plan": {"github.com/pingcap/", "github.com/dgraph-io/", mod + "/parser", mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http"},
		"runtime":      {"github.com/pingcap/", mod + "/parser", mod + "/planner\x00", mod + "/queries", mod + "/http"},
		"state":        {"github.com/pingcap/", mod + "/parser", mod + "/planner", mod + "/runtime", mod + "/queries", mod + "/http"},
		"planner":      {mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http", "github.com/dgraph-io/"},
		"parser":       {mod + "/planner/plan", mod + "/runtime", mod + "/state", mod + "/queries", mod + "/http"},
		"queries":      {mod + "/http", mod + "/cmd"},
		"http":         {mod + "/cmd"},
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
					if owner == "window" && !strings.Contains(strings.Split(d, "/")[0], ".") {
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
	"funcs": {mod + "/planner/plan"},
}

// pure: directories whose code may not read the clock, start goroutines
// or do I/O: no import of these packages, no call of these functions, no
// go statement (checked in the source: an operator or a function that did
// would make replays differ).
var (
	pure          = []string{"funcs"}
	impureImports = []string{"os", "net", "syscall", "unsafe", "io", "sync", "runtime", "math/rand", "crypto/rand"}
	impureCalls   = map[string][]string{"time": {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}}
)

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

func TestPureCode(t *testing.T) {
	for _, dir := range pure {
		checkPure(t, dir)
	}
}

// checkPure fails for each impure import, clock call or go statement in
// dir's non-test Go files.
func checkPure(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	fset := token.NewFileSet()
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{} // local name -> import path
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			for _, bad := range impureImports {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s: imports %s (%s must do no I/O, start no goroutine, read no clock)", fset.Position(im.Pos()), path, dir)
				}
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			names[name] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: go statement (%s starts no goroutine)", fset.Position(n.Pos()), dir)
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					for _, fn := range impureCalls[names[x.Name]] {
						if n.Sel.Name == fn {
							t.Errorf("%s: %s.%s (%s reads no clock)", fset.Position(n.Pos()), names[x.Name], fn, dir)
						}
					}
				}
			}
			return true
		})
	}
}
