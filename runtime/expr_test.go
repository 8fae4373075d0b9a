package runtime

import (
	"math"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// eval compiles fn(args...) of result type t and evaluates it on no row.
func eval(t *testing.T, fn string, typ plan.Type, args ...plan.Value) plan.Value {
	t.Helper()
	es := make([]plan.Expr, len(args))
	for i, a := range args {
		es[i] = &plan.Const{V: a}
	}
	f, err := Compile(&plan.Call{Fn: fn, Args: es, T: typ}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	return f(nil)
}

// TestTimeArithmeticRange: time arithmetic, casts and functions that leave
// the TIMESTAMP range are NULL (as MySQL's DATE_ADD and CAST are), never a
// wrapped value; BIGINT arithmetic that overflows is NULL (issue 15 item 5:
// ts - INTERVAL 1 DAY at int64's minimum wrapped to a time in 292278994).
func TestTimeArithmeticRange(t *testing.T) {
	const day = 86400000
	ts, str, i, f := plan.TypeTimestamp, plan.TypeVarchar, plan.TypeBigint, plan.TypeDouble
	for _, c := range []struct {
		name string
		fn   string
		typ  plan.Type
		args []plan.Value
		want plan.Value
	}{
		{"ts + 1 day in range", "+", ts, []plan.Value{plan.Time(0), plan.Int(day)}, plan.Time(day)},
		{"ts - 1 day before 0001", "-", ts, []plan.Value{plan.Time(plan.MinTime), plan.Int(day)}, plan.Null},
		{"ts + 1 ms past 9999", "+", ts, []plan.Value{plan.Time(plan.MaxTime), plan.Int(1)}, plan.Null},
		{"ts - a huge interval", "-", ts, []plan.Value{plan.Time(plan.MinTime), plan.Int(math.MaxInt64)}, plan.Null},
		{"ts + a huge interval", "+", ts, []plan.Value{plan.Time(plan.MaxTime), plan.Int(math.MaxInt64)}, plan.Null},
		{"the last ms", "-", ts, []plan.Value{plan.Time(plan.MaxTime), plan.Int(0)}, plan.Time(plan.MaxTime)},
		{"DATE_ADD past 9999", "date_add", ts, []plan.Value{plan.Time(plan.MaxTime), plan.Int(day)}, plan.Null},
		{"DATE_SUB before 0001", "date_sub", ts, []plan.Value{plan.Time(plan.MinTime), plan.Int(1)}, plan.Null},
		{"DATE_SUB of int64's minimum", "date_sub", ts, []plan.Value{plan.Time(0), plan.Int(math.MinInt64)}, plan.Null},
		{"DATE_ADD of text", "date_add", ts, []plan.Value{plan.Str("2024-01-01 00:00:00"), plan.Int(day)}, plan.Time(1704153600000)},
		{"FROM_UNIXTIME in range", "from_unixtime", ts, []plan.Value{plan.Float(253402300799.999)}, plan.Time(plan.MaxTime)},
		{"FROM_UNIXTIME past 9999", "from_unixtime", ts, []plan.Value{plan.Int(253402300800)}, plan.Null},
		{"FROM_UNIXTIME of 1e300", "from_unixtime", ts, []plan.Value{plan.Float(1e300)}, plan.Null},
		{"FROM_UNIXTIME of NaN", "from_unixtime", ts, []plan.Value{plan.Float(math.NaN())}, plan.Null},
		{"FROM_UNIXMILLIS of int64's maximum", "from_unixmillis", ts, []plan.Value{plan.Int(math.MaxInt64)}, plan.Null},
		{"FROM_UNIXMILLIS of int64's minimum", "from_unixmillis", ts, []plan.Value{plan.Int(math.MinInt64)}, plan.Null},
		{"FROM_UNIXMILLIS of a double", "from_unixmillis", ts, []plan.Value{plan.Float(1.6)}, plan.Time(2)},
		{"CAST of year 0", "cast", ts, []plan.Value{plan.Str("0000-06-01 00:00:00")}, plan.Null},
		{"CAST of year 0001", "cast", ts, []plan.Value{plan.Str("0001-01-01")}, plan.Time(plan.MinTime)},
		{"CAST of a BIGINT past 9999", "cast", ts, []plan.Value{plan.Int(math.MaxInt64)}, plan.Null},
		{"CAST of a DOUBLE past 9999", "cast", ts, []plan.Value{plan.Float(1e19)}, plan.Null},
		{"CAST of the TIMESTAMP range", "cast", ts, []plan.Value{plan.Int(plan.MinTime)}, plan.Time(plan.MinTime)},
		{"TIMESTAMPDIFF of bad text", "timestampdiff", i, []plan.Value{plan.Str("SECOND"), plan.Str("never"), plan.Time(0)}, plan.Null},
		{"TIMESTAMPDIFF across the range", "timestampdiff", i, []plan.Value{plan.Str("DAY"), plan.Time(plan.MinTime), plan.Time(plan.MaxTime)}, plan.Int(3652058)},
		{"BIGINT + overflow", "+", i, []plan.Value{plan.Int(math.MaxInt64), plan.Int(1)}, plan.Null},
		{"BIGINT - overflow", "-", i, []plan.Value{plan.Int(math.MinInt64), plan.Int(1)}, plan.Null},
		{"BIGINT * overflow", "*", i, []plan.Value{plan.Int(math.MaxInt64 / 2), plan.Int(3)}, plan.Null},
		{"BIGINT * -1 of the minimum", "*", i, []plan.Value{plan.Int(math.MinInt64), plan.Int(-1)}, plan.Null},
		{"BIGINT * in range", "*", i, []plan.Value{plan.Int(-3037000499), plan.Int(3037000499)}, plan.Int(-9223372030926249001)},
		{"BIGINT + in range", "+", i, []plan.Value{plan.Int(math.MaxInt64), plan.Int(math.MinInt64)}, plan.Int(-1)},
		{"negation of the minimum", "neg", i, []plan.Value{plan.Int(math.MinInt64)}, plan.Null},
		{"ABS of the minimum", "abs", i, []plan.Value{plan.Int(math.MinInt64)}, plan.Null},
		{"DIV of the minimum by -1", "div", i, []plan.Value{plan.Int(math.MinInt64), plan.Int(-1)}, plan.Null},
		{"FLOOR of a BIGINT", "floor", i, []plan.Value{plan.Int(math.MaxInt64)}, plan.Int(math.MaxInt64)},
		{"CAST of 1e300 AS BIGINT", "cast", i, []plan.Value{plan.Float(1e300)}, plan.Int(math.MaxInt64)},
		{"CAST of -1e300 AS BIGINT", "cast", i, []plan.Value{plan.Float(-1e300)}, plan.Int(math.MinInt64)},
		{"a window end past 9999 as text", "cast", str, []plan.Value{plan.Time(plan.MaxTime + 1)}, plan.Str("10000-01-01 00:00:00.000")},
		{"DOUBLE overflow stays infinite", "*", f, []plan.Value{plan.Float(1e308), plan.Int(10)}, plan.Float(math.Inf(1))},
	} {
		if got := eval(t, c.fn, c.typ, c.args...); got != c.want {
			t.Errorf("%s: %s(%v) = %v, want %v", c.name, c.fn, c.args, got, c.want)
		}
	}
}
