package funcs

import (
	"os"
	"strings"
	"testing"
)

// TestDocsNameEveryFunction: docs/sql.md's function list writes every
// registered function's signature (Func.Sig) and NULL behaviour.
func TestDocsNameEveryFunction(t *testing.T) {
	b, err := os.ReadFile("../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, f := range All() {
		line := "- `" + f.Sig + "`"
		if !strings.Contains(doc, line) {
			t.Errorf("docs/sql.md does not list %s (a line beginning %q)", f.Names[0], line)
		}
	}
}

// docList is the list TestDocsNameEveryFunction wants, for pasting:
// go test ./funcs -run TestDocList -v.
func TestDocList(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("prints the list with -v")
	}
	for _, f := range All() {
		s := "- `" + f.Sig + "`"
		if len(f.Names) > 1 && !strings.Contains(f.Sig, ",") {
			s += " (also " + strings.ToUpper(strings.Join(f.Names[1:], ", ")) + ")"
		}
		switch {
		case f.Strict:
			s += ": NULL if any argument is NULL"
		default:
			s += ": " + f.Nulls
		}
		t.Log(s)
	}
}
