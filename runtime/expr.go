package runtime

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// MaxStringLen bounds strings built by LPAD and RPAD (MySQL answers NULL
// past max_allowed_packet; so do we, past 1 MiB).
const MaxStringLen = 1 << 20

// Eval is a compiled expression: it evaluates against one row.
type Eval func(r plan.Row) plan.Value

// Env is what expressions read besides the row: the processing time of
// the batch being evaluated, set by the task loop (operators read no clock).
type Env struct {
	ProcTime int64
	// OutOfRange counts results of arithmetic beyond their type's range
	// (BIGINT overflow, TIMESTAMP arithmetic past 0001-01-01 or
	// 9999-12-31) since the task last took it: each is NULL, never a
	// wrapped value, and counted in the query's out_of_range.
	OutOfRange int64
}

// outOfRange notes a result beyond its type's range and returns what it
// is: NULL.
func (e *Env) outOfRange() plan.Value {
	if e != nil {
		e.OutOfRange++
	}
	return plan.Null
}

// timeValue is ms as a TIMESTAMP, or NULL outside the TIMESTAMP range
// (counted).
func (e *Env) timeValue(ms int64) plan.Value {
	if !plan.TimeInRange(ms) {
		return e.outOfRange()
	}
	return plan.Time(ms)
}

// Compile turns a bound expression into a closure tree, once per query.
func Compile(e plan.Expr, env *Env) (Eval, error) {
	switch e := e.(type) {
	case *plan.ColRef:
		i := e.Index
		return func(r plan.Row) plan.Value { return r[i] }, nil
	case *plan.Const:
		v := e.V
		return func(plan.Row) plan.Value { return v }, nil
	case *plan.Call:
		args := make([]Eval, len(e.Args))
		for i, a := range e.Args {
			f, err := Compile(a, env)
			if err != nil {
				return nil, err
			}
			args[i] = f
		}
		return compileCall(e, args, env)
	}
	return nil, fmt.Errorf("compile: unknown expression %T", e)
}

