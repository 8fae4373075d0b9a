package e2e

// PostgreSQL UPSERT sinks end to end: CREATE TABLE ... ENGINE=postgres and
// INSERT INTO it SELECT ..., against a real PostgreSQL server
// (internal/pgtest). Every sink's PostgreSQL table is read back with psql
// and compared with the oracle by diffResult, exactly as a view's results
// are; the built-in results play no part. Exactly-once sinks also have
// their progress records checked: one sink id per schema (each sink gets a
// schema of its own), each epoch once, increasing in commit order, the
// last one at least the checkpoint POST /v1/checkpoints waited for.
//
// This file: the PostgreSQL helpers, the sinks (the views of the main
// scenario and of the join tests, inserted into sink tables whose columns
// and PRIMARY KEY are derived from the oracle's result), the final-result
// tests in both delivery modes, and the statements that must be refused.
// pg_crash_test.go: SIGKILL under load, the sink's fault points, and
// PostgreSQL going away under load.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/pgtest"
)

var (
	pgOnce   sync.Once
	pgShared *pgtest.Server
	pgErr    error
)

// sharedPG returns the PostgreSQL server of the package's PG tests,
// started on first use and closed by TestMain. Tests keep apart by
// schema; a test that stops PostgreSQL starts its own (startPG).
func sharedPG(t testing.TB) *pgtest.Server {
	t.Helper()
	pgOnce.Do(func() { pgShared, pgErr = newPG() })
	if pgErr != nil {
		t.Fatalf("starting PostgreSQL: %v", pgErr)
	}
	return pgShared
}

// pgTimeZone is the TimeZone of the tests' PostgreSQL sessions: not UTC,
// so that a timestamp written or read without its zone shows.
const pgTimeZone = "America/New_York"

// newPG starts a PostgreSQL server whose sessions default to pgTimeZone.
func newPG() (*pgtest.Server, error) {
	pg, err := pgtest.Start()
	if err != nil {
		return nil, err
	}
	if err := pg.Exec("ALTER DATABASE postgres SET TimeZone = " + qlit(pgTimeZone)); err != nil {
		pg.Close()
		return nil, err
	}
	return pg, nil
}

// closeSharedPG closes the shared server, if it was started.
func closeSharedPG() {
	if pgShared != nil {
		pgShared.Close()
	}
}

// startPG starts a PostgreSQL server for the calling test alone, closed
// when the test ends (its log printed if the test failed).
func startPG(t testing.TB) *pgtest.Server {
	t.Helper()
	pg, err := newPG()
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("PostgreSQL log (tail):\n%s", pg.Log())
		}
		pg.Close()
	})
	return pg
}

// pgQuery runs sql with psql; an error fails t.
func pgQuery(t testing.TB, pg *pgtest.Server, sql string) [][]string {
	t.Helper()
	rows, err := pg.Query(sql)
	if err != nil {
		t.Fatalf("PostgreSQL: %v\nSQL: %s", err, sql)
	}
	return rows
}

