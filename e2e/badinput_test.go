package e2e

// Bad input: every rejected request gets the right status and a message that
// names the problem, and leaves nothing behind. One server (with a 4096-byte
// body limit) runs all cases in order; good rows are posted before and after
// them, and at the end the views must equal the oracle over the good rows
// only.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

const maxBody = 4096 // --max-body for TestBadInput

func TestBadInput(t *testing.T) {
	srv := startServer(t, "--max-body", fmt.Sprint(maxBody))
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

	ingestCases := []struct {
		name        string
		table       string
		contentType string
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
	}
	for _, c := range ingestCases {
		t.Run("ingest/"+c.name, func(t *testing.T) {
			r := srv.postRaw(t, rowsPath(c.table), c.contentType, c.body)
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

	// After all that, the views hold exactly the good rows.
	srv.postRows(t, "bids", good[20:])
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
