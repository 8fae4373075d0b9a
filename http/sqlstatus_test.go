package httpapi

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestSQLStatusCodes is the rule of docs/http-api.md "Errors and status
// codes", one kind of mistake per row: 400 for text that is not a
// statement or a value of the wrong form, 404 for a table or view that
// does not exist, 409 for a conflict with what exists, 422 for SQL that
// parses but names what streamsql does not know (a column, an option, a
// hint, an ENGINE_ATTRIBUTE key) or asks for what it does not run.
func TestSQLStatusCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sql(bidsDDL + ";\n" + aggView)
	const win = " FROM bids GROUP BY TUMBLE(ts, '10s')"
	cases := []struct {
		name, sql string
		status    int
		line, col int // 0: not checked
		mentions  []string
	}{
		// 400: not a statement, or a value of the wrong form.
		{"syntax error", "SELEC auction FROM bids", 400, 1, 5, []string{"syntax error"}},
		{"hint before SELECT", "CREATE VIEW v AS\n  /*+ SET_VAR(parallelism=2) */ SELECT window_start, COUNT(*) AS n" + win, 400, 2, 3,
			[]string{"/*+ SET_VAR(parallelism=2) */", "right after SELECT"}},
		{"bad option value", "SET parallelism = 'many'", 400, 1, 5, []string{"parallelism", "many"}},
		{"bad duration in ENGINE_ATTRIBUTE", `CREATE TABLE t (x BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "5 parsecs"}'`, 400, 0, 0, []string{"parsecs"}},
		{"ENGINE_ATTRIBUTE not JSON", `CREATE TABLE t (x BIGINT) ENGINE=http ENGINE_ATTRIBUTE='{nope'`, 400, 0, 0, []string{"JSON"}},
		{"name with a slash", "CREATE TABLE `a/b` (x BIGINT) ENGINE=http", 400, 0, 0, []string{"a/b"}},

		// 404: the table or view named does not exist.
		{"unknown table in FROM", "CREATE VIEW v AS SELECT x FROM nosuch", 404, 1, 32, []string{"unknown table nosuch"}},
		{"unknown view", "SELECT * FROM nosuch", 404, 1, 15, []string{"nosuch"}},
		{"EXPLAIN of an unknown view", "EXPLAIN nosuch", 404, 0, 0, []string{"unknown view nosuch"}},
		{"DESCRIBE of an unknown table", "DESC nosuch", 404, 0, 0, []string{"nosuch"}},
		{"INSERT INTO an unknown table", "EXPLAIN INSERT INTO nosuch SELECT auction FROM bids", 404, 0, 0, []string{"unknown table nosuch"}},

		// 409: conflicts with what exists.
		{"view exists", aggView, 409, 0, 0, []string{"already exists"}},
		{"table exists", bidsDDL, 409, 0, 0, []string{"already exists"}},

		// 422: parses, but names what is not known or asks for what does
		// not run.
		{"unknown column", "CREATE VIEW v AS SELECT pricee FROM bids", 422, 1, 25, []string{"unknown column pricee"}},
		{"unknown SET option", "SET emit_mood = 'changes'", 422, 1, 5, []string{"unknown option emit_mood", "did you mean emit_mode?"}},
		{"unknown SET_VAR option", "CREATE VIEW v AS SELECT /*+ SET_VAR(paralelism=2) */ window_start, COUNT(*) AS n" + win, 422, 0, 0, []string{"paralelism", "did you mean parallelism?"}},
		{"unknown hint", "CREATE VIEW v AS SELECT /*+ SETVAR(parallelism=2) */ window_start, COUNT(*) AS n" + win, 422, 1, 29, []string{"unknown optimizer hint SETVAR", "SET_VAR(option=value)"}},
		{"unknown ENGINE_ATTRIBUTE key", `CREATE TABLE t (x BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_tme": "ts"}'`, 422, 0, 0,
			[]string{`"event_tme"`, "did you mean event_time?", "allowed_lateness, event_time, idle_timeout, retention, start, watermark_delay"}},
		{"unknown postgres key", `CREATE TABLE t (x BIGINT, PRIMARY KEY (x)) ENGINE=postgres CONNECTION='postgres://u@127.0.0.1:9/db' ENGINE_ATTRIBUTE='{"shema": "s"}'`, 422, 0, 0,
			[]string{`"shema"`, "did you mean schema?", "create_table, delivery, schema, table"}},
		{"nexmark key", `CREATE TABLE t (x BIGINT) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid", "event_per_second": 5}'`, 422, 0, 0,
			[]string{"did you mean events_per_second?", "base_time, event_time, events, events_per_second"}},
		{"no ENGINE", "CREATE TABLE t (x BIGINT)", 422, 0, 0, []string{"http, nexmark, kafka or file (sources), postgres, kafka or file (sinks)"}},
		{"unknown ENGINE", "CREATE TABLE t (x BIGINT) ENGINE=kafak", 422, 0, 0, []string{"did you mean kafka?"}},
		{"missing nexmark kind", "CREATE TABLE t (x BIGINT) ENGINE=nexmark", 422, 0, 0, []string{"kind"}},
		{"unsupported construct", "CREATE VIEW v AS SELECT auction FROM bids EXCEPT SELECT auction FROM bids", 422, 0, 0, []string{"EXCEPT"}},
		{"planner refusal", "CREATE VIEW v AS SELECT auction FROM bids ORDER BY auction", 422, 0, 0, []string{"ORDER BY"}},
		{"GROUP BY an aggregate's position", "CREATE VIEW v AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY 2", 422, 0, 0, []string{"GROUP BY 2: n is an aggregate"}},
		{"GROUP BY past the select list", "CREATE VIEW v AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY 3", 422, 0, 0, []string{"GROUP BY 3", "2 columns"}},
		{"EXPLAIN of a CREATE TABLE", "EXPLAIN CREATE TABLE t (x BIGINT) ENGINE=http", 422, 0, 0, []string{"EXPLAIN takes"}},
		{"expression of no supported kind", "CREATE VIEW v AS SELECT auction FROM bids WHERE MATCH(auction) AGAINST('x')", 422, 0, 0, []string{"expression MATCH"}},
		{"MySQL's ? placeholder", "CREATE VIEW v AS SELECT auction FROM bids WHERE auction = ?", 422, 1, 59, []string{"? placeholders are not supported", "$1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := checkProblem(t, e.do("POST", "/v1/sql", "application/sql", c.sql), c.status, c.mentions...)
			if c.line > 0 && (num(t, p["line"]) != strconv.Itoa(c.line) || num(t, p["column"]) != strconv.Itoa(c.col)) {
				t.Errorf("at line %v column %v, want %d:%d (%v)", p["line"], p["column"], c.line, c.col, p["detail"])
			}
			if d := p["detail"].(string); strings.Contains(d, "*ast.") || strings.Contains(d, "parser.") {
				t.Errorf("detail %q names a Go type", d)
			}
		})
	}
	e.problem(e.get("/v1/queries/v"), 404) // nothing refused was created
}

