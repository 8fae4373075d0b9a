package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Expr is a bound, typed scalar expression over one input schema.
type Expr interface {
	Type() Type
	String() string
}

// ColRef reads column Index of the input row.
type ColRef struct {
	Index int
	Name  string
	T     Type
}

// Const is a literal value.
type Const struct{ V Value }

// Call applies a scalar function or operator to its arguments. Fn is one of
// the names the runtime compiles (see runtime's expression compiler): the
// operators "+", "-", "*", "/", "div", "%", "neg", "=", "<>", "<", "<=", ">",
// ">=", "<=>", "and", "or", "xor", "not", "is_null", "is_not_null", "like",
// "in", "case" (args: cond1, then1, ..., [else]), "cast", "cast_unsigned",
// "cast_decimal" (args: x, precision, scale; funcs.CastCall), and the scalar
// functions of the function registry (package funcs: Func.Fn; "%" is
// MOD's).
type Call struct {
	Fn   string
	Args []Expr
	T    Type
}

func (c *ColRef) Type() Type { return c.T }
func (c *Const) Type() Type  { return c.V.K }
func (c *Call) Type() Type   { return c.T }

func (c *ColRef) String() string { return c.Name + "#" + strconv.Itoa(c.Index) }
func (c *Const) String() string  { return c.V.String() }

// String renders the call into one builder: linear in the size of the
// expression however deep it is (the parser bounds the depth).
func (c *Call) String() string {
	var b strings.Builder
	writeExpr(&b, c)
	return b.String()
}

func writeExpr(b *strings.Builder, e Expr) {
	c, ok := e.(*Call)
	if !ok {
		b.WriteString(e.String())
		return
	}
	switch c.Fn {
	case "+", "-", "*", "/", "div", "%", "=", "<>", "<", "<=", ">", ">=", "<=>", "and", "or", "xor":
		if len(c.Args) == 2 {
			b.WriteByte('(')
			writeExpr(b, c.Args[0])
			b.WriteByte(' ')
			b.WriteString(strings.ToUpper(c.Fn))
			b.WriteByte(' ')
			writeExpr(b, c.Args[1])
			b.WriteByte(')')
			return
		}
	}
	b.WriteString(c.Fn)
	b.WriteByte('(')
	for i, a := range c.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, a)
	}
	b.WriteByte(')')
}

// AggFn is an aggregate function.
type AggFn uint8

const (
	AggCountStar AggFn = iota
	AggCount
	AggCountDistinct
	AggSum
	AggAvg
	AggMin
	AggMax
)

func (f AggFn) String() string {
	return [...]string{"count(*)", "count", "count_distinct", "sum", "avg", "min", "max"}[f]
}

// Agg is one aggregate call: Fn over input column Arg (-1 for COUNT(*)).
// Its result type is T.
type Agg struct {
	Fn  AggFn
	Arg int
	T   Type
}

func (a Agg) String() string {
	if a.Fn == AggCountStar {
		return "count(*)"
	}
	return fmt.Sprintf("%s(#%d)", a.Fn, a.Arg)
}
