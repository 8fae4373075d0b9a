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
	// The aggregates of aggs.go (runtime/op): variance and standard
	// deviation, the bitwise ones, HyperLogLog and GROUP_CONCAT.
	AggVarPop
	AggVarSamp
	AggStddevPop
	AggStddevSamp
	AggBitAnd
	AggBitOr
	AggBitXor
	AggApproxCountDistinct
	AggGroupConcat
)

func (f AggFn) String() string {
	return [...]string{"count(*)", "count", "count_distinct", "sum", "avg", "min", "max",
		"var_pop", "var_samp", "stddev_pop", "stddev_samp", "bit_and", "bit_or", "bit_xor",
		"approx_count_distinct", "group_concat"}[f]
}

// Agg is one aggregate call: Fn over input column Arg (-1 for COUNT(*)).
// Its result type is T. Concat is GROUP_CONCAT's ordering and separator
// (nil for every other function).
type Agg struct {
	Fn     AggFn
	Arg    int
	T      Type
	Concat *Concat
}

// Concat is how GROUP_CONCAT joins a group's values (its Arg, a VARCHAR):
// sorted by Order (input columns, each ascending or descending, NULLs
// first ascending as in ORDER BY), ties and calls without ORDER BY by the
// value ascending; equal values once when Distinct (the planner allows
// DISTINCT only with ORDER BY keys among the call's own arguments, so an
// entry's keys follow from its value); joined by Sep.
type Concat struct {
	Order    []AggOrder
	Sep      string
	Distinct bool
}

// AggOrder is one ORDER BY key of GROUP_CONCAT: input column Arg.
type AggOrder struct {
	Arg  int
	Desc bool
}

// GroupConcatMaxLen bounds a GROUP_CONCAT result, in bytes: MySQL's
// default group_concat_max_len. A longer result is cut there (at a UTF-8
// character boundary), and an append-only aggregation keeps only the
// values that can still appear in it.
const GroupConcatMaxLen = 1024

func (a Agg) String() string {
	if a.Fn == AggCountStar {
		return "count(*)"
	}
	if c := a.Concat; c != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "%s(", a.Fn)
		if c.Distinct {
			b.WriteString("DISTINCT ")
		}
		fmt.Fprintf(&b, "#%d", a.Arg)
		for i, o := range c.Order {
			if i == 0 {
				b.WriteString(" ORDER BY ")
			} else {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "#%d", o.Arg)
			if o.Desc {
				b.WriteString(" DESC")
			}
		}
		fmt.Fprintf(&b, " SEPARATOR %q)", c.Sep)
		return b.String()
	}
	return fmt.Sprintf("%s(#%d)", a.Fn, a.Arg)
}
