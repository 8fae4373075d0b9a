package planner

import (
	"fmt"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// Explain renders the plan an EXPLAIN statement asks for: of CREATE VIEW,
// the plan the view would get; of INSERT INTO t SELECT, the plan of the
// sink query; of SELECT, the pull query POST /v1/sql would run when it is
// one (it reads one view), else the plan a view of it would get. EXPLAIN
// name (ex.Name) shows the plan a running query holds, which the caller
// has: it is not planned here. opts are the defaults with
// SET applied; hints in the statement override them. params are the
// statement's parameters (nil: none), which a pull query binds; a
// continuous query takes none.
func Explain(ex *parser.Explain, cat Catalog, opts plan.Options, params *Params) (string, error) {
	switch {
	case ex.View != nil:
		if err := CheckName("view", ex.View.Name); err != nil {
			return "", err
		}
		if err := CheckAliases(ex.View.Select); err != nil {
			return "", err
		}
		g, err := Query(ex.View.Select, cat, opts, ex.View.Name, plan.SinkResults)
		if err != nil {
			return "", err
		}
		return g.Explain(), nil
	case ex.Insert != nil:
		t, ok := cat.Table(ex.Insert.Table)
		if !ok {
			return "", &Error{Status: 404, Name: ex.Insert.Table, Msg: fmt.Sprintf("INSERT INTO %s: unknown table %s", ex.Insert.Table, ex.Insert.Table)}
		}
		if err := CheckAliases(ex.Insert.Select); err != nil {
			return "", err
		}
		g, err := Insert(ex.Insert.Select, t, cat, opts)
		if err != nil {
			return "", err
		}
		return g.Explain(), nil
	case ex.Select != nil:
		sel := ex.Select
		if sel.From != nil && sel.From.Name != "" {
			if v, isView := cat.View(sel.From.Name); isView {
				if v == nil {
					return "", &Error{Status: 409, Name: sel.From.Name, Msg: fmt.Sprintf("view %s is not running", sel.From.Name)}
				}
				q, err := Pull(sel, v, opts, params)
				if err != nil {
					return "", err
				}
				return q.Explain(), nil
			}
		}
		if err := CheckAliases(sel); err != nil {
			return "", err
		}
		g, err := Query(sel, cat, opts, "explain", plan.SinkResults)
		if err != nil {
			return "", continuousParamError(err, "EXPLAIN of a continuous query")
		}
		return g.Explain(), nil
	}
	return "", errf("", "EXPLAIN %s shows the plan of a running query: the caller answers it", ex.Name)
}
