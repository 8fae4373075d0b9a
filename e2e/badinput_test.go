package e2e

// Bad input: every rejected request gets the right status and a message that
// names the problem, leaves nothing behind, and leaves the server serving
// (GET /healthz after each case). TestBadInput: SQL and rows; one server
// (with a 4096-byte body limit) runs all cases in order; good rows are
// posted before and after them, and at the end the views must equal the
// oracle over the good rows only. TestBadRequests: HTTP requests (token,
// origin, endpoints, methods, limits, slow clients) against a server with
// --token. TestBadConfig: serve's flags and data directory. RELIABILITY.md
// ("Bad input and limits") lists every case with the answer it gets.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	maxBody    = 4096 // --max-body for TestBadInput
	maxRowSize = 1024 // --max-row-size for TestBadInput
)

// alive checks that the server still serves: its process runs and
// GET /healthz answers 200.
func (s *server) alive(t testing.TB) {
	t.Helper()
	select {
	case <-s.exited:
		t.Fatalf("the server process exited: %v", s.cmd.ProcessState)
	default:
	}
	if st := s.status(t, "/healthz"); st != http.StatusOK {
		t.Fatalf("GET /healthz: %d after the bad input", st)
	}
}

// gzipped compresses b.
func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBadInput(t *testing.T) {
	srv := startServer(t, "--max-body", fmt.Sprint(maxBody), "--max-row-size", fmt.Sprint(maxRowSize))
	srv.sql(t, bidsDDL)
	srv.sql(t, `CREATE VIEW bi_tumble AS SELECT window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS volume FROM bids GROUP BY TUMBLE(ts, '10s'), auction`)
	oracles := map[string]Query{ // the views that read bids, and their oracles
		"bi_tumble": {
			Window: TumbleWindow(10_000), GroupBy: []string{"auction"},
			Aggs: []Agg{{As: "n", Func: CountStar}, {As: "volume", Func: Sum, Arg: colRef("price")}},
		},
	}
	srv.waitRunning(t, "bi_tumble")

	good := genBids(testSeed(t, 100), 30)
	srv.postRows(t, "bids", good[:10])
	srv.postRowsArray(t, "bids", good[10:20]) // a JSON array is accepted too
	posted := good[:20]
	srv.checkpoint(t)

	end, haveEnd := srv.endOffset(t, "bids")
	if !haveEnd {
		t.Log("GET /v1/tables/bids reports no end_offset: only the final results show that nothing was appended")
	}
	nothingAppended := func(t *testing.T) {
		t.Helper()
		if !haveEnd {
			return
		}
		if got, ok := srv.endOffset(t, "bids"); !ok || got != end {
			t.Errorf("table bids: end_offset %d (reported: %v), want %d: the request appended rows", got, ok, end)
			end = got // report each request's rows once
		}
	}
	noQuery := func(t *testing.T, name string) {
		t.Helper()
		if st := srv.status(t, "/v1/queries/"+name); st != http.StatusNotFound {
			t.Errorf("GET /v1/queries/%s: status %d, want 404: the rejected statement was kept", name, st)
		}
	}
	wantStatus := func(t *testing.T, p problem, statuses ...int) {
		t.Helper()
		for _, s := range statuses {
			if p.httpStatus == s {
				return
			}
		}
		t.Errorf("status %d, want one of %v: %s", p.httpStatus, statuses, p)
	}
	wantMention := func(t *testing.T, p problem, words ...string) {
		t.Helper()
		for _, w := range words {
			if !p.mentions(w) {
				t.Errorf("error does not name %q: %s", w, p)
			}
		}
	}
	wantField := func(t *testing.T, p problem, name string, want int64) {
		t.Helper()
		if got, ok := p.intField(name); !ok || got != want {
			t.Errorf("problem member %q = %v, want %d: %s", name, p.fields[name], want, p)
		}
	}

	// SQL.

	t.Run("sql/malformed", func(t *testing.T) {
		p := srv.sqlError(t, "SELECT FROM x")
		wantStatus(t, p, http.StatusBadRequest)
		wantField(t, p, "statement", 0)
		wantField(t, p, "line", 1)
		if col, ok := p.intField("column"); !ok || col < 1 {
			t.Errorf("problem member column = %v, want a position >= 1: %s", p.fields["column"], p)
		}
	})

	t.Run("sql/second_statement", func(t *testing.T) {
		// Line 1 is statement 0, valid; line 2 is statement 1, with a typo.
		p := srv.sqlError(t, "CREATE VIEW bi_first AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction;\n"+
			"CREATE VIEW bi_second AS SELEC auction FROM bids")
		wantStatus(t, p, http.StatusBadRequest)
		wantField(t, p, "statement", 1)
		wantField(t, p, "line", 2)
		if col, ok := p.intField("column"); !ok || col < 1 {
			t.Errorf("problem member column = %v, want a position >= 1: %s", p.fields["column"], p)
		}
		noQuery(t, "bi_second")
		if st := srv.status(t, "/v1/queries/bi_first"); st != http.StatusOK {
			t.Fatalf("GET /v1/queries/bi_first: status %d, want 200: statement 0 should stay applied", st)
		}
		oracles["bi_first"] = Query{GroupBy: []string{"auction"}, Aggs: []Agg{{As: "n", Func: CountStar}}}
		srv.waitRunning(t, "bi_first")
	})

	t.Run("sql/misspelled_hint", func(t *testing.T) {
		p := srv.sqlError(t, `CREATE VIEW bi_hint AS SELECT /*+ SET_VAR(emit_modee=changes) */ window_start, window_end, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s')`)
		wantStatus(t, p, http.StatusBadRequest, http.StatusUnprocessableEntity)
		wantMention(t, p, "emit_modee")
		noQuery(t, "bi_hint")
	})

	t.Run("sql/unknown_hint", func(t *testing.T) {
		// The parser only warns about unknown hints; warnings are errors.
		p := srv.sqlError(t, `CREATE VIEW bi_setvar AS SELECT /*+ SETVAR(emit_mode=changes) */ window_start, window_end, COUNT(*) AS n FROM bids GROUP BY TUMBLE(ts, '10s')`)
		wantStatus(t, p, http.StatusBadRequest, http.StatusUnprocessableEntity)
		wantMention(t, p, "SETVAR")
		noQuery(t, "bi_setvar")
	})

	t.Run("sql/unknown_column", func(t *testing.T) {
		p := srv.sqlError(t, `CREATE VIEW bi_unknown AS SELECT auction, COUNT(*) AS n FROM bids WHERE pricee > 1 GROUP BY auction`)
		wantStatus(t, p, http.StatusUnprocessableEntity)
		wantMention(t, p, "pricee")
		noQuery(t, "bi_unknown")
	})

	t.Run("sql/running_on_window_close", func(t *testing.T) {
		p := srv.sqlError(t, `CREATE VIEW bi_owc AS SELECT /*+ SET_VAR(emit_mode=on_window_close) */ auction, COUNT(*) AS n FROM bids GROUP BY auction`)
		wantStatus(t, p, http.StatusUnprocessableEntity)
		wantMention(t, p, "on_window_close")
		noQuery(t, "bi_owc")
	})

	t.Run("sql/duplicate_view", func(t *testing.T) {
		p := srv.sqlError(t, `CREATE VIEW bi_tumble AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction`)
		wantStatus(t, p, http.StatusConflict)
		wantMention(t, p, "bi_tumble")
		if q := srv.query(t, "bi_tumble"); q.SQL != "" && !strings.Contains(q.SQL, "TUMBLE") {
			t.Errorf("bi_tumble's sql is now %q: the rejected CREATE VIEW replaced it", q.SQL)
		}
	})

	t.Run("sql/drop_table_in_use", func(t *testing.T) {
		p := srv.sqlError(t, `DROP TABLE bids`)
		wantStatus(t, p, http.StatusConflict)
		for name := range oracles {
			wantMention(t, p, name)
		}
		if st := srv.status(t, "/v1/tables/bids"); st != http.StatusOK {
			t.Fatalf("GET /v1/tables/bids: status %d after a refused DROP TABLE", st)
		}
	})

	sqlCases := []struct {
		name     string
		sql      string
		status   int
		mentions []string
		absent   string // a table or view the statement must not have left
	}{
		{name: "identifier_slash", sql: "CREATE TABLE `a/b` (x BIGINT) ENGINE=http", status: 400, mentions: []string{"table", "a/b"}, absent: "a/b"},
		{name: "identifier_control", sql: "CREATE TABLE `a\x01b` (x BIGINT) ENGINE=http", status: 400, mentions: []string{"U+0001"}},
		{name: "identifier_empty", sql: "CREATE TABLE `` (x BIGINT) ENGINE=http", status: 400, mentions: []string{"empty"}},
		{name: "identifier_too_long", sql: "CREATE TABLE `" + strings.Repeat("t", 129) + "` (x BIGINT) ENGINE=http", status: 400, mentions: []string{"129 bytes long"}, absent: strings.Repeat("t", 129)},
		{name: "column_control", sql: "CREATE TABLE bi_col (`a\tb` BIGINT) ENGINE=http", status: 400, mentions: []string{"column", "U+0009"}, absent: "bi_col"},
		{name: "view_name_newline", sql: "CREATE VIEW `bi\nv` AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction", status: 400, mentions: []string{"view", "U+000A"}},
		{name: "alias_control", sql: "CREATE VIEW bi_alias AS SELECT auction AS `a\rb`, COUNT(*) AS n FROM bids GROUP BY auction", status: 400, mentions: []string{"column", "U+000D"}, absent: "bi_alias"},
		{name: "unsupported_construct", sql: "CREATE VIEW bi_over AS SELECT auction, ROW_NUMBER() OVER (ORDER BY price) AS r FROM bids", status: 422, mentions: []string{"ROW_NUMBER", "OVER"}, absent: "bi_over"},
		{name: "order_by_in_view", sql: "CREATE VIEW bi_order AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction ORDER BY n LIMIT 3", status: 422, mentions: []string{"ORDER", "LIMIT"}, absent: "bi_order"},
		{name: "unknown_table", sql: "CREATE VIEW bi_nope AS SELECT * FROM no_such_table", status: 404, mentions: []string{"no_such_table"}, absent: "bi_nope"},
		{name: "no_engine", sql: "CREATE TABLE bi_t (x BIGINT)", status: 422, mentions: []string{"ENGINE"}, absent: "bi_t"},
		{name: "engine_attribute_not_json", sql: "CREATE TABLE bi_t (x BIGINT) ENGINE=http ENGINE_ATTRIBUTE='{nope'", status: 400, mentions: []string{"ENGINE_ATTRIBUTE"}, absent: "bi_t"},
		{name: "engine_attribute_unknown_key", sql: `CREATE TABLE bi_t (x BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_tim": "ts"}'`, status: 422, mentions: []string{"event_tim", "event_time", "watermark_delay"}, absent: "bi_t"},
		{name: "engine_attribute_bad_duration", sql: `CREATE TABLE bi_t (x BIGINT, ts TIMESTAMP(3)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "5 parsecs"}'`, status: 400, mentions: []string{"watermark_delay", "parsecs"}, absent: "bi_t"},
		{name: "kafka_topic", sql: `CREATE TABLE bi_t (x BIGINT) ENGINE=kafka CONNECTION='127.0.0.1:9' ENGINE_ATTRIBUTE='{"topic": "a/b"}'`, status: 400, mentions: []string{"topic"}, absent: "bi_t"},
		{name: "postgres_schema", sql: `CREATE TABLE bi_t (x BIGINT, PRIMARY KEY (x)) ENGINE=postgres CONNECTION='postgres://127.0.0.1:9/db' ENGINE_ATTRIBUTE='{"schema": "a\\u0000b"}'`, status: 400, mentions: []string{"schema"}, absent: "bi_t"},
		{name: "file_path_escape", sql: `CREATE TABLE bi_t (x BIGINT) ENGINE=file ENGINE_ATTRIBUTE='{"path": "../../etc"}'`, status: 400, mentions: []string{"path", "relative path"}, absent: "bi_t"},
		{name: "file_side_missing", sql: `CREATE TABLE bi_t (x BIGINT, PRIMARY KEY (x)) ENGINE=file ENGINE_ATTRIBUTE='{"path": "no/such.csv", "format": "csv"}'`, status: 422, mentions: []string{"side input", "no/such.csv", "no such file"}, absent: "bi_t"},
		{name: "postgres_name_too_long", sql: "CREATE TABLE `" + strings.Repeat("p", 64) + "` (x BIGINT, PRIMARY KEY (x)) ENGINE=postgres CONNECTION='postgres://127.0.0.1:9/db'", status: 400, mentions: []string{"PostgreSQL"}, absent: strings.Repeat("p", 64)},
	}
	for _, c := range sqlCases {
		t.Run("sql/"+c.name, func(t *testing.T) {
			defer srv.alive(t)
			p := srv.sqlError(t, c.sql)
			wantStatus(t, p, c.status)
			wantMention(t, p, c.mentions...)
			wantField(t, p, "statement", 0)
			if c.absent != "" {
				if st := srv.status(t, "/v1/tables/"+url.PathEscape(c.absent)); st != http.StatusNotFound {
					t.Errorf("GET /v1/tables/%s: %d, want 404: the refused statement left a table", c.absent, st)
				}
				noQuery(t, url.PathEscape(c.absent))
			}
		})
	}

	// Ingest.

	goodLines := func(rows []Row) []any {
		out := make([]any, len(rows))
		for i, r := range rows {
			out[i] = r
		}
		return out
	}
	bid := func(edit func(m map[string]any)) map[string]any {
		m := map[string]any{"auction": 1, "bidder": 2, "price": 3, "channel": "web", "ts": "2024-01-01T00:00:01.000Z"}
		edit(m)
		return m
	}
	big := ndjson(t, genBids(1, 100))
	if len(big) <= maxBody {
		t.Fatalf("oversized body is only %d bytes", len(big))
	}
	// A gzip bomb: 1 MiB of spaces after a row, about a kilobyte compressed.
	bomb := gzipped(t, append(ndjson(t, good[20:21]), bytes.Repeat([]byte(" "), 1<<20)...))
	if len(bomb) >= maxBody {
		t.Fatalf("the gzip bomb is %d bytes compressed", len(bomb))
	}
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)

	ingestCases := []struct {
		name        string
		table       string
		contentType string
		encoding    string // Content-Encoding
		body        []byte
		status      int
		mentions    []string
		index       int // the bad row's index the error must name; -1: none
	}{
		{
			name: "type_mismatch", table: "bids", contentType: "application/x-ndjson",
			body:   ndjson(t, append(goodLines(good[20:23]), bid(func(m map[string]any) { m["price"] = "abc" }))),
			status: http.StatusBadRequest, mentions: []string{"price"}, index: 3,
		},
		{
			name: "missing_not_null", table: "bids", contentType: "application/x-ndjson",
			body:   ndjson(t, append(goodLines(good[20:21]), bid(func(m map[string]any) { delete(m, "bidder") }), good[21])),
			status: http.StatusBadRequest, mentions: []string{"bidder"}, index: 1,
		},
		{
			name: "null_for_not_null", table: "bids", contentType: "application/x-ndjson",
			body:   ndjson(t, append([]any{bid(func(m map[string]any) { m["auction"] = nil })}, goodLines(good[20:22])...)),
			status: http.StatusBadRequest, mentions: []string{"auction"}, index: 0,
		},
		{
			name: "bad_timestamp", table: "bids", contentType: "application/x-ndjson",
			body:   ndjson(t, append(goodLines(good[20:22]), bid(func(m map[string]any) { m["ts"] = "yesterday" }))),
			status: http.StatusBadRequest, mentions: []string{"ts"}, index: 2,
		},
		{
			name: "not_json", table: "bids", contentType: "application/x-ndjson",
			body:   []byte("this is not json\n"),
			status: http.StatusBadRequest, index: -1,
		},
		{
			name: "truncated_json", table: "bids", contentType: "application/x-ndjson",
			body:   append(ndjson(t, good[20:22]), []byte(`{"auction": 1, "bidder": `)...),
			status: http.StatusBadRequest, index: -1,
		},
		{
			name: "oversized", table: "bids", contentType: "application/x-ndjson",
			body:   big,
			status: http.StatusRequestEntityTooLarge, index: -1,
		},
		{
			name: "unknown_table", table: "no_such_table", contentType: "application/x-ndjson",
			body:   ndjson(t, good[20:22]),
			status: http.StatusNotFound, mentions: []string{"no_such_table"}, index: -1,
		},
		{
			name: "unknown_column", table: "bids", contentType: "application/x-ndjson",
			body:   ndjson(t, append(goodLines(good[20:22]), bid(func(m map[string]any) { m["colour"] = "red" }))),
			status: http.StatusBadRequest, mentions: []string{"colour"}, index: 2,
		},
		{
			name: "over_long_row", table: "bids", contentType: "application/x-ndjson",
			body:   ndjson(t, append(goodLines(good[20:21]), bid(func(m map[string]any) { m["channel"] = strings.Repeat("x", maxRowSize) }))),
			status: http.StatusRequestEntityTooLarge, mentions: []string{"max-row-size"}, index: 1,
		},
		{
			name: "deep_json", table: "bids", contentType: "application/x-ndjson",
			body:   append(ndjson(t, good[20:22]), []byte(`{"auction": 1, "bidder": 2, "price": `+deep+`, "ts": 1}`)...),
			status: http.StatusBadRequest, mentions: []string{"price", "max-json-depth"}, index: 2,
		},
		{
			name: "array_not_closed", table: "bids", contentType: "application/json",
			body:   []byte(`[{"auction": 1, "bidder": 2, "price": 3, "ts": 1}`),
			status: http.StatusBadRequest, mentions: []string{"array"}, index: -1,
		},
		{
			name: "wrong_content_type", table: "bids", contentType: "text/csv",
			body:   []byte("auction,bidder,price,ts\n1,2,3,1\n"),
			status: http.StatusUnsupportedMediaType, mentions: []string{"text/csv"}, index: -1,
		},
		{
			name: "gzip_bomb", table: "bids", contentType: "application/x-ndjson", encoding: "gzip",
			body:   bomb,
			status: http.StatusRequestEntityTooLarge, mentions: []string{"decompressed", "max-body"}, index: -1,
		},
		{
			name: "not_gzip", table: "bids", contentType: "application/x-ndjson", encoding: "gzip",
			body:   ndjson(t, good[20:22]),
			status: http.StatusBadRequest, mentions: []string{"gzip"}, index: -1,
		},
		{
			name: "unsupported_encoding", table: "bids", contentType: "application/x-ndjson", encoding: "br",
			body:   ndjson(t, good[20:22]),
			status: http.StatusUnsupportedMediaType, mentions: []string{"br"}, index: -1,
		},
	}
	for _, c := range ingestCases {
		t.Run("ingest/"+c.name, func(t *testing.T) {
			defer srv.alive(t)
			h := http.Header{}
			if c.encoding != "" {
				h.Set("Content-Encoding", c.encoding)
			}
			r := srv.doHeader(t, http.MethodPost, rowsPath(c.table), c.contentType, h, c.body)
			if r.status == http.StatusOK {
				t.Errorf("accepted (%s), want %d", r.body, c.status)
				nothingAppended(t)
				return
			}
			p := parseProblem(t, "POST "+rowsPath(c.table), r)
			wantStatus(t, p, c.status)
			wantMention(t, p, c.mentions...)
			if c.index >= 0 && !namesRowIndex(p, c.index) {
				t.Errorf("error does not name row index %d: %s", c.index, p)
			}
			nothingAppended(t)
		})
	}

	// After all that, the views hold exactly the good rows (some of them
	// sent gzipped).
	t.Run("ingest/gzip", func(t *testing.T) {
		r := srv.doHeader(t, http.MethodPost, rowsPath("bids"), "application/x-ndjson", http.Header{"Content-Encoding": {"gzip"}}, gzipped(t, ndjson(t, good[20:25])))
		expectOK(t, "POST gzip rows", r)
	})
	srv.postRows(t, "bids", good[25:])
	posted = good
	srv.checkpoint(t)
	for name, q := range oracles {
		t.Run("final/"+name, func(t *testing.T) {
			got := srv.results(t, name)
			want := Evaluate(bidsSource, q, posted)
			if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
				t.Errorf("%s differs from the oracle over the %d good rows: %s", name, len(posted), formatDiffs(diffs, 5))
			}
			if info := srv.query(t, name); info.Counters.RowsIn != int64(len(posted)) {
				t.Errorf("%s: counters.rows_in = %d, want %d", name, info.Counters.RowsIn, len(posted))
			}
		})
	}
}

