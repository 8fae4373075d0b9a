package parser

import (
	"reflect"
	"strings"
	"testing"
)

// TestDialects: the same text reads differently in the two dialects only
// in its string literals and double quotes.
func TestDialects(t *testing.T) {
	for _, tc := range []struct {
		d    Dialect
		sql  string
		want Expr // the WHERE clause
	}{
		// A backslash: an escape in MySQL's strings, a character in
		// standard ones.
		{MySQL, `SELECT a FROM v WHERE s = 'x\'y'`, &Binary{Op: "=", L: &ColumnRef{Name: "s"}, R: &Literal{Kind: LitString, Str: `x'y`}}},
		{PostgreSQL, `SELECT a FROM v WHERE s = 'x\'`, &Binary{Op: "=", L: &ColumnRef{Name: "s"}, R: &Literal{Kind: LitString, Str: `x\`}}},
		{PostgreSQL, `SELECT a FROM v WHERE s = 'x\n''y'`, &Binary{Op: "=", L: &ColumnRef{Name: "s"}, R: &Literal{Kind: LitString, Str: `x\n'y`}}},
		// Double quotes: a string in MySQL, an identifier in PostgreSQL.
		{MySQL, `SELECT a FROM v WHERE s = "s"`, &Binary{Op: "=", L: &ColumnRef{Name: "s"}, R: &Literal{Kind: LitString, Str: "s"}}},
		{PostgreSQL, `SELECT a FROM v WHERE s = "s"`, &Binary{Op: "=", L: &ColumnRef{Name: "s"}, R: &ColumnRef{Name: "s"}}},
		// A quoted "$1" is a column, $1 a parameter.
		{PostgreSQL, `SELECT a FROM v WHERE "$1" = $1`, &Binary{Op: "=", L: &ColumnRef{Name: "$1"}, R: &Param{N: 1, Offset: 29}}},
	} {
		stmts, err := tc.d.Parse(tc.sql)
		if err != nil {
			t.Fatalf("%q %s: %v", tc.d, tc.sql, err)
		}
		if len(stmts) != 1 || stmts[0].Dialect != tc.d {
			t.Fatalf("%q %s: %d statements, dialect %q", tc.d, tc.sql, len(stmts), stmts[0].Dialect)
		}
		if got := stmts[0].Stmt.(*Select).Where; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q %s: WHERE %#v, want %#v", tc.d, tc.sql, got, tc.want)
		}
	}
	// A value with \' quoted by a client that doubles quotes only (as
	// standard_conforming_strings = on asks): in standard strings it stays
	// one literal; in MySQL's, \' would end it and let OR 1=1 in.
	value := `x\' OR 1=1 -- `
	sql := "SELECT a FROM v WHERE s = '" + strings.ReplaceAll(value, "'", "''") + "'"
	stmts, err := PostgreSQL.Parse(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	want := &Binary{Op: "=", L: &ColumnRef{Name: "s"}, R: &Literal{Kind: LitString, Str: value}}
	if got := stmts[0].Stmt.(*Select).Where; !reflect.DeepEqual(got, want) {
		t.Errorf("%s: WHERE %#v, want %#v", sql, got, want)
	}
}