// TestExplainAndDescribe: EXPLAIN v prints the plan the running view
// holds (EXPLAIN CREATE VIEW printed the same before it existed), DESCRIBE
// and DESC print its columns with the upsert key, EXPLAIN of a table
// describes it (MySQL's EXPLAIN t), and EXPLAIN INSERT INTO prints the sink
// query's plan.
func TestExplainAndDescribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sql(bidsDDL)
	plan := func(r map[string]any) string {
		t.Helper()
		if r["kind"] != "explain" {
			t.Fatalf("kind %v, want explain: %v", r["kind"], r)
		}
		return objs(t, r["rows"])[0]["plan"].(string)
	}
	before := plan(e.sql("EXPLAIN " + aggView)[0])
	fromSelect := plan(e.sql("EXPLAIN " + strings.TrimPrefix(aggView, "CREATE VIEW agg AS "))[0])
	e.sql(aggView)
	running := plan(e.sql("EXPLAIN agg")[0])
	if running != before {
		t.Errorf("EXPLAIN agg:\n%s\nEXPLAIN CREATE VIEW agg said:\n%s", running, before)
	}
	if !strings.Contains(running, "Aggregate window=TUMBLE") || !strings.Contains(running, "Sink results name=agg") {
		t.Errorf("EXPLAIN agg is not the view's plan:\n%s", running)
	}
	if want := strings.Replace(running, "name=agg", "name=explain", 1); fromSelect != want {
		t.Errorf("EXPLAIN SELECT:\n%s\nwant the view's plan:\n%s", fromSelect, want)
	}
	var q map[string]any
	json.Unmarshal(e.get("/v1/queries/agg").body, &q)
	if q["plan"] != running {
		t.Errorf("GET /v1/queries/agg plan:\n%v\nEXPLAIN agg:\n%s", q["plan"], running)
	}

	// DESCRIBE and DESC of the view: its columns, the key marked.
	type col struct{ name, key string }
	describe := func(sql string) []col {
		t.Helper()
		r := e.sql(sql)[0]
		if r["kind"] != "describe" {
			t.Fatalf("%s: kind %v", sql, r["kind"])
		}
		var out []col
		for _, row := range objs(t, r["rows"]) {
			out = append(out, col{row["name"].(string), row["key"].(string)})
		}
		return out
	}
	want := []col{{"auction", "PRI"}, {"window_start", "PRI"}, {"window_end", "PRI"}, {"volume", ""}, {"bids", ""}, {"avg_price", ""}, {"top_channel", ""}}
	for _, sql := range []string{"DESCRIBE agg", "DESC agg", "SHOW COLUMNS FROM agg"} {
		if got := describe(sql); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", sql, got, want)
		}
	}
	// A running aggregate is keyed by its GROUP BY columns; a view without
	// aggregation by a row id, which is none of its columns.
	e.sql("CREATE VIEW per_channel AS SELECT COUNT(*) AS n, channel AS c FROM bids GROUP BY c;\nCREATE VIEW cheap AS SELECT auction, price FROM bids WHERE price < 10")
	if got := describe("DESC per_channel"); !reflect.DeepEqual(got, []col{{"n", ""}, {"c", "PRI"}}) {
		t.Errorf("DESC per_channel = %v", got)
	}
	if got := describe("DESC cheap"); !reflect.DeepEqual(got, []col{{"auction", ""}, {"price", ""}}) {
		t.Errorf("DESC cheap = %v", got)
	}
	// EXPLAIN of a table is DESCRIBE, as in MySQL.
	if got := describe("EXPLAIN bids"); len(got) != 4 || got[0].name != "auction" {
		t.Errorf("EXPLAIN bids = %v", got)
	}

	// EXPLAIN INSERT INTO: the plan the sink query would get, without
	// creating it.
	e.sql(`CREATE TABLE pg_volume (channel VARCHAR(32), volume BIGINT, PRIMARY KEY (channel)) ENGINE=postgres CONNECTION='postgres://u@127.0.0.1:9/db'`)
	ins := plan(e.sql("EXPLAIN INSERT INTO pg_volume SELECT channel, SUM(price) FROM bids GROUP BY channel")[0])
	if !strings.Contains(ins, "Sink postgres table=pg_volume") || !strings.Contains(ins, "primary_key=[channel]") {
		t.Errorf("EXPLAIN INSERT:\n%s", ins)
	}
	e.problem(e.get("/v1/queries/pg_volume"), 404)
}

