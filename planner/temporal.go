package planner

import (
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// temporalJoin plans `stream JOIN table [AS OF TIMESTAMP stream.ts] ON ...`
// against a PRIMARY KEY table: the ON condition must equate every key
// column of the table with a column of the stream.
func (b *builder) temporalJoin(j *parser.Join, extra []parser.Expr, left, right *stream) (*stream, []parser.Expr, error) {
	tbl := right.table
	nl := len(left.scope.cols)
	merged := &scope{cols: append(append(plan.Schema{}, left.scope.cols...), right.scope.cols...),
		quals: append(append([]string{}, left.scope.quals...), right.scope.quals...)}
	spec := &plan.TemporalJoin{Kind: plan.InnerJoin, LeftTime: -1, RightTime: tbl.EventTime, Left: left.scope.cols, Right: right.scope.cols}
	if j.Kind == parser.JoinLeft {
		spec.Kind = plan.LeftJoin
	}
	// Equalities between a stream column and a table column.
	keyOf := map[int]int{} // table column -> stream column
	equality := func(c parser.Expr) bool {
		bin, ok := c.(*parser.Binary)
		if !ok || bin.Op != "=" {
			return false
		}
		l, lok := bin.L.(*parser.ColumnRef)
		r, rok := bin.R.(*parser.ColumnRef)
		if !lok || !rok {
			return false
		}
		li, ri := merged.lookup(l), merged.lookup(r)
		if li < 0 || ri < 0 || (li < nl) == (ri < nl) {
			return false
		}
		if li > ri {
			li, ri = ri, li
		}
		if !isKeyColumn(tbl, tbl.Columns[ri-nl].Name) {
			return false // a condition on a non-key column: residual
		}
		if _, dup := keyOf[ri-nl]; dup {
			return false
		}
		keyOf[ri-nl] = li
		return true
	}
	var residual, rest []parser.Expr
	for _, c := range conjuncts(j.On) {
		if !equality(c) {
			residual = append(residual, c)
		}
	}
	for _, c := range extra {
		if !equality(c) {
			rest = append(rest, c)
		}
	}
	var missing []string
	for _, k := range tbl.PrimaryKey {
		ki := tbl.Columns.Index(k)
		li, ok := keyOf[ki]
		if !ok {
			missing = append(missing, k)
			continue
		}
		if lt, rt := merged.cols[li].Type, tbl.Columns[ki].Type; lt != rt {
			return nil, nil, errf(merged.cols[li].Name, "join on columns of mismatched types: %s.%s %s = %s.%s %s",
				merged.quals[li], merged.cols[li].Name, lt, right.scope.quals[ki], tbl.Columns[ki].Name, rt)
		}
		spec.LeftKeys = append(spec.LeftKeys, li)
		spec.RightKeys = append(spec.RightKeys, ki)
	}
	if len(missing) > 0 {
		return nil, nil, errf(tbl.Name, "a join with PRIMARY KEY table %s must equate every key column with the stream (missing: %s)", tbl.Name, strings.Join(missing, ", "))
	}
	if j.Right.AsOf != nil {
		c, ok := j.Right.AsOf.(*parser.ColumnRef)
		li := -1
		if ok {
			li = merged.lookup(c)
		}
		if li < 0 || li >= nl || !left.eventTime[li] {
			return nil, nil, errf("AS", "AS OF TIMESTAMP takes the stream's event-time column (e.g. AS OF TIMESTAMP b.ts)")
		}
		if tbl.EventTime < 0 {
			return nil, nil, errf(tbl.Name, "AS OF TIMESTAMP needs versions: table %s has no event_time column", tbl.Name)
		}
		spec.AsOf, spec.LeftTime = true, li
	}
	out := make(plan.Schema, len(merged.cols))
	copy(out, merged.cols)
	for i := nl; i < len(out); i++ {
		out[i].NotNull = out[i].NotNull && spec.Kind == plan.InnerJoin
	}
	spec.Out = out
	var err error
	if spec.Residual, err = bindResidual(merged, residual); err != nil {
		return nil, nil, err
	}
	jv := b.joinVertex(left, right, spec.LeftKeys, spec.RightKeys, spec)
	s := &stream{cur: jv, scope: &scope{cols: out, quals: merged.quals},
		eventTime: append(append([]bool{}, left.eventTime...), make([]bool, len(right.eventTime))...),
		lateness:  left.lateness, sources: append(left.sources, right.sources...),
		winStart: left.winStart, winEnd: left.winEnd}
	return s, rest, nil
}

func isKeyColumn(t *plan.TableDef, col string) bool {
	for _, k := range t.PrimaryKey {
		if strings.EqualFold(k, col) {
			return true
		}
	}
	return false
}
