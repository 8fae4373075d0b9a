package parser

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// exprString renders an expression compactly, for comparing shapes.
func exprString(e Expr) string {
	switch e := e.(type) {
	case nil:
		return "<nil>"
	case *ColumnRef:
		if e.Table != "" {
			return e.Table + "." + e.Name
		}
		return e.Name
	case *Literal:
		switch e.Kind {
		case LitInt, LitBool:
			return fmt.Sprint(e.Int)
		case LitFloat:
			return fmt.Sprint(e.Flt)
		case LitString:
			return "'" + e.Str + "'"
		}
		return "NULL"
	case *Binary:
		return "(" + exprString(e.L) + " " + e.Op + " " + exprString(e.R) + ")"
	case *Unary:
		return "(" + e.Op + " " + exprString(e.X) + ")"
	case *Func:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = exprString(a)
		}
		if e.Star {
			args = []string{"*"}
		}
		return e.Name + "(" + strings.Join(args, ", ") + ")"
	case *Interval:
		return "INTERVAL " + exprString(e.Value) + " " + e.Unit
	case *Between:
		return "(" + exprString(e.X) + " BETWEEN " + exprString(e.Lo) + " AND " + exprString(e.Hi) + ")"
	}
	return fmt.Sprintf("%T", e)
}

// refString renders a FROM tree: name/alias, [AS OF expr], {subquery},
// and joins as (KIND left right ON on).
func refString(t *TableRef) string {
	switch {
	case t == nil:
		return "<nil>"
	case t.Join != nil:
		if t.Name != "" || t.Alias != "" || t.Subquery != nil || t.AsOf != nil {
			return "BAD JOIN REF"
		}
		j := t.Join
		return "(" + j.Kind.String() + " " + refString(j.Left) + " " + refString(j.Right) + " ON " + exprString(j.On) + ")"
	case t.Subquery != nil:
		if t.Name != "" || t.AsOf != nil {
			return "BAD SUBQUERY REF"
		}
		return "{" + refString(t.Subquery.From) + "}/" + t.Alias
	}
	s := t.Name
	if t.Alias != "" {
		s += "/" + t.Alias
	}
	if t.AsOf != nil {
		s += " ASOF " + exprString(t.AsOf)
	}
	return s
}

func parseSelect(t *testing.T, sql string) *Select {
	t.Helper()
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatalf("%q: %v", sql, err)
	}
	if len(stmts) != 1 {
		t.Fatalf("%q: %d statements", sql, len(stmts))
	}
	switch s := stmts[0].Stmt.(type) {
	case *Select:
		return s
	case *CreateView:
		return s.Select
	case *Insert:
		return s.Select
	}
	t.Fatalf("%q: %T", sql, stmts[0].Stmt)
	return nil
}

