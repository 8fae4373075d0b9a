package planner

import (
	"errors"
	"strings"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
)

// call types a scalar function call by the function registry (package
// funcs): its arity, its type rule, then its binding step (casts of the
// arguments to the result type, checks of constant arguments). The call
// carries the registry's Fn, which the runtime's compiler finds there.
func call(name string, args []plan.Expr) (plan.Expr, error) {
	f := funcs.Lookup(name)
	if f == nil || f.Kind != funcs.Scalar {
		return nil, errf(name, "unknown function %s", strings.ToUpper(name))
	}
	if len(args) < f.MinArgs || (f.MaxArgs >= 0 && len(args) > f.MaxArgs) {
		return nil, errf(name, "%s takes %s arguments, got %d", strings.ToUpper(name), f.Arity(), len(args))
	}
	t, err := f.Result(strings.ToUpper(name), args)
	if err != nil {
		return nil, funcError(name, strings.ToUpper(name)+": ", err)
	}
	if f.Bind != nil {
		if args, err = f.Bind(strings.ToUpper(name), args, t); err != nil {
			return nil, funcError(name, "", err)
		}
	}
	return &plan.Call{Fn: f.Fn, Args: args, T: t}, nil
}

// funcError is the registry's error as a planning error (422): about
// its Name, or the function's, with prefix before its message.
func funcError(name, prefix string, err error) error {
	var fe *funcs.Error
	if !errors.As(err, &fe) {
		return err
	}
	if fe.Name != "" {
		name = fe.Name
	}
	return errf(name, "%s%s", prefix, fe.Msg)
}

// isAggregate reports whether name is an aggregate function.
func isAggregate(name string) bool {
	f := funcs.Lookup(name)
	return f != nil && f.Kind == funcs.Aggregate
}
