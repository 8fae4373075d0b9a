package op

import (
	"slices"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestAggregateRows: the rows a running aggregation gives over a slice,
// against sums worked out by hand: one row per group in the order of its
// first row, HAVING applied, and one row without keys even over no rows.
func TestAggregateRows(t *testing.T) {
	col := func(i int, ty plan.Type) *plan.ColRef { return &plan.ColRef{Index: i, T: ty} }
	// Input rows (k, x); post-aggregation row (k, COUNT(*), SUM(x)).
	keyed := &plan.Aggregate{Keys: []int{0}, EmitMode: plan.EmitChanges,
		Aggs:   []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggSum, Arg: 1, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeVarchar), col(1, plan.TypeBigint), col(2, plan.TypeBigint)},
		Having: &plan.Call{Fn: ">", Args: []plan.Expr{col(1, plan.TypeBigint), &plan.Const{V: plan.Int(1)}}, T: plan.TypeBoolean}}
	rows := []plan.Row{
		{plan.Str("b"), plan.Int(5)}, {plan.Str("a"), plan.Int(1)}, {plan.Str("b"), plan.Null},
		{plan.Null, plan.Int(2)}, {plan.Str("a"), plan.Int(3)}, {plan.Null, plan.Int(4)}, {plan.Str("c"), plan.Int(9)},
	}
	got, err := AggregateRows(keyed, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.Row{
		{plan.Str("b"), plan.Int(2), plan.Int(5)},
		{plan.Str("a"), plan.Int(2), plan.Int(4)},
		{plan.Null, plan.Int(2), plan.Int(6)},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}

	global := &plan.Aggregate{EmitMode: plan.EmitChanges,
		Aggs:   []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggSum, Arg: 0, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeBigint), col(1, plan.TypeBigint)}}
	for _, c := range []struct {
		rows []plan.Row
		want plan.Row
	}{
		{nil, plan.Row{plan.Int(0), plan.Null}},
		{[]plan.Row{{plan.Int(2)}, {plan.Null}, {plan.Int(40)}}, plan.Row{plan.Int(3), plan.Int(42)}},
	} {
		got, err := AggregateRows(global, c.rows)
		if err != nil || len(got) != 1 || !slices.Equal(got[0], c.want) {
			t.Errorf("global over %v: %v, %v; want %v", c.rows, got, err, c.want)
		}
	}

	if _, err := AggregateRows(&plan.Aggregate{Windowed: true}, nil); err == nil {
		t.Error("a windowed aggregation: no error")
	}
	over := &plan.Aggregate{EmitMode: plan.EmitChanges, Aggs: []plan.Agg{{Fn: plan.AggSum, Arg: 0, T: plan.TypeBigint}}, Output: []plan.Expr{col(0, plan.TypeBigint)}}
	if _, err := AggregateRows(over, []plan.Row{{plan.Int(1 << 62)}, {plan.Int(1 << 62)}}); err == nil {
		t.Error("a SUM that overflows: no error")
	}
}