func TestJoins(t *testing.T) {
	cases := []struct{ sql, from string }{
		{"SELECT * FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND",
			"(INNER bids/b auctions/a ON ((b.auction = a.id) AND (b.ts BETWEEN a.ts AND date_add(a.ts, INTERVAL 10 SECOND))))"},
		{"SELECT * FROM bids AS b INNER JOIN auctions AS a ON b.auction = a.id",
			"(INNER bids/b auctions/a ON (b.auction = a.id))"},
		{"SELECT * FROM Bids CROSS JOIN Auctions ON Bids.auction = Auctions.id",
			"(INNER bids auctions ON (bids.auction = auctions.id))"},
		{"SELECT * FROM bids b LEFT JOIN auctions a ON b.auction = a.id",
			"(LEFT bids/b auctions/a ON (b.auction = a.id))"},
		{"SELECT * FROM bids b RIGHT OUTER JOIN auctions a ON b.auction = a.id",
			"(RIGHT bids/b auctions/a ON (b.auction = a.id))"},
		{"SELECT * FROM bids b LEFT OUTER JOIN auctions a ON b.auction = a.id AND a.ts <= b.ts - INTERVAL 1 MINUTE",
			"(LEFT bids/b auctions/a ON ((b.auction = a.id) AND (a.ts <= date_sub(b.ts, INTERVAL 1 MINUTE))))"},
		// Stream-to-table joins, as of the stream row's time or latest.
		{"SELECT b.price, p.name FROM bids b JOIN persons p AS OF TIMESTAMP b.ts ON b.bidder = p.id",
			"(INNER bids/b persons/p ASOF b.ts ON (b.bidder = p.id))"},
		{"SELECT * FROM bids b LEFT JOIN persons AS OF TIMESTAMP b.ts ON b.bidder = persons.id",
			"(LEFT bids/b persons ASOF b.ts ON (b.bidder = persons.id))"},
		{"SELECT * FROM bids b JOIN persons p ON b.bidder = p.id",
			"(INNER bids/b persons/p ON (b.bidder = p.id))"},
		// A comma join is an inner join whose conditions are in WHERE.
		{"SELECT * FROM auction a, bid b WHERE a.id = b.auction", "(INNER auction/a bid/b ON <nil>)"},
		// Chains are left-deep.
		{"SELECT * FROM bids b JOIN auctions a ON b.auction = a.id JOIN persons p AS OF TIMESTAMP b.ts ON a.seller = p.id",
			"(INNER (INNER bids/b auctions/a ON (b.auction = a.id)) persons/p ASOF b.ts ON (a.seller = p.id))"},
		{"SELECT * FROM a JOIN b ON a.x = b.x LEFT JOIN c ON b.y = c.y JOIN d ON d.z = a.x",
			"(INNER (LEFT (INNER a b ON (a.x = b.x)) c ON (b.y = c.y)) d ON (d.z = a.x))"},
		// Parentheses.
		{"SELECT * FROM ((a JOIN b ON a.x = b.x)) JOIN (c) ON b.y = c.y",
			"(INNER (INNER a b ON (a.x = b.x)) c ON (b.y = c.y))"},
		{"SELECT * FROM (a)", "a"},
		{"SELECT * FROM (SELECT x FROM a) AS w", "{a}/w"},
		{"SELECT * FROM ((SELECT x FROM a)) w", "{a}/w"},
		// Window join: two windowed subqueries.
		{"SELECT w.window_start, w.auction, m.maxn FROM " +
			"(SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction) AS w JOIN " +
			"(SELECT window_start, window_end, MAX(n) AS maxn FROM (SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction) AS c GROUP BY window_start, window_end) AS m " +
			"ON w.window_end = m.window_end AND w.window_start = m.window_start AND w.n >= m.maxn",
			"(INNER {bids}/w {{bids}/c}/m ON (((w.window_end = m.window_end) AND (w.window_start = m.window_start)) AND (w.n >= m.maxn)))"},
		{"CREATE VIEW v AS SELECT s.window_start, COUNT(*) FROM (SELECT window_start, window_end, auction FROM bids GROUP BY TUMBLE(ts, '10s'), auction) s GROUP BY TUMBLE(s.window_start, '1m')",
			"{bids}/s"},
		{"INSERT INTO sink SELECT b.auction FROM bids b JOIN (SELECT id FROM auctions WHERE category = 10) AS a ON b.auction = a.id",
			"(INNER bids/b {auctions}/a ON (b.auction = a.id))"},
		// A table and an alias of the same spelling in different scopes.
		{"SELECT * FROM (SELECT x FROM a) AS b JOIN (SELECT x FROM b) AS a ON a.x = b.x",
			"(INNER {a}/b {b}/a ON (a.x = b.x))"},
	}
	for _, c := range cases {
		sel := parseSelect(t, c.sql)
		if got := refString(sel.From); got != c.from {
			t.Errorf("%q:\n got %s\nwant %s", c.sql, got, c.from)
		}
	}
}