// qident quotes a PostgreSQL identifier; qlit a string literal.
func qident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func qlit(s string) string   { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

func qualified(schema, table string) string { return qident(schema) + "." + qident(table) }

// pgColumn is a PostgreSQL column as information_schema describes it.
type pgColumn struct {
	name, dataType string
	precision      string // datetime_precision; "" when NULL
}

// pgColumns returns a table's columns in order; none when the table does
// not exist.
func pgColumns(t testing.TB, pg *pgtest.Server, schema, table string) []pgColumn {
	t.Helper()
	rows := pgQuery(t, pg, fmt.Sprintf(`SELECT column_name, data_type, coalesce(datetime_precision::text, '')
FROM information_schema.columns WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position`, qlit(schema), qlit(table)))
	cols := make([]pgColumn, len(rows))
	for i, r := range rows {
		cols[i] = pgColumn{name: r[0], dataType: r[1], precision: r[2]}
	}
	return cols
}

// pgTables lists the tables of a schema (for messages).
func pgTables(t testing.TB, pg *pgtest.Server, schema string) []string {
	t.Helper()
	var names []string
	for _, r := range pgQuery(t, pg, "SELECT table_name FROM information_schema.tables WHERE table_schema = "+qlit(schema)+" ORDER BY 1") {
		names = append(names, r[0])
	}
	return names
}

// pgTimestampFormat is to_char's form of the API's timestamps.
const pgTimestampFormat = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`

// pgSelectList renders every column as 'v' followed by its text, or 'n'
// for NULL (psql's CSV writes NULL and the empty string alike), aliased c0, c1, ...;
// timestamps as RFC 3339 UTC with milliseconds, whatever the server's
// TimeZone.
func pgSelectList(cols []pgColumn) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		e := qident(c.name) + "::text"
		switch c.dataType {
		case "timestamp with time zone":
			e = "to_char(" + qident(c.name) + " AT TIME ZONE 'UTC', " + pgTimestampFormat + ")"
		case "timestamp without time zone":
			e = "to_char(" + qident(c.name) + ", " + pgTimestampFormat + ")"
		}
		parts[i] = fmt.Sprintf("coalesce('v' || %s, 'n') AS c%d", e, i)
	}
	return strings.Join(parts, ", ")
}

// decodePG turns fields rendered by pgSelectList into a row as
// diffResult expects served rows: numbers as json.Number, text and
// timestamps as strings, booleans as bool, NULL as nil.
func decodePG(cols []pgColumn, fields []string) (map[string]any, error) {
	if len(fields) != len(cols) {
		return nil, fmt.Errorf("%d fields for %d columns", len(fields), len(cols))
	}
	row := map[string]any{}
	for i, c := range cols {
		f := fields[i]
		switch {
		case f == "n":
			row[c.name] = nil
			continue
		case !strings.HasPrefix(f, "v"):
			return nil, fmt.Errorf("column %s: field %q is neither NULL nor a value", c.name, f)
		}
		v := f[1:]
		switch c.dataType {
		case "bigint", "integer", "smallint", "numeric", "double precision", "real":
			row[c.name] = json.Number(v)
		case "boolean":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("column %s: boolean %q", c.name, v)
			}
			row[c.name] = b
		default:
			row[c.name] = v
		}
	}
	return row, nil
}

// pgSnap is a PostgreSQL table read in one snapshot, with the last epoch
// of its schema's progress table when asked for.
type pgSnap struct {
	epoch   int64
	columns []string
	rows    []map[string]any
}

// pgSnapshot reads schema.table, and when withEpoch the largest epoch of
// schema.streamsql_sink_progress (0: none), in one statement. It
// reports false when the table (or the progress table) does not exist.
func pgSnapshot(t testing.TB, pg *pgtest.Server, schema, table string, withEpoch bool) (pgSnap, bool) {
	t.Helper()
	cols := pgColumns(t, pg, schema, table)
	if len(cols) == 0 {
		return pgSnap{}, false
	}
	progress := qualified(schema, "streamsql_sink_progress")
	sql := "SELECT " + pgSelectList(cols) + " FROM " + qualified(schema, table)
	if withEpoch {
		// (A lone empty field would be an empty line, which CSV skips.)
		if r := pgQuery(t, pg, "SELECT to_regclass("+qlit(progress)+") IS NOT NULL"); r[0][0] != "t" {
			return pgSnap{}, false
		}
		sql = fmt.Sprintf("SELECT p.e, t.* FROM (SELECT coalesce(max(epoch), 0)::text AS e FROM %s) p LEFT JOIN (SELECT 'r' AS present, %s FROM %s) t ON true",
			progress, pgSelectList(cols), qualified(schema, table))
	}
	snap := pgSnap{}
	for _, c := range cols {
		snap.columns = append(snap.columns, c.name)
	}
	for _, fields := range pgQuery(t, pg, sql) {
		if withEpoch {
			e, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: max(epoch) %q", progress, fields[0])
			}
			snap.epoch = e
			if fields[1] == "" { // an empty table: the LEFT JOIN's NULL row
				continue
			}
			fields = fields[2:]
		}
		row, err := decodePG(cols, fields)
		if err != nil {
			t.Fatalf("%s.%s: %v", schema, table, err)
		}
		snap.rows = append(snap.rows, row)
	}
	return snap, true
}

// pgRows reads a whole table, which must exist.
func pgRows(t testing.TB, pg *pgtest.Server, schema, table string) ([]string, []map[string]any) {
	t.Helper()
	snap, ok := pgSnapshot(t, pg, schema, table, false)
	if !ok {
		t.Fatalf("PostgreSQL has no table %s.%s (tables of schema %s: %q)", schema, table, schema, pgTables(t, pg, schema))
	}
	return snap.columns, snap.rows
}

// progressRecord is one row of streamsql_sink_progress.
type progressRecord struct {
	sinkID string
	epoch  int64
}

// progressProblems checks progress records in commit order (committed_at,
// then epoch): all of one sink, no epoch twice, epochs increasing.
func progressProblems(recs []progressRecord) []string {
	var problems []string
	ids := map[string]bool{}
	seen := map[progressRecord]bool{}
	for i, r := range recs {
		ids[r.sinkID] = true
		if seen[r] {
			problems = append(problems, fmt.Sprintf("sink %q epoch %d recorded twice", r.sinkID, r.epoch))
		}
		seen[r] = true
		if i > 0 && r.epoch <= recs[i-1].epoch {
			problems = append(problems, fmt.Sprintf("epoch %d committed after epoch %d", r.epoch, recs[i-1].epoch))
		}
	}
	if len(ids) > 1 {
		var names []string
		for id := range ids {
			names = append(names, strconv.Quote(id))
		}
		sort.Strings(names)
		problems = append(problems, fmt.Sprintf("records of %d sink ids (%s), want one: one sink writes to this schema", len(ids), strings.Join(names, ", ")))
	}
	return problems
}

// pgProgress checks the progress records of the one exactly-once sink
// writing to schema (progressProblems, and the brief's query for an epoch
// recorded twice) and returns its epochs in commit order.
func pgProgress(t testing.TB, pg *pgtest.Server, schema string) []int64 {
	t.Helper()
	progress := qualified(schema, "streamsql_sink_progress")
	if dups := pgQuery(t, pg, "SELECT sink_id, epoch, count(*) FROM "+progress+" GROUP BY 1, 2 HAVING count(*) > 1"); len(dups) > 0 {
		t.Errorf("%s: (sink_id, epoch, count) recorded more than once: %q", progress, dups)
	}
	var recs []progressRecord
	var epochs []int64
	for _, r := range pgQuery(t, pg, "SELECT sink_id, epoch FROM "+progress+" ORDER BY committed_at, epoch") {
		e, err := strconv.ParseInt(r[1], 10, 64)
		if err != nil {
			t.Fatalf("%s: epoch %q", progress, r[1])
		}
		recs = append(recs, progressRecord{sinkID: r[0], epoch: e})
		epochs = append(epochs, e)
	}
	for _, p := range progressProblems(recs) {
		t.Errorf("%s: %s", progress, p)
	}
	return epochs
}

// Delivery modes.
const (
	exactlyOnce = "exactly_once"
	atLeastOnce = "at_least_once"
	atMostOnce  = "at_most_once"
)

func deliveryTag(d string) string {
	switch d {
	case exactlyOnce:
		return "eo"
	case atMostOnce:
		return "amo"
	}
	return "alo"
}

// sinkColumnTypes are the streamsql types of the sink columns the tests
// use, by name; any other is BIGINT.
var sinkColumnTypes = map[string]string{
	"window_start": "TIMESTAMP(3)", "window_end": "TIMESTAMP(3)", "ts": "TIMESTAMP(3)",
	"first_ts": "TIMESTAMP(3)", "last_ts": "TIMESTAMP(3)",
	"avg_price": "DOUBLE",
	"channel":   "VARCHAR(32)", "max_channel": "VARCHAR(32)", "name": "VARCHAR(32)", "_row_id": "VARCHAR(255)",
	"above": "BOOLEAN",
}

func sinkColumnType(name string) string {
	if ty, ok := sinkColumnTypes[name]; ok {
		return ty
	}
	return "BIGINT"
}

// pgTypeOf is the PostgreSQL column (information_schema data_type and
// datetime_precision) a created table must have for a streamsql type.
func pgTypeOf(ty string) pgColumn {
	switch base, _, _ := strings.Cut(ty, "("); base {
	case "BIGINT":
		return pgColumn{dataType: "bigint"}
	case "DOUBLE":
		return pgColumn{dataType: "double precision"}
	case "VARCHAR":
		return pgColumn{dataType: "text"}
	case "TIMESTAMP":
		return pgColumn{dataType: "timestamp with time zone", precision: "3"}
	case "BOOLEAN":
		return pgColumn{dataType: "boolean"}
	}
	panic("no PostgreSQL type for " + ty)
}

// sinkQuery is a sink table of any engine and the query that INSERTs
// into it (named after it).
type sinkQuery struct {
	name      string // the streamsql table and its query
	delivery  string
	selectSQL string
	// expected is the sink's contents once the query has read bids and
	// auctions; over no rows it gives the columns and the key.
	expected func(bids, auctions []Row) Result
	// rowIDLast puts _row_id (append-only queries) after the mapped
	// columns rather than first.
	rowIDLast bool
}

// columns are the sink table's columns and types in order, and its
// PRIMARY KEY: the oracle's columns, with _row_id as the key of an
// append-only query.
func (s sinkQuery) columns() (names, types, key []string) {
	want := s.expected(nil, nil)
	names, key = slices.Clone(want.Columns), want.Key
	if key == nil {
		if s.rowIDLast {
			names = append(names, "_row_id")
		} else {
			names = append([]string{"_row_id"}, names...)
		}
		key = []string{"_row_id"}
	}
	for _, c := range names {
		types = append(types, sinkColumnType(c))
	}
	return names, types, key
}

// createSQL is the sink's CREATE TABLE with the given ENGINE, CONNECTION
// and ENGINE_ATTRIBUTE, its columns in upper case when upper.
func (s sinkQuery) createSQL(engine, conn string, attrs map[string]any, upper bool) string {
	names, types, key := s.columns()
	ident := func(c string) string {
		if upper {
			return strings.ToUpper(c)
		}
		return c
	}
	defs := make([]string, len(names))
	for i, c := range names {
		defs[i] = ident(c) + " " + types[i]
	}
	keys := make([]string, len(key))
	for i, c := range key {
		keys[i] = ident(c)
	}
	b, err := json.Marshal(attrs)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("CREATE TABLE %s (\n  %s,\n  PRIMARY KEY (%s)\n) ENGINE=%s CONNECTION='%s'\n  ENGINE_ATTRIBUTE='%s'",
		s.name, strings.Join(defs, ",\n  "), strings.Join(keys, ", "), engine, conn, b)
}

func (s sinkQuery) insertSQL() string { return "INSERT INTO " + s.name + "\n" + s.selectSQL }

func (s sinkQuery) query() sinkQuery { return s }

// bidSinkQuery is a sink named <engine>_<view>_<eo|alo> fed by view vi's
// SELECT (with its hints).
func bidSinkQuery(engine string, vi viewInstance, delivery string) sinkQuery {
	return sinkQuery{name: engine + "_" + vi.name + "_" + deliveryTag(delivery), delivery: delivery, selectSQL: vi.selectSQL(),
		expected: func(bids, _ []Row) Result { return vi.expected(bids) }}
}

// pgSink is a streamsql table with ENGINE=postgres and the query that
// INSERTs into it.
type pgSink struct {
	sinkQuery
	schema string // PostgreSQL schema; "" for the default (public)
	table  string // PostgreSQL table; "" for the default (name)
	// upper writes the columns in upper case in CREATE TABLE:
	// PostgreSQL's are lower case all the same.
	upper bool
	// noCreate: create_table false (the PostgreSQL table exists
	// beforehand).
	noCreate bool
}

func (s pgSink) pgSchema() string {
	if s.schema == "" {
		return "public"
	}
	return s.schema
}

func (s pgSink) pgTable() string {
	if s.table == "" {
		return s.name
	}
	return s.table
}

// createSQL is the sink's CREATE TABLE for PostgreSQL at dsn.
func (s pgSink) createSQL(dsn string) string {
	attrs := map[string]any{"delivery": s.delivery, "create_table": !s.noCreate}
	if s.schema != "" {
		attrs["schema"] = s.schema
	}
	if s.table != "" {
		attrs["table"] = s.table
	}
	return s.sinkQuery.createSQL("postgres", dsn, attrs, s.upper)
}

// bidSink is a sink fed by view vi's SELECT (with its hints), in a schema
// of its own: <prefix>_<view>_<eo|alo>.
func bidSink(prefix string, vi viewInstance, delivery string) pgSink {
	return pgSink{sinkQuery: bidSinkQuery("pg", vi, delivery), schema: prefix + "_" + vi.name + "_" + deliveryTag(delivery), table: vi.name + "_t"}
}

// joinSink is bidSink for a join view over bids and auctions.
func joinSink(prefix string, ji joinInstance, delivery string) pgSink {
	name := "pg_" + ji.name + "_" + deliveryTag(delivery)
	return pgSink{sinkQuery: sinkQuery{name: name, delivery: delivery, selectSQL: ji.selectSQL(), expected: ji.def.expected},
		schema: prefix + "_" + ji.name + "_" + deliveryTag(delivery), table: ji.name + "_t"}
}

// bidInstance is the view base at variant v, named base_v.
func bidInstance(base string, v variant) viewInstance {
	return viewInstance{name: base + "_" + v.name, def: viewByBase(base), v: v}
}

// jRowsView is an append-only interval join with every column type a
// sink takes: BIGINT, a nullable VARCHAR, TIMESTAMP and BOOLEAN.
var jRowsView = joinView{
	base: "j_rows",
	sql: `SELECT {hint} b.auction, b.bidder, b.price, a.seller, a.name, b.ts, b.price > a.category * 10 AS above
FROM bids b JOIN auctions a ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND`,
	expected: func(bids, auctions []Row) Result {
		j := Join{Kind: InnerJoin, Left: bidSide, Right: auctionSide, On: bidIn10s}
		return project(EvaluateJoin(j, bids, auctions),
			col("auction", "b.auction"), col("bidder", "b.bidder"), col("price", "b.price"), col("seller", "a.seller"),
			col("name", "a.name"), col("ts", "b.ts"),
			Column{As: "above", Expr: func(r Row) any { return bigint(r, "b.price") > bigint(r, "a.category")*10 }})
	},
}

// sinkEntries returns the per-sink entries of GET /v1/queries/{name}'s
// "sinks": an array of objects, or an object of objects by sink.
func sinkEntries(q queryInfo) []map[string]any {
	var out []map[string]any
	switch v := q.raw["sinks"].(type) {
	case []any:
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if m, ok := v[k].(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// sinkCommittedEpoch is the committed_epoch of the first sink entry
// reporting one.
func sinkCommittedEpoch(q queryInfo) (int64, bool) {
	for _, e := range sinkEntries(q) {
		if v, ok := e["committed_epoch"]; ok {
			n, err := strconv.ParseInt(jsonText(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// queryError is the query's error, else its sinks' errors.
func queryError(q queryInfo) string {
	if s, _ := q.raw["error"].(string); s != "" {
		return s
	}
	var errs []string
	for _, e := range sinkEntries(q) {
		if s, _ := e["error"].(string); s != "" {
			errs = append(errs, s)
		}
	}
	return strings.Join(errs, "; ")
}

// pgScenario is a streamsql server with PostgreSQL sinks.
type pgScenario struct {
	srv   *server
	pg    *pgtest.Server
	sinks []pgSink
}

// create makes each sink's schema in PostgreSQL, then sends every sink's
// CREATE TABLE and INSERT in one request, and waits for the queries to
// run.
func (ps *pgScenario) create(t *testing.T, sinks ...pgSink) {
	t.Helper()
	var stmts []string
	for _, s := range sinks {
		if s.schema != "" {
			if err := ps.pg.Exec("CREATE SCHEMA IF NOT EXISTS " + qident(s.schema)); err != nil {
				t.Fatal(err)
			}
		}
		stmts = append(stmts, s.createSQL(ps.pg.DSN("")), s.insertSQL())
	}
	ps.sinks = append(ps.sinks, sinks...)
	runStatements(t, ps.srv, stmts, sinkNames(sinks)...)
}

// runStatements sends stmts in one request, expecting a result for each,
// and waits for the queries names to run.
func runStatements(t *testing.T, srv *server, stmts []string, names ...string) {
	t.Helper()
	res := srv.sql(t, strings.Join(stmts, ";\n"))
	if len(res) != len(stmts) {
		t.Fatalf("POST /v1/sql with %d statements: %d results", len(stmts), len(res))
	}
	srv.waitRunning(t, names...)
}

// sinkNames are the names of sinks (of any engine).
func sinkNames[S interface{ query() sinkQuery }](sinks []S) []string {
	names := make([]string, len(sinks))
	for i, s := range sinks {
		names[i] = s.query().name
	}
	return names
}

func (ps *pgScenario) names() []string { return sinkNames(ps.sinks) }

// verify checkpoints (which waits for every exactly-once sink to commit)
// and checks every sink's PostgreSQL table against the oracle over bids
// and auctions, one subtest per sink under stage.
func (ps *pgScenario) verify(t *testing.T, stage string, bids, auctions []Row) {
	t.Helper()
	ps.srv.checkpointAndCheck(t, stage, ps.names(), func(t *testing.T, name string, cp checkpointInfo) {
		ps.checkSink(t, ps.sinks[slices.IndexFunc(ps.sinks, func(s pgSink) bool { return s.name == name })], cp, bids, auctions)
	})
}

// checkSink checks a sink after checkpoint cp (zero: none): its query
// runs, its table equals the oracle, its row ids are set; for an
// exactly-once sink, the progress records are sound and reach cp, and
// agree with the committed_epoch the query reports.
func (ps *pgScenario) checkSink(t *testing.T, s pgSink, cp checkpointInfo, bids, auctions []Row) {
	t.Helper()
	q := ps.srv.query(t, s.name)
	if q.State != "running" {
		t.Errorf("state %q, want running (error: %s)", q.State, queryError(q))
	}
	cols, rows := pgRows(t, ps.pg, s.pgSchema(), s.pgTable())
	checkSinkRows(t, s.sinkQuery, "PostgreSQL table "+s.pgSchema()+"."+s.pgTable(), cols, rows, bids, auctions)
	if s.delivery == exactlyOnce {
		checkSinkEpochs(t, ps.srv, s.name, q, cp, pgProgress(t, ps.pg, s.pgSchema()), "PostgreSQL")
	}
}

// checkSinkRows compares the rows read back from sink s (what says from
// where) with the oracle over bids and auctions; the rows of an
// append-only query must have their _row_id.
func checkSinkRows(t *testing.T, s sinkQuery, what string, cols []string, rows []map[string]any, bids, auctions []Row) {
	t.Helper()
	want := s.expected(bids, auctions)
	if diffs := diffResult(want, cols, rows); len(diffs) > 0 {
		t.Errorf("%s differs from the oracle over %d bids and %d auctions (%d rows, %d expected): %s\nSQL: %s",
			what, len(bids), len(auctions), len(rows), len(want.Rows), formatDiffs(diffs, 5), s.insertSQL())
	}
	if want.Key == nil {
		for _, r := range rows {
			if id, _ := r["_row_id"].(string); id == "" {
				t.Errorf("%s: row without a _row_id: %v", what, r)
				break
			}
		}
	}
}

// checkSinkEpochs checks what an exactly-once sink's query reported (q,
// read before the epochs) and what POST /v1/checkpoints answered (cp)
// against the epochs recorded in the external system (where: "PostgreSQL",
// "Kafka"), in commit order: the checkpoint waited for is committed and
// its committed_epoch recorded, and the query's committed_epoch soon
// reaches the last one recorded, never beyond it.
func checkSinkEpochs(t *testing.T, srv *server, name string, q queryInfo, cp checkpointInfo, epochs []int64, where string) {
	t.Helper()
	var last int64
	if len(epochs) > 0 {
		last = epochs[len(epochs)-1]
	}
	// POST /v1/checkpoints waited until the sink committed the checkpoint:
	// the response says so, and the epoch it reports committed is the
	// last recorded (an epoch without changes records nothing).
	var sinks map[string]struct {
		Committed      bool        `json:"committed"`
		CommittedEpoch json.Number `json:"committed_epoch"`
		PendingEpochs  json.Number `json:"pending_epochs"`
	}
	if len(cp.Sinks) > 0 {
		if err := json.Unmarshal(cp.Sinks, &sinks); err != nil {
			t.Errorf("POST /v1/checkpoints: sinks of %s: %v: %s", name, err, cp.Sinks)
		}
	}
	if e, ok := sinks[name]; !ok && cp.Query != "" {
		t.Errorf("POST /v1/checkpoints: no entry for sink %s in %s", name, cp.Sinks)
	} else if ok {
		ce, _ := e.CommittedEpoch.Int64()
		if !e.Committed || e.PendingEpochs.String() != "0" {
			t.Errorf("POST /v1/checkpoints returned checkpoint %s with sink %s not committed: %s", cp.ID, name, cp.Sinks)
		}
		if ce > last || (ce != 0 && !slices.Contains(epochs, ce)) {
			t.Errorf("POST /v1/checkpoints: sink %s committed_epoch %d, not an epoch recorded in %s (%d recorded, the last %d)", name, ce, where, len(epochs), last)
		}
	}
	// The query learns of a commit after it: committed_epoch read before
	// the external system is at most the last epoch there, and soon reaches it.
	before, ok := sinkCommittedEpoch(q)
	if !ok {
		t.Errorf("GET /v1/queries/%s: no sink reports committed_epoch: %v", name, q.raw["sinks"])
		return
	}
	if before > last {
		t.Errorf("GET /v1/queries/%s: committed_epoch %d, beyond the last epoch recorded in %s afterwards, %d", name, before, where, last)
	}
	q = waitQuery(t, srv, name, 5*time.Second, func(q queryInfo) bool { ce, _ := sinkCommittedEpoch(q); return ce >= last })
	if ce, _ := sinkCommittedEpoch(q); ce < last {
		t.Errorf("GET /v1/queries/%s: committed_epoch %d, 5s after %s recorded epoch %d", name, ce, where, last)
	}
}

// checkCreatedTable checks the PostgreSQL table a sink created: its
// columns in order, lower case, of the PostgreSQL type of their streamsql
// type, and its PRIMARY KEY.
func checkCreatedTable(t *testing.T, pg *pgtest.Server, s pgSink) {
	t.Helper()
	names, types, key := s.columns()
	got := pgColumns(t, pg, s.pgSchema(), s.pgTable())
	var want []pgColumn
	for i, c := range names {
		w := pgTypeOf(types[i])
		w.name = c
		want = append(want, w)
	}
	if !slices.Equal(got, want) {
		t.Errorf("PostgreSQL table %s.%s: columns (name, data_type, datetime_precision)\n  got  %v\n  want %v", s.pgSchema(), s.pgTable(), got, want)
	}
	rows := pgQuery(t, pg, fmt.Sprintf(`SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = %s::regclass AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)`, qlit(qualified(s.pgSchema(), s.pgTable()))))
	var pk []string
	for _, r := range rows {
		pk = append(pk, r[0])
	}
	if !slices.Equal(pk, key) {
		t.Errorf("PostgreSQL table %s.%s: PRIMARY KEY %q, want %q", s.pgSchema(), s.pgTable(), pk, key)
	}
}

// TestPGSinkResults: the views of the main scenario with windows (TUMBLE
// with every aggregate, HOP with HAVING, merging sessions, sessions with
// HAVING) and a running aggregate with HAVING, each inserted into a
// PostgreSQL sink in both delivery modes (exactly-once at parallelism 2,
// at-least-once at 1; one sink declared in upper case). Half the rows,
// a checkpoint, every table checked; the rest, again. Groups leaving
// HAVING and sessions that grow must be deleted from PostgreSQL; then rows
// that make groups pass HAVING and sessions, and rows that delete them
// once committed (deleteProbe), checked after each. The tables created have the documented types and PRIMARY KEY.
// Then two
// append-only sinks (rows keyed by _row_id) are created and catch up with
// the whole log.
func TestPGSinkResults(t *testing.T) {
	pg := sharedPG(t)
	rows := genBids(testSeed(t, 400), scenarioRows)
	srv := startServer(t)
	srv.sql(t, bidsDDL)
	ps := &pgScenario{srv: srv, pg: pg}
	var sinks []pgSink
	for _, base := range []string{"tumble_auction", "hop_div", "session_auction", "session_bidder", "running_having"} {
		sinks = append(sinks, bidSink("res", bidInstance(base, variants[1]), exactlyOnce), bidSink("res", bidInstance(base, variants[0]), atLeastOnce))
	}
	sinks[1].upper = true
	ps.create(t, sinks...)

	sc := &scenario{srv: srv}
	half := len(rows) / 2
	sc.post(t, rows[:half])
	ps.verify(t, "half", sc.posted, nil)
	t.Run("created_tables", func(t *testing.T) {
		for _, s := range sinks {
			checkCreatedTable(t, pg, s)
		}
	})
	sc.post(t, rows[half:])
	ps.verify(t, "all", sc.posted, nil)

	// Groups that pass HAVING and sessions, committed, then rows that
	// make them leave HAVING and the sessions grow: deletes in PostgreSQL.
	pass, fail := deleteProbe(sc.posted)
	sc.post(t, pass)
	ps.verify(t, "delete_probe_pass", sc.posted, nil)
	for _, base := range []string{"running_having", "hop_div", "session_auction"} {
		s := sinks[slices.IndexFunc(sinks, func(s pgSink) bool { return strings.HasPrefix(s.name, "pg_"+base+"_") })]
		if n := goneKeys(s.expected(sc.posted, nil), s.expected(append(slices.Clone(sc.posted), fail...), nil)); n == 0 {
			t.Fatalf("test bug: the delete probe deletes no row of %s", s.name)
		}
	}
	sc.post(t, fail)
	ps.verify(t, "delete_probe_fail", sc.posted, nil)

	// Append-only sinks created now read the whole log at once: epochs of
	// thousands of rows (the publisher may write those another way).
	ps.create(t, bidSink("res", bidInstance("passthrough", variants[1]), exactlyOnce), bidSink("res", bidInstance("passthrough", variants[0]), atLeastOnce))
	ps.verify(t, "created_late", sc.posted, nil)
	largest := pgQuery(t, pg, "SELECT count(*) FROM pg_class WHERE relname = 'streamsql_stage' AND relpersistence = 't'")
	t.Logf("sessions with a staging table for large writes: %s", largest[0][0])
}

// deleteProbe returns rows to post after log, in two steps. pass: three
// rows at price 100 for each of auctions 1-20 (bidders 1-20) at the log's
// latest time T (never late): HOP groups of the windows holding T pass
// COUNT(*) > 2 where their MAX(price) is below 950, every auction has a
// session ending at T + 1.5s. fail: a row at price 999 for each auction
// at T (those HOP groups fail MAX(price) < 950), and for bidders 21-50 a
// row at price 1 at T + 1s on auctions 1-20 (their running groups fail
// MIN(price) > 15; every auction's session grows to end at T + 2.5s).
func deleteProbe(log []Row) (pass, fail []Row) {
	var last int64
	for _, r := range log {
		last = max(last, tsOf(r))
	}
	bid := func(auction, bidder, price, ts int64) Row {
		return Row{"auction": auction, "bidder": bidder, "price": price, "channel": "web", "ts": Timestamp(ts)}
	}
	for a := int64(1); a <= 20; a++ {
		pass = append(pass, bid(a, a, 100, last), bid(a, a, 100, last), bid(a, a, 100, last))
		fail = append(fail, bid(a, a, 999, last))
	}
	for b := int64(21); b <= 50; b++ {
		fail = append(fail, bid(1+(b-21)%20, b, 1, last+1000))
	}
	return pass, fail
}

// goneKeys counts the keys of before that after no longer has.
func goneKeys(before, after Result) int {
	keys := map[string]bool{}
	for _, r := range after.Rows {
		keys[rowKey(after.Key, r)] = true
	}
	n := 0
	for _, r := range before.Rows {
		if !keys[rowKey(before.Key, r)] {
			n++
		}
	}
	return n
}

// TestPGSinkJoins: an append-only interval join (rows keyed by _row_id,
// declared first in one sink and last in the other; a BOOLEAN column) and
// an aggregation over a LEFT interval join, in both delivery modes, over
// the join tests' two tables: checked halfway, and at the end after flush
// rows have brought every LEFT row's NULL row due.
func TestPGSinkJoins(t *testing.T) {
	pg := sharedPG(t)
	data := genJoinData(testSeed(t, 401), joinEvents)
	srv := startServer(t)
	srv.sql(t, joinBidsDDL+";\n"+joinAuctionsDDL)
	js := &joinScenario{srv: srv, data: data, next: map[string]int{}, posted: map[string][]Row{}, offset: map[string]int64{}}
	ps := &pgScenario{srv: srv, pg: pg}
	rowsEO := joinSink("jres", joinInstance{name: "j_rows_p2", def: jRowsView, parallelism: 2}, exactlyOnce)
	rowsALO := joinSink("jres", joinInstance{name: "j_rows_p1", def: jRowsView, parallelism: 1}, atLeastOnce)
	rowsALO.rowIDLast = true
	agg := joinViewsByBase("j_left_agg")[0]
	ps.create(t, rowsEO, rowsALO,
		joinSink("jres", joinInstance{name: "j_left_agg_p2", def: agg, parallelism: 2}, exactlyOnce),
		joinSink("jres", joinInstance{name: "j_left_agg_p1", def: agg, parallelism: 1}, atLeastOnce))

	js.postTo(t, len(data.steps)/2)
	ps.verify(t, "half", js.posted["bids"], js.posted["auctions"])
	t.Run("created_tables", func(t *testing.T) {
		for _, s := range ps.sinks {
			checkCreatedTable(t, pg, s)
		}
	})
	js.postTo(t, len(data.steps))
	bid, auction := flushRows(data)
	js.postRows(t, "bids", []Row{bid})
	js.postRows(t, "auctions", []Row{auction})
	ps.verify(t, "flushed", js.posted["bids"], js.posted["auctions"])

	// Row ids derive from the source offsets of a row's inputs: the same
	// join over the same logs, at parallelism 1 or 2, should name its rows
	// alike (logged, not required).
	ids := func(s pgSink) []string {
		var out []string
		for _, r := range pgQuery(t, pg, "SELECT _row_id FROM "+qualified(s.pgSchema(), s.pgTable())+" ORDER BY 1") {
			out = append(out, r[0])
		}
		return out
	}
	t.Logf("row ids of the j_rows sinks at parallelism 2 and 1 equal: %v", slices.Equal(ids(rowsEO), ids(rowsALO)))
}

// expectRefused sends stmts expecting one of statuses, with a problem
// naming each of words (identifiers, case-insensitive); it returns the
// problem.
func expectRefused(t *testing.T, srv *server, stmts string, statuses []int, words ...string) problem {
	t.Helper()
	p := srv.sqlError(t, stmts)
	if !slices.Contains(statuses, p.httpStatus) {
		t.Errorf("status %d, want one of %v: %s\nSQL: %s", p.httpStatus, statuses, p, stmts)
	}
	for _, w := range words {
		if !p.mentions(w) {
			t.Errorf("the error does not name %q: %s", w, p)
		}
	}
	return p
}

// countsQuery is pg_counts's INSERT's SELECT, as in the issue, and its
// oracle.
const countsSelect = `SELECT window_start, window_end, auction, COUNT(*), SUM(price) FROM bids GROUP BY TUMBLE(ts, '10s'), auction`

var countsQuery = Query{Window: TumbleWindow(10_000), GroupBy: []string{"auction"},
	Aggs: []Agg{{As: "bids", Func: CountStar}, {As: "volume", Func: Sum, Arg: colRef("price")}}}

// TestPGSinkRefusals: what a PostgreSQL sink must refuse, with a message
// naming the problem and nothing left behind: a PRIMARY KEY that is not
// the query's key (windowed, running, append-only without _row_id), an
// INSERT with too few columns, an unknown ENGINE_ATTRIBUTE key, a bad
// delivery, a missing or incompatible PostgreSQL table with create_table
// false (refused, or the query fails naming it: never retried forever),
// and DROP TABLE of a sink table a query writes (409). The sink of the
// issue's example, into a table made beforehand (create_table false, the
// default schema), works and is dropped with its query.
func TestPGSinkRefusals(t *testing.T) {
	pg := sharedPG(t)
	srv := startServer(t)
	srv.sql(t, bidsDDL)
	dsn := pg.DSN("")
	engine := func(attrs string) string {
		return "ENGINE=postgres CONNECTION='" + dsn + "' ENGINE_ATTRIBUTE='" + attrs + "'"
	}
	windowCols := "window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, bids BIGINT, volume BIGINT"
	noQuery := func(t *testing.T, name string) {
		t.Helper()
		if st := srv.status(t, "/v1/queries/"+url.PathEscape(name)); st != http.StatusNotFound {
			t.Errorf("GET /v1/queries/%s: status %d, want 404: the refused INSERT left a query", name, st)
		}
	}
	// refusedInsert creates a sink table, then expects its INSERT to be
	// refused with 422 naming words.
	refusedInsert := func(t *testing.T, name, cols, attrs, insert string, words ...string) {
		t.Helper()
		srv.sql(t, "CREATE TABLE "+name+" ("+cols+") "+engine(attrs))
		expectRefused(t, srv, insert, []int{http.StatusUnprocessableEntity}, words...)
		noQuery(t, name)
	}

	t.Run("primary_key_windowed", func(t *testing.T) {
		refusedInsert(t, "pg_bad_pk", windowCols+", PRIMARY KEY (window_start, auction)", `{"table": "bad_pk", "create_table": true}`,
			"INSERT INTO pg_bad_pk "+countsSelect, "window_start", "window_end", "auction")
	})
	t.Run("primary_key_running", func(t *testing.T) {
		refusedInsert(t, "pg_bad_pk_running", "auction BIGINT, bidder BIGINT, n BIGINT, PRIMARY KEY (auction, bidder)", `{"create_table": true}`,
			"INSERT INTO pg_bad_pk_running SELECT auction, MAX(bidder), COUNT(*) FROM bids GROUP BY auction", "auction", "bidder")
	})
	t.Run("append_only_without_row_id", func(t *testing.T) {
		refusedInsert(t, "pg_no_row_id", "auction BIGINT, price BIGINT, PRIMARY KEY (auction)", `{"create_table": true}`,
			"INSERT INTO pg_no_row_id SELECT auction, price FROM bids", "_row_id")
	})
	t.Run("too_few_columns", func(t *testing.T) {
		refusedInsert(t, "pg_short", windowCols+", PRIMARY KEY (window_start, window_end, auction)", `{"create_table": true}`,
			"INSERT INTO pg_short SELECT window_start, window_end, auction, COUNT(*) FROM bids GROUP BY TUMBLE(ts, '10s'), auction")
	})
	// A bad ENGINE_ATTRIBUTE is a malformed option (400), as a bad SET_VAR
	// is, or SQL that cannot run (422).
	malformedOption := []int{http.StatusBadRequest, http.StatusUnprocessableEntity}
	t.Run("unknown_attribute", func(t *testing.T) {
		expectRefused(t, srv, "CREATE TABLE pg_attr ("+windowCols+", PRIMARY KEY (window_start, window_end, auction)) "+engine(`{"table": "attr", "colour": "red"}`),
			malformedOption, "colour")
		if st := srv.status(t, "/v1/tables/pg_attr"); st != http.StatusNotFound {
			t.Errorf("GET /v1/tables/pg_attr: status %d, want 404: the refused CREATE TABLE left a table", st)
		}
	})
	t.Run("bad_delivery", func(t *testing.T) {
		expectRefused(t, srv, "CREATE TABLE pg_twice ("+windowCols+", PRIMARY KEY (window_start, window_end, auction)) "+engine(`{"delivery": "twice"}`),
			malformedOption, "twice")
	})

	// create_table false: a table that is missing, or has an incompatible
	// column, is refused (422 naming it), or the query fails naming it.
	refusedOrFailed := func(t *testing.T, name, attrs string, words ...string) {
		t.Helper()
		create := "CREATE TABLE " + name + " (" + windowCols + ", PRIMARY KEY (window_start, window_end, auction)) " + engine(attrs)
		r := srv.do(t, http.MethodPost, "/v1/sql", "application/sql", []byte(create+";\nINSERT INTO "+name+" "+countsSelect))
		if r.status != http.StatusOK {
			p := parseProblem(t, "POST /v1/sql", r)
			if p.httpStatus != http.StatusUnprocessableEntity {
				t.Errorf("status %d, want 422: %s", p.httpStatus, p)
			}
			for _, w := range words {
				if !p.mentions(w) {
					t.Errorf("the error does not name %q: %s", w, p)
				}
			}
			t.Logf("refused: %s", p)
			return
		}
		q := waitQuery(t, srv, name, 20*time.Second, func(q queryInfo) bool { return q.State == "failed" })
		if q.State != "failed" {
			t.Fatalf("accepted, and the query is %q 20s later (error: %q); want a 422 or a failed query: retrying cannot fix the table", q.State, queryError(q))
		}
		msg := queryError(q)
		for _, w := range words {
			if !regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(w) + `\b`).MatchString(msg) {
				t.Errorf("the query's error does not name %q: %q", w, msg)
			}
		}
		t.Logf("accepted, then failed: %s", msg)
		if r := srv.do(t, http.MethodDelete, "/v1/queries/"+name, "", nil); r.status >= 300 {
			t.Errorf("DELETE /v1/queries/%s: %s", name, r)
		}
	}
	t.Run("missing_table", func(t *testing.T) {
		refusedOrFailed(t, "pg_missing", `{"table": "no_such_table", "create_table": false}`, "no_such_table")
	})
	t.Run("incompatible_column", func(t *testing.T) {
		if err := pg.Exec(`CREATE TABLE public.incompatible (window_start timestamptz(3), window_end timestamptz(3), auction text, bids bigint, volume bigint,
  PRIMARY KEY (window_start, window_end, auction))`); err != nil {
			t.Fatal(err)
		}
		refusedOrFailed(t, "pg_incompatible", `{"table": "incompatible", "create_table": false}`, "auction")
	})

	// The sink into a table made beforehand, in the default
	// schema; DROP TABLE is refused while its query exists.
	t.Run("existing_table_and_drop", func(t *testing.T) {
		if err := pg.Exec(`CREATE TABLE public.pg_counts (window_start timestamptz(3), window_end timestamptz(3), auction bigint, bids bigint, volume bigint,
  PRIMARY KEY (window_start, window_end, auction))`); err != nil {
			t.Fatal(err)
		}
		s := pgSink{sinkQuery: sinkQuery{name: "pg_counts", delivery: exactlyOnce, selectSQL: countsSelect,
			expected: func(bids, _ []Row) Result { return Evaluate(bidsSource, countsQuery, bids) }}, noCreate: true}
		ps := &pgScenario{srv: srv, pg: pg}
		ps.create(t, s)
		sc := &scenario{srv: srv}
		sc.post(t, genBids(testSeed(t, 402), 600))
		ps.verify(t, "posted", sc.posted, nil)

		p := expectRefused(t, srv, "DROP TABLE pg_counts", []int{http.StatusConflict}, "pg_counts")
		t.Logf("DROP TABLE of a sink in use: %s", p)
		if r := srv.do(t, http.MethodDelete, "/v1/queries/pg_counts", "", nil); r.status >= 300 {
			t.Fatalf("DELETE /v1/queries/pg_counts: %s", r)
		}
		noQuery(t, "pg_counts")
		srv.sql(t, "DROP TABLE pg_counts")
		if st := srv.status(t, "/v1/tables/pg_counts"); st != http.StatusNotFound {
			t.Errorf("GET /v1/tables/pg_counts after DROP TABLE: status %d, want 404", st)
		}
	})
}

// TestPGReadBack checks the PostgreSQL side of the comparison without a
// streamsql server: values of every type (NULL, the empty string and text apart,
// timestamps in UTC in a session whose TimeZone is not, doubles exact),
// read back and compared by diffResult; a snapshot with its epoch; and
// progressProblems on records good and bad.
func TestPGReadBack(t *testing.T) {
	pg := sharedPG(t)
	if err := pg.Exec(`CREATE SCHEMA readback;
