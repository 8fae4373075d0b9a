package funcs

import (
	"math"
	"strings"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// registry is every SQL function. A function is added by adding a row
// here and its cases to funcs_test.go (TestEveryFunctionHasCases) and its
// name to docs/sql.md (TestDocsNameEveryFunction).
var registry = []*Func{
	// control flow
	{Names: []string{"if"}, MinArgs: 3, MaxArgs: 3, Sig: "IF(cond, then, else)",
		Result: func(name string, a []plan.Expr) (plan.Type, error) { return Unify(name, a[1:]) },
		Bind: func(_ string, a []plan.Expr, t plan.Type) ([]plan.Expr, error) {
			rest, _ := coerceAll("", a[1:], t)
			return append([]plan.Expr{a[0]}, rest...), nil
		},
		Nulls: "a NULL condition is false; then and else as they are", Compile: compileIf},
	{Names: []string{"coalesce", "ifnull"}, MinArgs: 1, MaxArgs: -1, Sig: "COALESCE(x, ...), IFNULL(x, y)", Result: unifyArgs, Bind: coerceAll,
		Nulls: "the first argument that is not NULL; NULL when all are", Compile: compileCoalesce},
	{Names: []string{"nullif"}, MinArgs: 2, MaxArgs: 2, Sig: "NULLIF(x, y)", Result: sameAsFirst,
		Nulls: "x when either is NULL; NULL when x = y", Compile: compileNullif},
	{Names: []string{"is_true"}, MinArgs: 1, MaxArgs: 1, Sig: "IS_TRUE(x)", Result: fixed(plan.TypeBoolean),
		Nulls: "NULL is not true (FALSE)", Compile: func(_ *plan.Call, a []Eval, _ *Env) Eval {
			return func(r plan.Row) plan.Value { return plan.Bool(a[0](r).True()) }
		}},
	{Names: []string{"is_false"}, MinArgs: 1, MaxArgs: 1, Sig: "IS_FALSE(x)", Result: fixed(plan.TypeBoolean),
		Nulls: "NULL is not false (FALSE)", Compile: func(_ *plan.Call, a []Eval, _ *Env) Eval {
			return func(r plan.Row) plan.Value { v := a[0](r); return plan.Bool(!v.IsNull() && !v.True()) }
		}},
	// strings
	{Names: []string{"concat"}, MinArgs: 1, MaxArgs: -1, Sig: "CONCAT(s, ...)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileConcat},
	{Names: []string{"concat_ws"}, MinArgs: 2, MaxArgs: -1, Sig: "CONCAT_WS(sep, s, ...)", Result: fixed(plan.TypeVarchar),
		Nulls: "NULL when sep is NULL; other NULL arguments are skipped", Compile: compileConcatWS},
	{Names: []string{"upper", "ucase"}, MinArgs: 1, MaxArgs: 1, Sig: "UPPER(s)", Result: fixed(plan.TypeVarchar), Strict: true,
		Compile: str1(func(s string) plan.Value { return plan.Str(strings.ToUpper(s)) })},
	{Names: []string{"lower", "lcase"}, MinArgs: 1, MaxArgs: 1, Sig: "LOWER(s)", Result: fixed(plan.TypeVarchar), Strict: true,
		Compile: str1(func(s string) plan.Value { return plan.Str(strings.ToLower(s)) })},
	{Names: []string{"length"}, MinArgs: 1, MaxArgs: 1, Sig: "LENGTH(s)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: str1(func(s string) plan.Value { return plan.Int(int64(len(s))) })},
	{Names: []string{"char_length"}, MinArgs: 1, MaxArgs: 1, Sig: "CHAR_LENGTH(s)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: str1(func(s string) plan.Value { return plan.Int(int64(len([]rune(s)))) })},
	{Names: []string{"substring", "substr"}, MinArgs: 2, MaxArgs: 3, Sig: "SUBSTRING(s, pos[, len])", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileSubstring},
	{Names: []string{"left"}, MinArgs: 2, MaxArgs: 2, Sig: "LEFT(s, n)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileLeftRight(true)},
	{Names: []string{"right"}, MinArgs: 2, MaxArgs: 2, Sig: "RIGHT(s, n)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileLeftRight(false)},
	{Names: []string{"trim"}, MinArgs: 1, MaxArgs: 1, Sig: "TRIM(s)", Result: fixed(plan.TypeVarchar), Strict: true,
		Compile: str1(func(s string) plan.Value { return plan.Str(strings.Trim(s, " ")) })},
	{Names: []string{"ltrim"}, MinArgs: 1, MaxArgs: 1, Sig: "LTRIM(s)", Result: fixed(plan.TypeVarchar), Strict: true,
		Compile: str1(func(s string) plan.Value { return plan.Str(strings.TrimLeft(s, " ")) })},
	{Names: []string{"rtrim"}, MinArgs: 1, MaxArgs: 1, Sig: "RTRIM(s)", Result: fixed(plan.TypeVarchar), Strict: true,
		Compile: str1(func(s string) plan.Value { return plan.Str(strings.TrimRight(s, " ")) })},
	{Names: []string{"replace"}, MinArgs: 3, MaxArgs: 3, Sig: "REPLACE(s, from, to)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileReplace},
	{Names: []string{"reverse"}, MinArgs: 1, MaxArgs: 1, Sig: "REVERSE(s)", Result: fixed(plan.TypeVarchar), Strict: true,
		Compile: str1(func(s string) plan.Value {
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return plan.Str(string(rs))
		})},
	{Names: []string{"instr"}, MinArgs: 2, MaxArgs: 2, Sig: "INSTR(s, sub)", Result: fixed(plan.TypeBigint), Strict: true, Compile: compileInstr},
	{Names: []string{"lpad"}, MinArgs: 3, MaxArgs: 3, Sig: "LPAD(s, n, pad)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compilePad(true)},
	{Names: []string{"rpad"}, MinArgs: 3, MaxArgs: 3, Sig: "RPAD(s, n, pad)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compilePad(false)},
	// numbers
	{Names: []string{"abs"}, MinArgs: 1, MaxArgs: 1, Sig: "ABS(x)", Result: numericResult, Strict: true, Compile: compileAbs},
	{Names: []string{"round"}, MinArgs: 1, MaxArgs: 2, Sig: "ROUND(x[, d])", Result: numericResult, Strict: true, Compile: compileRoundTo(false)},
	{Names: []string{"floor"}, MinArgs: 1, MaxArgs: 1, Sig: "FLOOR(x)", Result: numericResult, Strict: true, Compile: keepInt(math.Floor)},
	{Names: []string{"ceil", "ceiling"}, MinArgs: 1, MaxArgs: 1, Sig: "CEIL(x)", Result: numericResult, Strict: true, Compile: keepInt(math.Ceil)},
	{Names: []string{"mod"}, Fn: "%", MinArgs: 2, MaxArgs: 2, Sig: "MOD(x, y), x % y",
		Result: func(name string, a []plan.Expr) (plan.Type, error) { return Arith(name, a[0].Type(), a[1].Type()) },
		Strict: true, Compile: compileMod},
	{Names: []string{"power", "pow"}, MinArgs: 2, MaxArgs: 2, Sig: "POWER(x, y)", Result: fixed(plan.TypeDouble), Strict: true,
		Compile: func(_ *plan.Call, a []Eval, _ *Env) Eval {
			return Strict2(a[0], a[1], func(x, y plan.Value) plan.Value { return plan.Float(math.Pow(ToFloat(x), ToFloat(y))) })
		}},
	{Names: []string{"sqrt"}, MinArgs: 1, MaxArgs: 1, Sig: "SQRT(x)", Result: fixed(plan.TypeDouble), Strict: true, Compile: finite(math.Sqrt)},
	{Names: []string{"ln"}, MinArgs: 1, MaxArgs: 1, Sig: "LN(x)", Result: fixed(plan.TypeDouble), Strict: true, Compile: finite(math.Log)},
	{Names: []string{"log10"}, MinArgs: 1, MaxArgs: 1, Sig: "LOG10(x)", Result: fixed(plan.TypeDouble), Strict: true, Compile: finite(math.Log10)},
	{Names: []string{"exp"}, MinArgs: 1, MaxArgs: 1, Sig: "EXP(x)", Result: fixed(plan.TypeDouble), Strict: true, Compile: finite(math.Exp)},
	{Names: []string{"sign"}, MinArgs: 1, MaxArgs: 1, Sig: "SIGN(x)", Result: fixed(plan.TypeBigint), Strict: true, Compile: compileSign},
	{Names: []string{"greatest"}, MinArgs: 2, MaxArgs: -1, Sig: "GREATEST(x, y, ...)", Result: unifyArgs, Bind: coerceAll, Strict: true, Compile: compileExtreme(1)},
	{Names: []string{"least"}, MinArgs: 2, MaxArgs: -1, Sig: "LEAST(x, y, ...)", Result: unifyArgs, Bind: coerceAll, Strict: true, Compile: compileExtreme(-1)},
	// time
	{Names: []string{"unix_timestamp"}, MinArgs: 1, MaxArgs: 1, Sig: "UNIX_TIMESTAMP(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(t.Unix()) })},
	{Names: []string{"unix_millis"}, MinArgs: 1, MaxArgs: 1, Sig: "UNIX_MILLIS(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(t.UnixMilli()) })},
	{Names: []string{"from_unixtime"}, MinArgs: 1, MaxArgs: 1, Sig: "FROM_UNIXTIME(seconds)", Result: fixed(plan.TypeTimestamp), Strict: true, Compile: compileFromUnixtime},
	{Names: []string{"from_unixmillis"}, MinArgs: 1, MaxArgs: 1, Sig: "FROM_UNIXMILLIS(ms)", Result: fixed(plan.TypeTimestamp), Strict: true, Compile: compileFromUnixmillis},
	{Names: []string{"date_format"}, MinArgs: 2, MaxArgs: 2, Sig: "DATE_FORMAT(ts, format)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileDateFormat},
	{Names: []string{"year"}, MinArgs: 1, MaxArgs: 1, Sig: "YEAR(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Year())) })},
	{Names: []string{"month"}, MinArgs: 1, MaxArgs: 1, Sig: "MONTH(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Month())) })},
	{Names: []string{"dayofmonth", "day"}, MinArgs: 1, MaxArgs: 1, Sig: "DAYOFMONTH(ts), DAY(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Day())) })},
	{Names: []string{"dayofweek"}, MinArgs: 1, MaxArgs: 1, Sig: "DAYOFWEEK(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Weekday()) + 1) })},
	{Names: []string{"hour"}, MinArgs: 1, MaxArgs: 1, Sig: "HOUR(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Hour())) })},
	{Names: []string{"minute"}, MinArgs: 1, MaxArgs: 1, Sig: "MINUTE(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Minute())) })},
	{Names: []string{"second"}, MinArgs: 1, MaxArgs: 1, Sig: "SECOND(ts)", Result: fixed(plan.TypeBigint), Strict: true,
		Compile: tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Second())) })},
	{Names: []string{"date_add"}, MinArgs: 2, MaxArgs: 2, Sig: "DATE_ADD(ts, INTERVAL n unit)", Result: fixed(plan.TypeTimestamp), Strict: true, Compile: compileDateAdd(1)},
	{Names: []string{"date_sub"}, MinArgs: 2, MaxArgs: 2, Sig: "DATE_SUB(ts, INTERVAL n unit)", Result: fixed(plan.TypeTimestamp), Strict: true, Compile: compileDateAdd(-1)},
	{Names: []string{"timestampdiff"}, MinArgs: 3, MaxArgs: 3, Sig: "TIMESTAMPDIFF(unit, ts1, ts2)", Result: fixed(plan.TypeBigint), Bind: bindTimestampdiff,
		Strict: true, Compile: compileTimestampdiff},
	{Names: []string{"proctime"}, MinArgs: 0, MaxArgs: 0, Sig: "PROCTIME()", Result: fixed(plan.TypeTimestamp),
		Nulls: "no arguments; the batch's processing time (TUMBLE and HOP only)", Compile: func(_ *plan.Call, _ []Eval, env *Env) Eval {
			return func(plan.Row) plan.Value { return plan.Time(env.ProcTime) }
		}},
	// aggregates
	{Names: []string{"count"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "COUNT(*), COUNT(x), COUNT(DISTINCT x)", Result: fixed(plan.TypeBigint),
		Nulls: "NULLs are not counted (COUNT(*) counts rows); 0 over no rows", Agg: plan.AggCount},
	{Names: []string{"sum"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "SUM(x)", Result: sumResult,
		Nulls: "NULLs are skipped; NULL over no values; a BIGINT overflow fails the query", Agg: plan.AggSum},
	{Names: []string{"avg"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "AVG(x)", Result: avgResult,
		Nulls: "NULLs are skipped; NULL over no values", Agg: plan.AggAvg},
	{Names: []string{"min"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "MIN(x)", Result: minMaxResult,
		Nulls: "NULLs are skipped; NULL over no values; NaN is above every number", Agg: plan.AggMin},
	{Names: []string{"max"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "MAX(x)", Result: minMaxResult,
		Nulls: "NULLs are skipped; NULL over no values; NaN is above every number", Agg: plan.AggMax},
	{Names: []string{"stddev_pop", "stddev", "std"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "STDDEV_POP(x), STDDEV(x), STD(x)", Result: momentResult,
		Nulls: "NULLs are skipped; NULL over no values; the population standard deviation (0 for one value)", Agg: plan.AggStddevPop},
	{Names: []string{"stddev_samp"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "STDDEV_SAMP(x)", Result: momentResult,
		Nulls: "NULLs are skipped; NULL over fewer than two values; the sample standard deviation", Agg: plan.AggStddevSamp},
	{Names: []string{"var_pop", "variance"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "VAR_POP(x), VARIANCE(x)", Result: momentResult,
		Nulls: "NULLs are skipped; NULL over no values; the population variance", Agg: plan.AggVarPop},
	{Names: []string{"var_samp"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "VAR_SAMP(x)", Result: momentResult,
		Nulls: "NULLs are skipped; NULL over fewer than two values; the sample variance", Agg: plan.AggVarSamp},
	{Names: []string{"bit_and"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "BIT_AND(x)", Result: bitResult,
		Nulls: "NULLs are skipped; -1 (all 64 bits set, MySQL's 18446744073709551615) over no values", Agg: plan.AggBitAnd},
	{Names: []string{"bit_or"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "BIT_OR(x)", Result: bitResult,
		Nulls: "NULLs are skipped; 0 over no values", Agg: plan.AggBitOr},
	{Names: []string{"bit_xor"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "BIT_XOR(x)", Result: bitResult,
		Nulls: "NULLs are skipped; 0 over no values", Agg: plan.AggBitXor},
	{Names: []string{"approx_count_distinct"}, Kind: Aggregate, MinArgs: 1, MaxArgs: 1, Sig: "APPROX_COUNT_DISTINCT(x)", Result: fixed(plan.TypeBigint),
		Nulls: "NULLs are not counted; 0 over no values; a HyperLogLog estimate (precision 14: about 0.8% standard error, exact while small); append-only inputs only", Agg: plan.AggApproxCountDistinct},
	{Names: []string{"group_concat"}, Kind: Aggregate, MinArgs: 1, MaxArgs: -1, Sig: "GROUP_CONCAT([DISTINCT] x, ... [ORDER BY k [ASC|DESC], ...] [SEPARATOR 's'])", Result: fixed(plan.TypeVarchar),
		Nulls: "rows with a NULL argument are skipped; NULL over no values; ',' separates by default; cut at 1024 bytes (group_concat_max_len)", Agg: plan.AggGroupConcat},
}

// Implementations. Each runs once per query and returns the per-row
// closure.

func compileIf(_ *plan.Call, a []Eval, _ *Env) Eval {
	return func(r plan.Row) plan.Value {
		if a[0](r).True() {
			return a[1](r)
		}
		return a[2](r)
	}
}

func compileCoalesce(_ *plan.Call, a []Eval, _ *Env) Eval {
	return func(r plan.Row) plan.Value {
		for _, e := range a {
			if v := e(r); !v.IsNull() {
				return v
			}
		}
		return plan.Null
	}
}

func compileNullif(_ *plan.Call, a []Eval, _ *Env) Eval {
	return func(r plan.Row) plan.Value {
		x, y := a[0](r), a[1](r)
		if !x.IsNull() && !y.IsNull() && Compare(x, y) == 0 {
			return plan.Null
		}
		return x
	}
}

func compileExtreme(want int) func(*plan.Call, []Eval, *Env) Eval {
	return func(_ *plan.Call, a []Eval, _ *Env) Eval {
		return StrictN(a, func(vs []plan.Value) plan.Value {
			best := vs[0]
			for _, v := range vs[1:] {
				if Compare(v, best) == want {
					best = v
				}
			}
			return best
		})
	}
}

// str1 is a strict function of one argument as a string.
func str1(f func(string) plan.Value) func(*plan.Call, []Eval, *Env) Eval {
	return func(_ *plan.Call, a []Eval, _ *Env) Eval {
		return Strict1(a[0], func(v plan.Value) plan.Value { return f(ToString(v)) })
	}
}

func compileConcat(_ *plan.Call, a []Eval, _ *Env) Eval {
	return StrictN(a, func(vs []plan.Value) plan.Value {
		var b strings.Builder
		for _, v := range vs {
			b.WriteString(ToString(v))
		}
		return plan.Str(b.String())
	})
}

func compileConcatWS(_ *plan.Call, a []Eval, _ *Env) Eval {
	return func(r plan.Row) plan.Value {
		sep := a[0](r)
		if sep.IsNull() {
			return plan.Null
		}
		var parts []string
		for _, e := range a[1:] {
			if v := e(r); !v.IsNull() {
				parts = append(parts, ToString(v))
			}
		}
		return plan.Str(strings.Join(parts, ToString(sep)))
	}
}

func compileReplace(_ *plan.Call, a []Eval, _ *Env) Eval {
	return StrictN(a, func(vs []plan.Value) plan.Value {
		return plan.Str(strings.ReplaceAll(ToString(vs[0]), ToString(vs[1]), ToString(vs[2])))
	})
}

func compileInstr(_ *plan.Call, a []Eval, _ *Env) Eval {
	return StrictN(a, func(vs []plan.Value) plan.Value {
		s, sub := ToString(vs[0]), ToString(vs[1])
		i := strings.Index(s, sub)
		if i < 0 {
			return plan.Int(0)
		}
		return plan.Int(int64(len([]rune(s[:i]))) + 1)
	})
}

func compileSubstring(_ *plan.Call, a []Eval, _ *Env) Eval {
	return StrictN(a, func(vs []plan.Value) plan.Value {
		rs := []rune(ToString(vs[0]))
		pos := ToInt(vs[1])
		n := int64(len(rs))
		var start int64
		switch {
		case pos > 0:
			start = pos - 1
		case pos < 0:
			start = n + pos
		default:
			return plan.Str("")
		}
		if start < 0 || start > n {
			return plan.Str("")
		}
		end := n
		if len(vs) == 3 {
			l := ToInt(vs[2])
			if l <= 0 {
				return plan.Str("")
			}
			if l < end-start { // not start+l < end: that overflows for a huge l
				end = start + l
			}
		}
		return plan.Str(string(rs[start:end]))
	})
}

func compileLeftRight(left bool) func(*plan.Call, []Eval, *Env) Eval {
	return func(_ *plan.Call, a []Eval, _ *Env) Eval {
		return StrictN(a, func(vs []plan.Value) plan.Value {
			rs := []rune(ToString(vs[0]))
			n := ToInt(vs[1])
			if n <= 0 {
				return plan.Str("")
			}
			if n > int64(len(rs)) {
				n = int64(len(rs))
			}
			if left {
				return plan.Str(string(rs[:n]))
			}
			return plan.Str(string(rs[int64(len(rs))-n:]))
		})
	}
}

func compilePad(left bool) func(*plan.Call, []Eval, *Env) Eval {
	return func(_ *plan.Call, a []Eval, _ *Env) Eval {
		return StrictN(a, func(vs []plan.Value) plan.Value {
			rs := []rune(ToString(vs[0]))
			n := ToInt(vs[1])
			pad := []rune(ToString(vs[2]))
			if n < 0 || n > MaxStringLen {
				return plan.Null
			}
			if n <= int64(len(rs)) {
				return plan.Str(string(rs[:n]))
			}
			if len(pad) == 0 {
				return plan.Null
			}
			fill := make([]rune, 0, n-int64(len(rs)))
			for int64(len(fill)) < n-int64(len(rs)) {
				fill = append(fill, pad[len(fill)%len(pad)])
			}
			if left {
				return plan.Str(string(fill) + string(rs))
			}
			return plan.Str(string(rs) + string(fill))
		})
	}
}

func compileAbs(c *plan.Call, a []Eval, env *Env) Eval {
	t := c.T
	return Strict1(a[0], func(v plan.Value) plan.Value {
		if t == plan.TypeDouble {
			return plan.Float(math.Abs(v.F()))
		}
		if v.I == math.MinInt64 {
			return env.OutOfRangeNull()
		}
		if v.I < 0 {
			return plan.Int(-v.I)
		}
		return plan.Int(v.I)
	})
}

// keepInt is FLOOR, CEIL and ROUND without digits: f over a DOUBLE, an
// integer as it is.
func keepInt(f func(float64) float64) func(*plan.Call, []Eval, *Env) Eval {
	return func(c *plan.Call, a []Eval, _ *Env) Eval {
		t := c.T
		return Strict1(a[0], func(v plan.Value) plan.Value {
			if t == plan.TypeDouble {
				return plan.Float(f(v.F()))
			}
			return plan.Int(v.I) // FLOOR, CEIL and ROUND of an integer
		})
	}
}

// compileMod is MOD and %: NULL for a zero divisor, as in MySQL (not a
// range error).
func compileMod(c *plan.Call, a []Eval, _ *Env) Eval {
	t := c.T
	return Strict2(a[0], a[1], func(x, y plan.Value) plan.Value {
		if t == plan.TypeDouble {
			return plan.Float(math.Mod(ToFloat(x), ToFloat(y)))
		}
		if ToInt(y) == 0 {
			return plan.Null // as MySQL: not a range error
		}
		return plan.Int(ToInt(x) % ToInt(y))
	})
}

// finite is a DOUBLE function whose NaN or infinite results are NULL.
func finite(f func(float64) float64) func(*plan.Call, []Eval, *Env) Eval {
	return func(_ *plan.Call, a []Eval, _ *Env) Eval {
		return Strict1(a[0], func(v plan.Value) plan.Value {
			r := f(ToFloat(v))
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return plan.Null
			}
			return plan.Float(r)
		})
	}
}

func compileSign(_ *plan.Call, a []Eval, _ *Env) Eval {
	return Strict1(a[0], func(v plan.Value) plan.Value {
		f := ToFloat(v)
		switch {
		case f > 0:
			return plan.Int(1)
		case f < 0:
			return plan.Int(-1)
		}
		return plan.Int(0)
	})
}

// tm is a strict function of a TIMESTAMP (text is cast; text that is no
// time is NULL).
func tm(f func(time.Time) plan.Value) func(*plan.Call, []Eval, *Env) Eval {
	return func(_ *plan.Call, a []Eval, _ *Env) Eval {
		return Strict1(a[0], func(v plan.Value) plan.Value {
			if v.K == plan.TypeVarchar {
				v = Cast(v, plan.TypeTimestamp)
				if v.IsNull() {
					return v
				}
			}
			return f(time.UnixMilli(v.I).UTC())
		})
	}
}

func compileFromUnixtime(_ *plan.Call, a []Eval, env *Env) Eval {
	return Strict1(a[0], func(v plan.Value) plan.Value {
		if t := Cast(plan.Float(ToFloat(v)*1000), plan.TypeTimestamp); !t.IsNull() {
			return t
		}
		return env.OutOfRangeNull()
	})
}

func compileFromUnixmillis(_ *plan.Call, a []Eval, env *Env) Eval {
	return Strict1(a[0], func(v plan.Value) plan.Value {
		if v.K == plan.TypeDouble {
			if t := Cast(v, plan.TypeTimestamp); !t.IsNull() {
				return t
			}
			return env.OutOfRangeNull()
		}
		return env.TimeValue(ToInt(v))
	})
}

func compileDateAdd(sign int64) func(*plan.Call, []Eval, *Env) Eval {
	return func(_ *plan.Call, a []Eval, env *Env) Eval {
		return Strict2(a[0], a[1], func(x, d plan.Value) plan.Value {
			x = Cast(x, plan.TypeTimestamp)
			if x.IsNull() {
				return x
			}
			ms, ok := MulInt(sign, ToInt(d))
			if !ok {
				return env.OutOfRangeNull()
			}
			if ms, ok = AddInt(x.I, ms); !ok {
				return env.OutOfRangeNull()
			}
			return env.TimeValue(ms)
		})
	}
}

// bindTimestampdiff: the unit is a constant the planner checks.
func bindTimestampdiff(_ string, a []plan.Expr, _ plan.Type) ([]plan.Expr, error) {
	c, ok := a[0].(*plan.Const)
	if !ok || c.V.K != plan.TypeVarchar {
		return nil, errorf("", "TIMESTAMPDIFF needs a unit such as SECOND")
	}
	if _, err := UnitMillis(c.V.S); err != nil {
		return nil, err
	}
	return a, nil
}

func compileTimestampdiff(c *plan.Call, a []Eval, _ *Env) Eval {
	u, _ := UnitMillis(c.Args[0].(*plan.Const).V.S) // checked by the planner (bindTimestampdiff)
	return Strict2(a[1], a[2], func(x, y plan.Value) plan.Value {
		x, y = Cast(x, plan.TypeTimestamp), Cast(y, plan.TypeTimestamp)
		if x.IsNull() || y.IsNull() {
			return plan.Null
		}
		return plan.Int((y.I - x.I) / u) // both in range: no overflow
	})
}

func compileDateFormat(c *plan.Call, a []Eval, _ *Env) Eval {
	if f, ok := constArg(c.Args, 1); ok {
		// A constant format: its result is the same for every time in one
		// unit of its finest specifier (a day for '%Y-%m-%d'), so the last
		// result is kept, with the unit it holds for. The Eval is its
		// task's: no other goroutine reads the cache.
		format := ToString(f)
		unit := dateFormatUnit(format)
		var lo, hi int64 = 1, 0 // the cached unit [lo, hi); empty
		var last plan.Value
		var buf []byte
		return Strict1(a[0], func(x plan.Value) plan.Value {
			x = Cast(x, plan.TypeTimestamp)
			if x.IsNull() {
				return x
			}
			if lo <= x.I && x.I < hi {
				return last
			}
			buf = appendDateFormat(buf[:0], time.UnixMilli(x.I).UTC(), format)
			last = plan.Str(string(buf))
			if unit > 0 {
				lo = x.I - (x.I%unit+unit)%unit
				hi = lo + unit
			}
			return last
		})
	}
	return Strict2(a[0], a[1], func(x, f plan.Value) plan.Value {
		x = Cast(x, plan.TypeTimestamp)
		if x.IsNull() {
			return x
		}
		return plan.Str(string(appendDateFormat(nil, time.UnixMilli(x.I).UTC(), ToString(f))))
	})
}

// dateFormatUnit is the span of time (ms) over which format's result
// cannot change: a day for dates, an hour, a minute, a second; 0 for
// fractions of a second (no caching).
func dateFormatUnit(format string) int64 {
	unit := int64(86_400_000)
	for i := 0; i+1 < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		switch format[i] {
		case 'H', 'k', 'h', 'I', 'p':
			unit = min(unit, 3_600_000)
		case 'i':
			unit = min(unit, 60_000)
		case 's', 'S', 'T':
			unit = min(unit, 1000)
		case 'f':
			return 0
		}
	}
	return unit
}

// appendPad appends v in decimal, zero-padded to width digits.
func appendPad(b []byte, v, width int) []byte {
	if v < 0 {
		b, v = append(b, '-'), -v
	}
	var d [20]byte
	n := len(d)
	for v >= 10 || len(d)-n < width-1 {
		n--
		d[n] = byte('0' + v%10)
		v /= 10
	}
	n--
	d[n] = byte('0' + v)
	return append(b, d[n:]...)
}

// appendDateFormat implements MySQL DATE_FORMAT's common specifiers.
func appendDateFormat(b []byte, t time.Time, f string) []byte {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b = append(b, f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			b = appendPad(b, t.Year(), 4)
		case 'y':
			b = appendPad(b, t.Year()%100, 2)
		case 'm':
			b = appendPad(b, int(t.Month()), 2)
		case 'c':
			b = appendPad(b, int(t.Month()), 1)
		case 'M':
			b = append(b, t.Month().String()...)
		case 'b':
			b = append(b, t.Month().String()[:3]...)
		case 'd':
			b = appendPad(b, t.Day(), 2)
		case 'e':
			b = appendPad(b, t.Day(), 1)
		case 'H':
			b = appendPad(b, t.Hour(), 2)
		case 'k':
			b = appendPad(b, t.Hour(), 1)
		case 'h', 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b = appendPad(b, h, 2)
		case 'i':
			b = appendPad(b, t.Minute(), 2)
		case 's', 'S':
			b = appendPad(b, t.Second(), 2)
		case 'f':
			b = appendPad(b, t.Nanosecond()/1000, 6)
		case 'p':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'T':
			b = t.AppendFormat(b, "15:04:05")
		case 'j':
			b = appendPad(b, t.YearDay(), 3)
		case 'W':
			b = append(b, t.Weekday().String()...)
		case 'a':
			b = append(b, t.Weekday().String()[:3]...)
		default:
			b = append(b, f[i])
		}
	}
	return b
}