// CompileAll compiles a list of expressions.
func CompileAll(es []plan.Expr, env *Env) ([]Eval, error) {
	out := make([]Eval, len(es))
	for i, e := range es {
		f, err := Compile(e, env)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

func strict1(a Eval, f func(plan.Value) plan.Value) Eval {
	return func(r plan.Row) plan.Value {
		v := a(r)
		if v.IsNull() {
			return plan.Null
		}
		return f(v)
	}
}

func strict2(a, b Eval, f func(x, y plan.Value) plan.Value) Eval {
	return func(r plan.Row) plan.Value {
		x := a(r)
		if x.IsNull() {
			return plan.Null
		}
		y := b(r)
		if y.IsNull() {
			return plan.Null
		}
		return f(x, y)
	}
}

func strictN(args []Eval, f func(vs []plan.Value) plan.Value) Eval {
	return func(r plan.Row) plan.Value {
		vs := make([]plan.Value, len(args))
		for i, a := range args {
			vs[i] = a(r)
			if vs[i].IsNull() {
				return plan.Null
			}
		}
		return f(vs)
	}
}

// toString renders a value as MySQL would in string context.
func toString(v plan.Value) string {
	switch v.K {
	case plan.TypeVarchar:
		return v.S
	case plan.TypeTimestamp:
		return time.UnixMilli(v.I).UTC().Format("2006-01-02 15:04:05.000")
	case plan.TypeDouble:
		return strconv.FormatFloat(v.F(), 'g', -1, 64)
	}
	return strconv.FormatInt(v.I, 10)
}

func toFloat(v plan.Value) float64 { return value.Float(v) }

func toInt(v plan.Value) int64 {
	switch v.K {
	case plan.TypeDouble:
		return floatToInt(v.F())
	case plan.TypeVarchar:
		i, err := strconv.ParseInt(strings.TrimSpace(v.S), 10, 64)
		if err != nil {
			return floatToInt(toFloat(v))
		}
		return i
	}
	return v.I
}

// floatToInt rounds f to a BIGINT, clamped to its range (NaN is 0), as
// MySQL's CAST(... AS SIGNED) does: a conversion of a float beyond the
// range is not defined in Go.
func floatToInt(f float64) int64 {
	switch r := math.Round(f); {
	case math.IsNaN(r):
		return 0
	case r >= 1<<63:
		return math.MaxInt64
	case r < -(1 << 63):
		return math.MinInt64
	default:
		return int64(r)
	}
}

// Cast converts v to type t (NULL stays NULL).
func Cast(v plan.Value, t plan.Type) plan.Value {
	if v.IsNull() || v.K == t {
		return v
	}
	switch t {
	case plan.TypeBigint:
		return plan.Int(toInt(v))
	case plan.TypeDouble:
		return plan.Float(toFloat(v))
	case plan.TypeVarchar:
		return plan.Str(toString(v))
	case plan.TypeBoolean:
		return plan.Bool(v.True())
	case plan.TypeTimestamp:
		var ms int64
		switch v.K {
		case plan.TypeVarchar:
			var ok bool
			if ms, ok = value.ParseTime(v.S); !ok {
				return plan.Null
			}
		case plan.TypeDouble:
			f := math.Round(v.F())
			if !(float64(plan.MinTime) <= f && f <= float64(plan.MaxTime)) { // NaN too
				return plan.Null
			}
			ms = int64(f)
		default:
			ms = v.I
		}
		return timeValue(ms)
	}
	return plan.Null
}

// timeValue is ms as a TIMESTAMP, or NULL outside the TIMESTAMP range:
// what a cast gives beyond it (MySQL's CAST answers NULL there too; time
// arithmetic uses Env.timeValue, which also counts it), never a wrapped
// value.
func timeValue(ms int64) plan.Value {
	if !plan.TimeInRange(ms) {
		return plan.Null
	}
	return plan.Time(ms)
}

// addInt, subInt and mulInt are BIGINT arithmetic that reports overflow.
func addInt(x, y int64) (int64, bool) {
	s := x + y
	return s, (s > x) == (y > 0)
}

func subInt(x, y int64) (int64, bool) {
	d := x - y
	return d, (d < x) == (y > 0)
}

func mulInt(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	p := x * y
	if p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
		return 0, false
	}
	return p, true
}

// arith is a binary arithmetic operator: ints says whether its BIGINT
// (or TIMESTAMP) result is in range, else it is NULL, counted in env.
func arith(t plan.Type, a, b Eval, ints func(x, y int64) (int64, bool), floats func(x, y float64) float64, env *Env) Eval {
	if t == plan.TypeDouble {
		return strict2(a, b, func(x, y plan.Value) plan.Value { return plan.Float(floats(toFloat(x), toFloat(y))) })
	}
	return strict2(a, b, func(x, y plan.Value) plan.Value {
		v, ok := ints(toInt(x), toInt(y))
		if !ok {
			return env.outOfRange()
		}
		if t == plan.TypeTimestamp {
			return env.timeValue(v)
		}
		return plan.Int(v)
	})
}

func compileCall(c *plan.Call, a []Eval, env *Env) (Eval, error) {
	t := c.T
	switch c.Fn {
	// BIGINT arithmetic that overflows is NULL (as division by zero is),
	// and so is TIMESTAMP arithmetic that leaves the TIMESTAMP range.
	case "+":
		return arith(t, a[0], a[1], addInt, func(x, y float64) float64 { return x + y }, env), nil
	case "-":
		return arith(t, a[0], a[1], subInt, func(x, y float64) float64 { return x - y }, env), nil
	case "*":
		return arith(t, a[0], a[1], mulInt, func(x, y float64) float64 { return x * y }, env), nil
	case "%":
		return strict2(a[0], a[1], func(x, y plan.Value) plan.Value {
			if t == plan.TypeDouble {
				return plan.Float(math.Mod(toFloat(x), toFloat(y)))
			}
			if toInt(y) == 0 {
				return plan.Null // as MySQL: not a range error
			}
			return plan.Int(toInt(x) % toInt(y))
		}), nil
	case "/":
		return strict2(a[0], a[1], func(x, y plan.Value) plan.Value {
			d := toFloat(y)
			if d == 0 {
				return plan.Null
			}
			return plan.Float(toFloat(x) / d)
		}), nil
	case "div":
		return strict2(a[0], a[1], func(x, y plan.Value) plan.Value {
			if x.K == plan.TypeDouble || y.K == plan.TypeDouble {
				d := toFloat(y)
				if d == 0 {
					return plan.Null
				}
				return plan.Int(floatToInt(math.Trunc(toFloat(x) / d)))
			}
			if toInt(y) == 0 {
				return plan.Null
			}
			if toInt(x) == math.MinInt64 && toInt(y) == -1 {
				return env.outOfRange()
			}
			return plan.Int(toInt(x) / toInt(y))
		}), nil
	case "neg":
		return strict1(a[0], func(v plan.Value) plan.Value {
			if t == plan.TypeDouble {
				return plan.Float(-v.F())
			}
			if v.I == math.MinInt64 {
				return env.outOfRange()
			}
			return plan.Int(-v.I)
		}), nil
	case "=", "<>", "<", "<=", ">", ">=":
		test := map[string]func(int) bool{
			"=": func(c int) bool { return c == 0 }, "<>": func(c int) bool { return c != 0 },
			"<": func(c int) bool { return c < 0 }, "<=": func(c int) bool { return c <= 0 },
			">": func(c int) bool { return c > 0 }, ">=": func(c int) bool { return c >= 0 },
		}[c.Fn]
		return strict2(a[0], a[1], func(x, y plan.Value) plan.Value { return plan.Bool(test(value.Compare(x, y))) }), nil
	case "<=>":
		return func(r plan.Row) plan.Value {
			x, y := a[0](r), a[1](r)
			if x.IsNull() || y.IsNull() {
				return plan.Bool(x.IsNull() && y.IsNull())
			}
			return plan.Bool(value.Compare(x, y) == 0)
		}, nil
	case "and":
		return func(r plan.Row) plan.Value {
			x := a[0](r)
			if !x.IsNull() && !x.True() {
				return plan.Bool(false)
			}
			y := a[1](r)
			if !y.IsNull() && !y.True() {
				return plan.Bool(false)
			}
			if x.IsNull() || y.IsNull() {
				return plan.Null
			}
			return plan.Bool(true)
		}, nil
	case "or":
		return func(r plan.Row) plan.Value {
			x := a[0](r)
			if x.True() {
				return plan.Bool(true)
			}
			y := a[1](r)
			if y.True() {
				return plan.Bool(true)
			}
			if x.IsNull() || y.IsNull() {
				return plan.Null
			}
			return plan.Bool(false)
		}, nil
	case "xor":
		return strict2(a[0], a[1], func(x, y plan.Value) plan.Value { return plan.Bool(x.True() != y.True()) }), nil
	case "not":
		return strict1(a[0], func(v plan.Value) plan.Value { return plan.Bool(!v.True()) }), nil
	case "is_null":
		return func(r plan.Row) plan.Value { return plan.Bool(a[0](r).IsNull()) }, nil
	case "is_not_null":
		return func(r plan.Row) plan.Value { return plan.Bool(!a[0](r).IsNull()) }, nil
	case "is_true":
		return func(r plan.Row) plan.Value { return plan.Bool(a[0](r).True()) }, nil
	case "is_false":
		return func(r plan.Row) plan.Value { v := a[0](r); return plan.Bool(!v.IsNull() && !v.True()) }, nil
	case "in":
		return func(r plan.Row) plan.Value {
			x := a[0](r)
			if x.IsNull() {
				return plan.Null
			}
			sawNull := false
			for _, e := range a[1:] {
				y := e(r)
				if y.IsNull() {
					sawNull = true
				} else if value.Compare(x, y) == 0 {
					return plan.Bool(true)
				}
			}
			if sawNull {
				return plan.Null
			}
			return plan.Bool(false)
		}, nil
	case "like":
		return compileLike(a[0], a[1], c.Args[1]), nil
	case "case":
		n := len(a)
		return func(r plan.Row) plan.Value {
			i := 0
			for ; i+1 < n; i += 2 {
				if a[i](r).True() {
					return a[i+1](r)
				}
			}
			if i < n {
				return a[i](r)
			}
			return plan.Null
		}, nil
	case "if":
		return func(r plan.Row) plan.Value {
			if a[0](r).True() {
				return a[1](r)
			}
			return a[2](r)
		}, nil
	case "coalesce":
		return func(r plan.Row) plan.Value {
			for _, e := range a {
				if v := e(r); !v.IsNull() {
					return v
				}
			}
			return plan.Null
		}, nil
	case "nullif":
		return func(r plan.Row) plan.Value {
			x, y := a[0](r), a[1](r)
			if !x.IsNull() && !y.IsNull() && value.Compare(x, y) == 0 {
				return plan.Null
			}
			return x
		}, nil
	case "cast":
		return strict1(a[0], func(v plan.Value) plan.Value { return Cast(v, t) }), nil
	case "proctime":
		return func(plan.Row) plan.Value { return plan.Time(env.ProcTime) }, nil
	case "greatest", "least":
		want := 1
		if c.Fn == "least" {
			want = -1
		}
		return strictN(a, func(vs []plan.Value) plan.Value {
			best := vs[0]
			for _, v := range vs[1:] {
				if value.Compare(v, best) == want {
					best = v
				}
			}
			return best
		}), nil
	}
	if f, ok := stringFuncs(c.Fn, a); ok {
		return f, nil
	}
	if f, ok := numberFuncs(c.Fn, t, a, env); ok {
		return f, nil
	}
	if f, ok := timeFuncs(c, a, env); ok {
		return f, nil
	}
	return nil, fmt.Errorf("compile: no implementation of function %s", c.Fn)
}

func stringFuncs(fn string, a []Eval) (Eval, bool) {
	s1 := func(f func(string) plan.Value) Eval {
		return strict1(a[0], func(v plan.Value) plan.Value { return f(toString(v)) })
	}
	switch fn {
	case "concat":
		return strictN(a, func(vs []plan.Value) plan.Value {
			var b strings.Builder
			for _, v := range vs {
				b.WriteString(toString(v))
			}
			return plan.Str(b.String())
		}), true
	case "concat_ws":
		return func(r plan.Row) plan.Value {
			sep := a[0](r)
			if sep.IsNull() {
				return plan.Null
			}
			var parts []string
			for _, e := range a[1:] {
				if v := e(r); !v.IsNull() {
					parts = append(parts, toString(v))
				}
			}
			return plan.Str(strings.Join(parts, toString(sep)))
		}, true
	case "upper":
		return s1(func(s string) plan.Value { return plan.Str(strings.ToUpper(s)) }), true
	case "lower":
		return s1(func(s string) plan.Value { return plan.Str(strings.ToLower(s)) }), true
	case "length":
		return s1(func(s string) plan.Value { return plan.Int(int64(len(s))) }), true
	case "char_length":
		return s1(func(s string) plan.Value { return plan.Int(int64(len([]rune(s)))) }), true
	case "trim":
		return s1(func(s string) plan.Value { return plan.Str(strings.Trim(s, " ")) }), true
	case "ltrim":
		return s1(func(s string) plan.Value { return plan.Str(strings.TrimLeft(s, " ")) }), true
	case "rtrim":
		return s1(func(s string) plan.Value { return plan.Str(strings.TrimRight(s, " ")) }), true
	case "reverse":
		return s1(func(s string) plan.Value {
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return plan.Str(string(rs))
		}), true
	case "replace":
		return strictN(a, func(vs []plan.Value) plan.Value {
			return plan.Str(strings.ReplaceAll(toString(vs[0]), toString(vs[1]), toString(vs[2])))
		}), true
	case "instr":
		return strictN(a, func(vs []plan.Value) plan.Value {
			s, sub := toString(vs[0]), toString(vs[1])
			i := strings.Index(s, sub)
			if i < 0 {
				return plan.Int(0)
			}
			return plan.Int(int64(len([]rune(s[:i]))) + 1)
		}), true
	case "substring":
		return strictN(a, func(vs []plan.Value) plan.Value {
			rs := []rune(toString(vs[0]))
			pos := toInt(vs[1])
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
				l := toInt(vs[2])
				if l <= 0 {
					return plan.Str("")
				}
				if start+l < end {
					end = start + l
				}
			}
			return plan.Str(string(rs[start:end]))
		}), true
	case "left", "right":
		return strictN(a, func(vs []plan.Value) plan.Value {
			rs := []rune(toString(vs[0]))
			n := toInt(vs[1])
			if n <= 0 {
				return plan.Str("")
			}
			if n > int64(len(rs)) {
				n = int64(len(rs))
			}
			if fn == "left" {
				return plan.Str(string(rs[:n]))
			}
			return plan.Str(string(rs[int64(len(rs))-n:]))
		}), true
	case "lpad", "rpad":
		return strictN(a, func(vs []plan.Value) plan.Value {
			rs := []rune(toString(vs[0]))
			n := toInt(vs[1])
			pad := []rune(toString(vs[2]))
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
			if fn == "lpad" {
				return plan.Str(string(fill) + string(rs))
			}
			return plan.Str(string(rs) + string(fill))
		}), true
	}
	return nil, false
}

