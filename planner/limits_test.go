package planner

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

var testOpts = plan.Options{Parallelism: 1, CheckpointInterval: 1000, EmitInterval: 200}

// wideDDL is CREATE TABLE name with an event-time column and n BIGINTs.
func wideDDL(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (ts TIMESTAMP(3) NOT NULL", name)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, ", c%d BIGINT", i)
	}
	b.WriteString(`) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	return b.String()
}

func createTable(t testing.TB, sql string) (*plan.TableDef, error) {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	return Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text)
}

func planQuery(t testing.TB, cat Catalog, sql string) (*plan.Graph, error) {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	return Query(stmts[0].Stmt.(*parser.Select), cat, testOpts, "v", plan.SinkResults)
}

// TestColumnLimit: a table has at most MaxColumns columns, and so does a
// query's output; beyond, a 422 naming the limit (issue 15 item 10).
func TestColumnLimit(t *testing.T) {
	def, err := createTable(t, wideDDL("w", MaxColumns-1))
	if err != nil {
		t.Fatalf("%d columns: %v", MaxColumns, err)
	}
	_, err = createTable(t, wideDDL("w2", MaxColumns))
	pe, ok := err.(*Error)
	if !ok || pe.Status != 422 || pe.Name != "w2" || !strings.Contains(pe.Msg, "table w2 has 4097 columns, over the limit of 4096 columns per table") {
		t.Fatalf("%d columns: %v, want 422 naming the limit", MaxColumns+1, err)
	}
	cat := testCatalog{"w": def, "v": &plan.TableDef{Name: "v", ID: 2, Engine: "http", Columns: def.Columns, EventTime: 0}}
	if _, err := planQuery(t, cat, "SELECT * FROM w"); err != nil {
		t.Fatalf("SELECT * of %d columns: %v", MaxColumns, err)
	}
	_, err = planQuery(t, cat, "SELECT a.*, b.c0 AS x FROM w a JOIN v b ON a.c1 = b.c1 AND a.ts BETWEEN b.ts AND b.ts + INTERVAL 1 SECOND")
	if pe, ok := err.(*Error); !ok || pe.Status != 422 || !strings.Contains(pe.Msg, "the select list has 4097 columns, over the limit of 4096") {
		t.Fatalf("SELECT of %d columns: %v, want 422 naming the limit", MaxColumns+1, err)
	}
}

// TestWideSelectStar plans SELECT * over MaxColumns columns and checks
// each output column is the input column of the same position (names are
// found by an index now, not by a scan per reference).
func TestWideSelectStar(t *testing.T) {
	def, err := createTable(t, wideDDL("w", MaxColumns-1))
	if err != nil {
		t.Fatal(err)
	}
	g, err := planQuery(t, testCatalog{"w": def}, "SELECT * FROM w")
	if err != nil {
		t.Fatal(err)
	}
	calc := g.Vertices[0].Ops[1].(*plan.Calc)
	for i, e := range calc.Project {
		if c, ok := e.(*plan.ColRef); !ok || c.Index != i || g.Out[i].Name != def.Columns[i].Name {
			t.Fatalf("output %d: %v named %s, want column %d %s", i, e, g.Out[i].Name, i, def.Columns[i].Name)
		}
	}
}

// TestFoldKey: names strings.EqualFold matches, and only those, have equal
// keys, so finding a column by the index finds what the scan found.
func TestFoldKey(t *testing.T) {
	names := []string{"", "a", "A", "k", "K", "\u212a", "s", "S", "\u017f", "ss", "ß", "ẞ", "σ", "ς", "Σ", "θ", "ϑ", "Θ", "ϴ",
		"i", "I", "İ", "ı", "é", "É", "Price", "PRICE", "price", "pricé", "\xff", "\xfe", "\ufffd", "ǅ", "ǆ", "Ǆ", "µ", "μ", "Μ"}
	for _, a := range names {
		for _, b := range names {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("%q, %q: equal keys %v, EqualFold %v", a, b, got, want)
			}
		}
	}
	// Every rune against its case-folding orbit and its neighbours.
	for r := rune(0); r <= utf8.MaxRune; r += 7 {
		a := string(r)
		for _, b := range []string{string(r + 1), strings.ToUpper(a), strings.ToLower(a), strings.ToTitle(a)} {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("%q, %q: equal keys %v, EqualFold %v", a, b, got, want)
			}
		}
	}
}

// TestResolveMessages: unknown, ambiguous and qualified names keep their
// errors with the name index.
func TestResolveMessages(t *testing.T) {
	cat := testTables(t)
	for _, c := range []struct{ sql, want string }{
		{"SELECT nope FROM bids", "unknown column nope"},
		{"SELECT x.price FROM bids", "unknown table x in x.price"},
		{"SELECT b.nope FROM bids b", "unknown column b.nope"},
		{"SELECT ts FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 SECOND", "column ts is ambiguous (b.ts or a.ts)"},
	} {
		if _, err := planQuery(t, cat, c.sql); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.sql, err, c.want)
		}
	}
	for _, sql := range []string{"SELECT PRICE, B.Auction FROM bids b", "SELECT `Price` FROM bids"} {
		if _, err := planQuery(t, cat, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}

// TestAggregateKeysByType: expressions that print alike but differ in type
// are different aggregate arguments and group keys (they were deduplicated
// by their text, which leaves out a CAST's type).
func TestAggregateKeysByType(t *testing.T) {
	g, err := planQuery(t, testTables(t), "SELECT auction, MIN(CAST(price AS DOUBLE)) AS a, MIN(CAST(price AS CHAR)) AS b FROM bids GROUP BY TUMBLE(ts, '1s'), auction")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := g.Out.Index("a"), g.Out.Index("b"); g.Out[a].Type != plan.TypeDouble || g.Out[b].Type != plan.TypeVarchar {
		t.Fatalf("output %v: want a DOUBLE and b VARCHAR", g.Out)
	}
}

// TestDeepGroupMatch: a deep expression over a GROUP BY expression binds
// to the group's column at the right level (the rewrite binds each node
// once now).
func TestDeepGroupMatch(t *testing.T) {
	deep := strings.Repeat("ABS(", 200) + "auction + 1" + strings.Repeat(")", 200)
	g, err := planQuery(t, testTables(t), "SELECT "+deep+" AS d FROM bids GROUP BY TUMBLE(ts, '1s'), auction + 1")
	if err != nil {
		t.Fatal(err)
	}
	agg := g.Vertices[len(g.Vertices)-1].Ops[0].(*plan.Aggregate)
	want := strings.Repeat("abs(", 200) + "(auction#0 + 1)#2" + strings.Repeat(")", 200)
	if got := agg.Output[0].String(); got != want {
		t.Fatalf("output %s, want %s", got, want)
	}
}

// BenchmarkPlanWide plans SELECT * over tables of 1,000 and 4,000 columns
// and renders EXPLAIN: linear in the columns (the time per column stays
// flat).
func BenchmarkPlanWide(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			def, err := createTable(b, wideDDL("w", n))
			if err != nil {
				b.Fatal(err)
			}
			cat := testCatalog{"w": def}
			stmts, _ := parser.Parse("SELECT * FROM w")
			sel := stmts[0].Stmt.(*parser.Select)
			b.ResetTimer()
			for b.Loop() {
				g, err := Query(sel, cat, testOpts, "v", plan.SinkResults)
				if err != nil {
					b.Fatal(err)
				}
				_ = g.Explain()
			}
		})
	}
}

// BenchmarkPlanDeep plans a select item nested MaxDepth-10 deep over a
// GROUP BY key, and renders EXPLAIN.
func BenchmarkPlanDeep(b *testing.B) {
	cat := testTables(b)
	n := parser.MaxDepth - 10
	stmts, err := parser.Parse("SELECT auction, " + strings.Repeat("ABS(", n) + "auction" + strings.Repeat(")", n) + " AS q FROM bids GROUP BY TUMBLE(ts, '1s'), auction")
	if err != nil {
		b.Fatal(err)
	}
	sel := stmts[0].Stmt.(*parser.Select)
	for b.Loop() {
		g, err := Query(sel, cat, testOpts, "v", plan.SinkResults)
		if err != nil {
			b.Fatal(err)
		}
		_ = g.Explain()
	}
}

// TestTimeRangeInPlans: durations longer than the TIMESTAMP range, join
// bounds beyond it and a Nexmark base_time outside it are refused, naming
// them (issue 15 item 5): they made window ends, watermarks and join
// bounds overflow int64.
func TestTimeRangeInPlans(t *testing.T) {
	cat := testTables(t)
	for _, c := range []struct{ sql, want string }{
		{"SELECT auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '106751991167d'), auction", `TUMBLE: invalid duration "106751991167d": longer than the TIMESTAMP range 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (3652059d)`},
		{"SELECT auction, COUNT(*) FROM bids GROUP BY HOP(ts, '1s', '3652060d'), auction", "longer than the TIMESTAMP range"},
		{"SELECT b.price FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 9223372036854775807 SECOND", "INTERVAL 9223372036854775807 SECOND is longer than the TIMESTAMP range"},
		{"SELECT b.price FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts - INTERVAL 3652060 DAY AND a.ts", "INTERVAL 3652060 DAY is longer than the TIMESTAMP range"},
	} {
		if _, err := planQuery(t, cat, c.sql); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.sql, err, c.want)
		}
	}
	if _, err := planQuery(t, cat, "SELECT auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '3652059d'), auction"); err != nil {
		t.Errorf("a window as long as the range: %v", err)
	}
	for _, c := range []struct{ sql, want string }{
		{`CREATE TABLE n (date_time TIMESTAMP(3)) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid", "base_time": 9223372036854775807}'`, `ENGINE_ATTRIBUTE base_time must be epoch milliseconds from 0 to 253402300799999 (9999-12-31T23:59:59.999Z), not "9.223372036854776e+18"`},
		{`CREATE TABLE n (date_time TIMESTAMP(3)) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid", "base_time": "soon"}'`, "base_time must be epoch milliseconds"},
		{`CREATE TABLE n (ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "4000000d"}'`, "ENGINE_ATTRIBUTE watermark_delay of n: invalid duration \"4000000d\": longer than the TIMESTAMP range"},
	} {
		if _, err := createTable(t, c.sql); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.sql, err, c.want)
		}
	}
	var opts plan.Options
	if err := ApplyOptions(&opts, []parser.SetVar{{Name: "results_retention", Value: "106751991167d"}}, "SET"); err == nil || !strings.Contains(err.Error(), "longer than the TIMESTAMP range") {
		t.Errorf("results_retention of 106751991167d: %v", err)
	}
}
