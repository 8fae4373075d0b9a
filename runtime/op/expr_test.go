package op

import (
	"math"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// eval compiles fn(args...) of result type t and evaluates it on no row.
func eval(t *testing.T, fn string, typ plan.Type, args ...plan.Value) plan.Value {
	t.Helper()
	v, _ := evalEnv(t, fn, typ, args...)
	return v
}

// evalEnv is eval, also returning how many results out of range the
// evaluation counted (Env.OutOfRange).
func evalEnv(t *testing.T, fn string, typ plan.Type, args ...plan.Value) (plan.Value, int64) {
	t.Helper()
	es := make([]plan.Expr, len(args))
	for i, a := range args {
		es[i] = &plan.Const{V: a}
	}
	env := &Env{}
	f, err := Compile(&plan.Call{Fn: fn, Args: es, T: typ}, env)
	if err != nil {
		t.Fatal(err)
	}
	return f(nil), env.OutOfRange
}

// TestTimeArithmeticRange: time arithmetic, casts and functions that leave
// the TIMESTAMP range are NULL (as MySQL's DATE_ADD and CAST are), never a
// wrapped value; BIGINT arithmetic that overflows is NULL; arithmetic
// beyond the range is counted (ts - INTERVAL 1 DAY at int64's minimum
// wrapped to a time in 292278994).
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
		got, n := evalEnv(t, c.fn, c.typ, c.args...)
		if got != c.want {
			t.Errorf("%s: %s(%v) = %v, want %v", c.name, c.fn, c.args, got, c.want)
		}
		// Arithmetic beyond the range is counted (the query's
		// out_of_range); a CAST, like MySQL's, and a TIMESTAMPDIFF of
		// text that is no time are NULL without being counted.
		want := int64(0)
		if c.want.IsNull() && c.fn != "cast" && c.fn != "timestampdiff" {
			want = 1
		}
		if n != want {
			t.Errorf("%s: counted %d results out of range, want %d", c.name, n, want)
		}
	}
}

// TestCompareNaN: NaN equals NaN and sorts above every number, as in
// PostgreSQL; it equalled every number before (NaN = 1 was true, and MIN
// and MAX depended on the order rows came in). -0 equals 0.
func TestCompareNaN(t *testing.T) {
	nan, inf := plan.Float(math.NaN()), plan.Float(math.Inf(1))
	for _, c := range []struct {
		x, y plan.Value
		want int
	}{
		{nan, nan, 0},
		{nan, plan.Float(math.Float64frombits(0xfff8000000000001)), 0},
		{nan, plan.Int(1), 1},
		{plan.Int(1), nan, -1},
		{nan, inf, 1},
		{inf, plan.Float(math.MaxFloat64), 1},
		{plan.Float(math.Inf(-1)), plan.Int(math.MinInt64), -1},
		{plan.Float(math.Copysign(0, -1)), plan.Float(0), 0},
		{nan, plan.Str("NaN"), 0},
	} {
		if got := value.Compare(c.x, c.y); got != c.want {
			t.Errorf("value.Compare(%v, %v) = %d, want %d", c.x, c.y, got, c.want)
		}
	}
	if got := eval(t, "=", plan.TypeBoolean, nan, plan.Float(1)); got != plan.Bool(false) {
		t.Errorf("NaN = 1: %v, want FALSE", got)
	}
	if got := eval(t, "greatest", plan.TypeDouble, plan.Float(1), nan, plan.Float(2)); !math.IsNaN(got.F()) {
		t.Errorf("GREATEST(1, NaN, 2) = %v, want NaN", got)
	}
	// MIN and MAX over the same values in any order.
	vals := []plan.Value{plan.Float(3), nan, plan.Float(-1), inf}
	for _, order := range [][]int{{0, 1, 2, 3}, {1, 0, 3, 2}, {3, 2, 1, 0}} {
		mn, mx := plan.Null, plan.Null
		for _, k := range order {
			if mn.IsNull() || value.Compare(vals[k], mn) < 0 {
				mn = vals[k]
			}
			if mx.IsNull() || value.Compare(vals[k], mx) > 0 {
				mx = vals[k]
			}
		}
		if mn != plan.Float(-1) || !math.IsNaN(mx.F()) {
			t.Errorf("order %v: min %v max %v, want -1 and NaN", order, mn, mx)
		}
	}
}