// TestGroupByAliasAndPosition: GROUP BY a select alias and GROUP BY a
// position group as GROUP BY the expression does (MySQL), windows too;
// HAVING takes an alias; ORDER BY a position sorts a pull query.
func TestGroupByAliasAndPosition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sql(bidsDDL + ";\n" + aggView + ";\n" +
		"CREATE VIEW by_alias AS SELECT auction AS a, window_start, window_end, SUM(price) AS volume FROM bids GROUP BY a, TUMBLE(ts, '10s');\n" +
		"CREATE VIEW by_position AS SELECT window_start, window_end, auction, SUM(price) AS volume FROM bids GROUP BY TUMBLE(ts, '10s'), 3;\n" +
		"CREATE VIEW by_bucket AS SELECT price % 2 AS odd, COUNT(*) AS n FROM bids GROUP BY odd;\n" +
		"CREATE VIEW busy AS SELECT auction AS a, COUNT(*) AS n FROM bids GROUP BY 1 HAVING n > 1")
	e.ingest("bids", bidRows)
	e.checkpoint()
	rows := func(sql string) []map[string]any {
		t.Helper()
		return objs(t, e.sql(sql)[0]["rows"])
	}
	want := rows("SELECT auction AS a, window_start, window_end, volume FROM agg ORDER BY window_start, auction")
	if len(want) != 3 {
		t.Fatalf("agg has %d rows, want 3", len(want))
	}
	if got := rows("SELECT * FROM by_alias ORDER BY 2, 1"); !reflect.DeepEqual(got, want) {
		t.Errorf("GROUP BY alias:\n got %v\nwant %v", got, want)
	}
	if got := rows("SELECT auction AS a, window_start, window_end, volume FROM by_position ORDER BY 2, a"); !reflect.DeepEqual(got, want) {
		t.Errorf("GROUP BY position:\n got %v\nwant %v", got, want)
	}
	// prices 100, 251, 7, 50: two even, two odd.
	if got := rows("SELECT * FROM by_bucket ORDER BY 1 DESC"); !reflect.DeepEqual(got, []map[string]any{{"odd": json.Number("1"), "n": json.Number("2")}, {"odd": json.Number("0"), "n": json.Number("2")}}) {
		t.Errorf("GROUP BY an alias of an expression: %v", got)
	}
	// HAVING an alias: auction 1 has three bids, auction 2 one.
	if got := rows("SELECT * FROM busy"); !reflect.DeepEqual(got, []map[string]any{{"a": json.Number("1"), "n": json.Number("3")}}) {
		t.Errorf("HAVING an alias: %v", got)
	}
	e.sqlErr("SELECT * FROM agg ORDER BY 8", 422, "ORDER BY 8", "7 columns")
}
