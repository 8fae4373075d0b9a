package queries

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
)

func tableDef(t *testing.T, sql string) *plan.TableDef {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	def, err := planner.Table(stmts[0].Stmt.(*parser.CreateTable), sql)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// TestDecodeUpsertRows: PRIMARY KEY tables take `_op`; a delete needs only
// its key (and event time); the operation is logged as one more value.
func TestDecodeUpsertRows(t *testing.T) {
	pk := tableDef(t, `CREATE TABLE p (id BIGINT, name VARCHAR(8) NOT NULL, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	if pk.IdleTimeout != 5000 {
		t.Fatalf("PRIMARY KEY tables default to a 5s idle timeout, got %d", pk.IdleTimeout)
	}
	rows, err := DecodeRows(pk, []byte(`{"id": 1, "name": "a", "ts": 5}
{"id": 1, "ts": 6, "_op": "delete"}
{"id": 2, "name": "b", "ts": 7, "_op": "upsert"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(rows[0]) != 4 || rows[0][3].True() || !rows[1][3].True() || rows[2][3].True() {
		t.Fatalf("rows %v: want the delete flag as a fourth value", rows)
	}
	for _, c := range []struct{ body, want string }{
		{`{"id": 1, "ts": 6, "_op": "remove"}`, `_op must be "upsert" or "delete"`},
		{`{"ts": 6, "_op": "delete"}`, "column id"},
		{`{"id": 1, "_op": "delete"}`, "event-time"},
		{`{"id": 1, "ts": 6}`, "column name"},
	} {
		_, err := DecodeRows(pk, []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", c.body, err, c.want)
		}
	}
	plain := tableDef(t, `CREATE TABLE q (id BIGINT) ENGINE=http`)
	if _, err := DecodeRows(plain, []byte(`{"id": 1, "_op": "delete"}`)); err == nil || !strings.Contains(err.Error(), "PRIMARY KEY") {
		t.Fatalf("_op on a table without a key: %v", err)
	}
}
