package planner

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// The aggregates beyond COUNT, SUM, AVG, MIN and MAX (runtime/op's
// aggs.go): what they need of the planner.

// retractable reports whether an aggregation over an updating input can
// take fn's rows back. APPROX_COUNT_DISTINCT cannot: a HyperLogLog sketch
// keeps the largest rank each register saw, not which rows gave it.
func retractable(fn plan.AggFn) bool { return fn != plan.AggApproxCountDistinct }

// neverNull reports whether fn has a value over no values (BIT_AND's is
// all bits set, BIT_OR's and BIT_XOR's 0, APPROX_COUNT_DISTINCT's 0, as in
// MySQL).
func neverNull(fn plan.AggFn) bool {
	switch fn {
	case plan.AggBitAnd, plan.AggBitOr, plan.AggBitXor, plan.AggApproxCountDistinct:
		return true
	}
	return false
}

// bindGroupConcat binds GROUP_CONCAT([DISTINCT] x, ... [ORDER BY k, ...]
// [SEPARATOR 's']): its value is CONCAT(x, ...) (a row with a NULL
// argument adds nothing, as in MySQL), its ORDER BY keys are input columns
// of their own. DISTINCT with ORDER BY keys other than the call's own
// arguments is refused: which row's key would order a value shared by
// several rows is not defined.
func bindGroupConcat(f *parser.Func, base *scope, ekeys *exprKeys) (plan.Agg, aggKey, []plan.Expr, error) {
	fail := func(err error) (plan.Agg, aggKey, []plan.Expr, error) { return plan.Agg{}, aggKey{}, nil, err }
	args := make([]plan.Expr, 0, len(f.Args))
	for _, a := range f.Args {
		if containsAggregate(a) {
			return fail(errf(f.Name, "aggregates cannot be nested"))
		}
		x, err := base.bind(a)
		if err != nil {
			return fail(err)
		}
		args = append(args, x)
	}
	val := args[0]
	if len(args) > 1 || val.Type() != plan.TypeVarchar {
		var err error
		if val, err = call("concat", args); err != nil {
			return fail(err)
		}
	}
	c := &plan.Concat{Sep: f.Sep, Distinct: f.Distinct}
	in := []plan.Expr{val}
	var key strings.Builder
	fmt.Fprintf(&key, "%t %q", f.Distinct, f.Sep)
	for _, o := range f.Order {
		if _, ok := o.Expr.(*parser.Position); ok {
			return fail(errf("ORDER", "GROUP_CONCAT's ORDER BY takes expressions, not positions"))
		}
		if containsAggregate(o.Expr) {
			return fail(errf(f.Name, "aggregates cannot be nested"))
		}
		x, err := base.bind(o.Expr)
		if err != nil {
			return fail(err)
		}
		if f.Distinct && !hasExpr(args, x, ekeys) {
			return fail(errf("DISTINCT", "GROUP_CONCAT(DISTINCT ...) may ORDER BY its own arguments only: which row's %s would order a value several rows share is not defined", exprName(x)))
		}
		c.Order = append(c.Order, plan.AggOrder{Desc: o.Desc})
		in = append(in, x)
		fmt.Fprintf(&key, " %d %t", ekeys.id(x), o.Desc)
	}
	a := plan.Agg{Fn: plan.AggGroupConcat, T: plan.TypeVarchar, Concat: c}
	return a, aggKey{fn: a.Fn, arg: ekeys.id(val), concat: key.String()}, in, nil
}

func hasExpr(list []plan.Expr, x plan.Expr, ekeys *exprKeys) bool {
	for _, e := range list {
		if ekeys.id(e) == ekeys.id(x) {
			return true
		}
	}
	return false
}
