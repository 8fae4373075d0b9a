package op

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
)

// TestAggregateCases runs every registered aggregate (package funcs)
// through its accumulator: NULLs skipped, no values, overflow, NaN. An
// aggregate registered without cases here fails.
func TestAggregateCases(t *testing.T) {
	I, F, S, N := plan.Int, plan.Float, plan.Str, plan.Null
	type acase struct {
		variant  plan.AggFn // COUNT's variants (COUNT(*), DISTINCT), when set
		set      bool
		t        plan.Type // the argument's type
		vals     []plan.Value
		want     plan.Value
		overflow bool
	}
	cases := map[string][]acase{
		"count": {{t: plan.TypeBigint, vals: []plan.Value{I(1), N, I(1)}, want: I(2)}, {t: plan.TypeBigint, want: I(0)},
			{variant: plan.AggCountStar, set: true, t: plan.TypeBigint, vals: []plan.Value{N, N}, want: I(2)},
			{variant: plan.AggCountDistinct, set: true, t: plan.TypeVarchar, vals: []plan.Value{S("a"), N, S("a"), S(""), S("b")}, want: I(3)},
			{variant: plan.AggCountDistinct, set: true, t: plan.TypeDouble, vals: []plan.Value{F(math.NaN()), F(math.NaN()), F(0), F(math.Copysign(0, -1))}, want: I(2)}},
		"sum": {{t: plan.TypeBigint, vals: []plan.Value{I(1), N, I(-3)}, want: I(-2)}, {t: plan.TypeBigint, vals: []plan.Value{N}, want: N},
			{t: plan.TypeBigint, vals: []plan.Value{I(math.MaxInt64), I(1)}, overflow: true},
			{t: plan.TypeBigint, vals: []plan.Value{I(math.MinInt64), I(-1)}, overflow: true},
			{t: plan.TypeDouble, vals: []plan.Value{F(1.5), F(math.Inf(1))}, want: F(math.Inf(1))},
			{t: plan.TypeBoolean, vals: []plan.Value{plan.Bool(true), plan.Bool(true)}, want: I(2)}},
		"avg": {{t: plan.TypeBigint, vals: []plan.Value{I(1), I(2), N}, want: F(1.5)}, {t: plan.TypeDouble, want: N},
			{t: plan.TypeBigint, vals: []plan.Value{I(math.MaxInt64), I(math.MaxInt64)}, want: F(math.MaxInt64)}},
		"min": {{t: plan.TypeBigint, vals: []plan.Value{I(3), N, I(-1)}, want: I(-1)}, {t: plan.TypeVarchar, vals: []plan.Value{S("b"), S(""), S("a")}, want: S("")},
			{t: plan.TypeDouble, vals: []plan.Value{F(math.NaN()), F(1)}, want: F(1)}, {t: plan.TypeBigint, vals: []plan.Value{N}, want: N}},
		"max": {{t: plan.TypeBigint, vals: []plan.Value{I(3), N, I(-1)}, want: I(3)}, {t: plan.TypeDouble, vals: []plan.Value{F(1), F(math.NaN())}, want: F(math.NaN())},
			{t: plan.TypeTimestamp, vals: []plan.Value{plan.Time(plan.MinTime), plan.Time(plan.MaxTime)}, want: plan.Time(plan.MaxTime)}},
		// 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations 32.
		"var_pop": {{t: plan.TypeBigint, vals: []plan.Value{I(2), I(4), N, I(4), I(4), I(5), I(5), I(7), I(9)}, want: F(4)},
			{t: plan.TypeBigint, want: N}, {t: plan.TypeDouble, vals: []plan.Value{F(1.5)}, want: F(0)},
			{t: plan.TypeDouble, vals: []plan.Value{F(1), F(math.Inf(1))}, want: F(math.NaN())},
			// Welford keeps the digits a sum of squares loses.
			{t: plan.TypeDouble, vals: []plan.Value{F(1e9 + 4), F(1e9 + 7), F(1e9 + 13), F(1e9 + 16)}, want: F(22.5)}},
		"var_samp": {{t: plan.TypeBigint, vals: []plan.Value{I(2), I(4), I(4), I(4), I(5), I(5), I(7), I(9)}, want: F(32.0 / 7)},
			{t: plan.TypeBigint, vals: []plan.Value{I(3), N}, want: N}, {t: plan.TypeBoolean, vals: []plan.Value{plan.Bool(true), plan.Bool(false)}, want: F(0.5)}},
		"stddev_pop": {{t: plan.TypeBigint, vals: []plan.Value{I(2), I(4), I(4), I(4), I(5), I(5), I(7), I(9)}, want: F(2)},
			{t: plan.TypeDouble, vals: []plan.Value{N}, want: N},
			{t: plan.TypeBigint, vals: []plan.Value{I(math.MaxInt64), I(math.MinInt64)}, want: F(math.Exp2(63))}},
		"stddev_samp": {{t: plan.TypeBigint, vals: []plan.Value{I(1), I(3)}, want: F(math.Sqrt2)}, {t: plan.TypeBigint, vals: []plan.Value{I(1)}, want: N}},
		"bit_and": {{t: plan.TypeBigint, vals: []plan.Value{I(0b1110), N, I(0b0111)}, want: I(0b0110)}, {t: plan.TypeBigint, want: I(-1)},
			{t: plan.TypeBigint, vals: []plan.Value{N}, want: I(-1)}, {t: plan.TypeBigint, vals: []plan.Value{I(-1), I(math.MinInt64)}, want: I(math.MinInt64)}},
		"bit_or": {{t: plan.TypeBigint, vals: []plan.Value{I(0b1000), N, I(0b0011)}, want: I(0b1011)}, {t: plan.TypeBigint, want: I(0)},
			{t: plan.TypeBigint, vals: []plan.Value{I(math.MinInt64), I(1)}, want: I(math.MinInt64 + 1)}},
		"bit_xor": {{t: plan.TypeBigint, vals: []plan.Value{I(0b1010), I(0b0110), N, I(0b0110)}, want: I(0b1010)}, {t: plan.TypeBigint, want: I(0)},
			{t: plan.TypeBoolean, vals: []plan.Value{plan.Bool(true), plan.Bool(true), plan.Bool(true)}, want: I(1)}},
		"approx_count_distinct": {{t: plan.TypeVarchar, vals: []plan.Value{S("a"), N, S("a"), S(""), S("b")}, want: I(3)}, {t: plan.TypeBigint, want: I(0)},
			{t: plan.TypeDouble, vals: []plan.Value{F(0), F(math.Copysign(0, -1)), F(math.NaN()), F(math.NaN())}, want: I(2)},
			{t: plan.TypeBigint, vals: []plan.Value{I(1), S("1")}, want: I(2)}},
		// Without ORDER BY: by value; NULLs skipped; cut at 1024 bytes.
		"group_concat": {{t: plan.TypeVarchar, vals: []plan.Value{S("b"), N, S("a"), S("b"), S("")}, want: S(",a,b,b")}, {t: plan.TypeVarchar, want: N},
			{t: plan.TypeVarchar, vals: []plan.Value{N}, want: N},
			{t: plan.TypeVarchar, vals: []plan.Value{S(strings.Repeat("x", 1023)), S("é")}, want: S(strings.Repeat("x", 1023) + ",")},
			{t: plan.TypeVarchar, vals: []plan.Value{S(strings.Repeat("x", 1022)), S("é")}, want: S(strings.Repeat("x", 1022) + ",")}},
	}
	for _, f := range funcs.All() {
		if f.Kind != funcs.Aggregate {
			continue
		}
		name := f.Names[0]
		if len(cases[name]) == 0 {
			t.Errorf("aggregate %s is registered without cases here", name)
		}
		for _, c := range cases[name] {
			fn := f.Agg
			if c.set {
				fn = c.variant
			}
			rt, err := f.Result(name, []plan.Expr{&plan.Const{V: plan.Value{K: c.t}}})
			if err != nil {
				t.Fatal(err)
			}
			var a acc
			var buf []byte
			ag := &plan.Agg{Fn: fn, T: rt, Concat: &plan.Concat{Sep: ","}}
			for _, v := range c.vals {
				if fn == plan.AggGroupConcat {
					_, err = a.addConcat(ag, plan.Row{v}, &buf)
				} else {
					_, err = a.add(fn, rt, v, &buf)
				}
				if err != nil {
					break
				}
			}
			if a.i == stale && refreshes(fn) {
				a.refresh(ag, nil)
			}
			if c.overflow {
				if !errors.Is(err, errOverflow) {
					t.Errorf("%s%v: %v, want the overflow", name, c.vals, err)
				}
				continue
			}
			got := a.result(fn, rt)
			if err != nil || got.K != c.want.K || got.S != c.want.S || (got.I != c.want.I && !(math.IsNaN(got.F()) && math.IsNaN(c.want.F()))) {
				t.Errorf("%s%v = %v, %v; want %v", name, c.vals, got, err, c.want)
			}
		}
	}
}
