package funcs

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// A case calls a function on constant arguments, as the planner would bind
// it (the registry's Result and Bind) and the runtime would compile it.
type fcase struct {
	args []plan.Value
	want plan.Value
	oor  int64  // results counted out of range (Env.OutOfRange)
	err  string // the binding error instead of a value
}

var (
	I, F, S, T, B = plan.Int, plan.Float, plan.Str, plan.Time, plan.Bool
	N             = plan.Null
	nan, inf      = math.NaN(), math.Inf(1)
)

func c(want plan.Value, args ...plan.Value) fcase { return fcase{args: args, want: want} }
func oor(args ...plan.Value) fcase                { return fcase{args: args, want: N, oor: 1} }
func bad(err string, args ...plan.Value) fcase    { return fcase{args: args, err: err} }

// ms is a UTC time in epoch milliseconds, by Go's time package (the oracle).
func ms(y int, mo time.Month, d, h, mi, s, milli int) int64 {
	return time.Date(y, mo, d, h, mi, s, milli*1e6, time.UTC).UnixMilli()
}

// ts is Tuesday 2024-03-05 14:07:09.123 UTC.
var ts = T(ms(2024, 3, 5, 14, 7, 9, 123))

// cases: every registered scalar function by its first name. Expected
// values are written by hand (or by Go's strings, time and math where
// they are the definition). "MySQL:" notes where MySQL answers otherwise;
// streamsql keeps its answer.
var cases = map[string][]fcase{
	"if": {c(I(1), B(true), I(1), I(2)), c(I(2), B(false), I(1), I(2)), c(I(2), N, I(1), I(2)),
		c(S("a"), I(1), S("a"), N), c(F(1), B(true), I(1), F(2.5)), bad("IF mixes BIGINT and VARCHAR", I(0), I(1), S("x"))},
	"coalesce": {c(I(2), N, I(2)), c(N, N, N), c(F(1), I(1), F(2.5)), c(S("a"), N, S("a"), S("b")),
		bad("COALESCE mixes BIGINT and VARCHAR", I(1), S("a"))},
	"nullif": {c(N, I(1), I(1)), c(I(1), I(1), I(2)), c(N, N, I(1)), c(I(1), I(1), N), c(N, S("a"), S("a")),
		c(S("b"), S("b"), S("a")), c(N, S("1"), I(1)), // MySQL too: compared as numbers
		c(N, F(nan), F(nan))}, // NaN equals NaN (MySQL has no NaN)
	"is_true":  {c(B(true), B(true)), c(B(false), N), c(B(false), I(0)), c(B(true), I(2)), c(B(true), S("0.5")), c(B(false), S(""))},
	"is_false": {c(B(true), B(false)), c(B(false), N), c(B(false), I(1)), c(B(true), F(0)), c(B(false), F(nan))},
	"concat": {c(S("ab"), S("a"), S("b")), c(N, S("a"), N), c(S(""), S(""), S("")), c(S("x12.5"), S("x"), I(1), F(2.5)),
		c(S("1970-01-01 00:00:00.000"), T(0)), c(S("1"), B(true)), c(S("-9223372036854775808"), I(math.MinInt64)), c(S("NaN+Inf"), F(nan), F(inf))},
	"concat_ws": {c(S("a,b"), S(","), S("a"), S("b")), c(S("a,c"), S(","), S("a"), N, S("c")), c(N, N, S("a")),
		c(S(""), S(","), N), c(S("ab"), S(""), S("a"), S("b")), c(S("1-2.5"), S("-"), I(1), F(2.5))}, // as MySQL's
	"upper":       {c(S("ABC"), S("abc")), c(S(""), S("")), c(S("HÉLLO"), S("héllo")), c(S(strings.ToUpper("straße")), S("straße")), c(S("-1"), I(-1))},
	"lower":       {c(S("abc"), S("ABC")), c(S("àb"), S("ÀB")), c(S(""), S(""))},
	"length":      {c(I(3), S("abc")), c(I(0), S("")), c(I(6), S("héllo")), c(I(3), I(123)), c(I(4), F(-1.5))}, // bytes, as MySQL's
	"char_length": {c(I(5), S("héllo")), c(I(0), S("")), c(I(2), I(-1))},
	"substring": {c(S("ello"), S("hello"), I(2)), c(S("ell"), S("hello"), I(2), I(3)), c(S("llo"), S("hello"), I(-3)),
		c(S(""), S("hello"), I(0)), c(S(""), S("hello"), I(10)), c(S(""), S("hello"), I(6)), c(S("o"), S("hello"), I(5)),
		c(S(""), S("hello"), I(2), I(0)), c(S(""), S("hello"), I(2), I(-1)), c(S(""), S("hello"), I(-10)),
		c(S("él"), S("héllo"), I(2), I(2)), c(S("hello"), S("hello"), I(1), I(100)),
		c(S(""), S("hello"), I(math.MinInt64)), c(S(""), S("hello"), I(math.MaxInt64)), c(S("el"), S("hello"), S("2"), F(2.4)),
		c(S("ello"), S("hello"), I(2), I(math.MaxInt64)), c(S("lo"), S("hello"), I(-2), I(math.MaxInt64)), // MySQL's: to the end
		c(N, S("hello"), N), c(S(""), S(""), I(1))},
	"left":  {c(S("he"), S("hello"), I(2)), c(S(""), S("hello"), I(0)), c(S(""), S("hello"), I(-1)), c(S("hello"), S("hello"), I(10)), c(S("hé"), S("héllo"), I(2)), c(S("hello"), S("hello"), I(math.MaxInt64))},
	"right": {c(S("lo"), S("hello"), I(2)), c(S(""), S("hello"), I(0)), c(S(""), S("hello"), I(math.MinInt64)), c(S("hello"), S("hello"), I(10)), c(S("lo"), S("héllo"), I(2))},
	"trim":  {c(S("a b"), S("  a b  ")), c(S(""), S("   ")), c(S("\ta"), S("\ta "))}, // spaces only, as MySQL's
	"ltrim": {c(S("a b  "), S("  a b  ")), c(S(""), S(""))},
	"rtrim": {c(S("  a b"), S("  a b  ")), c(S(""), S(" "))},
	"replace": {c(S("heLLo"), S("hello"), S("l"), S("L")), c(S("ba"), S("aaa"), S("aa"), S("b")), c(S("hello"), S("hello"), S("x"), S("y")),
		c(S("xhxexlxlxox"), S("hello"), S(""), S("x")), // MySQL: 'hello' (an empty from_str replaces nothing)
		c(N, S("hello"), N, S("x"))},
	"reverse": {c(S("cba"), S("abc")), c(S("olléh"), S("héllo")), c(S(""), S("")), c(S("5.2-"), F(-2.5))},
	"instr":   {c(I(4), S("foobar"), S("bar")), c(I(0), S("foobar"), S("x")), c(I(3), S("héllo"), S("l")), c(I(1), S("abc"), S("")), c(I(0), S(""), S("a"))},
	"lpad": {c(S("***hi"), S("hi"), I(5), S("*")), c(S("abahi"), S("hi"), I(5), S("ab")), c(S("hel"), S("hello"), I(3), S("*")), // as MySQL's
		c(N, S("hi"), I(-1), S("*")), c(N, S("hi"), I(5), S("")), c(S("hi"), S("hi"), I(2), S("")), c(S(""), S("hi"), I(0), S("*")),
		c(N, S("hi"), I(MaxStringLen+1), S("*")), c(N, S("hi"), I(math.MaxInt64), S("*")), c(N, S("hi"), I(math.MinInt64), S("*")),
		c(S("üühéllo"), S("héllo"), I(7), S("ü")), c(S("001"), I(1), I(3), I(0)), c(S("hi "), S("hi "), S("3"), S("x"))},
	"rpad": {c(S("hi***"), S("hi"), I(5), S("*")), c(S("hiaba"), S("hi"), I(5), S("ab")), c(S("hel"), S("hello"), I(3), S("*")),
		c(N, S("hi"), I(-1), S("*")), c(N, S("hi"), I(5), S("")), c(S("héllo!!"), S("héllo"), I(7), S("!"))},
	"abs": {c(I(5), I(-5)), c(I(5), I(5)), c(I(0), I(0)), c(I(math.MaxInt64), I(-math.MaxInt64)),
		oor(I(math.MinInt64)), // MySQL: an out-of-range error
		c(F(2.5), F(-2.5)), c(F(inf), F(-inf)), c(F(nan), F(nan)), c(F(0), F(math.Copysign(0, -1))), c(I(1), B(true)),
		bad("needs a number, not VARCHAR", S("x"))},
	"round": {c(F(3), F(2.5)), c(F(-3), F(-2.5)), // MySQL rounds a DOUBLE half to even (2)
		c(I(7), I(7)), c(F(1.23), F(1.2345), I(2)), c(I(1200), I(1234), I(-2)), c(I(20), I(15), I(-1)), c(F(nan), F(nan)),
		c(F(1e308), F(1e308), I(2)), c(F(0), F(2.5), I(-400)), c(F(2.5), F(2.5), I(400)), c(F(1200), F(1234.5), I(-2)), c(F(-1300), F(-1250), I(-2)),
		c(F(nan), F(nan), I(-1)), c(F(inf), F(inf), I(3)), c(F(-inf), F(-inf), I(-3)), c(F(0), F(1e300), I(math.MinInt64)),
		c(F(-inf), F(-inf)), c(I(math.MaxInt64), I(math.MaxInt64)), c(I(math.MaxInt64), I(math.MaxInt64), I(1)),
		c(I(-20), I(-15), I(-1)), c(I(0), I(4), I(-1)), c(I(9000000000000000000), I(9000000000000000000), I(-18)),
		oor(I(math.MaxInt64), I(-1)), // MySQL: an out-of-range error
		c(I(0), I(4999999999999999999), I(-19)), oor(I(5000000000000000000), I(-19)), oor(I(math.MinInt64), I(-19)), c(I(0), I(math.MaxInt64), I(math.MinInt64))},
	"floor": {c(F(2), F(2.7)), c(F(-3), F(-2.5)), c(I(5), I(5)), c(F(inf), F(inf)), c(I(math.MinInt64), I(math.MinInt64))},
	"ceil":  {c(F(3), F(2.1)), c(F(-2), F(-2.5)), c(I(-5), I(-5)), c(F(-inf), F(-inf)), bad("needs a number, not TIMESTAMP(3)", ts)},
	"mod": {c(I(1), I(7), I(3)), c(I(-1), I(-7), I(3)), c(I(1), I(7), I(-3)), c(N, I(7), I(0)), c(F(1.5), F(7.5), I(2)),
		c(I(0), I(math.MinInt64), I(-1)),
		c(F(nan), F(5), F(0)), // MySQL: NULL
		c(F(nan), F(inf), F(2)), c(F(5), F(5), F(inf)),
		bad("operator MOD needs numbers, not VARCHAR and BIGINT", S("a"), I(1))},
	"power": {c(F(1024), I(2), I(10)), c(F(0.5), I(2), I(-1)), c(F(inf), I(0), I(-1)), // MySQL: an out-of-range error
		c(F(nan), F(-8), F(1.0/3)), c(F(inf), I(10), I(400)), c(F(1), F(nan), I(0))},
	"sqrt":  {c(F(2), I(4)), c(N, I(-1)), c(F(0), I(0)), c(N, F(inf)), c(N, F(nan)), c(F(3037000499.97605), I(math.MaxInt64))},
	"ln":    {c(F(0), I(1)), c(N, I(0)), c(N, I(-1)), c(F(1), F(math.E)), c(F(math.Log(math.MaxInt64)), I(math.MaxInt64))}, // MySQL: NULL for 0 and below too
	"log10": {c(F(3), I(1000)), c(N, I(0)), c(F(-2), F(0.01))},
	"exp":   {c(F(1), I(0)), c(N, I(1000)), c(F(0), I(-1000)), c(N, F(nan))}, // MySQL: EXP(1000) is an error
	"sign":  {c(I(-1), I(-3)), c(I(0), I(0)), c(I(1), F(2.5)), c(I(0), F(nan)), c(I(-1), F(-inf)), c(I(1), S("3")), c(I(-1), I(math.MinInt64))},
	"greatest": {c(I(3), I(1), I(3), I(2)), c(N, I(1), N), c(S("b"), S("a"), S("b")), c(F(2.5), I(1), F(2.5)), c(F(nan), F(nan), F(1)),
		c(T(1), T(0), T(1)), c(I(math.MaxInt64), I(math.MinInt64), I(math.MaxInt64)), bad("GREATEST mixes BIGINT and VARCHAR", I(1), S("a"))},
	"least": {c(I(1), I(3), I(1), I(2)), c(F(1), F(nan), F(1)), c(N, N, I(1)), c(S(""), S(""), S("a")), c(F(-inf), F(-inf), I(0))},
	"unix_timestamp": {c(I(1), T(1500)), c(I(-2), T(-1500)), // MySQL: 0 before 1970
		c(I(86400), S("1970-01-02")), c(N, S("not a time")), c(I(-62135596800), T(plan.MinTime)), c(I(253402300799), T(plan.MaxTime))},
	"unix_millis": {c(I(plan.MaxTime), T(plan.MaxTime)), c(I(plan.MinTime), T(plan.MinTime)), c(I(1704067200500), S("2024-01-01T00:00:00.5Z")), c(N, S(""))},
	"from_unixtime": {c(T(0), I(0)), c(T(1500), F(1.5)), c(T(-1000), I(-1)), // MySQL: NULL before 1970
		c(T(253402300799000), I(253402300799)), oor(I(253402300800)), c(T(plan.MinTime), I(-62135596800)), oor(I(-62135596801)),
		oor(F(nan)), oor(F(inf)), oor(I(math.MaxInt64)), c(T(10000), S("10"))},
	"from_unixmillis": {c(T(1500), I(1500)), oor(I(plan.MaxTime + 1)), c(T(2), F(1.6)), oor(F(nan)), c(T(plan.MinTime), I(plan.MinTime)),
		oor(I(math.MinInt64)), c(T(plan.MaxTime), F(float64(plan.MaxTime)))},
	"date_format": {c(S("2024-03-05 14:07:09"), ts, S("%Y-%m-%d %H:%i:%s")),
		c(S("24 3 March Mar 5 14 02 02 PM 14:07:09 065 Tuesday Tue 123000 09 %"), ts, S("%y %c %M %b %e %k %h %I %p %T %j %W %a %f %S %%")),
		c(S("Q D U w"), ts, S("%Q %D %U %w")), // MySQL: %D 5th, %U 09, %w 2 (streamsql writes the letter)
		c(S("100%"), ts, S("100%")), c(S("0001-01-01"), T(plan.MinTime), S("%Y-%m-%d")),
		c(S("9999-12-31 23:59:59.999000"), T(plan.MaxTime), S("%Y-%m-%d %H:%i:%s.%f")), c(S("2024"), S("2024-01-01"), S("%Y")),
		c(N, S("garbage"), S("%Y")), c(S(""), ts, S("")), c(S("12 AM"), T(0), S("%h %p")), c(S("1969"), T(-1), S("%Y"))},
	"year":       {c(I(2024), ts), c(I(1), T(plan.MinTime)), c(I(9999), T(plan.MaxTime)), c(I(1969), T(-1)), c(I(2024), S("2024-02-29")), c(N, S("x"))},
	"month":      {c(I(3), ts), c(I(1), T(plan.MinTime)), c(I(12), T(plan.MaxTime))},
	"dayofmonth": {c(I(5), ts), c(I(1), T(plan.MinTime)), c(I(31), T(plan.MaxTime)), c(I(29), S("2024-02-29"))},
	"dayofweek":  {c(I(3), ts), c(I(2), T(plan.MinTime)), c(I(6), T(plan.MaxTime)), c(I(1), S("2024-03-03"))}, // Sunday is 1, as MySQL's
	"hour":       {c(I(14), ts), c(I(0), T(plan.MinTime)), c(I(23), T(plan.MaxTime)), c(I(23), T(-1))},
	"minute":     {c(I(7), ts), c(I(59), T(plan.MaxTime))},
	"second":     {c(I(9), ts), c(I(59), T(plan.MaxTime)), c(I(59), T(-1))},
	"date_add": {c(T(ts.I+60000), ts, I(60000)), oor(T(plan.MaxTime), I(1)), oor(T(plan.MinTime), I(-1)), oor(T(0), I(math.MaxInt64)),
		oor(T(plan.MaxTime), I(math.MaxInt64)), c(T(ms(2024, 1, 2, 0, 0, 0, 0)), S("2024-01-01"), I(86400000)), c(N, S("bad"), I(1)),
		c(T(plan.MaxTime), T(plan.MinTime), I(plan.MaxTime-plan.MinTime))},
	"date_sub": {c(T(ts.I-60000), ts, I(60000)), oor(T(0), I(math.MinInt64)), oor(T(plan.MinTime), I(1)), c(T(plan.MinTime), T(plan.MaxTime), I(plan.MaxTime-plan.MinTime))},
	"timestampdiff": {c(I(1), S("SECOND"), T(0), T(1999)), c(I(-1), S("MINUTE"), T(0), T(-60001)), // truncated, as MySQL's
		c(I(3652058), S("DAY"), T(plan.MinTime), T(plan.MaxTime)), c(I(-521722), S("week"), T(plan.MaxTime), T(plan.MinTime)),
		c(I(1000), S("MILLISECOND"), S("2024-01-01"), S("2024-01-01 00:00:01")), c(N, S("SECOND"), N, T(0)), c(N, S("HOUR"), S("x"), T(0)),
		bad("INTERVAL ... MICROSECOND is finer than the millisecond timestamps streamsql keeps", S("MICROSECOND"), T(0), T(1)),
		bad("INTERVAL unit YEAR is not supported (MILLISECOND to WEEK)", S("YEAR"), T(0), T(1)), // MySQL has MONTH, QUARTER, YEAR
		bad("TIMESTAMPDIFF needs a unit such as SECOND", N, T(0), T(1))},
	"proctime": {c(T(1234))}, // the Env's ProcTime, 1234 in these tests
}

