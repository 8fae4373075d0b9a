package httpapi

import (
	"strings"
	"testing"
)

// TestResultsCSVNull: in CSV results NULL is the empty field and an empty
// string the quoted "" (they looked the same); fields with commas,
// quotes, line breaks or a leading space are quoted, quotes doubled; rows
// come in key order (an append-only view: the order of ingest).
func TestResultsCSVNull(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sql(`CREATE TABLE t (k BIGINT, s VARCHAR(16), d DOUBLE, b BOOLEAN, ts TIMESTAMP(3)) ENGINE=http;
		CREATE VIEW v AS SELECT k, s, d, b, ts FROM t`)
	e.ingest("t", `{"k": 0, "s": null, "d": null, "b": null, "ts": null}
{"k": 1, "s": "", "d": 0.5, "b": true, "ts": 1704067201000}
{"k": null, "s": "a,b", "d": "NaN", "b": false, "ts": "2024-01-01T00:00:02.5Z"}
{"k": 3, "s": "q\"x", "d": 1e21, "b": null, "ts": null}
{"k": 4, "s": " lead", "d": "-Infinity", "b": null, "ts": null}
{"k": 5, "s": "two\nlines", "d": -0.0, "b": null, "ts": null}
`)
	e.checkpoint()
	r := e.get("/v1/queries/v/results?format=csv")
	if r.status != 200 {
		t.Fatalf("csv: %s", r)
	}
	want := `k,s,d,b,ts
0,,,,
1,"",0.5,true,2024-01-01T00:00:01.000Z
,"a,b",NaN,false,2024-01-01T00:00:02.500Z
3,"q""x",1e+21,,
4," lead",-Infinity,,
5,"two
lines",0,,
`
	if got := string(r.body); got != want {
		t.Errorf("csv:\n%s\nwant\n%s", got, want)
	}
	// The JSON of the same rows: null and "" apart, as always.
	_, rows := e.results("v", "")
	if len(rows) != 6 || rows[0]["s"] != nil || rows[1]["s"] != "" {
		t.Errorf("json rows %v", rows)
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Errorf("Content-Type %q", r.header.Get("Content-Type"))
	}
}
