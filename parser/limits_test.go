package parser

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func parseErr(t *testing.T, sql string) (*Error, []Statement) {
	t.Helper()
	stmts, err := Parse(sql)
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("%.60q: error %v, want a *parser.Error", sql, err)
	}
	return pe, stmts
}

// TestStatementSize: a statement longer than MaxStatementBytes is refused
// (413) before it is parsed, naming its index and position; the
// statements before it are returned (issue 15 item 10).
func TestStatementSize(t *testing.T) {
	long := "SELECT a FROM t WHERE b IN (" + strings.Repeat("1, ", MaxStatementBytes/3) + "1)"
	sql := "SELECT a FROM t;\n  " + long + ";\nSELECT b FROM t"
	pe, before := parseErr(t, sql)
	if pe.Kind != TooLarge || pe.Kind.Status() != 413 || pe.Statement != 1 || pe.Line != 2 || pe.Column != 3 ||
		!strings.Contains(pe.Msg, fmt.Sprintf("the statement is 1.0 MiB (%d bytes) long, over the limit of 1 MiB on one statement", len(long))) {
		t.Fatalf("error %+v, want 413 for statement 1 at line 2 column 3", pe)
	}
	if len(before) != 1 || before[0].Text != "SELECT a FROM t" {
		t.Fatalf("statements before: %v", before)
	}
	// Semicolons in strings, quoted names and comments do not end it.
	hidden := "SELECT 'a;b', `c;d`, \"e;f\", 'g\\';h' FROM t -- ;\n# ;\n/* ; */ WHERE x IN (" + strings.Repeat("1,", MaxStatementBytes/2) + "1)"
	if pe, _ := parseErr(t, hidden); pe.Kind != TooLarge || pe.Statement != 0 {
		t.Fatalf("error %+v, want 413 for statement 0", pe)
	}
	// Many statements, each under the limit, are parsed (and positioned
	// in time linear in the request).
	many := strings.Repeat("SELECT a, b FROM t WHERE c > 5;\n", 20000)
	stmts, err := Parse(many)
	if err != nil || len(stmts) != 20000 || stmts[19999].Pos.Line != 20000 {
		t.Fatalf("%d statements, err %v", len(stmts), err)
	}
	if _, err := Parse("SELECT 'x;" + strings.Repeat("y", MaxStatementBytes) + "' FROM t"); err == nil || !strings.Contains(err.Error(), "over the limit of 1 MiB") {
		t.Fatalf("a long string literal: %v", err)
	}
}

// TestDepthLimit: nesting beyond MaxDepth levels is refused (422) before
// conversion, naming the clause and pointing at it; MaxDepth levels are
// accepted. 100,000 nested ABS calls, which made GET /v1/queries hang
// while their plan was rendered, are one such refusal.
func TestDepthLimit(t *testing.T) {
	nest := func(n int, open, x, close string) string {
		return strings.Repeat(open, n) + x + strings.Repeat(close, n)
	}
	// ABS^n(x) is n+1 levels.
	if _, err := Parse("SELECT " + nest(MaxDepth-1, "ABS(", "x", ")") + " FROM t"); err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	for _, c := range []struct {
		sql       string
		want      string
		line, col int
	}{
		{"SELECT " + nest(MaxDepth, "ABS(", "x", ")") + " FROM t", "an expression is nested more than 1000 levels deep in select list item 1", 1, 8},
		{"SELECT " + nest(100000, "ABS(", "x", ")") + " FROM t", "an expression is nested more than 1000 levels deep in select list item 1", 1, 8},
		{"SELECT a FROM t;\nSELECT a,\n  b" + strings.Repeat("+b", MaxDepth) + " FROM t", "in select list item 2", 3, 3},
		{"SELECT a FROM t\nWHERE " + nest(MaxDepth+1, "(", "x", ")"), "an expression is nested more than 1000 levels deep in WHERE", 2, 1},
		{"SELECT a FROM t GROUP BY " + nest(MaxDepth, "-", "x", ""), "in GROUP BY", 1, 17},
		{"SELECT a FROM t GROUP BY a HAVING " + nest(MaxDepth, "NOT ", "x", ""), "in HAVING", 1, 28},
		{"SELECT * FROM " + nest(MaxDepth/2+1, "(SELECT * FROM ", "t", ") s"), "the statement is nested more than 1000 levels deep in FROM", 1, 10},
	} {
		pe, _ := parseErr(t, c.sql)
		if pe.Kind != Unsupported || pe.Kind.Status() != 422 || !strings.Contains(pe.Msg, c.want) || pe.Line != c.line || pe.Column != c.col {
			t.Errorf("%.40q...: %+v, want 422 %q at line %d column %d", c.sql, pe, c.want, c.line, c.col)
		}
	}
}