// aggTypes: every aggregate's type rule, argument type -> result type
// ("" err) or error. Evaluation is runtime's (TestAggregateCases).
var aggTypes = map[string][]struct {
	arg  plan.Type
	want plan.Type
	err  string
}{
	"count": {{plan.TypeVarchar, plan.TypeBigint, ""}, {plan.TypeNull, plan.TypeBigint, ""}, {plan.TypeDouble, plan.TypeBigint, ""}},
	"sum": {{plan.TypeBigint, plan.TypeBigint, ""}, {plan.TypeBoolean, plan.TypeBigint, ""}, {plan.TypeNull, plan.TypeBigint, ""},
		{plan.TypeDouble, plan.TypeDouble, ""}, {plan.TypeVarchar, 0, "SUM needs a number, not VARCHAR"}, {plan.TypeTimestamp, 0, "SUM needs a number, not TIMESTAMP(3)"}},
	"avg": {{plan.TypeBigint, plan.TypeDouble, ""}, {plan.TypeNull, plan.TypeDouble, ""}, {plan.TypeBoolean, plan.TypeDouble, ""},
		{plan.TypeVarchar, 0, "AVG needs a number, not VARCHAR"}},
	"min": {{plan.TypeVarchar, plan.TypeVarchar, ""}, {plan.TypeNull, plan.TypeBigint, ""}, {plan.TypeTimestamp, plan.TypeTimestamp, ""}},
	"max": {{plan.TypeDouble, plan.TypeDouble, ""}, {plan.TypeNull, plan.TypeBigint, ""}, {plan.TypeBoolean, plan.TypeBoolean, ""}},
	"stddev_pop": {{plan.TypeBigint, plan.TypeDouble, ""}, {plan.TypeDouble, plan.TypeDouble, ""}, {plan.TypeNull, plan.TypeDouble, ""},
		{plan.TypeVarchar, 0, "STDDEV_POP needs a number, not VARCHAR"}},
	"stddev_samp": {{plan.TypeBoolean, plan.TypeDouble, ""}, {plan.TypeTimestamp, 0, "STDDEV_SAMP needs a number, not TIMESTAMP(3)"}},
	"var_pop":     {{plan.TypeBigint, plan.TypeDouble, ""}, {plan.TypeVarchar, 0, "VAR_POP needs a number, not VARCHAR"}},
	"var_samp":    {{plan.TypeDouble, plan.TypeDouble, ""}, {plan.TypeNull, plan.TypeDouble, ""}},
	"bit_and": {{plan.TypeBigint, plan.TypeBigint, ""}, {plan.TypeBoolean, plan.TypeBigint, ""}, {plan.TypeNull, plan.TypeBigint, ""},
		{plan.TypeDouble, 0, "BIT_AND needs a BIGINT, not DOUBLE (CAST it to BIGINT)"}},
	"bit_or":                {{plan.TypeBigint, plan.TypeBigint, ""}, {plan.TypeVarchar, 0, "BIT_OR needs a BIGINT, not VARCHAR (CAST it to BIGINT)"}},
	"bit_xor":               {{plan.TypeBigint, plan.TypeBigint, ""}, {plan.TypeTimestamp, 0, "BIT_XOR needs a BIGINT, not TIMESTAMP(3) (CAST it to BIGINT)"}},
	"approx_count_distinct": {{plan.TypeVarchar, plan.TypeBigint, ""}, {plan.TypeDouble, plan.TypeBigint, ""}, {plan.TypeNull, plan.TypeBigint, ""}},
	// GROUP_CONCAT's argument is made a VARCHAR by the planner (CONCAT).
	"group_concat": {{plan.TypeVarchar, plan.TypeVarchar, ""}, {plan.TypeBigint, plan.TypeVarchar, ""}},
}

