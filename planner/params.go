package planner

import (
	"errors"
	"fmt"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// Params are a statement's parameters ($1, $2, ...: parser.Param) while
// it is planned. Binding turns $n into a constant of its value, so plans
// stay data and the runtime never sees a parameter. To describe a
// statement without running it (PrepareParams), $n is a NULL of its type,
// which is the type given (pgwire's Parse), else inferred from where $n is
// used (compared or computed with a typed expression: that type; an
// operand of AND, OR, NOT: BOOLEAN; CAST($n AS t): t), else VARCHAR, as
// PostgreSQL takes an unknown parameter as text. Planning with a
// parameter of unknown type binds it as an untyped NULL and learns its
// type; Settle then fixes the types and says to plan again, so that the
// plan described is the one Exec runs (the same types everywhere).
//
// Params are used by one planning at a time.
type Params struct {
	types  []plan.Type  // by $n-1; TypeNull: not known yet
	values []plan.Value // by $n-1 (ExecParams); nil when only described
	exec   bool
	// pending are this pass's untyped placeholders, by the index of their
	// parameter: infer types them.
	pending map[*plan.Const]int
	untyped bool // a placeholder was untyped in this pass
}

// ExecParams are the parameters of a statement that runs: values by $n-1,
// types as described (nil: the values' kinds). A NULL value is a NULL of
// its type.
func ExecParams(values []plan.Value, types []plan.Type) *Params {
	p := &Params{values: values, exec: true, types: make([]plan.Type, len(values))}
	for i, v := range values {
		p.types[i] = v.K
		if i < len(types) && types[i] != plan.TypeNull {
			p.types[i] = types[i]
		}
	}
	return p
}

// PrepareParams are the parameters of a statement described without
// running: the types given (TypeNull: infer it), more when the statement
// names a higher $n.
func PrepareParams(types []plan.Type) *Params {
	return &Params{types: append([]plan.Type(nil), types...)}
}

// Types are the parameters' types: every one known after Settle.
func (p *Params) Types() []plan.Type { return p.types }

// Settle ends a planning pass: a parameter still untyped is VARCHAR. It
// reports whether a parameter was bound untyped, so the statement must be
// planned again with the types now known.
func (p *Params) Settle() bool {
	if p == nil {
		return false
	}
	for i, t := range p.types {
		if t == plan.TypeNull {
			p.types[i] = plan.TypeVarchar
		}
	}
	again := p.untyped
	p.untyped, p.pending = false, nil
	return again
}

// bind is $n's expression: its value, a NULL of its type, or an untyped
// placeholder that infer types.
func (p *Params) bind(e *parser.Param) (plan.Expr, error) {
	if p == nil || e.N < 1 || p.exec && e.N > len(p.values) {
		return nil, &Error{Status: 422, Name: fmt.Sprintf("$%d", e.N), Offset: e.Offset + 1, Msg: fmt.Sprintf("there is no parameter $%d", e.N), param: e.N}
	}
	for len(p.types) < e.N {
		p.types = append(p.types, plan.TypeNull)
	}
	i := e.N - 1
	if p.exec && !p.values[i].IsNull() {
		return &plan.Const{V: p.values[i]}, nil
	}
	if t := p.types[i]; t != plan.TypeNull {
		return &plan.Call{Fn: "cast", Args: []plan.Expr{&plan.Const{V: plan.Null}}, T: t}, nil
	}
	c := &plan.Const{V: plan.Null}
	if p.pending == nil {
		p.pending = map[*plan.Const]int{}
	}
	p.pending[c] = i
	p.untyped = true
	return c, nil
}

// infer types x as t when x is an untyped placeholder and t is a type.
func (p *Params) infer(x plan.Expr, t plan.Type) {
	if p == nil || t == plan.TypeNull || len(p.pending) == 0 {
		return
	}
	c, ok := x.(*plan.Const)
	if !ok {
		return
	}
	if i, ok := p.pending[c]; ok {
		if p.types[i] == plan.TypeNull {
			p.types[i] = t
		}
		delete(p.pending, c)
	}
}

// inferPair types each of l and r from the other's type, for an operator
// op of both: a comparison or arithmetic. What is added to or taken from
// a time is milliseconds: BIGINT.
func (p *Params) inferPair(op string, l, r plan.Expr) {
	lt, rt := l.Type(), r.Type()
	switch op {
	case "and", "or", "xor":
		p.infer(l, plan.TypeBoolean)
		p.infer(r, plan.TypeBoolean)
		return
	case "+", "-":
		if lt == plan.TypeTimestamp {
			lt = plan.TypeBigint
		}
		if rt == plan.TypeTimestamp {
			rt = plan.TypeBigint
		}
	}
	p.infer(l, rt)
	p.infer(r, lt)
}

// continuousParamError says why a continuous query's $n (which its scopes,
// without Params, refuse as unbound) is refused: err's, else err.
func continuousParamError(err error, what string) error {
	var pe *Error
	if errors.As(err, &pe) && pe.param > 0 {
		return &Error{Status: 422, Name: pe.Name, Offset: pe.Offset, Msg: fmt.Sprintf("parameters ($%d) are not allowed in %s: its query is planned as a view's, which is stored and runs continuously; write the value into the statement", pe.param, what)}
	}
	return err
}
