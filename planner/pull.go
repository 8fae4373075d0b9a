package planner

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// Pull plans SELECT ... FROM view [WHERE] [GROUP BY] [HAVING] [ORDER BY]
// [LIMIT] over a view's results: a pull query, evaluated once over the
// rows the view holds. Its aggregation binds as a view's does
// (bindGrouped: the same functions, types and errors) and runs as a
// running aggregation over the rows (plan.PullGroup). opts are the
// defaults with SET applied; sel's SET_VAR hints may set consistency only.
// params are the statement's parameters (nil: it has none).
func Pull(sel *parser.Select, view *plan.ViewDef, opts plan.Options, params *Params) (*plan.PullQuery, error) {
	q, err := pull(sel, view, opts, params)
	if err == nil && params.Settle() {
		// A parameter's type was learnt: the plan with it (params.go).
		q, err = pull(sel, view, opts, params)
	}
	return q, err
}

func pull(sel *parser.Select, view *plan.ViewDef, opts plan.Options, params *Params) (*plan.PullQuery, error) {
	for _, h := range sel.Hints {
		if h.Name != "consistency" {
			return nil, errf(h.Name, "SET_VAR(%s) is an option of views; a pull query (SELECT ... FROM view) takes SET_VAR(consistency='committed' or 'latest')", h.Name)
		}
	}
	if err := ApplyOptions(&opts, sel.Hints, "SET_VAR"); err != nil {
		return nil, err
	}
	if len(sel.UnionAll) > 0 {
		return nil, errf("UNION", "UNION ALL of pull queries is not supported: read each view in a SELECT of its own, or CREATE VIEW ... AS SELECT ... UNION ALL SELECT ...")
	}
	q := &plan.PullQuery{View: view.Name, Limit: sel.Limit, Offset: sel.Offset, Consistency: opts.Consistency}
	if q.Consistency == "" {
		q.Consistency = plan.ConsistencyCommitted
	}
	sc := newScope(sel.From.Qualifier(), view.Out)
	sc.params = params
	if sel.Where != nil {
		if containsAggregate(sel.Where) {
			return nil, errf("WHERE", "aggregates are not allowed in WHERE; use HAVING")
		}
		f, err := sc.bind(sel.Where)
		if err != nil {
			return nil, err
		}
		q.Filter = f
	}
	fields, err := expandStar(sel.Fields, sc)
	if err != nil {
		return nil, err
	}
	if hasOverAggregate(fields) {
		return nil, errf("OVER", "OVER aggregations in a pull query are not supported: CREATE VIEW ... AS SELECT ... OVER (...) and read its results")
	}
	agg := len(sel.GroupBy) > 0 || sel.Having != nil
	for _, f := range fields {
		agg = agg || containsAggregate(f.Expr)
	}
	for _, o := range sel.OrderBy {
		agg = agg || containsAggregate(o.Expr)
	}
	if sel.Distinct {
		if agg {
			return nil, errf("DISTINCT", "SELECT DISTINCT with GROUP BY or aggregates: group by what should be distinct")
		}
		// As in a view.
		return q, pullGroup(q, distinctGroups(sel, len(fields)), fields, sc)
	}
	if agg {
		return q, pullGroup(q, sel, fields, sc)
	}
	for _, f := range fields {
		x, err := sc.bind(f.Expr)
		if err != nil {
			return nil, err
		}
		q.Project = append(q.Project, x)
	}
	if q.Out, err = outSchema(fields, q.Project, view.Out); err != nil {
		return nil, err
	}
	for _, o := range sel.OrderBy {
		if p, ok := o.Expr.(*parser.Position); ok {
			// ORDER BY 2: the second column of the select list.
			if p.N < 1 || p.N > len(q.Project) {
				return nil, errf("ORDER", "ORDER BY %d: the select list has %d columns (positions count from 1)", p.N, len(q.Project))
			}
			q.Order = append(q.Order, plan.SortKey{Expr: q.Project[p.N-1], Desc: o.Desc})
			continue
		}
		x, err := sc.bind(o.Expr)
		if err != nil {
			// ORDER BY an output alias.
			c, ok := o.Expr.(*parser.ColumnRef)
			if !ok || q.Out.Index(c.Name) < 0 {
				return nil, err
			}
			x = q.Project[q.Out.Index(c.Name)]
		}
		q.Order = append(q.Order, plan.SortKey{Expr: x, Desc: o.Desc})
	}
	return q, nil
}