// bind types a call of f on constant arguments, as the planner does.
func bind(f *Func, args []plan.Value) (*plan.Call, error) {
	es := make([]plan.Expr, len(args))
	for i, a := range args {
		es[i] = &plan.Const{V: a}
	}
	name := strings.ToUpper(f.Names[0])
	t, err := f.Result(name, es)
	if err != nil {
		return nil, err
	}
	if f.Bind != nil {
		if es, err = f.Bind(name, es, t); err != nil {
			return nil, err
		}
	}
	return &plan.Call{Fn: f.Fn, Args: es, T: t}, nil
}

// compile is the runtime's compiler for what a bound call holds:
// constants, casts (from Bind) and registered functions.
func compile(t *testing.T, e plan.Expr, env *Env) Eval {
	switch e := e.(type) {
	case *plan.Const:
		v := e.V
		return func(plan.Row) plan.Value { return v }
	case *plan.Call:
		args := make([]Eval, len(e.Args))
		for i, a := range e.Args {
			args[i] = compile(t, a, env)
		}
		if e.Fn == "cast" {
			to := e.T
			return Strict1(args[0], func(v plan.Value) plan.Value { return Cast(v, to) })
		}
		f := ByFn(e.Fn)
		if f == nil || f.Compile == nil {
			t.Fatalf("no implementation of %s", e.Fn)
		}
		return f.Compile(e, args, env)
	}
	t.Fatalf("unexpected %T", e)
	return nil
}

