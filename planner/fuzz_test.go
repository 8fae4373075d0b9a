package planner

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sqlparser "github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// fuzzTablesSQL is FuzzPlan's catalog: HTTP tables with and without event
// time, a PRIMARY KEY table, Nexmark tables, a Kafka source, Kafka and
// PostgreSQL sinks (the tables the seed corpus reads), and a view.
const fuzzTablesSQL = `
CREATE TABLE bids (auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, channel VARCHAR(32), ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "5s", "allowed_lateness": "1s"}';
CREATE TABLE clicks (url VARCHAR(64), n BIGINT) ENGINE=http;
CREATE TABLE persons (id BIGINT, name VARCHAR(64), state VARCHAR(2), ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id))
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE TABLE auctions (id BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT, name VARCHAR(64), ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "5s"}';
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256), date_time TIMESTAMP(3), extra VARCHAR(256))
  ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid", "event_time": "date_time", "events": 1000}';
CREATE TABLE auction (id BIGINT, item_name VARCHAR(64), description VARCHAR(256), initial_bid BIGINT, reserve BIGINT,
  date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR(256))
  ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "auction", "event_time": "date_time"}';
CREATE TABLE person (id BIGINT, name VARCHAR(64), email_address VARCHAR(64), credit_card VARCHAR(64), city VARCHAR(64),
  state VARCHAR(8), date_time TIMESTAMP(3), extra VARCHAR(256)) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "person", "event_time": "date_time"}';
CREATE TABLE kbids (auction BIGINT, price BIGINT, _partition BIGINT, _offset BIGINT, _key VARCHAR(64), _timestamp TIMESTAMP(3), ts TIMESTAMP(3))
  ENGINE=kafka CONNECTION='127.0.0.1:9092' ENGINE_ATTRIBUTE='{"topic": "bids", "event_time": "ts", "watermark_delay": "2s"}';
CREATE TABLE k_out (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, n BIGINT, PRIMARY KEY (window_start, window_end, auction))
  ENGINE=kafka CONNECTION='127.0.0.1:9092' ENGINE_ATTRIBUTE='{"topic": "out", "delivery": "exactly_once"}';
CREATE TABLE pg_counts (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, bids BIGINT, avg_price DOUBLE,
  PRIMARY KEY (auction, window_start, window_end)) ENGINE=postgres CONNECTION='postgres://u:secret@h/db';
CREATE TABLE pg_channels (channel VARCHAR(32), volume DOUBLE, PRIMARY KEY (channel))
  ENGINE=postgres CONNECTION='postgres://u@h/db' ENGINE_ATTRIBUTE='{"delivery": "at_least_once", "table": "channels"}';
CREATE TABLE pg_pairs (auction BIGINT, _row_id VARCHAR(255), seller BIGINT, PRIMARY KEY (_row_id))
  ENGINE=postgres CONNECTION='postgres://u@h/db';
CREATE VIEW bids_per_10s AS SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s'), auction`

// fuzzView is a view of fuzzCatalog: its query and output.
type fuzzView struct {
	sel *sqlparser.Select
	out plan.Schema
}

// fuzzCatalog is a catalog the statements of one input change as the
// engine would: CREATE TABLE / VIEW add, DROP removes.
type fuzzCatalog struct {
	tables map[string]*plan.TableDef
	views  map[string]fuzzView
	nextID uint64
}

func (c *fuzzCatalog) Table(n string) (*plan.TableDef, bool) { t, ok := c.tables[n]; return t, ok }
func (c *fuzzCatalog) View(n string) (*plan.ViewDef, bool) {
	v, ok := c.views[n]
	if !ok {
		return nil, false
	}
	return &plan.ViewDef{Name: n, Out: v.out}, true
}
func (c *fuzzCatalog) ViewSelect(n string) (*sqlparser.Select, bool) {
	v, ok := c.views[n]
	return v.sel, ok
}

func (c *fuzzCatalog) clone() *fuzzCatalog {
	out := &fuzzCatalog{tables: map[string]*plan.TableDef{}, views: map[string]fuzzView{}, nextID: c.nextID}
	for k, v := range c.tables {
		out.tables[k] = v
	}
	for k, v := range c.views {
		out.views[k] = v
	}
	return out
}

// fuzzOutcome is what planning one statement came to.
type fuzzOutcome struct {
	planned bool   // a query was planned
	explain string // its EXPLAIN
	err     error
}

