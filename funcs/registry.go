package funcs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
)

// Kind says where a function may be called: in any expression (Scalar) or
// as an aggregate of a GROUP BY or a running aggregation (Aggregate).
type Kind uint8

const (
	Scalar Kind = iota
	Aggregate
)

// Func is one SQL function: its names, signature, type rule, NULL
// behaviour and implementation. The planner binds calls with it (Lookup,
// Result, Bind) and the expression compiler evaluates them with it (ByFn,
// Compile): the one place both read.
type Func struct {
	// Names are the names SQL calls it by, the documented one first
	// (IFNULL is COALESCE's second name).
	Names []string
	// Fn is the name a bound plan.Call carries, the one EXPLAIN prints and
	// the compiler finds: Names[0] but for MOD, which is the % operator.
	Fn string
	// Kind: Scalar or Aggregate.
	Kind Kind
	// MinArgs and MaxArgs bound the number of arguments (MaxArgs -1:
	// any number from MinArgs on).
	MinArgs, MaxArgs int
	// Sig is the signature as docs/sql.md writes it.
	Sig string
	// Result is the type rule: the result type for the arguments, or an
	// *Error saying why they do not fit. name is the called name in upper
	// case, for messages.
	Result func(name string, args []plan.Expr) (plan.Type, error)
	// Bind, when set, checks constant arguments and rewrites arguments
	// after typing (casts to the result type).
	Bind func(name string, args []plan.Expr, t plan.Type) ([]plan.Expr, error)
	// Strict: NULL when any argument is NULL (and then no later argument is
	// evaluated). Otherwise Nulls says what a NULL argument gives.
	Strict bool
	Nulls  string
	// Compile builds a scalar call's evaluation, once per query: whatever
	// depends on the call's types or constant arguments is decided here,
	// never per row. nil for aggregates.
	Compile func(c *plan.Call, args []Eval, env *Env) Eval
	// Agg is an aggregate's function in plan.Agg (COUNT with DISTINCT is
	// plan.AggCountDistinct, COUNT(*) plan.AggCountStar: the planner's
	// choice); its accumulator is runtime's acc.
	Agg plan.AggFn
}