func TestJoinDetails(t *testing.T) {
	sel := parseSelect(t, "SELECT w.*, m.maxn FROM (SELECT /*+ SET_VAR(parallelism=2) */ window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction HAVING COUNT(*) > 1) AS W "+
		"JOIN (SELECT window_end, MAX(price) AS maxn FROM bids WHERE price > 0 GROUP BY TUMBLE(ts, '10s')) AS m ON W.window_end = m.window_end")
	if !sel.Fields[0].Star || sel.Fields[0].Table != "w" {
		t.Fatalf("w.*: %+v", sel.Fields[0])
	}
	j := sel.From.Join
	if j == nil || j.Kind != JoinInner || sel.From.Qualifier() != "" {
		t.Fatalf("from: %s", refString(sel.From))
	}
	w, m := j.Left, j.Right
	if w.Alias != "w" || w.Qualifier() != "w" || w.Name != "" || w.Subquery == nil {
		t.Fatalf("left: %+v", w)
	}
	ws := w.Subquery
	if len(ws.Fields) != 4 || ws.Fields[3].Alias != "n" || ws.Fields[2].Text != "auction" || len(ws.GroupBy) != 2 ||
		exprString(ws.GroupBy[0]) != "tumble(ts, '10s')" || exprString(ws.Having) != "(count(*) > 1)" ||
		len(ws.Hints) != 1 || ws.Hints[0] != (SetVar{Name: "parallelism", Value: "2"}) || ws.Limit != -1 {
		t.Fatalf("left subquery: %+v", ws)
	}
	if m.Alias != "m" || m.Subquery == nil || exprString(m.Subquery.Where) != "(price > 0)" || m.Subquery.From.Name != "bids" {
		t.Fatalf("right: %+v", m)
	}
	if exprString(j.On) != "(w.window_end = m.window_end)" {
		t.Fatalf("on: %s", exprString(j.On))
	}

	// The interval bound, node by node.
	sel = parseSelect(t, "SELECT * FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND")
	and, ok := sel.From.Join.On.(*Binary)
	if !ok || and.Op != "AND" {
		t.Fatalf("on: %#v", sel.From.Join.On)
	}
	bt, ok := and.R.(*Between)
	if !ok || bt.Not {
		t.Fatalf("between: %#v", and.R)
	}
	if x, ok := bt.X.(*ColumnRef); !ok || *x != (ColumnRef{Table: "b", Name: "ts"}) {
		t.Fatalf("between x: %#v", bt.X)
	}
	hi, ok := bt.Hi.(*Func)
	if !ok || hi.Name != "date_add" || len(hi.Args) != 2 {
		t.Fatalf("hi: %#v", bt.Hi)
	}
	iv, ok := hi.Args[1].(*Interval)
	if lit, isLit := iv.Value.(*Literal); !ok || iv.Unit != "SECOND" || !isLit || lit.Kind != LitInt || lit.Int != 10 {
		t.Fatalf("interval: %#v", hi.Args[1])
	}

	// AS OF keeps its expression as written.
	sel = parseSelect(t, "SELECT * FROM bids b JOIN persons p AS OF TIMESTAMP b.ts - INTERVAL 1 SECOND ON b.bidder = p.id")
	if p := sel.From.Join.Right; p.Name != "persons" || p.Alias != "p" || exprString(p.AsOf) != "date_sub(b.ts, INTERVAL 1 SECOND)" {
		t.Fatalf("as of: %s", refString(sel.From))
	}
	if sel.From.Join.Left.AsOf != nil {
		t.Fatal("AS OF on the left")
	}
}