// namesRowIndex reports whether an ingest error names the bad row's 0-based
// index: a "row" or "index" member, or text such as "row 3", "index: 3",
// "rows[3]", "#3", or "line 4" (NDJSON lines count from 1).
func namesRowIndex(p problem, index int) bool {
	for _, k := range []string{"row", "index", "row_index"} {
		if v, ok := p.intField(k); ok && v == int64(index) {
			return true
		}
	}
	re := regexp.MustCompile(fmt.Sprintf(`(?i)(\b(row|index|record|item)\s*[#:=]?\s*%d\b|\[%d\]|#%d\b|\bline\s*[#:=]?\s*%d\b)`,
		index, index, index, index+1))
	for _, v := range p.fields {
		if s, ok := v.(string); ok && re.MatchString(s) {
			return true
		}
	}
	return false
}

// TestProblemMatching checks the helpers that read error messages.
func TestProblemMatching(t *testing.T) {
	p := problem{fields: map[string]any{"status": 400, "title": "Bad Request", "detail": `row 3: column "price": want BIGINT, got string`}}
	if !namesRowIndex(p, 3) || namesRowIndex(p, 2) {
		t.Errorf("namesRowIndex on %q", p.fields["detail"])
	}
	if !p.mentions("price") || !p.mentions("PRICE") || p.mentions("pric") || p.mentions("ts") {
		t.Errorf("mentions on %q", p.fields["detail"])
	}
	for detail, want := range map[string]bool{
		"rows[3].price: not a number": true,
		"line 4: bad value":           true,
		"line 3: bad value":           false,
		"index: 3":                    true,
		"record #3":                   true,
		"2024-01-01T00:00:03.000Z":    false,
	} {
		p := problem{fields: map[string]any{"detail": detail}}
		if got := namesRowIndex(p, 3); got != want {
			t.Errorf("namesRowIndex(%q, 3) = %v, want %v", detail, got, want)
		}
	}
	p = problem{fields: map[string]any{"detail": "bad row", "row": json.Number("3")}}
	if !namesRowIndex(p, 3) {
		t.Error(`namesRowIndex ignores a "row" member`)
	}
}

