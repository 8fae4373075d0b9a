package queries

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamsql/streamsql/parser"
)

// TestViewKeepsItsDialect: a view written in PostgreSQL's dialect (over
// pgwire: a backslash is a character, "s" a column) reads the same after a
// restart, when its text is planned again; the same text in streamsql's
// own dialect means something else.
func TestViewKeepsItsDialect(t *testing.T) {
	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, NoSampler: true}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL, s VARCHAR(20)) ENGINE=http`)
	pg := ExecOptions{Dialect: parser.PostgreSQL}
	// In PostgreSQL's dialect 'a\' is the two characters a and \; in
	// MySQL's it would not end. "s" is the column, not the string 's'.
	if _, err := e.ExecWith(ctx, `CREATE VIEW pgv AS SELECT k, "s" AS s2 FROM t WHERE "s" = 'a\' OR s = 'it''s'`, pg); err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE VIEW myv AS SELECT k, "s" AS s2 FROM t WHERE s = 'a\\'`)
	ingest(t, e, "t", `{"k": 1, "s": "a\\"}
{"k": 2, "s": "s"}
{"k": 3, "s": "it's"}
{"k": 4, "s": "a"}
`)
	check := func(when string) {
		t.Helper()
		if _, err := e.Checkpoint(ctx, ""); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ view, want string }{
			// k, and s2: the column's value in pgv, the string "s" in myv.
			{"pgv", `[[1 a\] [3 it's]]`},
			{"myv", `[[1 s]]`},
		} {
			_, rows, err := e.Results(tc.view, true)
			if err != nil {
				t.Fatal(err)
			}
			got := "["
			for i, r := range rows {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("[%v %v]", r[0].JSON(), r[1].JSON())
			}
			if got += "]"; got != tc.want {
				t.Errorf("%s: view %s has %s, want %s", when, tc.view, got, tc.want)
			}
		}
		q, err := e.Query("pgv")
		if err != nil || q.Dialect != "postgresql" {
			t.Errorf("%s: query pgv has dialect %q (%v), want postgresql", when, q.Dialect, err)
		}
	}
	check("before a restart")
	e.Close(ctx)
	if e, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close(ctx) }()
	ingest(t, e, "t", `{"k": 5, "s": "b"}`)
	check("after a restart")
}
