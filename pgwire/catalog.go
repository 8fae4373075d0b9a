package pgwire

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
)

// The catalog statements of psql and Grafana, answered over the engine's
// tables and views (docs/pgwire.md, "Catalog"). They are PostgreSQL's
// dialect, which the engine's parser cannot read, and they are neither
// run nor rewritten: a statement is recognized by its fingerprint
// (pgsql.go) among the statements recorded from the clients
// (clientsql/), and the recorded statement's answer computes the rows
// from the engine's catalog, with the statement's literals (an OID, a
// name pattern, a table name) as arguments. The statements that list or
// look up relations or columns (psql's \d, \dt, \dv and \d name in all
// their variants, its tab completion, the pickers of Grafana's legacy
// editor) match on their shape instead (the fingerprint without the
// WHERE clause), and their conditions are evaluated one by one (filters).
//
// Each recorded file holds statements, each after a line "-- answer:
// name" naming its answer.

//go:embed clientsql
var clientSQL embed.FS

// catalogAnswer computes the result of a recognized statement.
type catalogAnswer func(c *conn, st *pgStatement, rels *relations) (queries.Result, error)

// answer is a catalog answer; byShape: its statements match on their
// shape, and their WHERE conditions are filters over the relations (or
// their columns).
type answer struct {
	fn      catalogAnswer
	byShape bool
}

// catalogAnswers are the answers by the name the recorded files use.
var catalogAnswers = map[string]answer{
	// psql
	"relations":                      {answerRelations, true},
	"lookup":                         {answerLookup, true},
	"relation":                       {answerRelation(false), false},
	"relation_verbose":               {answerRelation(true), false},
	"columns":                        {answerColumns(nil), false},
	"columns_verbose_table":          {answerColumns([]string{"attstorage", "attcompression", "attstattarget", "col_description"}), false},
	"columns_verbose_view":           {answerColumns([]string{"attstorage", "col_description"}), false},
	"viewdef":                        {answerViewdef, false},
	"schemas":                        {answerSchemas, false},
	"databases":                      {answerDatabases, false},
	"none":                           {answerNone, false},
	"psql_complete_relations":        {answerCompleteRelations, true},
	"psql_complete_schema_relations": {answerCompleteSchemaRelations, true},
	"psql_complete_columns":          {answerCompleteColumns, true},
	// Grafana
	"grafana_version":         {answerGrafanaVersion, false},
	"grafana_timescaledb":     {answerGrafanaTimescale, false},
	"grafana_schemas":         {answerGrafanaSchemas, false},
	"grafana_tables":          {answerGrafanaTables(false), false},
	"grafana_schema_tables":   {answerGrafanaTables(true), false},
	"grafana_columns":         {answerGrafanaColumns, false},
	"grafana_legacy_tables":   {answerLegacyTables, true},
	"grafana_legacy_columns":  {answerLegacyColumns("quote_ident"), true},
	"grafana_legacy_datatype": {answerLegacyColumns("udt_name"), true},
	"grafana_metric_table":    {answerMetricTable, false},
	"grafana_aggregates":      {answerAggregates, false},
}

// clientCatalog maps the recorded statements' fingerprints (and shapes) to
// their answers' names.
type clientCatalog struct {
	exact  map[string]string
	shapes map[string]string
}

// knownStatements is the catalog of the recorded statements, read once
// from the embedded files; never changed after.
var knownStatements = mustLoadCatalog()

func mustLoadCatalog() *clientCatalog {
	cat, err := loadCatalog(clientSQL)
	if err != nil {
		panic(err)
	}
	return cat
}

// loadCatalog reads the recorded statements of fsys. A statement whose
// answer is unknown, a statement that does not tokenize, or one
// fingerprint with two answers is an error naming the file.
func loadCatalog(fsys fs.FS) (*clientCatalog, error) {
	cat := &clientCatalog{exact: map[string]string{}, shapes: map[string]string{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".sql" {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		stmts, err := recordedStatements(string(b))
		if err != nil {
			return fmt.Errorf("pgwire: %s: %w", p, err)
		}
		for _, rs := range stmts {
			a, ok := catalogAnswers[rs.answer]
			if !ok {
				return fmt.Errorf("pgwire: %s:%d: unknown answer %q", p, rs.line, rs.answer)
			}
			st, err := parseStatement(rs.sql)
			if err != nil {
				return fmt.Errorf("pgwire: %s:%d: %w", p, rs.line, err)
			}
			m, key := cat.exact, st.fingerprint()
			if a.byShape {
				if m, key = cat.shapes, st.shape(); key == "" {
					return fmt.Errorf("pgwire: %s:%d: answer %s needs a WHERE clause", p, rs.line, rs.answer)
				}
			}
			if prev, ok := m[key]; ok && prev != rs.answer {
				return fmt.Errorf("pgwire: %s:%d: the statement is answered by %s already, not %s", p, rs.line, prev, rs.answer)
			}
			m[key] = rs.answer
		}
		return nil
	})
	return cat, err
}

// recordedStatement is one statement of a recorded file.
type recordedStatement struct {
	answer string
	sql    string
	line   int
}

// recordedStatements splits a recorded file at its "-- answer:" lines.
func recordedStatements(text string) ([]recordedStatement, error) {
	var out []recordedStatement
	for i, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "-- answer: "); ok {
			out = append(out, recordedStatement{answer: strings.TrimSpace(name), line: i + 1})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].sql += line + "\n"
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no \"-- answer:\" line")
	}
	return out, nil
}

