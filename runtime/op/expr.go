package op

import (
	"fmt"
	"math"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
)

// Eval is a compiled expression: it evaluates against one row.
type Eval = funcs.Eval

// Env is what expressions read besides the row (funcs.Env): the
// processing time of the batch being evaluated, set by the task loop
// (operators read no clock), and the count of results out of range.
type Env = funcs.Env

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

// arith is a binary arithmetic operator: ints says whether its BIGINT
// (or TIMESTAMP) result is in range, else it is NULL, counted in env.
func arith(t plan.Type, a, b Eval, ints func(x, y int64) (int64, bool), floats func(x, y float64) float64, env *Env) Eval {
	if t == plan.TypeDouble {
		return funcs.Strict2(a, b, func(x, y plan.Value) plan.Value { return plan.Float(floats(funcs.ToFloat(x), funcs.ToFloat(y))) })
	}
	return funcs.Strict2(a, b, func(x, y plan.Value) plan.Value {
		v, ok := ints(funcs.ToInt(x), funcs.ToInt(y))
		if !ok {
			return env.OutOfRangeNull()
		}
		if t == plan.TypeTimestamp {
			return env.TimeValue(v)
		}
		return plan.Int(v)
	})
}

// compileOp compiles one operator's call from its compiled arguments.
type compileOp func(c *plan.Call, a []Eval, env *Env) (Eval, error)

// operators are the SQL operators the planner binds (plan.Call.Fn), by
// name: looked up once per call when a query is compiled, never per row.
// Functions are the registry's (funcs.ByFn). Every operator has cases in
// TestOperators (expr_cases_test.go), which fails for one without.
var operators = map[string]compileOp{
	// BIGINT arithmetic that overflows is NULL (as division by zero is),
	// and so is TIMESTAMP arithmetic that leaves the TIMESTAMP range.
	"+": func(c *plan.Call, a []Eval, env *Env) (Eval, error) {
		return arith(c.T, a[0], a[1], funcs.AddInt, func(x, y float64) float64 { return x + y }, env), nil
	},
	"-": func(c *plan.Call, a []Eval, env *Env) (Eval, error) {
		return arith(c.T, a[0], a[1], funcs.SubInt, func(x, y float64) float64 { return x - y }, env), nil
	},
	"*": func(c *plan.Call, a []Eval, env *Env) (Eval, error) {
		return arith(c.T, a[0], a[1], funcs.MulInt, func(x, y float64) float64 { return x * y }, env), nil
	},
	"/":           compileDivide,
	"div":         compileIntDivide,
	"neg":         compileNeg,
	"=":           compareOp(func(c int) bool { return c == 0 }),
	"<>":          compareOp(func(c int) bool { return c != 0 }),
	"<":           compareOp(func(c int) bool { return c < 0 }),
	"<=":          compareOp(func(c int) bool { return c <= 0 }),
	">":           compareOp(func(c int) bool { return c > 0 }),
	">=":          compareOp(func(c int) bool { return c >= 0 }),
	"<=>":         compileNullSafeEqual,
	"and":         compileAnd,
	"or":          compileOr,
	"xor":         compileXor,
	"not":         compileNot,
	"is_null":     compileIsNull,
	"is_not_null": compileIsNotNull,
	"in":          compileIn,
	"like": func(c *plan.Call, a []Eval, _ *Env) (Eval, error) {
		return compileLike(a[0], a[1], c.Args[1]), nil
	},
	"case": compileCase,
	"cast": func(c *plan.Call, a []Eval, _ *Env) (Eval, error) {
		t := c.T
		return funcs.Strict1(a[0], func(v plan.Value) plan.Value { return funcs.Cast(v, t) }), nil
	},
	"cast_unsigned": func(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
		return funcs.Strict1(a[0], funcs.CastUnsigned), nil
	},
	"cast_decimal": func(c *plan.Call, a []Eval, _ *Env) (Eval, error) {
		prec, scale := c.Args[1].(*plan.Const).V.I, c.Args[2].(*plan.Const).V.I // funcs.CastCall's constants
		return funcs.Strict1(a[0], func(v plan.Value) plan.Value { return funcs.CastDecimal(v, prec, scale) }), nil
	},
}

