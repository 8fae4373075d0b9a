package parser

import (
	"errors"
	"testing"
)

func TestParseStatements(t *testing.T) {
	sql := "CREATE TABLE t (a BIGINT NOT NULL, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{\"event_time\": \"ts\"}';\n" +
		"  CREATE VIEW v AS SELECT /*+ SET_VAR(parallelism=2) */ window_start, a, COUNT(*) AS n FROM t GROUP BY TUMBLE(ts, '10s'), a;\n" +
		"SELECT ts + INTERVAL 10 SECOND FROM t"
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 3 {
		t.Fatalf("got %d statements", len(stmts))
	}
	ct := stmts[0].Stmt.(*CreateTable)
	if ct.Engine != "http" || ct.Attributes != `{"event_time": "ts"}` || !ct.Columns[0].NotNull || ct.Columns[1].Type != "TIMESTAMP" {
		t.Fatalf("create table: %+v", ct)
	}
	cv := stmts[1].Stmt.(*CreateView)
	if cv.Name != "v" || len(cv.Select.Hints) != 1 || cv.Select.Hints[0].Name != "parallelism" {
		t.Fatalf("create view: %+v", cv)
	}
	if stmts[1].Pos.Line != 2 || stmts[1].Pos.Column != 3 {
		t.Fatalf("pos %+v", stmts[1].Pos)
	}
	if stmts[1].Text[:11] != "CREATE VIEW" {
		t.Fatalf("text %q", stmts[1].Text)
	}
	f := stmts[1].Stmt.(*CreateView).Select.Fields[2]
	if fn, ok := f.Expr.(*Func); !ok || !fn.Star || f.Alias != "n" {
		t.Fatalf("count(*): %+v", f)
	}
	sel := stmts[2].Stmt.(*Select)
	if fn, ok := sel.Fields[0].Expr.(*Func); !ok || fn.Name != "date_add" {
		t.Fatalf("interval: %#v", sel.Fields[0].Expr)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		sql        string
		kind       ErrorKind
		stmt, line int
		before     int
	}{
		{"SELECT FROM x", Syntax, 0, 1, 0},
		{"SHOW TABLES;\nSELEC 1 FROM t", Syntax, 1, 2, 1},
		{"SELECT /*+ SETVAR(x=1) */ a FROM t", Syntax, 0, 0, 0},
		{"SHOW TABLES; SELECT a FROM t UNION SELECT a FROM u", Unsupported, 1, 1, 1},
		{"SELECT a FROM t JOIN u ON t.a = u.a; SELECT a FROM t, u", Unsupported, 1, 1, 1},
		{"SHOW TABLES;\nSELECT * FROM t FULL OUTER JOIN u ON t.a = u.a", Syntax, 1, 2, 1},
	}
	for _, c := range cases {
		stmts, err := Parse(c.sql)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("%q: err %v", c.sql, err)
		}
		if pe.Kind != c.kind || pe.Statement != c.stmt || pe.Line != c.line || len(stmts) != c.before {
			t.Errorf("%q: got kind %d stmt %d line %d before %d (%v)", c.sql, pe.Kind, pe.Statement, pe.Line, len(stmts), pe)
		}
	}
}

func TestLineColAt(t *testing.T) {
	l, c := LineColAt("SELECT a,\n  bogus FROM t", "bogus")
	if l != 2 || c != 3 {
		t.Fatalf("%d:%d", l, c)
	}
	if l, _ := LineColAt("SELECT abc", "ab"); l != 0 {
		t.Fatal("matched inside an identifier")
	}
}
