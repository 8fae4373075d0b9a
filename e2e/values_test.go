package e2e

// Values and SQL limits against the real binary (issue 15 items 5, 10 and
// 11): TIMESTAMPs outside years 0001 to 9999 refused at ingest and NULL in
// arithmetic; non-finite DOUBLEs written as "NaN", "Infinity" and
// "-Infinity", apart from NULL and from each other in every output and
// key; statements that are too long, nested too deep or too wide refused
// with the limit named, and the server answering meanwhile.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAbsurdTimestamps: ingest refuses a TIMESTAMP outside the range with
// a 400 naming the row and column, appending nothing, so the watermark is
// not moved to year 292278994 and later rows are on time; time arithmetic
// that leaves the range is NULL, not a wrapped time.
func TestAbsurdTimestamps(t *testing.T) {
	srv := startServer(t)
	srv.sql(t, `CREATE TABLE tt (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE VIEW tt_counts AS SELECT window_start, window_end, k, COUNT(*) AS n FROM tt GROUP BY TUMBLE(ts, '1s'), k;
CREATE TABLE tp (k BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http;
CREATE VIEW tp_math AS SELECT k, ts - INTERVAL 1 DAY AS day_before, ts + INTERVAL 1 DAY AS day_after,
  DATE_ADD(ts, INTERVAL 1 SECOND) AS second_after, FROM_UNIXMILLIS(k) AS from_k, ts - INTERVAL 9223372036854775807 SECOND AS far FROM tp`)
	srv.waitRunning(t, "tt_counts", "tp_math")
	srv.ingest(t, "tt", "application/x-ndjson", []byte(`{"k": 1, "ts": "2024-01-01T00:00:01.000Z"}`+"\n"), 1)
	end, _ := srv.endOffset(t, "tt")

	for _, c := range []struct{ name, body, want string }{
		{"int64 max", `{"k": 2, "ts": "2024-01-01T00:00:01.500Z"}` + "\n" + `{"k": 2, "ts": 9223372036854775807}`,
			"row 1, column ts: epoch milliseconds 9223372036854775807 are outside the TIMESTAMP range, 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z"},
		{"int64 min", `{"k": 2, "ts": -9223372036854775808}`, "row 0, column ts: epoch milliseconds -9223372036854775808 are outside the TIMESTAMP range"},
		{"year 0", `{"k": 2, "ts": "0000-06-01T00:00:00Z"}`, `row 0, column ts: "0000-06-01T00:00:00Z" is outside the TIMESTAMP range`},
		{"year 10000 in UTC", `[{"k": 2, "ts": "9999-12-31T23:00:00-02:00"}]`, `row 0, column ts: "9999-12-31T23:00:00-02:00" is outside the TIMESTAMP range`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := srv.postRaw(t, rowsPath("tt"), "application/x-ndjson", []byte(c.body))
			p := parseProblem(t, "POST rows", r)
			if r.status != http.StatusBadRequest || !strings.Contains(p.Detail, c.want) {
				t.Errorf("got %s, want 400 %q", p, c.want)
			}
			if got, _ := srv.endOffset(t, "tt"); got != end {
				t.Errorf("end_offset %d, want %d: the request appended rows", got, end)
			}
			srv.alive(t)
		})
	}
	// A later row in the next second is on time: the watermark is where
	// the good rows put it.
	srv.ingest(t, "tt", "application/x-ndjson", []byte(`{"k": 1, "ts": "2024-01-01T00:00:02.000Z"}`+"\n"+`{"k": 1, "ts": "2024-01-01T00:00:09.000Z"}`+"\n"), 2)
	srv.checkpoint(t)
	rows := srv.results(t, "tt_counts").Rows
	var starts []string
	for _, r := range rows {
		starts = append(starts, fmt.Sprint(r["window_start"]))
	}
	slices.Sort(starts)
	if want := []string{"2024-01-01T00:00:01.000Z", "2024-01-01T00:00:02.000Z", "2024-01-01T00:00:09.000Z"}; !slices.Equal(starts, want) {
		t.Errorf("windows %v, want %v", starts, want)
	}
	q := srv.query(t, "tt_counts")
	if q.Counters.LateRows != 0 {
		t.Errorf("late rows %d, want 0", q.Counters.LateRows)
	}
	if wm := fmt.Sprint(q.raw["watermark"]); wm != "2024-01-01T00:00:09.000Z" {
		t.Errorf("watermark %s, want 2024-01-01T00:00:09.000Z", wm)
	}

	// Arithmetic at the ends of the range.
	srv.ingest(t, "tp", "application/x-ndjson", []byte(`{"k": 9223372036854775807, "ts": "0001-01-01T00:00:00.000Z"}
{"k": -9223372036854775808, "ts": "9999-12-31T23:59:59.999Z"}
{"k": 0, "ts": "2024-02-28T12:00:00.000Z"}
`), 3)
	srv.checkpoint(t)
	got := map[string]map[string]any{}
	for _, r := range srv.results(t, "tp_math").Rows {
		got[fmt.Sprint(r["k"])] = r
	}
	want := map[string]map[string]any{
		"9223372036854775807":  {"day_before": nil, "day_after": "0001-01-02T00:00:00.000Z", "second_after": "0001-01-01T00:00:01.000Z", "from_k": nil, "far": nil},
		"-9223372036854775808": {"day_before": "9999-12-30T23:59:59.999Z", "day_after": nil, "second_after": nil, "from_k": nil, "far": nil},
		"0":                    {"day_before": "2024-02-27T12:00:00.000Z", "day_after": "2024-02-29T12:00:00.000Z", "second_after": "2024-02-28T12:00:01.000Z", "from_k": "1970-01-01T00:00:00.000Z", "far": nil},
	}
	nulls := int64(0)
	for k, cols := range want {
		for c, v := range cols {
			if g := got[k][c]; g != v {
				t.Errorf("k %s: %s = %v, want %v", k, c, g, v)
			}
			if v == nil {
				nulls++
			}
		}
	}
	// Each of those NULLs is arithmetic beyond the range, and counted.
	if n := srv.query(t, "tp_math").Counters.OutOfRange; n != nulls {
		t.Errorf("tp_math counts %d results out of range, want %d (the NULLs above)", n, nulls)
	}
}