func TestJoinErrors(t *testing.T) {
	cases := []struct {
		sql  string
		kind ErrorKind
		msg  string // a substring of the message
	}{
		{"SELECT * FROM a, b, c", Unsupported, "comma join of more than two tables (FROM a, b, c); join the third with JOIN ... ON"},
		{"SELECT * FROM a JOIN b ON a.x = b.x, c", Unsupported, "a join without ON (CROSS JOIN, JOIN without ON, or a comma in FROM) of c"},
		{"SELECT * FROM a JOIN b ON a.x = b.x, c", Unsupported, "a join without ON (CROSS JOIN, JOIN without ON, or a comma in FROM) of c"},
		{"SELECT * FROM a CROSS JOIN b", Unsupported, "a join without ON (CROSS JOIN, JOIN without ON, or a comma in FROM) of b; use JOIN ... ON"},
		{"SELECT * FROM a JOIN b", Unsupported, "a join without ON"},
		{"SELECT * FROM a INNER JOIN b", Unsupported, "a join without ON"},
		{"SELECT * FROM a JOIN b JOIN c ON b.x = c.x", Unsupported, "a join without ON (CROSS JOIN, JOIN without ON, or a comma in FROM) of b"},
		{"SELECT * FROM a FULL JOIN b ON a.x = b.x", Unsupported, "FULL JOIN (or a table alias named full); streamsql runs [INNER] JOIN ... ON, LEFT [OUTER] JOIN ... ON and RIGHT [OUTER] JOIN ... ON"},
		{"SELECT * FROM a FULL OUTER JOIN b ON a.x = b.x", Syntax, "FULL JOIN is not supported; streamsql runs"},
		{"SELECT * FROM a JOIN b ON a.x = b.x FULL JOIN c ON a.x = c.x", Syntax, "FULL JOIN is not supported"},
		{"SELECT * FROM a NATURAL JOIN b", Unsupported, "NATURAL JOIN; streamsql runs"},
		{"SELECT * FROM a NATURAL LEFT JOIN b", Unsupported, "NATURAL JOIN"},
		{"SELECT * FROM a JOIN b USING (x)", Unsupported, "JOIN ... USING; write the condition with ON"},
		{"SELECT * FROM a LEFT JOIN b USING (x)", Unsupported, "JOIN ... USING"},
		{"SELECT * FROM a STRAIGHT_JOIN b ON a.x = b.x", Unsupported, "STRAIGHT_JOIN"},
		{"SELECT * FROM a JOIN LATERAL (SELECT x FROM b WHERE b.x = a.x) AS l ON true", Unsupported, "LATERAL"},
		{"SELECT * FROM a, LATERAL (SELECT x FROM b) AS l", Unsupported, "LATERAL"},
		{"SELECT * FROM (SELECT x FROM a)", Unsupported, "a subquery in FROM needs an alias: (SELECT ...) AS name"},
		{"SELECT * FROM a JOIN (SELECT x FROM b) ON a.x = b.x", Unsupported, "needs an alias"},
		{"SELECT * FROM (SELECT x FROM a EXCEPT SELECT x FROM b) AS u", Unsupported, "EXCEPT and INTERSECT"},
		{"SELECT * FROM (SELECT x FROM a UNION SELECT x FROM b UNION ALL SELECT x FROM c) AS u", Unsupported, "UNION mixed with UNION ALL"},
		{"SELECT x FROM a UNION ALL SELECT x FROM b ORDER BY x", Unsupported, "ORDER BY or LIMIT on a UNION"},
		{"WITH RECURSIVE r AS (SELECT x FROM a) SELECT x FROM r", Unsupported, "WITH RECURSIVE"},
		{"WITH r (y) AS (SELECT x FROM a) SELECT y FROM r", Unsupported, "a column list in WITH r"},
		{"SELECT * FROM (VALUES ROW(1)) AS v", Unsupported, "VALUES"},
		{"SELECT * FROM (SELECT x FROM a JOIN b) AS s", Unsupported, "a join without ON"},
		{"SELECT * FROM (SELECT 1) AS s", Unsupported, "SELECT without FROM"},
		{"SELECT * FROM persons AS OF TIMESTAMP NOW()", Unsupported, "AS OF TIMESTAMP on persons: AS OF goes on the table joined to a stream"},
		{"SELECT * FROM persons p AS OF TIMESTAMP b.ts JOIN bids b ON b.bidder = p.id", Unsupported, "AS OF TIMESTAMP on persons"},
		{"SELECT * FROM a JOIN b AS OF SYSTEM TIME a.ts ON a.x = b.x", Syntax, "AS OF takes TIMESTAMP"},
		{"SELECT * FROM a JOIN b AS OF a.ts ON a.x = b.x", Syntax, "AS OF takes TIMESTAMP"},
		{"SELECT * FROM a JOIN b FOR SYSTEM_TIME AS OF a.ts ON a.x = b.x", Syntax, "write JOIN t AS OF TIMESTAMP expr ON"},
		{"SELECT * FROM a JOIN b AS OF TIMESTAMP (SELECT 1) ON a.x = b.x", Unsupported, "subqueries"},
		{"SELECT * FROM a JOIN (b JOIN c ON b.y = c.y) ON a.x = b.x", Unsupported, "a parenthesized join on the right side of JOIN"},
		{"SELECT * FROM a JOIN a ON a.x = a.y", Unsupported, "a appears twice in FROM; give each table its own alias"},
		{"SELECT * FROM a x JOIN b X ON x.i = X.i", Unsupported, "x appears twice in FROM"},
		{"SELECT * FROM a JOIN b a ON a.x = a.y", Unsupported, "a appears twice in FROM"},
		{"SELECT * FROM a JOIN b ON a.x IN (SELECT x FROM c)", Unsupported, "IN (subquery)"},
		{"SELECT * FROM db.a JOIN b ON a.x = b.x", Unsupported, "schema-qualified name db.a"},
		{"SELECT * FROM a USE INDEX (i) JOIN b ON a.x = b.x", Unsupported, "index hints on a"},
		{"SELECT * FROM a PARTITION (p0)", Unsupported, "PARTITION"},
		{"SELECT * FROM a LEFT JOIN b", Syntax, "syntax error"},
		{"SELECT *\n  FROM a\n  FULL\n  OUTER JOIN b ON a.x = b.x", Syntax, "FULL JOIN is not supported"},
		{"SELECT * FROM a JOIN b AS OF\n  SYSTEM TIME a.ts ON a.x = b.x", Syntax, "AS OF takes TIMESTAMP"},
	}
	for _, c := range cases {
		stmts, err := Parse(c.sql)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: err %v", c.sql, err)
			continue
		}
		if pe.Kind != c.kind || !strings.Contains(pe.Msg, c.msg) || len(stmts) != 0 || pe.Statement != 0 {
			t.Errorf("%q: kind %d, %q; want kind %d containing %q", c.sql, pe.Kind, pe.Msg, c.kind, c.msg)
		}
	}
}

