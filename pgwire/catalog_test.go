package pgwire

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamsql/streamsql/queries"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// psqlRunner runs one psql command against e, aligned output as people see
// it; the error is psql's exit status.
func (e *env) psqlRunner(t *testing.T) func(cmd string) (string, error) {
	psql := needPsql(t)
	_, port, _ := net.SplitHostPort(e.addr)
	return func(command string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, psql, "-X", "-h", "127.0.0.1", "-p", port, "-U", "x", "-d", "streamsql", "-P", "pager=off", "-c", command)
		cmd.Env = []string{"PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// catalogSetup is setup's table t and view v, a table with a PRIMARY KEY,
// and a sink table with a query that writes into it (its database is
// not there: the query retries, which the catalog does not mind).
func (e *env) catalogSetup() {
	e.t.Helper()
	e.setup()
	for _, sql := range []string{
		`CREATE TABLE p (k BIGINT NOT NULL, name VARCHAR(32), PRIMARY KEY (k)) ENGINE=http`,
		`CREATE TABLE sink_out (_row_id VARCHAR(255) NOT NULL, id BIGINT, PRIMARY KEY (_row_id)) ENGINE=postgres CONNECTION='postgres://x@127.0.0.1:1/db'`,
		`INSERT INTO sink_out SELECT id FROM t`,
	} {
		if _, err := e.eng.Exec(ctxT(e.t), sql); err != nil {
			e.t.Fatalf("%s: %v", sql, err)
		}
	}
}

// withResults reports whether q is a view with results: a query that
// writes into a sink table has none and is not a relation.
func withResults(q queries.QueryInfo) bool {
	_, ok := q.Sinks["results"]
	return ok
}

// TestPsqlCatalog runs psql's describe commands, the real binary, and
// checks their whole output against testdata/psql15.golden (reviewed
// against what a PostgreSQL 15 server prints for the same tables; go test
// -run TestPsqlCatalog -update rewrites it).
func TestPsqlCatalog(t *testing.T) {
	e := start(t, Options{})
	e.catalogSetup()
	run := e.psqlRunner(t)
	var got strings.Builder
	for _, cmd := range []string{`\d`, `\dt`, `\dv`, `\d+`, `\dt+`, `\dv+`, `\d t`, `\d+ t`, `\d p`, `\d sink_out`, `\d v`, `\d+ v`,
		`\dt t*`, `\d public.v`, `\dv public.*`, `\dn`, `\l`, `\di`, `\ds`, `\d nosuch`, `\dt nosuch*`} {
		out, err := run(cmd)
		status := "ok"
		if err != nil {
			status = err.Error()
		}
		fmt.Fprintf(&got, "=== %s (%s)\n%s", cmd, status, out)
	}
	golden := filepath.Join("testdata", "psql15.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestPsqlCatalog -update writes it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("psql's output differs from %s:\n%s", golden, lineDiff(string(want), got.String()))
	}
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			lo, hi := max(0, i-3), min(len(g), i+8)
			return fmt.Sprintf("line %d: want %q\n got %q\ngot around it:\n%s", i+1, wl, gl, strings.Join(g[lo:hi], "\n"))
		}
	}
	return ""
}

// grafanaStatements are the recorded statements of Grafana
// (clientsql/grafana) with their answers' names.
func grafanaStatements(t *testing.T) []recordedStatement {
	t.Helper()
	var out []recordedStatement
	err := fs.WalkDir(clientSQL, "clientsql/grafana", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(clientSQL, p)
		if err != nil {
			return err
		}
		stmts, err := recordedStatements(string(b))
		out = append(out, stmts...)
		return err
	})
	if err != nil || len(out) < 6 {
		t.Fatalf("the recorded Grafana statements: %d, %v", len(out), err)
	}
	return out
}

