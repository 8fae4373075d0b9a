package planner

import (
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
)

// funcSig types one scalar function: the number of arguments it takes and
// its result type given its arguments.
type funcSig struct {
	min, max int // max -1: variadic
	result   func(args []plan.Expr) (plan.Type, error)
	canon    string // name the runtime compiles (aliases map to one)
}

func fixed(t plan.Type) func([]plan.Expr) (plan.Type, error) {
	return func([]plan.Expr) (plan.Type, error) { return t, nil }
}

func sameAsFirst(args []plan.Expr) (plan.Type, error) { return args[0].Type(), nil }

func numericResult(args []plan.Expr) (plan.Type, error) {
	t := args[0].Type()
	if t == plan.TypeBoolean || t == plan.TypeNull {
		return plan.TypeBigint, nil
	}
	if !t.Numeric() {
		return 0, errf("", "needs a number, not %s", t)
	}
	return t, nil
}

func unifyArgs(name string) func([]plan.Expr) (plan.Type, error) {
	return func(args []plan.Expr) (plan.Type, error) { return unify(strings.ToUpper(name), args) }
}

// funcs is the scalar function table. The runtime's compiler implements
// exactly the canonical names here.
var funcs = map[string]funcSig{
	// control flow
	"if":       {3, 3, func(a []plan.Expr) (plan.Type, error) { return unify("IF", a[1:]) }, ""},
	"ifnull":   {2, 2, unifyArgs("ifnull"), "coalesce"},
	"coalesce": {1, -1, unifyArgs("coalesce"), ""},
	"nullif":   {2, 2, sameAsFirst, ""},
	"is_true":  {1, 1, fixed(plan.TypeBoolean), ""},
	"is_false": {1, 1, fixed(plan.TypeBoolean), ""},
	// strings
	"concat":      {1, -1, fixed(plan.TypeVarchar), ""},
	"concat_ws":   {2, -1, fixed(plan.TypeVarchar), ""},
	"upper":       {1, 1, fixed(plan.TypeVarchar), ""},
	"ucase":       {1, 1, fixed(plan.TypeVarchar), "upper"},
	"lower":       {1, 1, fixed(plan.TypeVarchar), ""},
	"lcase":       {1, 1, fixed(plan.TypeVarchar), "lower"},
	"length":      {1, 1, fixed(plan.TypeBigint), ""},
	"char_length": {1, 1, fixed(plan.TypeBigint), ""},
	"substring":   {2, 3, fixed(plan.TypeVarchar), ""},
	"substr":      {2, 3, fixed(plan.TypeVarchar), "substring"},
	"left":        {2, 2, fixed(plan.TypeVarchar), ""},
	"right":       {2, 2, fixed(plan.TypeVarchar), ""},
	"trim":        {1, 1, fixed(plan.TypeVarchar), ""},
	"ltrim":       {1, 1, fixed(plan.TypeVarchar), ""},
	"rtrim":       {1, 1, fixed(plan.TypeVarchar), ""},
	"replace":     {3, 3, fixed(plan.TypeVarchar), ""},
	"reverse":     {1, 1, fixed(plan.TypeVarchar), ""},
	"instr":       {2, 2, fixed(plan.TypeBigint), ""},
	"lpad":        {3, 3, fixed(plan.TypeVarchar), ""},
	"rpad":        {3, 3, fixed(plan.TypeVarchar), ""},
	// numbers
	"abs":      {1, 1, numericResult, ""},
	"round":    {1, 2, numericResult, ""},
	"floor":    {1, 1, numericResult, ""},
	"ceil":     {1, 1, numericResult, ""},
	"ceiling":  {1, 1, numericResult, "ceil"},
	"mod":      {2, 2, func(a []plan.Expr) (plan.Type, error) { return arith("MOD", a[0].Type(), a[1].Type()) }, "%"},
	"power":    {2, 2, fixed(plan.TypeDouble), ""},
	"pow":      {2, 2, fixed(plan.TypeDouble), "power"},
	"sqrt":     {1, 1, fixed(plan.TypeDouble), ""},
	"ln":       {1, 1, fixed(plan.TypeDouble), ""},
	"log10":    {1, 1, fixed(plan.TypeDouble), ""},
	"exp":      {1, 1, fixed(plan.TypeDouble), ""},
	"sign":     {1, 1, fixed(plan.TypeBigint), ""},
	"greatest": {2, -1, unifyArgs("greatest"), ""},
	"least":    {2, -1, unifyArgs("least"), ""},
	// time
	"unix_timestamp":  {1, 1, fixed(plan.TypeBigint), ""},
	"unix_millis":     {1, 1, fixed(plan.TypeBigint), ""},
	"from_unixtime":   {1, 1, fixed(plan.TypeTimestamp), ""},
	"from_unixmillis": {1, 1, fixed(plan.TypeTimestamp), ""},
	"date_format":     {2, 2, fixed(plan.TypeVarchar), ""},
	"year":            {1, 1, fixed(plan.TypeBigint), ""},
	"month":           {1, 1, fixed(plan.TypeBigint), ""},
	"day":             {1, 1, fixed(plan.TypeBigint), "dayofmonth"},
	"dayofmonth":      {1, 1, fixed(plan.TypeBigint), ""},
	"dayofweek":       {1, 1, fixed(plan.TypeBigint), ""},
	"hour":            {1, 1, fixed(plan.TypeBigint), ""},
	"minute":          {1, 1, fixed(plan.TypeBigint), ""},
	"second":          {1, 1, fixed(plan.TypeBigint), ""},
	"date_add":        {2, 2, fixed(plan.TypeTimestamp), ""},
	"date_sub":        {2, 2, fixed(plan.TypeTimestamp), ""},
	"timestampdiff":   {3, 3, fixed(plan.TypeBigint), ""},
	"proctime":        {0, 0, fixed(plan.TypeTimestamp), ""},
}

// call types a scalar function call.
func call(name string, args []plan.Expr) (plan.Expr, error) {
	sig, ok := funcs[name]
	if !ok {
		return nil, errf(name, "unknown function %s", strings.ToUpper(name))
	}
	if len(args) < sig.min || (sig.max >= 0 && len(args) > sig.max) {
		return nil, errf(name, "%s takes %s arguments, got %d", strings.ToUpper(name), arity(sig), len(args))
	}
	t, err := sig.result(args)
	if err != nil {
		if pe, ok := err.(*Error); ok {
			pe.Msg = strings.ToUpper(name) + ": " + pe.Msg
			if pe.Name == "" {
				pe.Name = name
			}
		}
		return nil, err
	}
	fn := name
	if sig.canon != "" {
		fn = sig.canon
	}
	switch fn {
	case "coalesce", "greatest", "least":
		args = coerceAll(args, t, false)
	case "if":
		args = append([]plan.Expr{args[0]}, coerceAll(args[1:], t, false)...)
	case "timestampdiff":
		c, ok := args[0].(*plan.Const)
		if !ok || c.V.K != plan.TypeVarchar {
			return nil, errf(name, "TIMESTAMPDIFF needs a unit such as SECOND")
		}
		if _, err := intervalMillis(c.V.S); err != nil {
			return nil, err
		}
	}
	return &plan.Call{Fn: fn, Args: args, T: t}, nil
}

func arity(s funcSig) string {
	switch {
	case s.max < 0:
		return "at least " + itoa(s.min)
	case s.min == s.max:
		return itoa(s.min)
	}
	return itoa(s.min) + " to " + itoa(s.max)
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}