// catalogMarkers are in every statement the catalog answers: a statement
// without one is not looked at (the engine's statements stay cheap).
var catalogMarkers = []string{"pg_", "information_schema", "current_setting"}

// catalog answers sql if it is a recognized client catalog statement; ok
// false otherwise (the engine gets it).
func (c *conn) catalog(ctx context.Context, sql string) (res queries.Result, ok bool, err error) {
	if !hasMarker(sql) {
		return res, false, nil
	}
	st, err := parseStatement(sql)
	if err != nil || len(st.toks) == 0 {
		return res, false, nil // the engine says what is wrong
	}
	name, ok := knownStatements.exact[st.fingerprint()]
	if !ok {
		if name, ok = knownStatements.shapes[st.shape()]; !ok || st.shape() == "" {
			return res, false, nil
		}
	}
	res, err = catalogAnswers[name].fn(c, st, &relations{c: c, ctx: ctx})
	if err != nil {
		return res, true, fmt.Errorf("pgwire: the catalog statement (%s): %w", name, err)
	}
	return res, true, nil
}

func hasMarker(sql string) bool {
	for _, m := range catalogMarkers {
		if len(sql) >= len(m) && containsFold(sql, m) {
			return true
		}
	}
	return false
}

// containsFold is strings.Contains ignoring ASCII case, without
// allocating (lower is lower case).
func containsFold(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for j < len(lower) {
			ch := s[i+j]
			if 'A' <= ch && ch <= 'Z' {
				ch += 'a' - 'A'
			}
			if ch != lower[j] {
				break
			}
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// The relations of the catalog: the engine's tables ('r') and the views
// with results ('v'; a query that writes into a sink table has no rows
// of its own and is not a relation), all in the schema public.
type relation struct {
	oid  int64
	name string
	kind string // "r" or "v"
}

// relColumn is a column of a relation.
type relColumn struct {
	num     int // its position, from 1 (attnum)
	name    string
	typ     plan.Type
	notNull bool
}

// relations reads the engine's catalog for one statement, when it is
// first needed.
type relations struct {
	c    *conn
	ctx  context.Context
	list []relation
	read bool
}

// catalogSchema is the one schema; catalogOwner owns everything.
const (
	catalogSchema = "public"
	catalogOwner  = "streamsql"
)

// all lists the relations by name, with their OIDs.
func (r *relations) all() ([]relation, error) {
	if r.read {
		return r.list, nil
	}
	results, err := r.c.s.eng.ExecWith(r.ctx, "SHOW TABLES", queries.ExecOptions{})
	if err != nil {
		return nil, fmt.Errorf("SHOW TABLES: %w", err)
	}
	for _, o := range results[0].Rows {
		name, _ := o.Vals[0].(string)
		kind := "r"
		if o.Vals[1] == "view" {
			kind = "v"
		}
		r.list = append(r.list, relation{name: name, kind: kind})
	}
	sort.Slice(r.list, func(i, j int) bool { return r.list[i].name < r.list[j].name })
	assignOIDs(r.list)
	r.read = true
	return r.list, nil
}

// assignOIDs gives each relation an OID that stays the same across the
// statements of one psql command (and across restarts): a hash of its
// kind and name in the user range from 16384; a collision takes the next
// free one, in name order.
func assignOIDs(rels []relation) {
	used := map[int64]bool{}
	for i := range rels {
		h := fnv.New32a()
		h.Write([]byte(rels[i].kind + ":" + rels[i].name))
		oid := 16384 + int64(h.Sum32()%(1<<30))
		for used[oid] {
			oid++
		}
		used[oid] = true
		rels[i].oid = oid
	}
}

// byOID finds a relation by the text of its OID (psql sends '16384').
func (r *relations) byOID(text string) (relation, bool, error) {
	rels, err := r.all()
	if err != nil {
		return relation{}, false, err
	}
	oid, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil {
		return relation{}, false, &pgError{code: "22P02", msg: fmt.Sprintf("invalid input syntax for type oid: %q", text)}
	}
	for _, rel := range rels {
		if rel.oid == oid {
			return rel, true, nil
		}
	}
	return relation{}, false, nil
}

// columns are a relation's columns (DESCRIBE); none for a view that is
// not running.
func (r *relations) columns(rel relation) ([]relColumn, error) {
	schema, err := r.c.s.eng.Columns(rel.name)
	if err != nil {
		if rel.kind == "v" {
			return nil, nil
		}
		return nil, fmt.Errorf("the columns of %s: %w", rel.name, err)
	}
	cols := make([]relColumn, len(schema))
	for i, c := range schema {
		cols[i] = relColumn{num: i + 1, name: c.Name, typ: c.Type, notNull: c.NotNull}
	}
	return cols, nil
}

// quoteName quotes a name for the engine's parser.
func quoteName(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// pgTypeName is the PostgreSQL name of a column type (format_type,
// information_schema's data_type), that of the OID encode.go sends.
func pgTypeName(t plan.Type) string {
	switch t {
	case plan.TypeBigint:
		return "bigint"
	case plan.TypeDouble:
		return "double precision"
	case plan.TypeBoolean:
		return "boolean"
	case plan.TypeTimestamp:
		return "timestamp without time zone"
	}
	return "text"
}

// A filter is one condition of the WHERE clause of a relation list or
// lookup, recognized by its fingerprint: of its literals, it makes the
// predicate (once per statement: a regular expression is compiled once).
// col is nil for the conditions on relations, a column for those on
// columns (information_schema.columns).
type filter func(lits []token) (predicate, error)

type predicate func(rel relation, col *relColumn) bool

// relationFilters are the conditions on relations psql and Grafana send.
var relationFilters = map[string]filter{
	"c . relkind in (?...)": func(lits []token) (predicate, error) {
		return func(rel relation, _ *relColumn) bool { return anyLiteral(lits, rel.kind) }, nil
	},
	"n . nspname <> ?": schemaIs(func(lits []token) (bool, error) { return catalogSchema != lits[0].text, nil }),
	"n . nspname = ?":  schemaIs(func(lits []token) (bool, error) { return catalogSchema == lits[0].text, nil }),
	"n . nspname !~ ?": schemaIs(func(lits []token) (bool, error) {
		m, err := matches(lits[0].text, catalogSchema)
		return !m, err
	}),
	"n . nspname ~ ?": schemaIs(func(lits []token) (bool, error) { return matches(lits[0].text, catalogSchema) }),
	"n . nspname operator ( pg_catalog . ~ ) ? collate pg_catalog . default": schemaIs(func(lits []token) (bool, error) {
		return matches(lits[0].text, catalogSchema)
	}),
	"c . relname operator ( pg_catalog . ~ ) ? collate pg_catalog . default": func(lits []token) (predicate, error) {
		re, err := compileRegexp(lits[0].text)
		if err != nil {
			return nil, err
		}
		return func(rel relation, _ *relColumn) bool { return re.MatchString(rel.name) }, nil
	},
	// Every relation is in the search path.
	"pg_catalog . pg_table_is_visible ( c . oid )": schemaIs(func([]token) (bool, error) { return true, nil }),
	// Grafana's legacy editor: the schemas of the search path, which
	// always has public (SET search_path is accepted, not applied).
	conditionKey(legacySearchPath): schemaIs(func([]token) (bool, error) { return true, nil }),
	"table_schema = ?":             schemaIs(func(lits []token) (bool, error) { return catalogSchema == lits[0].text, nil }),
	"table_name = ?": func(lits []token) (predicate, error) {
		return func(rel relation, _ *relColumn) bool { return rel.name == lits[0].text }, nil
	},
	// psql's tab completion.
	"c . relname = ?": func(lits []token) (predicate, error) {
		return func(rel relation, _ *relColumn) bool { return rel.name == lits[0].text }, nil
	},
	"( c . relname ) like ?": func(lits []token) (predicate, error) {
		re, err := likeRegexp(lits[0].text)
		if err != nil {
			return nil, err
		}
		return func(rel relation, _ *relColumn) bool { return re.MatchString(rel.name) }, nil
	},
	"c . relnamespace <> ( select oid from pg_catalog . pg_namespace where nspname = ? )": schemaIs(func(lits []token) (bool, error) {
		return catalogSchema != lits[0].text, nil
	}),
	"c . relnamespace = n . oid": schemaIs(func([]token) (bool, error) { return true, nil }),
	"c . oid = a . attrelid":     schemaIs(func([]token) (bool, error) { return true, nil }),
}

// columnFilters are the conditions on columns (Grafana's legacy editor).
var columnFilters = map[string]filter{
	"data_type in (?...)": func(lits []token) (predicate, error) {
		return func(_ relation, col *relColumn) bool { return anyLiteral(lits, pgTypeName(col.typ)) }, nil
	},
	"column_name <> ?": func(lits []token) (predicate, error) {
		return func(_ relation, col *relColumn) bool { return col.name != lits[0].text }, nil
	},
	"column_name = ?": func(lits []token) (predicate, error) {
		return func(_ relation, col *relColumn) bool { return col.name == lits[0].text }, nil
	},
	// psql's tab completion.
	"a . attnum > ?": func(lits []token) (predicate, error) {
		n, err := strconv.Atoi(lits[0].text)
		if err != nil {
			return nil, &pgError{code: "22P02", msg: fmt.Sprintf("invalid input syntax for type smallint: %q", lits[0].text)}
		}
		return func(_ relation, col *relColumn) bool { return col.num > n }, nil
	},
	"not a . attisdropped": func([]token) (predicate, error) { return func(relation, *relColumn) bool { return true }, nil },
	"( a . attname ) like ?": func(lits []token) (predicate, error) {
		re, err := likeRegexp(lits[0].text)
		if err != nil {
			return nil, err
		}
		return func(_ relation, col *relColumn) bool { return re.MatchString(col.name) }, nil
	},
}

// schemaIs is a condition on the schema alone: the same for every
// relation, decided once.
func schemaIs(f func(lits []token) (bool, error)) filter {
	return func(lits []token) (predicate, error) {
		ok, err := f(lits)
		return func(relation, *relColumn) bool { return ok }, err
	}
}

func anyLiteral(lits []token, s string) bool {
	for _, l := range lits {
		if l.text == s {
			return true
		}
	}
	return false
}

// legacySearchPath is the condition of Grafana's legacy editor on the
// schema (meta_query.ts's buildSchemaConstraint).
const legacySearchPath = `table_schema IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
)`

// conditionKey is the fingerprint of a condition.
func conditionKey(sql string) string {
	toks, err := tokenize(sql)
	if err != nil {
		panic(err)
	}
	parts, _ := fingerprintParts(toks)
	return strings.Join(parts, " ")
}

// matches evaluates PostgreSQL's ~ (a POSIX regular expression, case
// sensitive; psql makes them of its name patterns) with Go's regexp.
func matches(pattern, s string) (bool, error) {
	re, err := compileRegexp(pattern)
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}

// likeRegexp is a LIKE pattern as a regular expression: % any text, _
// one character, a backslash escapes the next.
func likeRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s)`)
	for i := 0; i < len(pattern); i++ {
		switch ch := pattern[i]; ch {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
			}
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString("$")
	return compileRegexp(b.String())
}

func compileRegexp(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, &pgError{code: "2201B", msg: fmt.Sprintf("invalid regular expression %q: %v", pattern, err)}
	}
	return re, nil
}

// condition is a recognized condition.
type condition struct {
	p      predicate
	column bool // a condition on columns
}

// conditions are st's WHERE conditions; an unknown one is an error (the
// statement was not recorded so).
func conditionsOf(st *pgStatement) ([]condition, error) {
	var out []condition
	for _, toks := range st.conditions() {
		parts, lits := fingerprintParts(toks)
		key := strings.Join(parts, " ")
		f, column := relationFilters[key], false
		if f == nil {
			f, column = columnFilters[key], true
		}
		if f == nil {
			return nil, &pgError{code: "0A000", msg: fmt.Sprintf("the catalog condition %q is not served (docs/pgwire.md)", key)}
		}
		var flat []token
		for _, l := range lits {
			flat = append(flat, l...)
		}
		p, err := f(flat)
		if err != nil {
			return nil, err
		}
		out = append(out, condition{p, column})
	}
	return out, nil
}

// selected are the relations that satisfy st's WHERE conditions on
// relations.
func selected(st *pgStatement, rels *relations) ([]relation, error) {
	all, err := rels.all()
	if err != nil {
		return nil, err
	}
	conds, err := conditionsOf(st)
	if err != nil {
		return nil, err
	}
	var out []relation
	for _, rel := range all {
		if satisfies(conds, false, rel, nil) {
			out = append(out, rel)
		}
	}
	return out, nil
}

// satisfies evaluates the conditions on relations, or on columns.
func satisfies(conds []condition, column bool, rel relation, col *relColumn) bool {
	for _, c := range conds {
		if c.column == column && !c.p(rel, col) {
			return false
		}
	}
	return true
}

// selectedColumns are the columns that satisfy st's WHERE conditions, of
// the relations that do.
func selectedColumns(st *pgStatement, rels *relations) ([]relation, [][]relColumn, error) {
	list, err := selected(st, rels)
	if err != nil {
		return nil, nil, err
	}
	conds, err := conditionsOf(st)
	if err != nil {
		return nil, nil, err
	}
	cols := make([][]relColumn, len(list))
	for i, rel := range list {
		all, err := rels.columns(rel)
		if err != nil {
			return nil, nil, err
		}
		for k := range all {
			if satisfies(conds, true, rel, &all[k]) {
				cols[i] = append(cols[i], all[k])
			}
		}
	}
	return list, cols, nil
}

// result builds a SELECT result of typed columns.
type result struct {
	cols  []string
	types []plan.Type
	rows  []plan.Row
}

func newResult(cols ...string) *result {
	r := &result{cols: cols, types: make([]plan.Type, len(cols))}
	for i := range r.types {
		r.types[i] = plan.TypeVarchar
	}
	return r
}

// typed sets the type of the column named col.
func (r *result) typed(t plan.Type, cols ...string) *result {
	for _, c := range cols {
		for i, n := range r.cols {
			if n == c {
				r.types[i] = t
			}
		}
	}
	return r
}

func (r *result) add(vals ...plan.Value) { r.rows = append(r.rows, vals) }

// limited is the result with at most as many rows as st's LIMIT says.
func (r *result) limited(st *pgStatement) queries.Result {
	if text, ok := st.literalAfter("limit"); ok {
		if n, err := strconv.Atoi(text); err == nil && n >= 0 && n < len(r.rows) {
			r.rows = r.rows[:n]
		}
	}
	return r.done()
}

func (r *result) done() queries.Result {
	return queries.Result{Kind: "select", Columns: r.cols, Types: r.types, Values: r.rows, Rows: make([]queries.Object, len(r.rows))}
}

func kindName(kind string) string {
	if kind == "v" {
		return "view"
	}
	return "table"
}

// answerRelations answers psql's relation lists (\d, \dt, \dv, \di, \ds
// and their + forms): the columns the statement names with AS, ordered by
// schema and name.
func answerRelations(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	list, err := selected(st, rels)
	if err != nil {
		return queries.Result{}, err
	}
	r := newResult(st.aliases()...)
	for _, rel := range list {
		row := make(plan.Row, len(r.cols))
		for i, col := range r.cols {
			switch col {
			case "Schema":
				row[i] = plan.Str(catalogSchema)
			case "Name":
				row[i] = plan.Str(rel.name)
			case "Type":
				row[i] = plan.Str(kindName(rel.kind))
			case "Owner":
				row[i] = plan.Str(catalogOwner)
			case "Persistence":
				row[i] = plan.Str("permanent")
			case "Access method", "Size", "Description", "Table":
				// no table access method, size, comments or indexes
			default:
				return queries.Result{}, fmt.Errorf("unknown column %q", col)
			}
		}
		r.add(row...)
	}
	return r.done(), nil
}

// answerLookup answers the first statement of psql's \d name: the OID,
// schema and name of the relations that match.
func answerLookup(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	list, err := selected(st, rels)
	if err != nil {
		return queries.Result{}, err
	}
	r := newResult("oid", "nspname", "relname").typed(plan.TypeBigint, "oid")
	for _, rel := range list {
		r.add(plan.Int(rel.oid), plan.Str(catalogSchema), plan.Str(rel.name))
	}
	return r.done(), nil
}

// oidArg is the relation named by the OID literal after prefix in st.
func oidArg(st *pgStatement, rels *relations, prefix string) (relation, bool, error) {
	text, ok := st.literalAfter(prefix)
	if !ok {
		return relation{}, false, fmt.Errorf("no OID after %q", prefix)
	}
	return rels.byOID(text)
}

// answerRelation answers psql's question about one relation (pg_class):
// no checks, indexes, triggers, row security, partitions or options;
// psql then prints "Table" or "View" and asks for the columns.
func answerRelation(verbose bool) catalogAnswer {
	return func(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
		opts := "?column?"
		if verbose {
			opts = "array_to_string"
		}
		r := newResult("relchecks", "relkind", "relhasindex", "relhasrules", "relhastriggers", "relrowsecurity", "relforcerowsecurity",
			"relhasoids", "relispartition", opts, "reltablespace", "reloftype", "relpersistence", "relreplident", "amname").
			typed(plan.TypeBigint, "relchecks", "reltablespace").
			typed(plan.TypeBoolean, "relhasindex", "relhasrules", "relhastriggers", "relrowsecurity", "relforcerowsecurity", "relhasoids", "relispartition")
		rel, ok, err := oidArg(st, rels, "c . oid =")
		if err != nil || !ok {
			return r.done(), err
		}
		// A view has its rule (_RETURN), as PostgreSQL's do; replica
		// identity: default for tables, nothing for views.
		rules, ident := plan.Bool(false), plan.Str("d")
		if rel.kind == "v" {
			rules, ident = plan.Bool(true), plan.Str("n")
		}
		r.add(plan.Int(0), plan.Str(rel.kind), plan.Bool(false), rules, plan.Bool(false), plan.Bool(false), plan.Bool(false), plan.Bool(false), plan.Bool(false), plan.Str(""), plan.Int(0), plan.Str(""), plan.Str("p"), ident, plan.Value{})
		return r.done(), nil
	}
}

// answerColumns answers psql's question about a relation's columns
// (pg_attribute), with the verbose form's extra columns.
func answerColumns(extra []string) catalogAnswer {
	return func(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
		r := newResult(append([]string{"attname", "format_type", "pg_get_expr", "attnotnull", "attcollation", "attidentity", "attgenerated"}, extra...)...).
			typed(plan.TypeBoolean, "attnotnull").typed(plan.TypeBigint, "attstattarget")
		rel, ok, err := oidArg(st, rels, "a . attrelid =")
		if err != nil || !ok {
			return r.done(), err
		}
		cols, err := rels.columns(rel)
		if err != nil {
			return queries.Result{}, err
		}
		for _, col := range cols {
			row := plan.Row{plan.Str(col.name), plan.Str(pgTypeName(col.typ)), plan.Value{}, plan.Bool(col.notNull), plan.Value{}, plan.Str(""), plan.Str("")}
			for _, x := range extra {
				switch x {
				case "attstorage": // plain, or extended for variable-length text
					if col.typ == plan.TypeVarchar {
						row = append(row, plan.Str("x"))
					} else {
						row = append(row, plan.Str("p"))
					}
				case "attcompression":
					row = append(row, plan.Str(""))
				default:
					row = append(row, plan.Value{})
				}
			}
			r.add(row...)
		}
		return r.done(), nil
	}
}

// answerViewdef answers pg_get_viewdef: the view's query as it was
// created (streamsql SQL, after CREATE VIEW name AS).
func answerViewdef(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("pg_get_viewdef")
	rel, ok, err := oidArg(st, rels, "pg_catalog . pg_get_viewdef (")
	if err != nil {
		return queries.Result{}, err
	}
	if !ok || rel.kind != "v" {
		r.add(plan.Value{})
		return r.done(), nil
	}
	results, err := c.s.eng.ExecWith(rels.ctx, "SHOW CREATE VIEW "+quoteName(rel.name), queries.ExecOptions{})
	if err != nil {
		return queries.Result{}, fmt.Errorf("SHOW CREATE VIEW %s: %w", rel.name, err)
	}
	sql, _ := results[0].Rows[0].Vals[1].(string)
	r.add(plan.Str(viewQuery(sql)))
	return r.done(), nil
}

// viewQuery is the query of a CREATE VIEW statement: what follows its
// first AS outside parentheses (the whole text if there is none).
func viewQuery(sql string) string {
	toks, err := tokenize(sql)
	if err != nil {
		return sql
	}
	depth := 0
	for i, t := range toks {
		switch {
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
		case depth == 0 && t.is("as") && i+1 < len(toks):
			return " " + strings.TrimSpace(sql[toks[i+1].pos:])
		}
	}
	return sql
}

// answerSchemas answers \dn: the schema public.
func answerSchemas(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("Name", "Owner")
	r.add(plan.Str(catalogSchema), plan.Str(catalogOwner))
	return r.done(), nil
}

// answerDatabases answers \l: the one database, under the name the client
// connected with (any name connects).
func answerDatabases(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("Name", "Owner", "Encoding", "Collate", "Ctype", "ICU Locale", "Locale Provider", "Access privileges")
	r.add(plan.Str(c.params["database"]), plan.Str(catalogOwner), plan.Str("UTF8"), plan.Str("C"), plan.Str("C"), plan.Value{}, plan.Str("libc"), plan.Value{})
	return r.done(), nil
}

// answerNone answers the statements about what streamsql has none of
// (indexes, policies, statistics, publications, inheritance, rules):
// no rows.
func answerNone(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	return queries.Result{Kind: "select", Columns: []string{}}, nil
}

// answerGrafanaVersion answers Grafana's version check:
// server_version_num / 100.
func answerGrafanaVersion(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("version").typed(plan.TypeBigint, "version")
	r.add(plan.Int(serverVersionNum / 100))
	return r.done(), nil
}

// serverVersionNum is server_version_num (session.go answers SHOW with it).
const serverVersionNum = 150000

// answerGrafanaTimescale: there is no TimescaleDB extension.
func answerGrafanaTimescale(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	return newResult("extversion").done(), nil
}

func answerGrafanaSchemas(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("name")
	r.add(plan.Str(catalogSchema))
	return r.done(), nil
}

// answerGrafanaTables answers Grafana's table picker
// (information_schema.tables: tables and views), as quote_ident names;
// of one schema when bySchema (the literal names it).
func answerGrafanaTables(bySchema bool) catalogAnswer {
	return func(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
		r := newResult("table")
		if bySchema {
			if schema, _ := st.literalAfter("quote_ident ( table_schema ) ="); schema != catalogSchema {
				return r.done(), nil
			}
		}
		list, err := rels.all()
		if err != nil {
			return queries.Result{}, err
		}
		for _, rel := range list {
			r.add(plan.Str(quoteIdent(rel.name)))
		}
		return r.done(), nil
	}
}

// answerGrafanaColumns answers Grafana's column picker: the columns of the
// table its literal names ("name" or "schema.name", read as parse_ident
// reads them) with their data_type, in their order.
func answerGrafanaColumns(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("column", "type")
	arg, _ := st.literalAfter("parse_ident")
	parts, err := parseIdent(arg)
	if err != nil {
		return queries.Result{}, err
	}
	list, err := rels.all()
	if err != nil {
		return queries.Result{}, err
	}
	for _, rel := range list {
		// As the statement's CASE: two parts compare quote_ident of the
		// schema and name with them; else quote_ident(name) with the
		// literal as written.
		if len(parts) == 2 && (quoteIdent(catalogSchema) != parts[0] || quoteIdent(rel.name) != parts[1]) ||
			len(parts) != 2 && quoteIdent(rel.name) != arg {
			continue
		}
		cols, err := rels.columns(rel)
		if err != nil {
			return queries.Result{}, err
		}
		for _, col := range cols {
			r.add(plan.Str(quoteIdent(col.name)), plan.Str(pgTypeName(col.typ)))
		}
	}
	return r.done(), nil
}

// answerCompleteRelations answers psql's completion of a relation name:
// the relations that match, then the schemas whose names match (psql
// offers "public.").
func answerCompleteRelations(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	list, err := selected(st, rels)
	if err != nil {
		return queries.Result{}, err
	}
	r := newResult("relname", "text")
	for _, rel := range list {
		r.add(plan.Str(rel.name), plan.Value{})
	}
	like, _ := st.literalAfter("n . nspname like")
	notLike, _ := st.literalAfter("n . nspname not like")
	in, err := likeRegexp(like)
	if err != nil {
		return queries.Result{}, err
	}
	out, err := likeRegexp(notLike)
	if err != nil {
		return queries.Result{}, err
	}
	if in.MatchString(catalogSchema) && !out.MatchString(catalogSchema) {
		r.add(plan.Value{}, plan.Str(catalogSchema))
	}
	return r.limited(st), nil
}

// answerCompleteSchemaRelations answers psql's completion of a name
// after "schema.".
func answerCompleteSchemaRelations(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	list, err := selected(st, rels)
	if err != nil {
		return queries.Result{}, err
	}
	r := newResult("relname", "nspname")
	for _, rel := range list {
		r.add(plan.Str(rel.name), plan.Str(catalogSchema))
	}
	return r.limited(st), nil
}

// answerCompleteColumns answers psql's completion of a column name.
func answerCompleteColumns(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	_, cols, err := selectedColumns(st, rels)
	if err != nil {
		return queries.Result{}, err
	}
	r := newResult("attname", "text")
	for _, cs := range cols {
		for _, col := range cs {
			r.add(plan.Str(col.name), plan.Value{})
		}
	}
	return r.limited(st), nil
}

// answerLegacyTables answers the legacy editor's table picker: the
// tables and views (quote_ident) by name.
func answerLegacyTables(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	list, err := selected(st, rels)
	if err != nil {
		return queries.Result{}, err
	}
	r := newResult("quote_ident")
	for _, rel := range list {
		r.add(plan.Str(quoteIdent(rel.name)))
	}
	return r.done(), nil
}

// answerLegacyColumns answers the legacy editor's column pickers
// (quote_ident of the names, by name) and its data type question
// (udt_name).
func answerLegacyColumns(col string) catalogAnswer {
	return func(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
		_, cols, err := selectedColumns(st, rels)
		if err != nil {
			return queries.Result{}, err
		}
		r := newResult(col)
		var all []relColumn
		for _, cs := range cols {
			all = append(all, cs...)
		}
		if col == "quote_ident" { // ORDER BY column_name
			sort.SliceStable(all, func(i, j int) bool { return all[i].name < all[j].name })
		}
		for _, rc := range all {
			if col == "udt_name" {
				r.add(plan.Str(udtName(rc.typ)))
			} else {
				r.add(plan.Str(quoteIdent(rc.name)))
			}
		}
		return r.done(), nil
	}
}

// udtName is information_schema's udt_name of a column type.
func udtName(t plan.Type) string {
	switch t {
	case plan.TypeBigint:
		return "int8"
	case plan.TypeDouble:
		return "float8"
	case plan.TypeBoolean:
		return "bool"
	case plan.TypeTimestamp:
		return "timestamp"
	}
	return "text"
}

// answerMetricTable answers the legacy editor's first guess: the first
// table or view (by name) with a timestamp and a double column, and the
// first of each.
func answerMetricTable(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("table_name", "time_column", "value_column")
	list, err := rels.all()
	if err != nil {
		return queries.Result{}, err
	}
	for _, rel := range list {
		cols, err := rels.columns(rel)
		if err != nil {
			return queries.Result{}, err
		}
		var ts, val string
		for _, col := range cols {
			if ts == "" && col.typ == plan.TypeTimestamp {
				ts = col.name
			}
			if val == "" && col.typ == plan.TypeDouble {
				val = col.name
			}
		}
		if ts != "" && val != "" {
			r.add(plan.Str(quoteIdent(rel.name)), plan.Str(quoteIdent(ts)), plan.Str(quoteIdent(val)))
			break
		}
	}
	return r.done(), nil
}

// answerAggregates answers the legacy editor's aggregate list (those of
// one float8 argument that return float8): streamsql's, under the names
// PostgreSQL gives them, by name.
func answerAggregates(c *conn, st *pgStatement, rels *relations) (queries.Result, error) {
	r := newResult("proname")
	for _, f := range []plan.AggFn{plan.AggAvg, plan.AggMax, plan.AggMin, plan.AggStddevPop, plan.AggStddevSamp, plan.AggSum, plan.AggVarPop, plan.AggVarSamp} {
		r.add(plan.Str(f.String()))
	}
	return r.done(), nil
}

// quoteIdent is PostgreSQL's quote_ident: the name as it is if it is a
// lower-case identifier and not a reserved word, else in double quotes.
func quoteIdent(s string) string {
	plain := s != "" && !reservedWords[s] && (s[0] == '_' || 'a' <= s[0] && s[0] <= 'z')
	for i := 0; plain && i < len(s); i++ {
		ch := s[i]
		plain = ch == '_' || 'a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9'
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// reservedWords are the keywords quote_ident quotes: PostgreSQL 15's
// that are not unreserved (pg_get_keywords() with catcode other than U:
// reserved, type and function names, column names).
var reservedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric authorization between bigint binary bit boolean both case cast
		char character check coalesce collate collation column concurrently constraint create cross current_catalog
		current_date current_role current_schema current_time current_timestamp current_user dec decimal default deferrable
		desc distinct do else end except exists extract false fetch float for foreign freeze from full grant greatest group
		grouping having ilike in initially inner inout int integer intersect interval into is isnull join lateral leading
		least left like limit localtime localtimestamp national natural nchar none normalize not notnull null nullif numeric
		offset on only or order out outer overlaps overlay placing position precision primary real references returning right
		row select session_user setof similar smallint some substring symmetric table tablesample then time timestamp to
		trailing treat trim true union unique user using values varchar variadic verbose when where window with xmlattributes
		xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable`) {
		m[w] = true
	}
	return m
}()