func numberFuncs(fn string, t plan.Type, a []Eval, env *Env) (Eval, bool) {
	f1 := func(f func(float64) float64) Eval {
		return strict1(a[0], func(v plan.Value) plan.Value {
			r := f(toFloat(v))
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return plan.Null
			}
			return plan.Float(r)
		})
	}
	keep := func(f func(float64) float64) Eval {
		return strict1(a[0], func(v plan.Value) plan.Value {
			if t == plan.TypeDouble {
				return plan.Float(f(v.F()))
			}
			return plan.Int(v.I) // FLOOR, CEIL and ROUND of an integer
		})
	}
	switch fn {
	case "abs":
		return strict1(a[0], func(v plan.Value) plan.Value {
			if t == plan.TypeDouble {
				return plan.Float(math.Abs(v.F()))
			}
			if v.I == math.MinInt64 {
				return env.outOfRange()
			}
			if v.I < 0 {
				return plan.Int(-v.I)
			}
			return plan.Int(v.I)
		}), true
	case "floor":
		return keep(math.Floor), true
	case "ceil":
		return keep(math.Ceil), true
	case "round":
		if len(a) == 1 {
			return keep(math.Round), true
		}
		return strict2(a[0], a[1], func(x, d plan.Value) plan.Value {
			p := math.Pow(10, float64(toInt(d)))
			r := math.Round(toFloat(x)*p) / p
			if t == plan.TypeDouble {
				return plan.Float(r)
			}
			return plan.Int(floatToInt(r))
		}), true
	case "power":
		return strict2(a[0], a[1], func(x, y plan.Value) plan.Value { return plan.Float(math.Pow(toFloat(x), toFloat(y))) }), true
	case "sqrt":
		return f1(math.Sqrt), true
	case "ln":
		return f1(math.Log), true
	case "log10":
		return f1(math.Log10), true
	case "exp":
		return f1(math.Exp), true
	case "sign":
		return strict1(a[0], func(v plan.Value) plan.Value {
			f := toFloat(v)
			switch {
			case f > 0:
				return plan.Int(1)
			case f < 0:
				return plan.Int(-1)
			}
			return plan.Int(0)
		}), true
	}
	return nil, false
}