// TestUnionWithDistinct: UNION ALL keeps its branches in order, UNION is
// SELECT DISTINCT * over their UNION ALL, WITH names its queries, and
// SELECT DISTINCT is kept for the planner.
func TestUnionWithDistinct(t *testing.T) {
	stmts, err := Parse("SELECT /*+ SET_VAR(parallelism=2) */ x FROM a UNION ALL SELECT y FROM b UNION ALL (SELECT z FROM c)")
	if err != nil {
		t.Fatal(err)
	}
	u := stmts[0].Stmt.(*Select)
	if u.From.Name != "a" || len(u.UnionAll) != 2 || u.UnionAll[0].From.Name != "b" || u.UnionAll[1].From.Name != "c" || len(u.Hints) != 1 {
		t.Errorf("UNION ALL: %+v", u)
	}
	stmts, err = Parse("SELECT x FROM a UNION SELECT y FROM b")
	if err != nil {
		t.Fatal(err)
	}
	d := stmts[0].Stmt.(*Select)
	if !d.Distinct || !d.Fields[0].Star || d.From.Subquery == nil || len(d.From.Subquery.UnionAll) != 1 {
		t.Errorf("UNION: %+v", d)
	}
	stmts, err = Parse("WITH r AS (SELECT x FROM a), s AS (SELECT x FROM r UNION ALL SELECT x FROM b) SELECT DISTINCT x FROM s")
	if err != nil {
		t.Fatal(err)
	}
	w := stmts[0].Stmt.(*Select)
	if len(w.With) != 2 || w.With[0].Name != "r" || w.With[1].Name != "s" || len(w.With[1].Select.UnionAll) != 1 || !w.Distinct || w.From.Name != "s" {
		t.Errorf("WITH: %+v", w)
	}
	if _, err := Parse("WITH r AS (SELECT x FROM a), r AS (SELECT x FROM b) SELECT x FROM r"); err == nil || !strings.Contains(err.Error(), "WITH names r twice") {
		t.Errorf("a name twice: %v", err)
	}
}