// pullGroup plans q's aggregation (sel groups or aggregates; fields is its
// select list over the view's columns, sc). The aggregation's output rows
// are the select list, then the ORDER BY keys that are no column of it;
// q.Order and q.Project read them.
func pullGroup(q *plan.PullQuery, sel *parser.Select, fields []parser.Field, sc *scope) error {
	ekeys := newExprKeys()
	items, err := groupItems(sel.GroupBy, fields, sc)
	if err != nil {
		return err
	}
	for _, g := range items {
		if f, ok := g.(*parser.Func); ok && isWindowFunc(f.Name) {
			return errf(f.Name, "GROUP BY %s in a pull query: windows are for views (CREATE VIEW ... GROUP BY %s(...)); a pull query groups a view's rows by its columns, such as window_start", strings.ToUpper(f.Name), strings.ToUpper(f.Name))
		}
	}
	groups, groupIdx, err := groupKeys(items, make([]bool, len(items)), false, sc, ekeys)
	if err != nil {
		return err
	}
	more := make([]parser.Expr, len(sel.OrderBy))
	for i, o := range sel.OrderBy {
		more[i] = o.Expr
	}
	gr, err := bindGrouped(sel.Having, fields, more, sc, nil, groups, groupIdx, ekeys, false)
	if err != nil {
		return err
	}
	output := append([]plan.Expr(nil), gr.output...)
	aggOut := append(plan.Schema(nil), gr.out...)
	for _, o := range sel.OrderBy {
		col := -1
		switch e := o.Expr.(type) {
		case *parser.Position:
			if e.N < 1 || e.N > len(fields) {
				return errf("ORDER", "ORDER BY %d: the select list has %d columns (positions count from 1)", e.N, len(fields))
			}
			col = e.N - 1
		case *parser.ColumnRef:
			// A name of the select list first, as MySQL and PostgreSQL
			// resolve ORDER BY (ORDER BY total for SUM(x) AS total).
			if e.Table == "" {
				col = gr.out.Index(e.Name)
			}
		}
		if col < 0 {
			x, err := gr.postScope.bind(o.Expr)
			if err != nil {
				if c, ok := o.Expr.(*parser.ColumnRef); ok && sel.Distinct {
					return errf(c.Name, "ORDER BY %s: with SELECT DISTINCT, ORDER BY takes the selected columns", c.Name)
				}
				return err
			}
			col = len(output)
			output = append(output, x)
			aggOut = append(aggOut, plan.Column{Name: fmt.Sprintf("_order%d", len(q.Order)), Type: x.Type()})
		}
		q.Order = append(q.Order, plan.SortKey{Expr: &plan.ColRef{Index: col, Name: aggOut[col].Name, T: aggOut[col].Type}, Desc: o.Desc})
	}
	keys := make([]int, len(groups))
	for i := range keys {
		keys[i] = i
	}
	q.Group = &plan.PullGroup{
		Input: append(append([]plan.Expr(nil), groups...), gr.args...),
		Agg:   &plan.Aggregate{Keys: keys, Aggs: gr.aggs, Having: gr.having, Output: output, Out: aggOut, EmitMode: plan.EmitChanges},
	}
	q.Out = gr.out
	q.Project = make([]plan.Expr, len(gr.out))
	for i, c := range gr.out {
		q.Project[i] = &plan.ColRef{Index: i, Name: c.Name, T: c.Type}
	}
	return nil
}