// TestGrafanaCatalog runs each recorded statement of Grafana's PostgreSQL
// data source through pgx, over the simple and the extended protocol,
// and checks the answer against the engine's catalog as its own API
// gives it (Tables, and Results for a view's columns).
func TestGrafanaCatalog(t *testing.T) {
	e := start(t, Options{})
	e.catalogSetup()
	ctx := ctxT(t)
	// What Grafana must see, from the engine's API: every table and view
	// with results, and their columns as information_schema names their
	// types.
	pgType := map[string]string{"BIGINT": "bigint", "DOUBLE": "double precision", "VARCHAR": "text", "BOOLEAN": "boolean", "TIMESTAMP(3)": "timestamp without time zone"}
	udt := map[string]string{"BIGINT": "int8", "DOUBLE": "float8", "VARCHAR": "text", "BOOLEAN": "bool", "TIMESTAMP(3)": "timestamp"}
	type col struct{ name, typ string }
	var names []string
	columns := map[string][]string{}
	typed := map[string][]col{}
	for _, ti := range e.eng.Tables() {
		names = append(names, ti.Name)
		for _, c := range ti.Columns {
			columns[ti.Name] = append(columns[ti.Name], c.Name+" "+pgType[c.Type])
			typed[ti.Name] = append(typed[ti.Name], col{c.Name, c.Type})
		}
	}
	for _, q := range e.eng.Queries() {
		if !withResults(q) {
			continue
		}
		names = append(names, q.Name)
		schema, _, err := e.eng.Results(q.Name, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range schema {
			columns[q.Name] = append(columns[q.Name], c.Name+" "+pgType[c.Type.String()])
		}
	}
	// The legacy editor's column pickers of t: the columns whose type is
	// in the statement's data_type list, but its time column, by name.
	legacyColumns := func(sql string) string {
		var out []string
		types := regexp.MustCompile(`data_type IN \(([^)]*)\)`).FindStringSubmatch(sql)
		not := regexp.MustCompile(`column_name <> '(\w+)'`).FindStringSubmatch(sql)
		for _, c := range typed["t"] {
			if types != nil && !strings.Contains(types[1], "'"+pgType[c.typ]+"'") || not != nil && c.name == not[1] {
				continue
			}
			out = append(out, c.name)
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	legacyType := func(sql string) string {
		name := regexp.MustCompile(`column_name = '(\w+)'`).FindStringSubmatch(sql)[1]
		for _, c := range typed["t"] {
			if c.name == name {
				return udt[c.typ]
			}
		}
		return ""
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "p sink_out t v" || len(columns["v"]) != 5 {
		t.Fatalf("the engine's catalog: %v %v", names, columns)
	}
	want := map[string]string{
		"grafana_version":       "1500",
		"grafana_timescaledb":   "",
		"grafana_schemas":       "public",
		"grafana_tables":        strings.Join(names, "\n"),
		"grafana_schema_tables": strings.Join(names, "\n"),
		"grafana_legacy_tables": strings.Join(names, "\n"),
		// the first table by name with a timestamp and a double column
		"grafana_metric_table": "t ts d",
		// PostgreSQL's aggregates of a float8 that return one, that
		// streamsql has too
		"grafana_aggregates": "avg\nmax\nmin\nstddev_pop\nstddev_samp\nsum\nvar_pop\nvar_samp",
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := e.connect(mode)
		n := 0
		for _, st := range grafanaStatements(t) {
			rows, err := c.Query(ctx, st.sql)
			if err != nil {
				t.Fatalf("%v, %s: %v\n%s", mode, st.answer, err, st.sql)
			}
			var got []string
			for _, r := range readAll(t, rows) {
				var f []string
				for _, v := range r {
					f = append(f, fmt.Sprint(v))
				}
				got = append(got, strings.Join(f, " "))
			}
			w, ok := want[st.answer]
			switch st.answer {
			case "grafana_columns":
				arg, _ := must2(parseStatement(st.sql)).literalAfter("parse_ident")
				w, ok = strings.Join(columns[strings.TrimPrefix(arg, "public.")], "\n"), true
			case "grafana_legacy_columns":
				w, ok = legacyColumns(st.sql), true
			case "grafana_legacy_datatype":
				w, ok = legacyType(st.sql), true
			}
			if !ok {
				t.Fatalf("no expectation for %s", st.answer)
			}
			if strings.Join(got, "\n") != w {
				t.Errorf("%v, %s:\ngot  %q\nwant %q", mode, st.answer, got, w)
			}
			n++
		}
		if n < 17 {
			t.Errorf("%d Grafana statements ran", n)
		}
	}
	// The column picker of a table of another schema, of one that does not
	// exist, of a quoted name: no columns.
	c := e.connect(pgx.QueryExecModeSimpleProtocol)
	for _, st := range grafanaStatements(t) {
		if st.answer != "grafana_columns" || !strings.Contains(st.sql, "'public.t'") {
			continue
		}
		for _, name := range []string{"other.t", "nosuch", `"T"`, "public.nosuch"} {
			rows := readAll(t, must(c.Query(ctx, strings.ReplaceAll(st.sql, "'public.t'", "'"+name+"'"))))
			if len(rows) != 0 {
				t.Errorf("the columns of %s: %v", name, rows)
			}
		}
		rows := readAll(t, must(c.Query(ctx, strings.ReplaceAll(st.sql, "'public.t'", "'P'"))))
		if len(rows) != 0 {
			t.Errorf("quote_ident(name) = 'P' matched: %v", rows)
		}
		rows = readAll(t, must(c.Query(ctx, strings.ReplaceAll(st.sql, "'public.t'", "'public.P'"))))
		if len(rows) != 2 {
			t.Errorf("parse_ident folds public.P to p: %v", rows)
		}
	}
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCatalogNotServed: a catalog statement that is not recorded gets
// 0A000 naming what is served, never the engine's syntax error, and the
// connection serves on.
func TestCatalogNotServed(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	c := e.connect(pgx.QueryExecModeSimpleProtocol)
	ctx := ctxT(t)
	for _, sql := range []string{
		"SELECT relname FROM pg_catalog.pg_class WHERE relkind = 'r'",
		"SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
		// psql's list with a condition it never sends
		`SELECT n.nspname as "Schema", c.relname as "Name" FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r') AND c.relpages > 0 ORDER BY 1,2`,
	} {
		_, err := c.Exec(ctx, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, "catalog") {
			t.Errorf("%s: %v, want 0A000 about the catalog", sql, err)
		}
	}
	// A recorded statement with a bad regular expression: 2201B, as
	// PostgreSQL answers it.
	bad := strings.ReplaceAll(psqlList, "AND n.nspname <> 'pg_catalog'", "AND c.relname OPERATOR(pg_catalog.~) '^(t[)$' COLLATE pg_catalog.default AND n.nspname <> 'pg_catalog'")
	_, err := c.Exec(ctx, bad)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "2201B" || !strings.Contains(pe.Message, "^(t[)$") {
		t.Errorf("a bad regular expression: %v, want 2201B", err)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT id FROM v WHERE id = 3").Scan(&n); err != nil || n != 3 {
		t.Errorf("after: %d, %v", n, err)
	}
}

// psqlList is psql's \dt as recorded (clientsql/psql15/relations.sql).
const psqlList = `SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;`

const psqlRelation = `SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = '16384';`

func TestFingerprint(t *testing.T) {
	lookup := func(sql string) string {
		st, err := parseStatement(sql)
		if err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
		if a, ok := knownStatements.exact[st.fingerprint()]; ok {
			return a
		}
		return knownStatements.shapes[st.shape()]
	}
	if got := lookup(psqlRelation); got != "relation" {
		t.Fatalf("the recorded statement: %q", got)
	}
	if got := lookup(psqlList); got != "relations" {
		t.Fatalf("the recorded statement: %q", got)
	}
	for _, tc := range []struct {
		name, sql, want string
	}{
		{"one line", strings.Join(strings.Fields(psqlRelation), " "), "relation"},
		{"upper case keywords", strings.ReplaceAll(strings.ReplaceAll(psqlRelation, "SELECT", "select"), "c.relkind", "C.RELKIND"), "relation"},
		{"comments", "/* psql */ " + strings.ReplaceAll(psqlRelation, "\n", " -- a comment\n"), "relation"},
		{"another oid", strings.ReplaceAll(psqlRelation, "'16384'", "'99'"), "relation"},
		{"an E string", strings.ReplaceAll(psqlRelation, "'16384'", `E'16\x384'`), "relation"},
		{"no semicolon", strings.TrimSuffix(psqlRelation, ";"), "relation"},
		{"another column", strings.ReplaceAll(psqlRelation, "c.relchecks,", "c.relchecks, c.relpages,"), ""},
		{"a quoted identifier", strings.ReplaceAll(psqlRelation, "c.relchecks", `c."relchecks"`), ""},
		{"another table", strings.ReplaceAll(psqlRelation, "pg_catalog.pg_am am", "pg_catalog.pg_index am"), ""},
		// The list's conditions are filters: other relkinds, a pattern.
		{"list, other relkinds", strings.ReplaceAll(psqlList, "('r','p','')", "('v','m','S','')"), "relations"},
		{"list, a pattern", strings.ReplaceAll(psqlList, "AND n.nspname <> 'pg_catalog'", "AND c.relname OPERATOR(pg_catalog.~) '^(t.*)$' COLLATE pg_catalog.default AND n.nspname <> 'pg_catalog'"), "relations"},
		{"list, another select list", strings.ReplaceAll(psqlList, `c.relname as "Name"`, `c.relname as "name"`), ""},
	} {
		if got := lookup(tc.sql); got != tc.want {
			t.Errorf("%s: answered by %q, want %q", tc.name, got, tc.want)
		}
	}
	// Literals and where they are.
	st := must2(parseStatement(strings.ReplaceAll(psqlRelation, "'16384'", "E'it''s\\n'")))
	if v, ok := st.literalAfter("c . oid ="); !ok || v != "it's\n" {
		t.Errorf("the OID literal: %q, %v", v, ok)
	}
	// Bad input is not recognized and does not panic.
	for _, sql := range []string{"SELECT 'unterminated", `SELECT "x`, "SELECT /* x", "SELECT $x", "", ";"} {
		if st, err := parseStatement(sql); err == nil && lookup(sql) != "" {
			t.Errorf("%q: recognized as %v", sql, st)
		}
	}
}

func TestTokenize(t *testing.T) {
	toks, err := tokenize(`SELECT a.B, "Mixed ""q""", E'a\'b', 'x''y', $$d$q$$, $1, 1.5e-3, n !~ '^pg_', x::int, a<>-1 /* c /* nested */ */ -- end`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, fmt.Sprintf("%d:%s", tk.kind, tk.text))
	}
	want := "0:select 0:a 5:. 0:b 5:, 1:Mixed \"q\" 5:, 2:a'b 5:, 2:x'y 5:, 2:d$q 5:, 4:$1 5:, 3:1.5e-3 5:, 0:n 5:!~ 2:^pg_ 5:, 0:x 5::: 0:int 5:, 0:a 5:<> 5:- 3:1"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestLoadCatalog: the recorded files' mistakes are errors naming the
// file and line.
func TestLoadCatalog(t *testing.T) {
	for _, tc := range []struct{ name, text, err string }{
		{"unknown answer", "-- answer: nope\nSELECT 1 FROM pg_catalog.pg_class;\n", `a.sql:1: unknown answer "nope"`},
		{"two answers", "-- answer: schemas\nSELECT 1 FROM pg_catalog.pg_class;\n-- answer: databases\nselect 1 from PG_CATALOG.pg_class;\n", "a.sql:3: the statement is answered by schemas already"},
		{"no where", "-- answer: lookup\nSELECT 1 FROM pg_catalog.pg_class;\n", "a.sql:1: answer lookup needs a WHERE clause"},
		{"no answer line", "SELECT 1;\n", `a.sql: no "-- answer:" line`},
		{"bad sql", "-- answer: none\nSELECT 'x\n", "a.sql:1: unterminated string"},
	} {
		_, err := loadCatalog(fstest.MapFS{"a.sql": {Data: []byte(tc.text)}})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
	if len(knownStatements.exact) < 15 || len(knownStatements.shapes) < 6 {
		t.Errorf("the recorded statements: %d exact, %d shapes", len(knownStatements.exact), len(knownStatements.shapes))
	}
}

func TestQuoteAndParseIdent(t *testing.T) {
	for in, want := range map[string]string{"t": "t", "T": `"T"`, "my table": `"my table"`, "select": `"select"`, "a_1": "a_1", "1a": `"1a"`, `q"`: `"q"""`, "name": "name",
		"time": `"time"`, "value": "value", "a$b": `"a$b"`, "_x": "_x", "é": `"é"`} { // as PostgreSQL 15 answers
		if got := quoteIdent(in); got != want {
			t.Errorf("quoteIdent(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"t": "t", "Public.T": "public|t", `"My"."T x"`: "My|T x", `a."b.c"`: "a|b.c"} {
		got, err := parseIdent(in)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("parseIdent(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for pattern, cases := range map[string]map[string]bool{`t%`: {"t": true, "tx": true, "xt": false}, `t\_x%`: {"t_xy": true, "taxy": false},
		`_`: {"a": true, "ab": false, "\n": true}, `a.b*`: {"a.b*": true, "axbb": false}} {
		re, err := likeRegexp(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for s, want := range cases {
			if re.MatchString(s) != want {
				t.Errorf("%q LIKE %q: %v", s, pattern, !want)
			}
		}
	}
	for _, in := range []string{"", "a.", `"a`, `"a"b`} {
		if _, err := parseIdent(in); err == nil {
			t.Errorf("parseIdent(%q): no error", in)
		}
	}
}

// TestPsqlCompletion runs the recorded statements of psql's tab
// completion (a terminal's, which psql -c cannot send) and checks them
// against the engine's catalog, read through its API.
func TestPsqlCompletion(t *testing.T) {
	e := start(t, Options{})
	e.catalogSetup()
	ctx := ctxT(t)
	kinds := map[string]string{}
	columns := map[string][]string{}
	for _, ti := range e.eng.Tables() {
		kinds[ti.Name] = "r"
		for _, c := range ti.Columns {
			columns[ti.Name] = append(columns[ti.Name], c.Name)
		}
	}
	for _, q := range e.eng.Queries() {
		if withResults(q) {
			kinds[q.Name] = "v"
		}
	}
	b, err := fs.ReadFile(clientSQL, "clientsql/psql15/completion.sql")
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := recordedStatements(string(b))
	if err != nil || len(stmts) < 5 {
		t.Fatalf("%d statements, %v", len(stmts), err)
	}
	prefixRE := regexp.MustCompile(`\((?:c\.relname|a\.attname)\) LIKE '(\w*)%'`)
	kindsRE := regexp.MustCompile(`c\.relkind IN \(([^)]*)\)`)
	c := e.connect(pgx.QueryExecModeSimpleProtocol)
	for _, st := range stmts {
		prefix := prefixRE.FindStringSubmatch(st.sql)[1]
		var want []string
		switch st.answer {
		case "psql_complete_relations", "psql_complete_schema_relations":
			var names []string
			for n := range kinds {
				names = append(names, n)
			}
			sort.Strings(names)
			k := kindsRE.FindStringSubmatch(st.sql)
			for _, n := range names {
				if strings.HasPrefix(n, prefix) && (k == nil || strings.Contains(k[1], "'"+kinds[n]+"'")) {
					if st.answer == "psql_complete_relations" {
						want = append(want, n+" <nil>")
					} else {
						want = append(want, n+" public")
					}
				}
			}
			if st.answer == "psql_complete_relations" && strings.HasPrefix("public", prefix) {
				want = append(want, "<nil> public")
			}
		case "psql_complete_columns":
			for _, n := range columns["t"] {
				if strings.HasPrefix(n, prefix) {
					want = append(want, n+" <nil>")
				}
			}
		default:
			t.Fatalf("unknown answer %s", st.answer)
		}
		var got []string
		for _, r := range readAll(t, must(c.Query(ctx, st.sql))) {
			got = append(got, fmt.Sprint(r[0])+" "+fmt.Sprint(r[1]))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(want) == 0 {
			t.Errorf("%s (prefix %q):\ngot  %q\nwant %q", st.answer, prefix, got, want)
		}
	}
}
