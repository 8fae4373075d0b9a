package planner

import (
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
)

// exprKeys numbers bound expressions so that two are equal (the same
// GROUP BY expression, the same aggregate argument) exactly when their
// numbers are: same operators, types, columns and constants. Numbering a
// node takes its children's numbers, so keying every subexpression of a
// deep expression costs its size, where keying by String() would cost its
// size times its depth. (String() is also blind to a CAST's type and to a
// constant's: CAST(x AS DOUBLE) and CAST(x AS VARCHAR) print alike.)
type exprKeys struct {
	ids  map[string]int
	memo map[plan.Expr]int
}

func newExprKeys() *exprKeys {
	return &exprKeys{ids: map[string]int{}, memo: map[plan.Expr]int{}}
}

// id is e's number.
func (k *exprKeys) id(e plan.Expr) int {
	if id, ok := k.memo[e]; ok {
		return id
	}
	var b strings.Builder
	switch e := e.(type) {
	case *plan.ColRef:
		b.WriteString("col ")
		b.WriteString(strconv.Itoa(e.Index))
	case *plan.Const:
		b.WriteString("const ")
		b.WriteString(strconv.FormatInt(e.V.I, 10))
		b.WriteByte(' ')
		b.WriteString(e.V.S)
	case *plan.Call:
		b.WriteString("call ")
		b.WriteString(e.Fn)
		for _, a := range e.Args {
			b.WriteByte(' ')
			b.WriteString(strconv.Itoa(k.id(a)))
		}
	default:
		b.WriteString("other ")
		b.WriteString(e.String())
	}
	b.WriteString(" : ")
	b.WriteString(strconv.Itoa(int(e.Type())))
	key := b.String()
	id, ok := k.ids[key]
	if !ok {
		id = len(k.ids)
		k.ids[key] = id
	}
	k.memo[e] = id
	return id
}
