package parser

import (
	"reflect"
	"strings"
	"testing"
)

// TestAggregateCalls: the aggregates of issue 19 convert to Func, MySQL's
// aliases to their function's name (STD, STDDEV: stddev_pop; VARIANCE:
// var_pop), GROUP_CONCAT with its ORDER BY and separator (',' without
// one); DISTINCT of another aggregate is refused.
func TestAggregateCalls(t *testing.T) {
	col := func(n string) Expr { return &ColumnRef{Name: n} }
	cases := []struct {
		sql  string
		want *Func
	}{
		{"STD(x)", &Func{Name: "stddev_pop", Args: []Expr{col("x")}}},
		{"stddev(x)", &Func{Name: "stddev_pop", Args: []Expr{col("x")}}},
		{"STDDEV_POP(x)", &Func{Name: "stddev_pop", Args: []Expr{col("x")}}},
		{"STDDEV_SAMP(x)", &Func{Name: "stddev_samp", Args: []Expr{col("x")}}},
		{"VARIANCE(x)", &Func{Name: "var_pop", Args: []Expr{col("x")}}},
		{"VAR_SAMP(x)", &Func{Name: "var_samp", Args: []Expr{col("x")}}},
		{"BIT_AND(x)", &Func{Name: "bit_and", Args: []Expr{col("x")}}},
		{"BIT_OR(x)", &Func{Name: "bit_or", Args: []Expr{col("x")}}},
		{"BIT_XOR(x)", &Func{Name: "bit_xor", Args: []Expr{col("x")}}},
		{"APPROX_COUNT_DISTINCT(x)", &Func{Name: "approx_count_distinct", Args: []Expr{col("x")}}},
		{"GROUP_CONCAT(x)", &Func{Name: "group_concat", Args: []Expr{col("x")}, Sep: ","}},
		{"GROUP_CONCAT(DISTINCT x, y ORDER BY y DESC, x SEPARATOR '')", &Func{Name: "group_concat", Distinct: true,
			Args: []Expr{col("x"), col("y")}, Order: []OrderItem{{Expr: col("y"), Desc: true}, {Expr: col("x")}}, Sep: ""}},
		{"GROUP_CONCAT(x SEPARATOR ' | ')", &Func{Name: "group_concat", Args: []Expr{col("x")}, Sep: " | "}},
	}
	for _, c := range cases {
		stmts, err := Parse("SELECT " + c.sql + " FROM t")
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		got := stmts[0].Stmt.(*Select).Fields[0].Expr
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.sql, got, c.want)
		}
	}
	for sql, msg := range map[string]string{
		"STDDEV_POP(DISTINCT x)":       "only COUNT(DISTINCT ...) and GROUP_CONCAT(DISTINCT ...)",
		"BIT_AND(x, y)":                "syntax error",
		"JSON_ARRAYAGG(x)":             "aggregate JSON_ARRAYAGG (streamsql has COUNT,",
		"GROUP_CONCAT(x ORDER BY 1)":   "ORDER BY a position",
		"GROUP_CONCAT(x ORDER BY y 1)": "syntax error",
	} {
		_, err := Parse("SELECT " + sql + " FROM t")
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error saying %q", sql, err, msg)
		}
	}
}
