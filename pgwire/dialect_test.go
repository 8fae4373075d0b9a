package pgwire

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStandardStrings: the server reports standard_conforming_strings on,
// and statements read that way, so a client that quotes values itself
// (pgx's simple protocol doubles quotes and leaves backslashes) cannot
// end a literal with a backslash; "s" is the column s.
func TestStandardStrings(t *testing.T) {
	e := start(t, Options{})
	e.setup()
	ctx := ctxT(t)
	// A view written over pgwire, with a backslash and quoted names.
	if _, err := e.eng.Ingest(ctx, "t", `{"id": 5, "s": "back\\slash"}`, ""); err != nil {
		t.Fatal(err)
	}
	c := e.connect(pgx.QueryExecModeSimpleProtocol)
	if c.PgConn().ParameterStatus("standard_conforming_strings") != "on" {
		t.Fatal("standard_conforming_strings is not on")
	}
	if _, err := c.Exec(ctx, `CREATE VIEW w AS SELECT "id", s AS "the s" FROM t WHERE s = 'back\slash' OR "s" = 'one'`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", sql, args, err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s %v: %v", sql, args, err)
		}
		return n
	}
	for _, tc := range []struct {
		value string
		want  int
	}{
		{`x\' OR 1=1 -- `, 0}, // would be every row if \' ended the literal
		{`back\slash`, 1},
		{`one`, 1},
		{`it's`, 0},
	} {
		if n := count(`SELECT id FROM v WHERE s = $1`, tc.value); n != tc.want {
			t.Errorf("s = %q: %d rows, want %d", tc.value, n, tc.want)
		}
	}
	// The quoted identifiers of the view, over the simple protocol.
	rows, err := c.Query(ctx, `SELECT "id", "the s" FROM w ORDER BY "id"`)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for rows.Next() {
		var id int64
		var s string
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		got += fmt.Sprintf("%d:%s ", id, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got != `1:one 5:back\slash ` {
		t.Errorf("view w: %q", got)
	}
}