// parseIdent is PostgreSQL's parse_ident: a qualified name's parts, the
// unquoted ones in lower case, the quoted ones as written.
func parseIdent(s string) ([]string, error) {
	var parts []string
	for i := 0; ; {
		if i < len(s) && s[i] == '"' {
			v, n, err := quoted(s[i:], '"', false)
			if err != nil {
				return nil, &pgError{code: "22023", msg: fmt.Sprintf("string is not a valid identifier: %q", s)}
			}
			parts = append(parts, v)
			i += n
		} else {
			j := i
			for j < len(s) && s[j] != '.' {
				j++
			}
			if j == i {
				return nil, &pgError{code: "22023", msg: fmt.Sprintf("string is not a valid identifier: %q", s)}
			}
			parts = append(parts, strings.ToLower(strings.TrimSpace(s[i:j])))
			i = j
		}
		if i >= len(s) {
			return parts, nil
		}
		if s[i] != '.' {
			return nil, &pgError{code: "22023", msg: fmt.Sprintf("string is not a valid identifier: %q", s)}
		}
		i++
	}
}

// errCatalog answers a catalog statement that is not recognized.
const errCatalog = `this PostgreSQL catalog statement (pg_catalog, information_schema) is not served: the catalog answers psql's \d, \dt, \dv, \d name, \dn, \l and tab completion, and Grafana's table and column pickers; use SHOW TABLES and DESCRIBE name (docs/pgwire.md)`