CREATE TABLE readback.t (k bigint PRIMARY KEY, ts timestamptz(3), d double precision, s text, b boolean);
INSERT INTO readback.t VALUES
  (1, '2024-01-01T00:00:10.123Z', 0.1, '', true),
  (2, NULL, NULL, NULL, NULL),
  (3, '1969-12-31T23:59:59.999Z', -1e-300, 'n', false),
  (4, '2024-06-30T23:59:59.5Z', 12345.678, 'v,"x"', true)`); err != nil {
		t.Fatal(err)
	}
	if tz := pgQuery(t, pg, "SHOW TimeZone"); tz[0][0] != pgTimeZone {
		t.Errorf("the session's TimeZone is %q, want %q", tz[0][0], pgTimeZone)
	}
	want := Result{Columns: []string{"k", "ts", "d", "s", "b"}, Key: []string{"k"}, Rows: []Row{
		{"k": int64(1), "ts": Timestamp(1704067210123), "d": 0.1, "s": "", "b": true},
		{"k": int64(2), "ts": nil, "d": nil, "s": nil, "b": nil},
		{"k": int64(3), "ts": Timestamp(-1), "d": -1e-300, "s": "n", "b": false},
		{"k": int64(4), "ts": Timestamp(1719791999500), "d": 12345.678, "s": `v,"x"`, "b": true},
	}}
	cols, rows := pgRows(t, pg, "readback", "t")
	if diffs := diffResult(want, cols, rows); len(diffs) > 0 {
		t.Errorf("read back: %s", formatDiffs(diffs, 10))
	}
	// One value off must show.
	rows[0]["d"] = json.Number("0.1000001")
	if diffs := diffResult(want, cols, rows); len(diffs) != 1 {
		t.Errorf("a changed DOUBLE: %d differences, want 1: %q", len(diffs), diffs)
	}

	if _, ok := pgSnapshot(t, pg, "readback", "t", true); ok {
		t.Error("snapshot with an epoch: ok without a progress table")
	}
	if err := pg.Exec(`CREATE TABLE readback.streamsql_sink_progress (sink_id text, epoch bigint, committed_at timestamptz DEFAULT now(), PRIMARY KEY (sink_id, epoch));