// TestNonFiniteDoubles: NaN, Infinity, -Infinity and NULL are four values
// in every output: results as JSON, NDJSON and CSV, /changes keys and rows,
// pull queries; the NaNs of different computations are one group; NaN
// equals no number.
func TestNonFiniteDoubles(t *testing.T) {
	srv := startServer(t)
	// x * 1e308 * 10 overflows to +-Infinity; Infinity + -Infinity is NaN,
	// negated another NaN (its sign bit flipped). The groups: NaN (k 0 and
	// 1), Infinity, -Infinity, NULL, 0.
	const g = "IF(k = 1, -(x * 1e308 * 10 + y * 1e308 * 10), x * 1e308 * 10 + y * 1e308 * 10)"
	srv.sql(t, `CREATE TABLE nf (k BIGINT NOT NULL, x DOUBLE, y DOUBLE) ENGINE=http;
CREATE VIEW nf_groups AS SELECT `+g+` AS g, COUNT(*) AS n, MAX(`+g+`) AS top FROM nf GROUP BY `+g)
	srv.waitRunning(t, "nf_groups")
	srv.ingest(t, "nf", "application/x-ndjson", []byte(`{"k": 0, "x": 1, "y": -1}
{"k": 1, "x": 1, "y": -1}
{"k": 2, "x": 1, "y": 0}
{"k": 3, "x": -1, "y": 0}
{"k": 4}
{"k": 5, "x": 0, "y": 0}
`), 6)
	srv.checkpoint(t)
	want := map[string]int{`"NaN"`: 2, `"Infinity"`: 1, `"-Infinity"`: 1, `null`: 1, `0`: 1}

	// JSON and NDJSON: each group once, keyed by its JSON text.
	check := func(t *testing.T, what string, objs []map[string]json.RawMessage) {
		t.Helper()
		got := map[string]int{}
		for _, o := range objs {
			var n int
			json.Unmarshal(o["n"], &n)
			if _, dup := got[string(o["g"])]; dup {
				all, _ := json.Marshal(objs)
				t.Errorf("%s: group %s twice: %s", what, o["g"], all)
			}
			got[string(o["g"])] = n
			if string(o["g"]) != string(o["top"]) {
				t.Errorf("%s: group %s has MAX %s", what, o["g"], o["top"])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: groups %v, want %v", what, got, want)
		}
	}
	r := srv.do(t, http.MethodGet, "/v1/queries/nf_groups/results", "", nil)
	expectOK(t, "results", r)
	var doc struct{ Rows []map[string]json.RawMessage }
	decodeJSON(t, "results", r.body, &doc)
	check(t, "results", doc.Rows)

	r = srv.do(t, http.MethodGet, "/v1/queries/nf_groups/results?format=ndjson", "", nil)
	expectOK(t, "results as NDJSON", r)
	var lines []map[string]json.RawMessage
	for _, l := range bytes.Split(bytes.TrimSpace(r.body), []byte("\n")) {
		var o map[string]json.RawMessage
		decodeJSON(t, "NDJSON", l, &o)
		lines = append(lines, o)
	}
	check(t, "NDJSON", lines)

	// CSV: "NaN", "Infinity", "-Infinity" and the empty field of NULL.
	r = srv.do(t, http.MethodGet, "/v1/queries/nf_groups/results?format=csv", "", nil)
	expectOK(t, "results as CSV", r)
	recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var cells []string
	for _, rec := range recs[1:] {
		cells = append(cells, rec[0]+"="+rec[1])
	}
	slices.Sort(cells)
	if w := []string{"-Infinity=1", "0=1", "=1", "Infinity=1", "NaN=2"}; !slices.Equal(cells, w) {
		t.Errorf("CSV groups %v, want %v", cells, w)
	}

	// /changes: the snapshot's keys are the groups, each once.
	var snap []map[string]json.RawMessage
	for _, rec := range changesSnapshot(t, srv, "nf_groups") {
		var key, row map[string]json.RawMessage
		json.Unmarshal(rec["key"], &key)
		json.Unmarshal(rec["row"], &row)
		if string(key["g"]) != string(row["g"]) {
			t.Errorf("/changes: key %s for row %s", rec["key"], rec["row"])
		}
		snap = append(snap, row)
	}
	check(t, "/changes snapshot", snap)

	// Pull queries: NaN above every number, NULL first; NaN = 0 is false.
	res := srv.sql(t, "SELECT g, n FROM nf_groups ORDER BY g; SELECT g FROM nf_groups WHERE g = 0")
	var order []string
	for _, row := range res[0].Rows {
		order = append(order, fmt.Sprint(row["g"]))
	}
	if w := []string{"<nil>", "-Infinity", "0", "Infinity", "NaN"}; !slices.Equal(order, w) {
		t.Errorf("ORDER BY g: %v, want %v", order, w)
	}
	if len(res[1].Rows) != 1 || fmt.Sprint(res[1].Rows[0]["g"]) != "0" {
		t.Errorf("WHERE g = 0: %v, want the one group 0", res[1].Rows)
	}
}

// changesSnapshot reads GET /v1/queries/{name}/changes?snapshot=true up to
// its snapshot_end and returns the snapshot records.
func changesSnapshot(t *testing.T, srv *server, name string) []map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.base+"/v1/queries/"+url.PathEscape(name)+"/changes?snapshot=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/changes: status %d", resp.StatusCode)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var rec map[string]json.RawMessage
		decodeJSON(t, "/changes", sc.Bytes(), &rec)
		switch string(rec["type"]) {
		case `"snapshot"`:
			out = append(out, rec)
		case `"snapshot_end"`:
			return out
		}
	}
	t.Fatalf("/changes ended before snapshot_end: %v", sc.Err())
	return nil
}

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