// Error is a call that does not bind: Name is the identifier it is about
// ("" for the function itself), Msg the message.
type Error struct {
	Name string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(name, format string, args ...any) error {
	return &Error{Name: name, Msg: fmt.Sprintf(format, args...)}
}

// Arity renders how many arguments f takes, for messages.
func (f *Func) Arity() string {
	switch {
	case f.MaxArgs < 0:
		return "at least " + strconv.Itoa(f.MinArgs)
	case f.MinArgs == f.MaxArgs:
		return strconv.Itoa(f.MinArgs)
	}
	return strconv.Itoa(f.MinArgs) + " to " + strconv.Itoa(f.MaxArgs)
}

var (
	bySQL = map[string]*Func{}
	byFn  = map[string]*Func{}
	// all is the registry's table (table.go) and the tables of other
	// files (textFuncs: strings.go, regexp.go, json.go), in that order.
	all = concatFuncs(registry, textFuncs)
)

func concatFuncs(ts ...[]*Func) []*Func {
	var out []*Func
	for _, t := range ts {
		out = append(out, t...)
	}
	return out
}

func init() {
	for _, f := range all {
		if f.Fn == "" {
			f.Fn = f.Names[0]
		}
		for _, n := range f.Names {
			if bySQL[n] != nil {
				panic("funcs: " + n + " registered twice")
			}
			bySQL[n] = f
		}
		if f.Kind == Scalar {
			if byFn[f.Fn] != nil {
				panic("funcs: " + f.Fn + " registered twice")
			}
			byFn[f.Fn] = f
		}
	}
}

// Lookup finds a function by the (lower-case) name SQL calls it by, nil
// when there is none.
func Lookup(name string) *Func { return bySQL[name] }

// ByFn finds a scalar function by the name a bound plan.Call carries.
func ByFn(fn string) *Func { return byFn[fn] }

// All lists every registered function, in the registry's order.
func All() []*Func { return all }

// Type rules.

func fixed(t plan.Type) func(string, []plan.Expr) (plan.Type, error) {
	return func(string, []plan.Expr) (plan.Type, error) { return t, nil }
}

func sameAsFirst(_ string, args []plan.Expr) (plan.Type, error) { return args[0].Type(), nil }

func numericResult(_ string, args []plan.Expr) (plan.Type, error) {
	t := args[0].Type()
	if t == plan.TypeBoolean || t == plan.TypeNull {
		return plan.TypeBigint, nil
	}
	if !t.Numeric() {
		return 0, errorf("", "needs a number, not %s", t)
	}
	return t, nil
}

func unifyArgs(name string, args []plan.Expr) (plan.Type, error) { return Unify(name, args) }

// Unify finds the common type of the branches of CASE, IF, COALESCE,
// GREATEST and LEAST: NULL gives way to any type, BIGINT and DOUBLE (and
// BOOLEAN) meet as numbers, anything else mixed is an error.
func Unify(what string, es []plan.Expr) (plan.Type, error) {
	t := plan.TypeNull
	for _, e := range es {
		et := e.Type()
		switch {
		case et == plan.TypeNull || et == t:
		case t == plan.TypeNull:
			t = et
		case t.Numeric() && et.Numeric():
			if t == plan.TypeDouble || et == plan.TypeDouble {
				t = plan.TypeDouble
			} else {
				t = plan.TypeBigint
			}
		default:
			return 0, errorf(what, "%s mixes %s and %s", what, t, et)
		}
	}
	return t, nil
}

// Arith is the type rule of arithmetic (op, MOD): numbers (or NULL) in,
// DOUBLE when either is, else BIGINT.
func Arith(op string, lt, rt plan.Type) (plan.Type, error) {
	if lt == plan.TypeNull && rt == plan.TypeNull {
		return plan.TypeBigint, nil
	}
	if (!lt.Numeric() && lt != plan.TypeNull) || (!rt.Numeric() && rt != plan.TypeNull) {
		return 0, errorf(op, "operator %s needs numbers, not %s and %s", op, lt, rt)
	}
	if lt == plan.TypeDouble || rt == plan.TypeDouble {
		return plan.TypeDouble, nil
	}
	return plan.TypeBigint, nil
}

// Coerce wraps e in a cast to t when its type differs (a bare NULL fits
// any type as it is).
func Coerce(e plan.Expr, t plan.Type) plan.Expr {
	if e.Type() != t && e.Type() != plan.TypeNull {
		return &plan.Call{Fn: "cast", Args: []plan.Expr{e}, T: t}
	}
	return e
}

func coerceAll(_ string, args []plan.Expr, t plan.Type) ([]plan.Expr, error) {
	out := make([]plan.Expr, len(args))
	for i, a := range args {
		out[i] = Coerce(a, t)
	}
	return out, nil
}

// UnitMillis is an INTERVAL or TIMESTAMPDIFF unit in milliseconds.
func UnitMillis(unit string) (int64, error) {
	switch strings.ToUpper(unit) {
	case "MICROSECOND":
		return 0, errorf(unit, "INTERVAL ... MICROSECOND is finer than the millisecond timestamps streamsql keeps")
	case "MILLISECOND":
		return 1, nil
	case "SECOND":
		return 1000, nil
	case "MINUTE":
		return 60 * 1000, nil
	case "HOUR":
		return 3600 * 1000, nil
	case "DAY":
		return 24 * 3600 * 1000, nil
	case "WEEK":
		return 7 * 24 * 3600 * 1000, nil
	}
	return 0, errorf(unit, "INTERVAL unit %s is not supported (MILLISECOND to WEEK)", unit)
}

// Aggregates' type rules: their messages name the function (no prefix).

func sumResult(name string, args []plan.Expr) (plan.Type, error) {
	switch at := args[0].Type(); at {
	case plan.TypeBigint, plan.TypeBoolean, plan.TypeNull:
		return plan.TypeBigint, nil
	case plan.TypeDouble:
		return plan.TypeDouble, nil
	default:
		return 0, errorf("", "%s needs a number, not %s", name, at)
	}
}

func avgResult(name string, args []plan.Expr) (plan.Type, error) {
	if at := args[0].Type(); !at.Numeric() && at != plan.TypeNull {
		return 0, errorf("", "%s needs a number, not %s", name, at)
	}
	return plan.TypeDouble, nil
}

func minMaxResult(_ string, args []plan.Expr) (plan.Type, error) {
	if at := args[0].Type(); at != plan.TypeNull {
		return at, nil
	}
	return plan.TypeBigint, nil
}

// momentResult: VAR_POP, VAR_SAMP, STDDEV_POP and STDDEV_SAMP take a
// number and give a DOUBLE.
func momentResult(name string, args []plan.Expr) (plan.Type, error) {
	if at := args[0].Type(); !at.Numeric() && at != plan.TypeBoolean && at != plan.TypeNull {
		return 0, errorf("", "%s needs a number, not %s", name, at)
	}
	return plan.TypeDouble, nil
}

// bitResult: BIT_AND, BIT_OR and BIT_XOR take a BIGINT (or BOOLEAN) and
// give a BIGINT, the 64 bits MySQL's BIGINT UNSIGNED holds read as signed.
func bitResult(name string, args []plan.Expr) (plan.Type, error) {
	switch at := args[0].Type(); at {
	case plan.TypeBigint, plan.TypeBoolean, plan.TypeNull:
		return plan.TypeBigint, nil
	default:
		return 0, errorf("", "%s needs a BIGINT, not %s (CAST it to BIGINT)", name, at)
	}
}
