package planner

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

var paramView = &plan.ViewDef{Name: "v", Out: plan.Schema{
	{Name: "id", Type: plan.TypeBigint}, {Name: "name", Type: plan.TypeVarchar}, {Name: "score", Type: plan.TypeDouble},
	{Name: "ts", Type: plan.TypeTimestamp}, {Name: "ok", Type: plan.TypeBoolean},
}}

func parseSelect(t *testing.T, sql string) *parser.Select {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return stmts[0].Stmt.(*parser.Select)
}

func outTypes(s plan.Schema) []plan.Type {
	out := make([]plan.Type, len(s))
	for i, c := range s {
		out[i] = c.Type
	}
	return out
}

const (
	tNull = plan.TypeNull
	tInt  = plan.TypeBigint
	tDbl  = plan.TypeDouble
	tStr  = plan.TypeVarchar
	tTime = plan.TypeTimestamp
	tBool = plan.TypeBoolean
)

// TestPrepareParamTypes: the types a pull query's parameters get when it
// is described (given, inferred from their use, else VARCHAR) and its
// result columns' types.
func TestPrepareParamTypes(t *testing.T) {
	cases := []struct {
		sql         string
		given, want []plan.Type
		out         []plan.Type
	}{
		{"SELECT id FROM v WHERE id = $1", nil, []plan.Type{tInt}, []plan.Type{tInt}},
		{"SELECT $1 FROM v", nil, []plan.Type{tStr}, []plan.Type{tStr}},
		{"SELECT $1 FROM v", []plan.Type{tInt}, []plan.Type{tInt}, []plan.Type{tInt}},
		{"SELECT score * $1, $1 FROM v", nil, []plan.Type{tDbl}, []plan.Type{tDbl, tDbl}},
		{"SELECT id FROM v WHERE ts >= $1 AND name LIKE $2", nil, []plan.Type{tTime, tStr}, []plan.Type{tInt}},
		{"SELECT id FROM v WHERE $2 AND id IN ($1, 3)", nil, []plan.Type{tInt, tBool}, []plan.Type{tInt}},
		{"SELECT id FROM v WHERE NOT $1 OR id BETWEEN $2 AND $3", nil, []plan.Type{tBool, tInt, tInt}, []plan.Type{tInt}},
		{"SELECT CAST($1 AS DOUBLE), -$2 FROM v", nil, []plan.Type{tDbl, tDbl}, []plan.Type{tDbl, tDbl}},
		{"SELECT id FROM v WHERE id = $2 AND score > $1", []plan.Type{tInt}, []plan.Type{tInt, tInt}, []plan.Type{tInt}},
		{"SELECT ts + $1 FROM v WHERE CASE id WHEN $2 THEN ok ELSE false END", nil, []plan.Type{tInt, tInt}, []plan.Type{tTime}},
		// Given types are kept; an unused one unknown is text.
		{"SELECT name FROM v WHERE name = $1", []plan.Type{tStr, tNull}, []plan.Type{tStr, tStr}, []plan.Type{tStr}},
		{"SELECT id FROM v ORDER BY $1", nil, []plan.Type{tStr}, []plan.Type{tInt}},
	}
	for _, c := range cases {
		p := PrepareParams(c.given)
		q, err := Pull(parseSelect(t, c.sql), paramView, plan.Options{}, p)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if !reflect.DeepEqual(p.Types(), c.want) {
			t.Errorf("%s given %v: parameter types %v, want %v", c.sql, c.given, p.Types(), c.want)
		}
		if got := outTypes(q.Out); !reflect.DeepEqual(got, c.out) {
			t.Errorf("%s: result types %v, want %v", c.sql, got, c.out)
		}
	}
}

// TestExecParams: a query bound with parameters plans as the same query
// with the values written in (the oracle: its plan's text).
func TestExecParams(t *testing.T) {
	cases := []struct {
		sql     string
		values  []plan.Value
		types   []plan.Type
		literal string
	}{
		{"SELECT id, $2 FROM v WHERE id = $1", []plan.Value{plan.Int(7), plan.Str("x")}, nil, "SELECT id, 'x' FROM v WHERE id = 7"},
		{"SELECT name FROM v WHERE score > $1 AND ok = $2", []plan.Value{plan.Float(1.5), plan.Bool(true)}, nil, "SELECT name FROM v WHERE score > 1.5 AND ok = true"},
		{"SELECT id FROM v WHERE ts >= $1", []plan.Value{plan.Time(1704164645678)}, nil, "SELECT id FROM v WHERE ts >= '2024-01-02 03:04:05.678'"},
		// A NULL of a known type: a NULL cast to it, so the result keeps its type.
		{"SELECT id FROM v WHERE id = $1", []plan.Value{plan.Null}, []plan.Type{tInt}, "SELECT id FROM v WHERE id = CAST(NULL AS SIGNED)"},
	}
	for _, c := range cases {
		p := ExecParams(c.values, c.types)
		q, err := Pull(parseSelect(t, c.sql), paramView, plan.Options{}, p)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		want, err := Pull(parseSelect(t, c.literal), paramView, plan.Options{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.literal, err)
		}
		// The names of expression columns differ ($2 and 'x'): compare the
		// plans' expressions and types.
		if q.Filter.String() != want.Filter.String() || !reflect.DeepEqual(outTypes(q.Out), outTypes(want.Out)) {
			t.Errorf("%s bound: filter %s, out %v; want %s, out %v", c.sql, q.Filter, outTypes(q.Out), want.Filter, outTypes(want.Out))
		}
		for i := range q.Project {
			if q.Project[i].String() != want.Project[i].String() {
				t.Errorf("%s: column %d is %s, want %s", c.sql, i, q.Project[i], want.Project[i])
			}
		}
	}
}

// TestParamErrors: $n outside the parameters given, positioned at its $.
func TestParamErrors(t *testing.T) {
	cases := []struct {
		sql    string
		params *Params
		n      string
	}{
		{"SELECT id FROM v WHERE id = $3 OR id = $1", ExecParams([]plan.Value{plan.Int(1), plan.Int(2)}, nil), "$3"},
		{"SELECT $0 FROM v", PrepareParams(nil), "$0"},
		{"SELECT id FROM v WHERE name = '$1' AND id = $1", nil, "$1"},
	}
	for _, c := range cases {
		sql := c.sql
		_, err := Pull(parseSelect(t, sql), paramView, plan.Options{}, c.params)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("%s: err %v", sql, err)
		}
		if want := "there is no parameter " + c.n; pe.Msg != want {
			t.Errorf("%s: %q, want %q", sql, pe.Msg, want)
		}
		if want := strings.LastIndex(sql, c.n) + 1; pe.Offset != want {
			t.Errorf("%s: offset %d, want %d", sql, pe.Offset, want)
		}
	}
}

// TestExplainContinuousParam: EXPLAIN of a SELECT that plans as a view
// (over a table) refuses a parameter as a stored query's, at the $n.
func TestExplainContinuousParam(t *testing.T) {
	const sql = "EXPLAIN SELECT auction FROM bids WHERE price > $1"
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	for _, params := range []*Params{nil, ExecParams([]plan.Value{plan.Int(1)}, nil), PrepareParams(nil)} {
		_, err := Explain(stmts[0].Stmt.(*parser.Explain), testTables(t), plan.Options{}, params)
		var pe *Error
		if !errors.As(err, &pe) || !strings.HasPrefix(pe.Msg, "parameters ($1) are not allowed in EXPLAIN of a continuous query") || pe.Offset != strings.Index(sql, "$1")+1 {
			t.Errorf("params %v: %v", params, err)
		}
	}
}