// TestSQLLimits: a statement over 1 MiB is a 413, one nested over 1,000
// levels a 422 naming the clause, a table of more than 4,096 columns a 422;
// each names its limit, and the server keeps answering GET /v1/queries
// while it refuses them (100,000 nested ABS calls made it hang). A table
// of 4,096 columns works, SELECT * over it too.
func TestSQLLimits(t *testing.T) {
	srv := startServer(t)
	srv.sql(t, `CREATE TABLE lt (k BIGINT, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE VIEW lt_v AS SELECT k, COUNT(*) AS n FROM lt GROUP BY k`)

	// While the deep statement is refused, GET /v1/queries answers.
	deep := "CREATE VIEW lt_deep AS SELECT " + strings.Repeat("ABS(", 100000) + "k" + strings.Repeat(")", 100000) + " AS a FROM lt"
	done := make(chan problem, 1)
	go func() {
		r, err := srv.try(http.MethodPost, "/v1/sql", "application/sql", nil, []byte(deep))
		if err != nil {
			done <- problem{Detail: err.Error()}
			return
		}
		p := problem{httpStatus: r.status}
		json.Unmarshal(r.body, &p.fields)
		p.Detail, _ = p.fields["detail"].(string)
		done <- p
	}()
	// GET /v1/queries answers within 10 s (the base binary planned the
	// statement under the engine's lock for over a minute) until the deep
	// statement is answered, and for 3 s at least.
	var p problem
	answered, until := false, time.Now().Add(3*time.Second)
	for !answered || time.Now().Before(until) {
		select {
		case p = <-done:
			answered = true
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.base+"/v1/queries", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("GET /v1/queries while 100,000 nested ABS calls are sent: %v", err)
		}
		resp.Body.Close()
		time.Sleep(250 * time.Millisecond)
	}
	if p.httpStatus != http.StatusUnprocessableEntity || !strings.Contains(p.Detail, "an expression is nested more than 1000 levels deep in select list item 1") {
		t.Errorf("100,000 nested ABS: %s, want 422 naming the limit", p)
	}
	// The plan of a query is still rendered for GET /v1/queries.
	if st := srv.status(t, "/v1/queries"); st != http.StatusOK {
		t.Fatalf("GET /v1/queries: %d", st)
	}

	for _, c := range []struct {
		name, sql string
		status    int
		want      string
	}{
		{"statement over 1 MiB", wideDDL("lt_huge", 80000), http.StatusRequestEntityTooLarge, "statement 0: the statement is 1.1 MiB"},
		{"columns over 4096", wideDDL("lt_wide", 4096), http.StatusUnprocessableEntity, "table lt_wide has 4097 columns, over the limit of 4096 columns per table"},
		{"nested WHERE", "CREATE VIEW lt_w AS SELECT k FROM lt WHERE " + strings.Repeat("(", 1001) + "k > 0" + strings.Repeat(")", 1001), http.StatusUnprocessableEntity, "nested more than 1000 levels deep in WHERE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := srv.sqlError(t, c.sql)
			if p.httpStatus != c.status || !strings.Contains(p.Detail, c.want) {
				t.Errorf("got %s, want %d %q", p, c.status, c.want)
			}
			srv.alive(t)
		})
	}
	if st := srv.status(t, "/v1/tables/lt_wide"); st != http.StatusNotFound {
		t.Errorf("GET /v1/tables/lt_wide: %d, want 404: the refused table was kept", st)
	}

	// 4,096 columns: the table, SELECT * over it and its results.
	srv.sql(t, wideDDL("lt_max", 4095)+";\nCREATE VIEW lt_star AS SELECT * FROM lt_max")
	srv.waitRunning(t, "lt_star")
	srv.ingest(t, "lt_max", "application/x-ndjson", []byte(`{"ts": "2024-01-01T00:00:00.000Z", "c4094": 7, "c0": 1}`+"\n"), 1)
	srv.checkpoint(t)
	rs := srv.results(t, "lt_star")
	if len(rs.Columns) != 4096 || len(rs.Rows) != 1 || fmt.Sprint(rs.Rows[0]["c4094"]) != "7" {
		t.Fatalf("SELECT * over 4096 columns: %d columns, rows %.200v", len(rs.Columns), rs.Rows)
	}
	ex := srv.sql(t, "EXPLAIN SELECT * FROM lt_max")
	if len(ex) != 1 || !strings.Contains(fmt.Sprint(ex[0].Rows[0]["plan"]), "c4094#4095") {
		t.Fatalf("EXPLAIN: %.300v", ex)
	}
}