// TestBadRequests: HTTP requests a server with --token refuses, each with
// its status and a problem+json naming the problem (or net/http's own
// plain answer where the request never reaches a handler), the server
// serving after each.
func TestBadRequests(t *testing.T) {
	const token = "badinput-e2e-token-0123456789"
	srv := startServer(t, "--token", token, "--max-body", fmt.Sprint(maxBody), "--max-streams", "2",
		"--header-timeout", "1s", "--body-timeout", "1s", "--max-header-bytes", "4KiB")
	auth := func(kv ...string) http.Header {
		h := http.Header{"Authorization": {"Bearer " + token}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	want := func(t *testing.T, what string, r response, status int, words ...string) problem {
		t.Helper()
		p := parseProblem(t, what, r)
		if p.httpStatus != status {
			t.Errorf("%s: status %d, want %d: %s", what, p.httpStatus, status, p)
		}
		for _, w := range words {
			if !strings.Contains(p.Detail, w) {
				t.Errorf("%s: detail does not say %q: %s", what, w, p)
			}
		}
		return p
	}
	sql := func(t *testing.T, stmts string) {
		t.Helper()
		expectOK(t, "POST /v1/sql", srv.doHeader(t, http.MethodPost, "/v1/sql", "application/sql", auth(), []byte(stmts)))
	}
	sql(t, bidsDDL+`; CREATE VIEW br_counts AS SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction`)

	cases := []struct {
		name    string
		method  string
		path    string
		ctype   string
		header  http.Header
		body    []byte
		status  int
		words   []string
		nothing string // a view that must not exist afterwards
	}{
		{name: "no_token", method: "GET", path: "/v1/tables", status: 401, words: []string{"bearer token"}},
		{name: "wrong_token", method: "GET", path: "/v1/tables", header: http.Header{"Authorization": {"Bearer " + token + "x"}}, status: 401, words: []string{"bearer token"}},
		{name: "token_without_scheme", method: "GET", path: "/v1/tables", header: http.Header{"Authorization": {token}}, status: 401},
		{name: "no_token_sql", method: "POST", path: "/v1/sql", ctype: "application/sql", body: []byte("CREATE VIEW br_x AS SELECT auction FROM bids"), status: 401, nothing: "br_x"},
		{name: "login_wrong_token", method: "POST", path: "/v1/login", ctype: "application/json", body: []byte(`{"token": "guess"}`), status: 401, words: []string{"wrong token"}},
		{name: "cross_origin_post", method: "POST", path: "/v1/sql", ctype: "application/sql", body: []byte("CREATE VIEW br_x AS SELECT auction FROM bids"),
			header: auth("Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"), status: 403, words: []string{"another origin"}, nothing: "br_x"},
		{name: "cross_origin_old_browser", method: "DELETE", path: "/v1/queries/br_counts",
			header: auth("Origin", "https://evil.example"), status: 403, words: []string{"Origin does not match Host"}},
		{name: "cross_origin_login", method: "POST", path: "/v1/login", ctype: "application/json", body: []byte(`{"token": "` + token + `"}`),
			header: http.Header{"Sec-Fetch-Site": {"cross-site"}}, status: 403},
		{name: "unknown_endpoint", method: "GET", path: "/v1/nope", header: auth(), status: 404, words: []string{"no such endpoint"}},
		{name: "unknown_query", method: "GET", path: "/v1/queries/no_such_query", header: auth(), status: 404, words: []string{"no_such_query"}},
		{name: "wrong_method", method: "PUT", path: "/v1/sql", header: auth(), status: 405, words: []string{"PUT is not allowed on /v1/sql (allowed: POST)"}},
		{name: "too_large_body", method: "POST", path: "/v1/sql", ctype: "application/sql", header: auth(), body: []byte("SHOW TABLES;" + strings.Repeat(" ", maxBody)), status: 413, words: []string{"--max-body"}},
		{name: "sql_json_unknown_member", method: "POST", path: "/v1/sql", ctype: "application/json", header: auth(), body: []byte(`{"sql": "SHOW TABLES", "timeout": "5s"}`), status: 400, words: []string{`unknown field "timeout"`}},
		{name: "sql_wrong_content_type", method: "POST", path: "/v1/sql", ctype: "multipart/form-data; boundary=x", header: auth(), body: []byte("--x--"), status: 415, words: []string{"multipart/form-data"}},
		{name: "bad_query_parameter", method: "GET", path: "/v1/queries/br_counts/results?consistency=eventual", header: auth(), status: 400, words: []string{"eventual"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer srv.alive(t)
			r := srv.doHeader(t, c.method, c.path, c.ctype, c.header, c.body)
			want(t, c.method+" "+c.path, r, c.status, c.words...)
			if c.name == "wrong_method" && r.header.Get("Allow") != "POST" {
				t.Errorf("405 with Allow %q, want POST", r.header.Get("Allow"))
			}
			if sc := r.header.Get("Set-Cookie"); sc != "" {
				t.Errorf("a refused request set a cookie: %s", sc)
			}
			if c.nothing != "" {
				if st := srv.doHeader(t, "GET", "/v1/queries/"+c.nothing, "", auth(), nil).status; st != http.StatusNotFound {
					t.Errorf("GET /v1/queries/%s: %d, want 404: the refused request created it", c.nothing, st)
				}
			}
		})
	}

	t.Run("too_many_streams", func(t *testing.T) {
		defer srv.alive(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		open := func() *http.Response {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.base+"/v1/queries/br_counts/changes", nil)
			req.Header = auth()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		for i := range 2 {
			if res := open(); res.StatusCode != 200 {
				t.Fatalf("stream %d: %d", i+1, res.StatusCode)
			}
		}
		r := srv.doHeader(t, "GET", "/v1/queries/br_counts/changes", "", auth(), nil)
		want(t, "the third stream", r, 429, "--max-streams")
		if r.header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		// Closing the streams frees their slots.
		cancel()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx2, cancel2 := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx2, "GET", srv.base+"/v1/queries/br_counts/changes", nil)
			req.Header = auth()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			cancel2()
			if res.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a stream after the others closed: still %d", res.StatusCode)
			}
			time.Sleep(pollInterval)
		}
	})

	// Below net/http's handlers: raw connections.
	addr := strings.TrimPrefix(srv.base, "http://")
	rawRequest := func(t *testing.T, data string) (string, time.Duration) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := io.WriteString(conn, data); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, err := io.ReadAll(conn)
		if err != nil {
			t.Fatalf("reading the answer: %v (got %q)", err, b)
		}
		return string(b), time.Since(start)
	}
	t.Run("slow_headers", func(t *testing.T) {
		defer srv.alive(t)
		got, took := rawRequest(t, "GET /v1/tables HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+"\r\n")
		if got != "" || took < 900*time.Millisecond {
			t.Errorf("headers never finished: after %v the server answered %q; want the connection closed after --header-timeout 1s", took, got)
		}
	})
	t.Run("slow_body", func(t *testing.T) {
		defer srv.alive(t)
		got, took := rawRequest(t, "POST /v1/sql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+"\r\nContent-Type: application/sql\r\nContent-Length: 100\r\n\r\nSHOW")
		res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
		if err != nil {
			t.Fatalf("%v: %q", err, got)
		}
		b, _ := io.ReadAll(res.Body)
		want(t, "a body that stops", response{status: res.StatusCode, header: res.Header, body: b}, 408, "--body-timeout")
		if took < 900*time.Millisecond {
			t.Errorf("408 after %v, before --body-timeout 1s", took)
		}
	})
	t.Run("too_large_headers", func(t *testing.T) {
		defer srv.alive(t)
		got, _ := rawRequest(t, "GET /v1/tables HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 431 ") {
			t.Errorf("answer %q, want 431", got)
		}
	})
	t.Run("malformed_request_line", func(t *testing.T) {
		defer srv.alive(t)
		got, _ := rawRequest(t, "HELLO\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 400 ") {
			t.Errorf("answer %q, want 400", got)
		}
	})
}

// runServe runs `streamsql serve` with args, expecting it to refuse to
// start: it must exit non-zero within a minute; its output is returned.
func runServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBinary(t), append([]string{"serve"}, args...)...)
	cmd.Env = inheritedEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("serve %q still running after a minute: it started\n%s", args, out)
	case err == nil:
		t.Fatalf("serve %q exited 0, want a refusal\n%s", args, out)
	case !errors.As(err, &ee):
		t.Fatalf("serve %q: %v", args, err)
	}
	return string(out)
}

