package parser

import (
	"errors"
	"strings"
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
		// An unknown hint names what does not exist, as an unknown option
		// does; found in the text: line 1.
		{"SELECT /*+ SETVAR(x=1) */ a FROM t", Unsupported, 0, 1, 0},
		{"SHOW TABLES; SELECT a FROM t INTERSECT SELECT a FROM u", Unsupported, 1, 1, 1},
		{"SELECT a FROM t JOIN u ON t.a = u.a; SELECT a FROM t, u, v", Unsupported, 1, 1, 1},
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

// TestExplainOrDescribe: the TiDB parser gives EXPLAIN t, DESCRIBE t and
// DESC t one AST; the statement's first keyword tells them apart.
func TestExplainOrDescribe(t *testing.T) {
	stmts, err := Parse("EXPLAIN hot; DESC hot; DESCRIBE hot;\n/* a comment */ explain\n hot; -- x\nSHOW COLUMNS FROM hot")
	if err != nil {
		t.Fatal(err)
	}
	want := []Stmt{&Explain{Name: "hot"}, &Describe{Name: "hot"}, &Describe{Name: "hot"}, &Explain{Name: "hot"}, &Describe{Name: "hot"}}
	if len(stmts) != len(want) {
		t.Fatalf("%d statements, want %d", len(stmts), len(want))
	}
	for i, st := range stmts {
		switch w := want[i].(type) {
		case *Explain:
			if g, ok := st.Stmt.(*Explain); !ok || g.Name != w.Name || g.Select != nil || g.Insert != nil || g.View != nil {
				t.Errorf("statement %d %q: %#v, want EXPLAIN of %s", i, st.Text, st.Stmt, w.Name)
			}
		case *Describe:
			if g, ok := st.Stmt.(*Describe); !ok || g.Name != w.Name {
				t.Errorf("statement %d %q: %#v, want DESCRIBE %s", i, st.Text, st.Stmt, w.Name)
			}
		}
	}
	if firstKeyword("  -- c\n# d\n/* e */ desc t") != "DESC" || firstKeyword("'EXPLAIN' t") != "" {
		t.Error("firstKeyword reads comments or strings as keywords")
	}
}

// TestExplainStatements: EXPLAIN of INSERT INTO ... SELECT, and EXPLAIN
// CREATE VIEW, which the TiDB parser does not take (its EXPLAIN is read
// from the text), with the statements around it and their positions.
func TestExplainStatements(t *testing.T) {
	sql := "SHOW TABLES;\nEXPLAIN CREATE VIEW x AS SELECT /*+ SET_VAR(parallelism=2) */ a FROM t;\n  explain  create or replace view y AS SELECT a FROM t GROUP BY a;\nEXPLAIN INSERT INTO s SELECT a FROM t;\nSELECT 'EXPLAIN CREATE' AS e FROM v"
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 5 {
		t.Fatalf("%d statements", len(stmts))
	}
	x, ok := stmts[1].Stmt.(*Explain)
	if !ok || x.View == nil || x.View.Name != "x" || len(x.View.Select.Hints) != 1 {
		t.Fatalf("statement 1: %#v", stmts[1].Stmt)
	}
	if stmts[1].Text != "EXPLAIN CREATE VIEW x AS SELECT /*+ SET_VAR(parallelism=2) */ a FROM t" || stmts[1].Pos.Line != 2 || stmts[1].Pos.Column != 1 {
		t.Errorf("statement 1: text %q at %+v", stmts[1].Text, stmts[1].Pos)
	}
	y, ok := stmts[2].Stmt.(*Explain)
	if !ok || y.View == nil || y.View.Name != "y" || !y.View.OrReplace {
		t.Fatalf("statement 2: %#v", stmts[2].Stmt)
	}
	if !strings.HasPrefix(stmts[2].Text, "explain  create or replace") || stmts[2].Pos.Line != 3 || stmts[2].Pos.Column != 3 {
		t.Errorf("statement 2: text %q at %+v", stmts[2].Text, stmts[2].Pos)
	}
	if in, ok := stmts[3].Stmt.(*Explain); !ok || in.Insert == nil || in.Insert.Table != "s" {
		t.Fatalf("statement 3: %#v", stmts[3].Stmt)
	}
	if _, ok := stmts[4].Stmt.(*Select); !ok {
		t.Fatalf("statement 4: %#v", stmts[4].Stmt)
	}

	// EXPLAIN of what has no plan, and a syntax error after an EXPLAIN
	// CREATE VIEW: positioned in the request as written.
	_, err = Parse("EXPLAIN CREATE TABLE t (a BIGINT) ENGINE=http")
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != Unsupported || !strings.Contains(pe.Msg, "EXPLAIN takes SELECT") {
		t.Errorf("EXPLAIN CREATE TABLE: %v", err)
	}
	before, err := Parse("EXPLAIN CREATE VIEW x AS SELECT a FROM t;\nSELEC a FROM t")
	if !errors.As(err, &pe) || pe.Kind != Syntax || pe.Statement != 1 || pe.Line != 2 || len(before) != 1 {
		t.Errorf("syntax error after EXPLAIN CREATE VIEW: %d before, %v", len(before), err)
	}
}

// TestMisplacedHint: a hint before SELECT is a warning of the TiDB parser,
// without a position and said twice; here it is one positioned error that
// says where hints go.
func TestMisplacedHint(t *testing.T) {
	sql := "SHOW TABLES;\nCREATE VIEW v AS\n  /*+ SET_VAR(parallelism=2) */ SELECT a FROM t"
	before, err := Parse(sql)
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err %v", err)
	}
	if pe.Kind != Syntax || pe.Statement != 1 || pe.Line != 3 || pe.Column != 3 || len(before) != 1 {
		t.Errorf("got kind %d statement %d at %d:%d, %d before: %v", pe.Kind, pe.Statement, pe.Line, pe.Column, len(before), pe)
	}
	for _, want := range []string{"/*+ SET_VAR(parallelism=2) */", "after AS", "right after SELECT"} {
		if !strings.Contains(pe.Msg, want) {
			t.Errorf("message %q does not say %q", pe.Msg, want)
		}
	}
	if strings.Count(pe.Msg, "SET_VAR(parallelism=2)") != 2 || strings.Contains(pe.Msg, "Optimizer hint can only") {
		t.Errorf("message %q repeats the parser's sentence", pe.Msg)
	}
	// A hint in its place, and a /*+ inside a string, are no error.
	if _, err := Parse("CREATE VIEW v AS SELECT /*+ SET_VAR(parallelism=2) */ a, '/*+ x */' AS s FROM t"); err != nil {
		t.Errorf("hint after SELECT: %v", err)
	}
}