func same(x, y plan.Value) bool {
	if x.K != y.K {
		return false
	}
	if x.K == plan.TypeDouble {
		a, b := x.F(), y.F()
		return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9*math.Abs(b)
	}
	return x.I == y.I && x.S == y.S
}

// eval binds, compiles and evaluates f on args.
func eval(t *testing.T, f *Func, args []plan.Value) (plan.Value, int64, plan.Type, error) {
	t.Helper()
	call, err := bind(f, args)
	if err != nil {
		return N, 0, 0, err
	}
	env := &Env{ProcTime: 1234}
	v := compile(t, call, env)(nil)
	return v, env.OutOfRange, call.T, nil
}

// TestFunctions runs every registered scalar function over its cases:
// the value (of the type its type rule gives, or NULL), how many results
// it counted out of range, and, for a strict function, that a NULL in any
// argument makes the result NULL.
func TestFunctions(t *testing.T) {
	for name, cs := range cases {
		f := Lookup(name)
		if f == nil || f.Kind != Scalar {
			t.Errorf("cases for %s, which is no registered scalar function", name)
			continue
		}
		for _, tc := range cs {
			got, n, typ, err := eval(t, f, tc.args)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("%s%v: error %v, want %q", name, tc.args, err, tc.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s%v: %v", name, tc.args, err)
				continue
			}
			if !same(got, tc.want) || n != tc.oor {
				t.Errorf("%s%v = %v (%d out of range), want %v (%d)", name, tc.args, got, n, tc.want, tc.oor)
			}
			if !got.IsNull() && got.K != typ {
				t.Errorf("%s%v = %v of type %s, but its type rule says %s", name, tc.args, got, got.K, typ)
			}
			if !f.Strict {
				continue
			}
			for i := range tc.args {
				args := append([]plan.Value(nil), tc.args...)
				args[i] = N
				if got, _, _, err := eval(t, f, args); err == nil && !got.IsNull() {
					t.Errorf("%s%v = %v: strict, want NULL", name, args, got)
				}
			}
		}
	}
}