// TestBadConfig: serve refuses bad flags and data directories at once,
// naming the problem, and never listens beyond loopback without --token;
// a running server is not disturbed by a second one on its data directory
// or port.
func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"all_interfaces_ipv4", []string{"--addr", "0.0.0.0:0"}, "--addr 0.0.0.0:0 listens on every interface, not only loopback: set --token"},
		{"all_interfaces_ipv6", []string{"--addr", "[::]:0"}, "--addr [::]:0 listens on every interface"},
		{"empty_host", []string{"--addr", ":0"}, "--addr :0 listens on every interface"},
		{"other_address", []string{"--addr", "192.0.2.1:0"}, "--addr 192.0.2.1:0 is not loopback: set --token"},
		{"unresolvable_name", []string{"--addr", "no-such-host.invalid:0"}, "cannot resolve no-such-host.invalid to check that it is loopback"},
		{"no_port", []string{"--addr", "127.0.0.1"}, "missing port in address"},
		{"bad_port", []string{"--addr", "127.0.0.1:99999"}, "bad port"},
		{"bad_duration", []string{"--checkpoint-interval", "soon"}, `invalid value "soon" for flag -checkpoint-interval`},
		{"negative_timeout", []string{"--header-timeout", "-1s"}, "--header-timeout must be a positive duration, not -1s"},
		{"zero_size", []string{"--max-body", "0"}, `bad size "0"`},
		{"bad_size_unit", []string{"--max-row-size", "12XB"}, `invalid value "12XB" for flag -max-row-size`},
		{"fractional_size", []string{"--max-header-bytes", "1.5KiB"}, `bad size "1.5KiB"`},
		{"json_depth_too_small", []string{"--max-json-depth", "1"}, "--max-json-depth must be at least 2"},
		{"no_streams", []string{"--max-streams", "0"}, "--max-streams must be at least 1"},
		{"token_with_space", []string{"--token", "a b"}, "--token must be printable ASCII without spaces"},
		{"unknown_flag", []string{"--max-bodyy", "1MiB"}, "flag provided but not defined: -max-bodyy"},
		{"stray_argument", []string{"--addr", "127.0.0.1:0", "extra"}, `serve takes no arguments, got ["extra"]`},
		{"data_dir_is_a_file", []string{"--data", file, "--addr", "127.0.0.1:0"}, "data directory " + file + ": mkdir " + file + ": not a directory"},
		{"data_dir_under_a_file", []string{"--data", filepath.Join(file, "data"), "--addr", "127.0.0.1:0"}, "not a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if !strings.Contains(strings.Join(args, " "), "--data") {
				args = append([]string{"--data", data}, args...)
			}
			if out := runServe(t, args...); !strings.Contains(out, c.want) {
				t.Errorf("serve %q said\n%s\nwant %q", args, out, c.want)
			}
		})
	}

	// A running server keeps its data directory and its port.
	srv := startServer(t)
	t.Run("data_dir_locked", func(t *testing.T) {
		defer srv.alive(t)
		out := runServe(t, "--data", srv.dataDir, "--addr", freeAddr(t))
		if want := fmt.Sprintf("data directory %s is in use by process %d", srv.dataDir, srv.cmd.Process.Pid); !strings.Contains(out, want) {
			t.Errorf("serve on a locked data directory said\n%s\nwant %q", out, want)
		}
	})
	t.Run("port_in_use", func(t *testing.T) {
		defer srv.alive(t)
		out := runServe(t, "--data", filepath.Join(dir, "other"), "--addr", strings.TrimPrefix(srv.base, "http://"))
		if !strings.Contains(out, "address already in use") {
			t.Errorf("serve on a port in use said\n%s", out)
		}
	})
}