// TestPositionsInGroupAndOrder: GROUP BY 1 and ORDER BY 2 are positions,
// and no error names a Go type.
func TestPositionsInGroupAndOrder(t *testing.T) {
	stmts, err := Parse("SELECT a, COUNT(*) FROM t GROUP BY 1 ORDER BY 2 DESC")
	if err != nil {
		t.Fatal(err)
	}
	sel := stmts[0].Stmt.(*Select)
	if p, ok := sel.GroupBy[0].(*Position); !ok || p.N != 1 {
		t.Errorf("GROUP BY 1: %#v", sel.GroupBy[0])
	}
	if p, ok := sel.OrderBy[0].Expr.(*Position); !ok || p.N != 2 || !sel.OrderBy[0].Desc {
		t.Errorf("ORDER BY 2 DESC: %#v", sel.OrderBy[0])
	}
	for _, sql := range []string{"SELECT a FROM t WHERE a = ?", "SELECT a FROM t WHERE a = @@x", "SELECT MATCH (a) AGAINST ('x') FROM t", "SELECT a FROM t GROUP BY ?"} {
		_, err := Parse(sql)
		if err == nil {
			t.Errorf("%s: no error", sql)
			continue
		}
		if strings.Contains(err.Error(), "*ast.") || strings.Contains(err.Error(), "ast.") {
			t.Errorf("%s: %v names a Go type", sql, err)
		}
	}
}

func TestWindowCalls(t *testing.T) {
	stmts, err := Parse("SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, date_time) AS rn, " +
		"COUNT(*) OVER (PARTITION BY seller ORDER BY date_time RANGE BETWEEN INTERVAL 10 SECOND PRECEDING AND CURRENT ROW), " +
		"AVG(price) OVER (PARTITION BY seller ORDER BY date_time ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) FROM bid")
	if err != nil {
		t.Fatal(err)
	}
	f := stmts[0].Stmt.(*Select).Fields
	rn, ok := f[1].Expr.(*Over)
	if !ok || rn.Name != "row_number" || len(rn.Args) != 0 || len(rn.PartitionBy) != 1 || rn.Frame != nil ||
		len(rn.OrderBy) != 2 || !rn.OrderBy[0].Desc || rn.OrderBy[1].Desc || f[1].Alias != "rn" {
		t.Errorf("ROW_NUMBER: %#v", f[1].Expr)
	}
	cnt, ok := f[2].Expr.(*Over)
	if !ok || cnt.Name != "count" || !cnt.Star || cnt.Frame == nil || cnt.Frame.Kind != FrameRange ||
		cnt.Frame.Start.Kind != BoundPreceding || cnt.Frame.End.Kind != BoundCurrentRow {
		t.Fatalf("COUNT(*) OVER RANGE: %#v", f[2].Expr)
	}
	if iv, ok := cnt.Frame.Start.N.(*Interval); !ok || iv.Unit != "SECOND" || iv.Value.(*Literal).Int != 10 {
		t.Errorf("RANGE bound: %#v", cnt.Frame.Start.N)
	}
	avg, ok := f[3].Expr.(*Over)
	if !ok || avg.Name != "avg" || avg.Star || len(avg.Args) != 1 || avg.Frame == nil || avg.Frame.Kind != FrameRows {
		t.Fatalf("AVG OVER ROWS: %#v", f[3].Expr)
	}
	if n, ok := avg.Frame.Start.N.(*Literal); !ok || n.Int != 10 || avg.Frame.Start.Unbounded {
		t.Errorf("ROWS bound: %#v", avg.Frame.Start)
	}
	for sql, want := range map[string]string{
		"SELECT COUNT(*) OVER w FROM t WINDOW w AS (PARTITION BY a)":                          "named windows",
		"SELECT COUNT(*) OVER (ORDER BY a GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t": "GROUPS frames",
	} {
		if _, err := Parse(sql); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one naming %q", sql, err, want)
		}
	}
}