INSERT INTO readback.streamsql_sink_progress (sink_id, epoch) VALUES ('s', 3), ('s', 7);
CREATE TABLE readback.empty (k bigint)`); err != nil {
		t.Fatal(err)
	}
	if snap, ok := pgSnapshot(t, pg, "readback", "t", true); !ok || snap.epoch != 7 || len(snap.rows) != 4 {
		t.Errorf("snapshot: epoch %d, %d rows (ok %v), want 7 and 4", snap.epoch, len(snap.rows), ok)
	}
	if snap, ok := pgSnapshot(t, pg, "readback", "empty", true); !ok || snap.epoch != 7 || len(snap.rows) != 0 {
		t.Errorf("snapshot of an empty table: epoch %d, %d rows (ok %v), want 7 and none", snap.epoch, len(snap.rows), ok)
	}
	if got := pgProgress(t, pg, "readback"); !slices.Equal(got, []int64{3, 7}) {
		t.Errorf("progress epochs %v, want [3 7]", got)
	}

	for _, c := range []struct {
		recs []progressRecord
		n    int
	}{
		{[]progressRecord{{"a", 1}, {"a", 2}, {"a", 5}}, 0},
		{[]progressRecord{{"a", 1}, {"a", 5}, {"a", 2}}, 1},
		{[]progressRecord{{"a", 1}, {"a", 1}}, 2}, // twice, and not increasing
		{[]progressRecord{{"a", 1}, {"b", 2}}, 1},
	} {
		if p := progressProblems(c.recs); len(p) != c.n {
			t.Errorf("progressProblems(%v) = %q, want %d problems", c.recs, p, c.n)
		}
	}
}