// TestAggregateTypes checks every aggregate's type rule.
func TestAggregateTypes(t *testing.T) {
	for name, cs := range aggTypes {
		f := Lookup(name)
		if f == nil || f.Kind != Aggregate {
			t.Errorf("type cases for %s, which is no registered aggregate", name)
			continue
		}
		for _, tc := range cs {
			got, err := f.Result(strings.ToUpper(name), []plan.Expr{&plan.Const{V: plan.Value{K: tc.arg}}})
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Errorf("%s(%s): error %v, want %q", name, tc.arg, err, tc.err)
				}
			case err != nil || got != tc.want:
				t.Errorf("%s(%s) = %s, %v; want %s", name, tc.arg, got, err, tc.want)
			}
		}
	}
}

// TestEveryFunctionHasCases fails for a function registered without
// cases (a scalar without value cases including a NULL, an aggregate
// without type cases), and checks the registry's own consistency.
func TestEveryFunctionHasCases(t *testing.T) {
	for _, f := range All() {
		name := f.Names[0]
		switch f.Kind {
		case Scalar:
			if f.Compile == nil {
				t.Errorf("%s: no implementation", name)
			}
			cs := cases[name]
			if len(cs) == 0 {
				t.Errorf("%s is registered without cases in TestFunctions", name)
			}
			null := f.MinArgs == 0 || f.Strict // strict ones are tried with NULLs by TestFunctions
			for _, tc := range cs {
				for _, a := range tc.args {
					null = null || a.IsNull()
				}
			}
			if !null {
				t.Errorf("%s: no case with a NULL argument", name)
			}
			if !f.Strict && f.Nulls == "" {
				t.Errorf("%s: not strict, and Nulls does not say what NULL arguments give", name)
			}
		case Aggregate:
			if len(aggTypes[name]) == 0 {
				t.Errorf("aggregate %s is registered without type cases", name)
			}
			if f.Compile != nil {
				t.Errorf("aggregate %s has a scalar implementation", name)
			}
		}
		if f.Sig == "" || f.Result == nil || (f.MaxArgs >= 0 && f.MaxArgs < f.MinArgs) {
			t.Errorf("%s: incomplete entry %+v", name, f)
		}
		for _, n := range f.Names {
			if Lookup(n) != f || n != strings.ToLower(n) {
				t.Errorf("%s: name %q does not find it", name, n)
			}
		}
		if f.Kind == Scalar && ByFn(f.Fn) != f {
			t.Errorf("%s: ByFn(%q) does not find it", name, f.Fn)
		}
	}
}
