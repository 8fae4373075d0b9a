package plan

import (
	"fmt"
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
// "in", "case" (args: cond1, then1, ..., [else]), "if", "coalesce", "cast",
// and the scalar functions listed in the planner's function table.
type Call struct {
	Fn   string
	Args []Expr
	T    Type
}

func (c *ColRef) Type() Type { return c.T }
func (c *Const) Type() Type  { return c.V.K }
func (c *Call) Type() Type   { return c.T }

func (c *ColRef) String() string { return fmt.Sprintf("%s#%d", c.Name, c.Index) }
func (c *Const) String() string  { return c.V.String() }
func (c *Call) String() string {
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = a.String()
	}
	switch c.Fn {
	case "+", "-", "*", "/", "div", "%", "=", "<>", "<", "<=", ">", ">=", "<=>", "and", "or", "xor":
		if len(args) == 2 {
			return "(" + args[0] + " " + strings.ToUpper(c.Fn) + " " + args[1] + ")"
		}
	}
	return c.Fn + "(" + strings.Join(args, ", ") + ")"
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
