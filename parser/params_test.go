package parser

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParams: an unquoted $n is a *Param, at the offset of its $ in the
// statement's text (the oracle: strings.Index of the text as written); a
// quoted `$1`, a qualified t.$1 and a$1 stay columns.
func TestParams(t *testing.T) {
	sql := "SHOW TABLES;\n  SELECT $1, a, `$2`, t.$3, a$4 FROM t WHERE b = $2 AND c IN ($10, $1) ORDER BY $3"
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	st := stmts[1]
	if !strings.HasPrefix(st.Text, "SELECT $1") {
		t.Fatalf("text %q", st.Text)
	}
	want := []Param{{1, strings.Index(st.Text, "$1")}, {2, strings.Index(st.Text, "= $2") + 2}, {10, strings.Index(st.Text, "$10")},
		{1, strings.LastIndex(st.Text, "$1")}, {3, strings.LastIndex(st.Text, "$3")}}
	if !reflect.DeepEqual(st.Params, want) {
		t.Fatalf("params %+v, want %+v", st.Params, want)
	}
	sel := st.Stmt.(*Select)
	if p, ok := sel.Fields[0].Expr.(*Param); !ok || *p != want[0] {
		t.Errorf("select list $1: %#v", sel.Fields[0].Expr)
	}
	for i, name := range []string{"a", "$2", "$3", "a$4"} {
		if c, ok := sel.Fields[i+1].Expr.(*ColumnRef); !ok || c.Name != name {
			t.Errorf("field %d: %#v, want the column %s", i+1, sel.Fields[i+1].Expr, name)
		}
	}
	if p, ok := sel.OrderBy[0].Expr.(*Param); !ok || p.N != 3 {
		t.Errorf("ORDER BY $3: %#v", sel.OrderBy[0].Expr)
	}
	if stmts[0].Params != nil {
		t.Errorf("SHOW TABLES params %v", stmts[0].Params)
	}
	// In every kind of statement, after another, with EXPLAIN (which
	// the parser reads with its keyword blanked out) and comments.
	for _, sql := range []string{
		"SHOW TABLES; CREATE VIEW w AS SELECT k + $2 FROM t",
		"EXPLAIN CREATE VIEW w AS SELECT k + $2 FROM t",
		"SHOW TABLES;\n EXPLAIN CREATE VIEW w AS SELECT k + $2 FROM t",
		"SHOW TABLES; INSERT INTO x SELECT k + $2 FROM t",
		"SHOW TABLES; EXPLAIN SELECT k + $2 FROM t",
		"/* x */ SELECT a FROM (SELECT k + $2 AS a FROM t) s",
		"\n -- c\n SELECT k + $2 FROM t",
	} {
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatalf("%q: %v", sql, err)
		}
		st := stmts[len(stmts)-1]
		if len(st.Params) != 1 || st.Params[0].N != 2 || !strings.HasPrefix(st.Text[st.Params[0].Offset:], "$2 ") {
			t.Errorf("%q: params %+v in %q", sql, st.Params, st.Text)
		}
	}
}

// TestParamErrors: what is refused, and where (line, column of the $ or
// of the token the grammar could not take).
func TestParamErrors(t *testing.T) {
	cases := []struct {
		sql       string
		kind      ErrorKind
		line, col int
		msg       string
	}{
		{"SELECT a FROM t LIMIT $1", Syntax, 1, 24, "LIMIT and OFFSET take integer literals, not parameters ($1)"},
		{"SELECT a FROM t\nLIMIT 10 OFFSET $2", Syntax, 2, 19, "not parameters ($2)"},
		{"SELECT a FROM t LIMIT 5, $1", Syntax, 1, 27, "not parameters ($1)"},
		{"SELECT a FROM t WHERE a = ?", Unsupported, 1, 27, "? placeholders are not supported"},
		{"SELECT a FROM t WHERE a =\n  $99999", Unsupported, 2, 3, "parameter $99999 is out of range"},
	}
	for _, c := range cases {
		_, err := Parse(c.sql)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("%q: err %v", c.sql, err)
		}
		if pe.Kind != c.kind || pe.Line != c.line || pe.Column != c.col || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%q: got kind %d at %d:%d %q, want %d at %d:%d containing %q", c.sql, pe.Kind, pe.Line, pe.Column, pe.Msg, c.kind, c.line, c.col, c.msg)
		}
	}
}