func unitMillis(u string) int64 {
	switch strings.ToUpper(u) {
	case "MILLISECOND":
		return 1
	case "SECOND":
		return 1000
	case "MINUTE":
		return 60000
	case "HOUR":
		return 3600000
	case "DAY":
		return 86400000
	case "WEEK":
		return 7 * 86400000
	}
	return 0
}

func timeFuncs(c *plan.Call, a []Eval, env *Env) (Eval, bool) {
	tm := func(f func(time.Time) plan.Value) Eval {
		return strict1(a[0], func(v plan.Value) plan.Value {
			if v.K == plan.TypeVarchar {
				v = Cast(v, plan.TypeTimestamp)
				if v.IsNull() {
					return v
				}
			}
			return f(time.UnixMilli(v.I).UTC())
		})
	}
	switch c.Fn {
	case "unix_timestamp":
		return tm(func(t time.Time) plan.Value { return plan.Int(t.Unix()) }), true
	case "unix_millis":
		return tm(func(t time.Time) plan.Value { return plan.Int(t.UnixMilli()) }), true
	case "from_unixtime":
		return strict1(a[0], func(v plan.Value) plan.Value {
			if t := Cast(plan.Float(toFloat(v)*1000), plan.TypeTimestamp); !t.IsNull() {
				return t
			}
			return env.outOfRange()
		}), true
	case "from_unixmillis":
		return strict1(a[0], func(v plan.Value) plan.Value {
			if v.K == plan.TypeDouble {
				if t := Cast(v, plan.TypeTimestamp); !t.IsNull() {
					return t
				}
				return env.outOfRange()
			}
			return env.timeValue(toInt(v))
		}), true
	case "year":
		return tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Year())) }), true
	case "month":
		return tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Month())) }), true
	case "dayofmonth":
		return tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Day())) }), true
	case "dayofweek":
		return tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Weekday()) + 1) }), true
	case "hour":
		return tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Hour())) }), true
	case "minute":
		return tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Minute())) }), true
	case "second":
		return tm(func(t time.Time) plan.Value { return plan.Int(int64(t.Second())) }), true
	case "date_add", "date_sub":
		sign := int64(1)
		if c.Fn == "date_sub" {
			sign = -1
		}
		return strict2(a[0], a[1], func(x, d plan.Value) plan.Value {
			x = Cast(x, plan.TypeTimestamp)
			if x.IsNull() {
				return x
			}
			ms, ok := mulInt(sign, toInt(d))
			if !ok {
				return env.outOfRange()
			}
			if ms, ok = addInt(x.I, ms); !ok {
				return env.outOfRange()
			}
			return env.timeValue(ms)
		}), true
	case "timestampdiff":
		u := unitMillis(c.Args[0].(*plan.Const).V.S)
		return strict2(a[1], a[2], func(x, y plan.Value) plan.Value {
			x, y = Cast(x, plan.TypeTimestamp), Cast(y, plan.TypeTimestamp)
			if x.IsNull() || y.IsNull() {
				return plan.Null
			}
			return plan.Int((y.I - x.I) / u) // both in range: no overflow
		}), true
	case "date_format":
		return strict2(a[0], a[1], func(x, f plan.Value) plan.Value {
			x = Cast(x, plan.TypeTimestamp)
			if x.IsNull() {
				return x
			}
			return plan.Str(dateFormat(time.UnixMilli(x.I).UTC(), toString(f)))
		}), true
	}
	return nil, false
}

// dateFormat implements MySQL DATE_FORMAT's common specifiers.
func dateFormat(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'c':
			fmt.Fprintf(&b, "%d", int(t.Month()))
		case 'M':
			b.WriteString(t.Month().String())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'k':
			fmt.Fprintf(&b, "%d", t.Hour())
		case 'h', 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&b, "%02d", h)
		case 'i':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 's', 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'f':
			fmt.Fprintf(&b, "%06d", t.Nanosecond()/1000)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'W':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		default:
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