func compileCall(c *plan.Call, a []Eval, env *Env) (Eval, error) {
	if op, ok := operators[c.Fn]; ok {
		return op(c, a, env)
	}
	// Functions: the registry's implementation, looked up once per query.
	if f := funcs.ByFn(c.Fn); f != nil && f.Compile != nil {
		return f.Compile(c, a, env), nil
	}
	return nil, fmt.Errorf("compile: no implementation of function %s", c.Fn)
}

func compileDivide(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
	return funcs.Strict2(a[0], a[1], func(x, y plan.Value) plan.Value {
		d := funcs.ToFloat(y)
		if d == 0 {
			return plan.Null
		}
		return plan.Float(funcs.ToFloat(x) / d)
	}), nil
}

func compileIntDivide(_ *plan.Call, a []Eval, env *Env) (Eval, error) {
	return funcs.Strict2(a[0], a[1], func(x, y plan.Value) plan.Value {
		if x.K == plan.TypeDouble || y.K == plan.TypeDouble {
			d := funcs.ToFloat(y)
			if d == 0 {
				return plan.Null
			}
			return plan.Int(funcs.FloatToInt(math.Trunc(funcs.ToFloat(x) / d)))
		}
		if funcs.ToInt(y) == 0 {
			return plan.Null
		}
		if funcs.ToInt(x) == math.MinInt64 && funcs.ToInt(y) == -1 {
			return env.OutOfRangeNull()
		}
		return plan.Int(funcs.ToInt(x) / funcs.ToInt(y))
	}), nil
}

func compileNeg(c *plan.Call, a []Eval, env *Env) (Eval, error) {
	t := c.T
	return funcs.Strict1(a[0], func(v plan.Value) plan.Value {
		if t == plan.TypeDouble {
			return plan.Float(-v.F())
		}
		if v.I == math.MinInt64 {
			return env.OutOfRangeNull()
		}
		return plan.Int(-v.I)
	}), nil
}

// compareOp is a comparison: test says what funcs.Compare's answer means.
func compareOp(test func(int) bool) compileOp {
	return func(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
		return funcs.Strict2(a[0], a[1], func(x, y plan.Value) plan.Value { return plan.Bool(test(funcs.Compare(x, y))) }), nil
	}
}

func compileNullSafeEqual(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
	return func(r plan.Row) plan.Value {
		x, y := a[0](r), a[1](r)
		if x.IsNull() || y.IsNull() {
			return plan.Bool(x.IsNull() && y.IsNull())
		}
		return plan.Bool(funcs.Compare(x, y) == 0)
	}, nil
}

func compileAnd(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
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
}

func compileOr(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
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
}

func compileXor(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
	return funcs.Strict2(a[0], a[1], func(x, y plan.Value) plan.Value { return plan.Bool(x.True() != y.True()) }), nil
}

func compileNot(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
	return funcs.Strict1(a[0], func(v plan.Value) plan.Value { return plan.Bool(!v.True()) }), nil
}

func compileIsNull(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
	return func(r plan.Row) plan.Value { return plan.Bool(a[0](r).IsNull()) }, nil
}

func compileIsNotNull(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
	return func(r plan.Row) plan.Value { return plan.Bool(!a[0](r).IsNull()) }, nil
}

func compileIn(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
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
			} else if funcs.Compare(x, y) == 0 {
				return plan.Bool(true)
			}
		}
		if sawNull {
			return plan.Null
		}
		return plan.Bool(false)
	}, nil
}

// compileCase is CASE: its arguments are when, then pairs and, last, an
// ELSE if their number is odd (no ELSE: NULL).
func compileCase(_ *plan.Call, a []Eval, _ *Env) (Eval, error) {
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
}
