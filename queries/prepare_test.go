package queries

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

func paramsEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, NoSampler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL, s VARCHAR(10)) ENGINE=http;
		CREATE VIEW v AS SELECT k, s FROM t`)
	return e
}

// TestExecWithParams: ExecWith binds Params in a pull query (the oracle:
// the rows ingested, filtered here); $n beyond them is an error at the
// $n's line and column; a stored query refuses them, at the first.
func TestExecWithParams(t *testing.T) {
	e := paramsEngine(t)
	ingest(t, e, "t", `{"k": 1, "s": "a"}`+"\n"+`{"k": 2, "s": "b"}`+"\n"+`{"k": 3, "s": null}`)
	ctx := context.Background()
	if _, err := e.Checkpoint(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	res, err := e.ExecWith(ctx, "SELECT k, $2 AS tag FROM v WHERE k >= $1 ORDER BY k", ExecOptions{Params: []plan.Value{plan.Int(2), plan.Str("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Values; !reflect.DeepEqual(got, []plan.Row{{plan.Int(2), plan.Str("x")}, {plan.Int(3), plan.Str("x")}}) {
		t.Errorf("rows %v", got)
	}
	// A NULL of a declared type keeps the column's type.
	res, err = e.ExecWith(ctx, "SELECT $1 FROM v WHERE k = 1", ExecOptions{Params: []plan.Value{plan.Null}, ParamTypes: []plan.Type{plan.TypeBigint}})
	if err != nil || !reflect.DeepEqual(res[0].Types, []plan.Type{plan.TypeBigint}) || !res[0].Values[0][0].IsNull() {
		t.Errorf("typed NULL: %v %v", res, err)
	}
	for _, c := range []struct {
		sql       string
		params    []plan.Value
		line, col int
		msg       string
	}{
		{"SELECT k FROM v\n  WHERE k = $1 OR k = $3", []plan.Value{plan.Int(1), plan.Int(2)}, 2, 23, "there is no parameter $3"},
		{"SELECT k FROM v WHERE s = '$1' OR k = $1", nil, 1, 39, "there is no parameter $1"},
		{"CREATE VIEW w AS SELECT k FROM t WHERE k = $1", []plan.Value{plan.Int(1)}, 1, 44, "parameters ($1) are not allowed in CREATE VIEW: the view's query is stored and runs continuously"},
		{"INSERT INTO out_t SELECT k FROM t WHERE k = $1", nil, 1, 45, "are not allowed in INSERT INTO ... SELECT"},
		{"EXPLAIN CREATE VIEW w AS SELECT k + $2 FROM t", nil, 1, 37, "parameters ($2) are not allowed in EXPLAIN CREATE VIEW"},
	} {
		_, err := e.ExecWith(ctx, c.sql, ExecOptions{Params: c.params})
		var qe *Error
		if !errors.As(err, &qe) || qe.Line != c.line || qe.Column != c.col || !strings.Contains(qe.Detail, c.msg) {
			t.Errorf("%q: %v at %d:%d, want %q at %d:%d", c.sql, err, qeLine(qe), qeCol(qe), c.msg, c.line, c.col)
		}
	}
	if _, ok := e.views["w"]; ok {
		t.Error("the refused CREATE VIEW created w")
	}
}

func qeLine(e *Error) int {
	if e == nil {
		return 0
	}
	return e.Line
}

func qeCol(e *Error) int {
	if e == nil {
		return 0
	}
	return e.Column
}

// TestPrepare: Prepare describes what Exec answers (the oracle: the
// executed result's columns and types), runs nothing (the pull count),
// and infers the parameters' types.
func TestPrepare(t *testing.T) {
	e := paramsEngine(t)
	ctx := context.Background()
	for _, c := range []struct {
		sql    string
		params []plan.Value
	}{
		{"SELECT k, s, k * $1 AS m FROM v WHERE s = $2", []plan.Value{plan.Int(2), plan.Str("a")}},
		{"SHOW TABLES", nil},
		{"SHOW CREATE VIEW v", nil},
		{"DESCRIBE v", nil},
		{"EXPLAIN v", nil},
		{"EXPLAIN t", nil},
		{"EXPLAIN SELECT k FROM v WHERE k = $1", []plan.Value{plan.Int(1)}},
		{"SET parallelism = 2; SELECT s FROM v", nil},
	} {
		before := e.PullsRun()
		p, err := e.Prepare(c.sql, ExecOptions{})
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if n := e.PullsRun(); n != before {
			t.Errorf("%s: Prepare ran %d pull queries", c.sql, n-before)
		}
		res, err := e.ExecWith(ctx, c.sql, ExecOptions{Params: c.params})
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		last := res[len(res)-1]
		if !reflect.DeepEqual(ColumnNames(p.Columns), last.Columns) || !reflect.DeepEqual(ColumnTypes(p.Columns), last.Types) {
			t.Errorf("%s: prepared %v, executed %v %v", c.sql, p.Columns, last.Columns, last.Types)
		}
		var kinds []plan.Type
		for _, v := range c.params {
			kinds = append(kinds, v.K)
		}
		if !reflect.DeepEqual(p.ParamTypes, kinds) {
			t.Errorf("%s: parameter types %v, want %v", c.sql, p.ParamTypes, kinds)
		}
	}
	p, err := e.Prepare("CREATE VIEW w AS SELECT k FROM t", ExecOptions{})
	if err != nil || p.Columns != nil {
		t.Errorf("CREATE VIEW: %v %v", p, err)
	}
	if _, ok := e.views["w"]; ok {
		t.Error("Prepare created the view")
	}
	if _, err := e.Prepare("SELECT k FROM nope WHERE k = $1", ExecOptions{}); err == nil || !strings.Contains(err.Error(), "unknown view nope") {
		t.Errorf("unknown view: %v", err)
	}
}