// planStatement plans one statement against cat the way the engine's Exec
// does (queries/engine.go), applying its catalog changes; set holds the
// request's SET options so far.
func (c *fuzzCatalog) planStatement(st *sqlparser.Statement, set *[]sqlparser.SetVar) fuzzOutcome {
	opts := plan.Options{Parallelism: 1, CheckpointInterval: 1000, EmitInterval: 200}
	withSet := func() (plan.Options, error) {
		o := opts
		return o, ApplyOptions(&o, *set, "SET")
	}
	switch s := st.Stmt.(type) {
	case *sqlparser.CreateTable:
		def, err := Table(s, st.Text)
		if err != nil {
			return fuzzOutcome{err: err}
		}
		if _, ok := c.tables[def.Name]; ok {
			return fuzzOutcome{}
		}
		if _, ok := c.views[def.Name]; ok {
			return fuzzOutcome{}
		}
		c.nextID++
		def.ID = c.nextID
		c.tables[def.Name] = def
		return fuzzOutcome{}
	case *sqlparser.CreateView:
		if _, ok := c.tables[s.Name]; ok {
			return fuzzOutcome{}
		}
		if _, ok := c.views[s.Name]; ok && !s.OrReplace {
			return fuzzOutcome{}
		}
		o, err := withSet()
		if err != nil {
			return fuzzOutcome{err: err}
		}
		g, err := Query(s.Select, c, o, s.Name, plan.SinkResults)
		if err != nil {
			return fuzzOutcome{err: err}
		}
		c.views[s.Name] = fuzzView{sel: s.Select, out: g.Out}
		return fuzzOutcome{planned: true, explain: g.Explain()}
	case *sqlparser.Insert:
		t, ok := c.tables[s.Table]
		if !ok {
			return fuzzOutcome{}
		}
		o, err := withSet()
		if err != nil {
			return fuzzOutcome{err: err}
		}
		g, err := Insert(s.Select, t, c, o)
		if err != nil {
			return fuzzOutcome{err: err}
		}
		return fuzzOutcome{planned: true, explain: g.Explain()}
	case *sqlparser.Drop:
		for _, n := range s.Names {
			if s.View {
				delete(c.views, n)
			} else {
				delete(c.tables, n)
			}
		}
		return fuzzOutcome{}
	case *sqlparser.Set:
		o := opts
		if err := ApplyOptions(&o, s.Vars, "SET"); err != nil {
			return fuzzOutcome{err: err}
		}
		*set = append(*set, s.Vars...)
		return fuzzOutcome{}
	case *sqlparser.Explain:
		if s.Name != "" {
			return fuzzOutcome{} // a running query's plan: nothing is planned
		}
		o, err := withSet()
		if err != nil {
			return fuzzOutcome{err: err}
		}
		text, err := Explain(s, c, o, nil)
		if err != nil {
			return fuzzOutcome{err: err}
		}
		return fuzzOutcome{planned: true, explain: text}
	case *sqlparser.Select:
		// A SELECT reads a view's results (a pull query); one over a view
		// is also planned as the continuous query CREATE VIEW would make.
		out := c.planSelect(s, withSet)
		if s.From == nil {
			return out
		}
		if _, ok := c.views[s.From.Name]; !ok {
			return out
		}
		if out.err != nil {
			return out
		}
		o, err := withSet()
		if err != nil {
			return fuzzOutcome{err: err}
		}
		g, err := Query(s, c, o, "q", plan.SinkResults)
		if err != nil {
			return fuzzOutcome{err: err}
		}
		return fuzzOutcome{planned: true, explain: out.explain + g.Explain()}
	}
	return fuzzOutcome{}
}

// planSelect plans EXPLAIN's SELECT: a pull query over a view, else a
// continuous query.
func (c *fuzzCatalog) planSelect(s *sqlparser.Select, opts func() (plan.Options, error)) fuzzOutcome {
	o, err := opts()
	if err != nil {
		return fuzzOutcome{err: err}
	}
	if s.From != nil {
		if v, ok := c.views[s.From.Name]; ok {
			q, err := Pull(s, &plan.ViewDef{Name: s.From.Name, Out: v.out}, o, nil)
			if err != nil {
				return fuzzOutcome{err: err}
			}
			return fuzzOutcome{planned: true, explain: q.Explain()}
		}
	}
	g, err := Query(s, c, o, "explain", plan.SinkResults)
	if err != nil {
		return fuzzOutcome{err: err}
	}
	return fuzzOutcome{planned: true, explain: g.Explain()}
}

