package op

import (
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// BenchmarkEval measures compiled expressions per row: an op is one
// evaluation of the expression over a row of [BIGINT, DOUBLE, VARCHAR,
// TIMESTAMP]. (GREATEST and LEAST allocate their argument slice per row
// today: strictN.)
func BenchmarkEval(b *testing.B) {
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	i, f, s, ts := col(0, plan.TypeBigint), col(1, plan.TypeDouble), col(2, plan.TypeVarchar), col(3, plan.TypeTimestamp)
	k := func(v plan.Value) plan.Expr { return &plan.Const{V: v} }
	call := func(fn string, t plan.Type, args ...plan.Expr) plan.Expr { return &plan.Call{Fn: fn, Args: args, T: t} }
	row := plan.Row{plan.Int(42), plan.Float(2.5), plan.Str("auction-42"), plan.Time(1700000000123)}
	for _, c := range []struct {
		name string
		e    plan.Expr
	}{
		{"arith", call("+", plan.TypeBigint, call("*", plan.TypeBigint, i, k(plan.Int(3))), k(plan.Int(1)))},
		{"compare", call("and", plan.TypeBoolean, call(">", plan.TypeBoolean, i, k(plan.Int(10))), call("<=", plan.TypeBoolean, f, k(plan.Float(9))))},
		{"mod", call("%", plan.TypeBigint, i, k(plan.Int(7)))},
		{"abs", call("abs", plan.TypeBigint, i)},
		{"round2", call("round", plan.TypeDouble, f, k(plan.Int(1)))},
		{"coalesce", call("coalesce", plan.TypeBigint, k(plan.Null), i)},
		{"greatest", call("greatest", plan.TypeBigint, i, k(plan.Int(7)), k(plan.Int(50)))},
		{"hour", call("hour", plan.TypeBigint, ts)},
		{"date_add", call("date_add", plan.TypeTimestamp, ts, k(plan.Int(60000)))},
		{"length", call("char_length", plan.TypeBigint, s)},
		{"upper", call("upper", plan.TypeVarchar, s)},
		{"concat", call("concat", plan.TypeVarchar, s, k(plan.Str("-")), i)},
		{"lpad", call("lpad", plan.TypeVarchar, s, k(plan.Int(16)), k(plan.Str("*")))},
		{"date_format", call("date_format", plan.TypeVarchar, ts, k(plan.Str("%Y-%m-%d %H:%i")))},
	} {
		e, err := Compile(c.e, &Env{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e(row)
			}
		})
	}
}
