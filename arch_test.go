// Package streamsql_test checks the repository's dependency direction
// (DESIGN.md, "Import direction"): cmd -> http -> queries -> {planner, runtime, state},
// planner -> {parser, planner/plan, window}, runtime -> {planner/plan,
// window, state}; only parser imports the TiDB parser.
package streamsql_test

import (
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
