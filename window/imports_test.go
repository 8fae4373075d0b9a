package window

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowedImports is what the package's non-test code may import: the pure
// parts of the standard library (no time, os, sync, net, ...).
var allowedImports = map[string]bool{
	"errors": true, "fmt": true, "math": true, "math/bits": true,
	"slices": true, "sort": true, "strconv": true, "strings": true,
}

// TestPurity fails when the package imports anything outside the standard
// library, imports an impure standard package, or starts a goroutine.
func TestPurity(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob: %v, %v", files, err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		isTest := strings.HasSuffix(name, "_test.go")
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %q: window imports only the standard library", name, path)
			}
			if !isTest && !allowedImports[path] {
				t.Errorf("%s imports %q: window is pure (no clocks, I/O or concurrency)", name, path)
			}
		}
		if isTest {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: go statement at %v: window starts no goroutines", name, fset.Position(g.Pos()))
			}
			return true
		})
	}
}