// fuzzBaseCatalog plans fuzzTablesSQL.
func fuzzBaseCatalog(tb testing.TB) *fuzzCatalog {
	tb.Helper()
	stmts, err := sqlparser.Parse(fuzzTablesSQL)
	if err != nil {
		tb.Fatal(err)
	}
	c := &fuzzCatalog{tables: map[string]*plan.TableDef{}, views: map[string]fuzzView{}}
	var set []sqlparser.SetVar
	for i := range stmts {
		if out := c.planStatement(&stmts[i], &set); out.err != nil {
			tb.Fatalf("%s: %v", stmts[i].Text, out.err)
		}
	}
	if len(c.tables) != 12 || len(c.views) != 1 {
		tb.Fatalf("catalog has %d tables and %d views", len(c.tables), len(c.views))
	}
	return c
}

// seedSQL returns the SQL the fuzz target starts from: every planner
// golden test and every example query (whole files and each statement),
// and the SQL string literals of the end-to-end tests and the demo.
func seedSQL(tb testing.TB) []string {
	tb.Helper()
	var files []string
	for _, pat := range []string{"testdata/*.sql", "../queries/examples/*.sql", "../queries/examples/nexmark/*.sql"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		tb.Fatalf("only %d seed SQL files", len(files))
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, string(b))
		stmts, _ := sqlparser.Parse(string(b))
		if len(stmts) > 1 {
			for _, st := range stmts {
				out = append(out, st.Text)
			}
		}
	}
	goFiles, _ := filepath.Glob("../e2e/*_test.go")
	goFiles = append(goFiles, "../queries/demo.go", "../queries/bench.go")
	for _, f := range goFiles {
		out = append(out, sqlLiterals(tb, f)...)
	}
	return out
}

// sqlLiterals returns the string literals of a Go file that look like SQL
// statements (constant concatenations joined).
func sqlLiterals(tb testing.TB, path string) []string {
	tb.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	var lit func(e ast.Expr) (string, bool)
	lit = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.BinaryExpr:
			if e.Op != token.ADD {
				return "", false
			}
			l, lok := lit(e.X)
			r, rok := lit(e.Y)
			return l + r, lok && rok
		case *ast.ParenExpr:
			return lit(e.X)
		}
		return "", false
	}
	ast.Inspect(file, func(n ast.Node) bool {
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		s, ok := lit(e)
		if !ok {
			// Not constant as a whole: look at its parts.
			return true
		}
		u := strings.ToUpper(strings.TrimSpace(s))
		for _, kw := range []string{"SELECT", "CREATE", "INSERT", "EXPLAIN", "SET ", "DROP"} {
			if strings.HasPrefix(u, kw) {
				out = append(out, s)
				break
			}
		}
		return false
	})
	return out
}

// FuzzPlan parses any text and plans every statement the way the engine
// does (tables and views it creates join the catalog for later
// statements): planning never panics, a failure is a *planner.Error whose
// name (when it has one) the engine can place, and EXPLAIN of every plan
// renders.
func FuzzPlan(f *testing.F) {
	seeds := seedSQL(f)
	for _, s := range seeds {
		f.Add(s)
	}
	base := fuzzBaseCatalog(f)
	f.Fuzz(func(t *testing.T, sql string) {
		stmts, _ := sqlparser.Parse(sql)
		cat := base.clone()
		var set []sqlparser.SetVar
		for i := range stmts {
			st := &stmts[i]
			out := cat.planStatement(st, &set)
			if out.err != nil {
				var pe *Error
				if !errors.As(out.err, &pe) {
					t.Fatalf("statement %d (%q): error of type %T: %v", i, st.Text, out.err, out.err)
				}
				if pe.Status != 400 && pe.Status != 404 && pe.Status != 409 && pe.Status != 422 {
					t.Fatalf("statement %d (%q): status %d: %v", i, st.Text, pe.Status, pe)
				}
				if pe.Msg == "" {
					t.Fatalf("statement %d (%q): empty message", i, st.Text)
				}
				// What the engine does to point at the name (queries.wrap).
				if l, c := sqlparser.LineColAt(st.Text, pe.Name); l < 0 || c < 0 {
					t.Fatalf("statement %d: LineColAt(%q) = %d, %d", i, pe.Name, l, c)
				}
				continue
			}
			if out.planned && out.explain == "" {
				t.Fatalf("statement %d (%q): planned, but EXPLAIN is empty", i, st.Text)
			}
		}
	})
}
