package planner

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// maxTopN bounds N of a Top-N: the rows kept per partition of an
// append-only input (and emitted per change).
const maxTopN = 10000

// rankCall finds the ranking window call of a Top-N's derived table: the
// FROM of a query that is one subquery or WITH query whose select list
// holds ROW_NUMBER(), RANK() or DENSE_RANK() OVER (...). It returns the
// derived table's query and the field's index, or nil.
func (b *builder) rankCall(ref *parser.TableRef) (*parser.Select, int) {
	if ref == nil || ref.Join != nil {
		return nil, -1
	}
	sel := ref.Subquery
	if sel == nil {
		c := b.cte(ref.Name)
		if c == nil {
			return nil, -1
		}
		sel = c.sel
	}
	for i, f := range sel.Fields {
		if o, ok := f.Expr.(*parser.Over); ok && isRankFn(o.Name) {
			return sel, i
		}
	}
	return nil, -1
}

func isRankFn(name string) bool {
	return name == "row_number" || name == "rank" || name == "dense_rank"
}

// topN plans FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY p ORDER BY
// o) AS rn FROM s) t WHERE rn <= N: the derived table's query without the
// window call (a placeholder column where rn goes, and its PARTITION BY
// and ORDER BY expressions as hidden columns after the others), then a
// TopN vertex hashed on the partition. It takes the conditions on rn out
// of where and returns the rest.
func (b *builder) topN(ref *parser.TableRef, inner *parser.Select, at int, where []parser.Expr) (*stream, []parser.Expr, error) {
	field := inner.Fields[at]
	over := field.Expr.(*parser.Over)
	fn := map[string]plan.RankFn{"row_number": plan.RowNumber, "rank": plan.Rank, "dense_rank": plan.DenseRank}[over.Name]
	call := strings.ToUpper(over.Name) + "()"
	switch {
	case len(over.Args) > 0 || over.Star:
		return nil, nil, errf(over.Name, "%s takes no arguments", call)
	case over.Frame != nil:
		return nil, nil, errf(over.Name, "%s numbers the rows of its partition: a ROWS or RANGE frame means nothing to it", call)
	case len(over.OrderBy) == 0:
		return nil, nil, errf(over.Name, "%s OVER (...) needs ORDER BY: the rows are ranked in that order", call)
	case field.Alias == "":
		return nil, nil, errf(over.Name, "name the rank: %s OVER (...) AS rn, then filter rn <= N in the outer query", call)
	case inner.Distinct:
		return nil, nil, errf("DISTINCT", "SELECT DISTINCT with %s: read the distinct rows from a subquery and rank those", call)
	}
	for i, f := range inner.Fields {
		if o, ok := f.Expr.(*parser.Over); ok && i != at {
			return nil, nil, errf(o.Name, "%s: the query of a Top-N has one window function, its rank; compute the others in a query of their own", o.Text)
		}
	}
	qual := ref.Qualifier()
	limit, rest, err := rankFilter(where, qual, field.Alias, call)
	if err != nil {
		return nil, nil, err
	}

	// The derived table without the window call: a placeholder where the
	// rank goes (the TopN fills it), the window's expressions after the
	// select list.
	d := *inner
	d.Fields = append([]parser.Field(nil), inner.Fields...)
	d.Fields[at] = parser.Field{Expr: &parser.Literal{Kind: parser.LitInt}, Alias: field.Alias}
	var hidden []parser.Expr
	for _, e := range over.PartitionBy {
		hidden = append(hidden, e)
	}
	for _, o := range over.OrderBy {
		hidden = append(hidden, o.Expr)
	}
	for i, e := range hidden {
		d.Fields = append(d.Fields, parser.Field{Expr: e, Alias: fmt.Sprintf("_topn_%d", i)})
	}
	var s *stream
	if ref.Subquery != nil {
		s, err = b.subquery(&d, qual, false)
	} else {
		s, err = b.cteQuery(b.cte(ref.Name), &d, qual)
	}
	if err != nil {
		return nil, nil, err
	}
	nvis := len(s.scope.cols) - len(hidden)
	exprs := outputExprs(s.cur)
	rankAt := -1
	for i := range nvis {
		if s.scope.cols[i].Name == field.Alias {
			rankAt = i
		}
	}
	if rankAt < 0 {
		panic("planner: the rank's placeholder column is missing")
	}

	spec := &plan.TopN{Fn: fn, Limit: limit, Retract: !s.appendOnly(), RankAt: rankAt, TimeCol: -1}
	for i := range over.PartitionBy {
		spec.Partition = append(spec.Partition, nvis+i)
	}
	for i, o := range over.OrderBy {
		spec.Order = append(spec.Order, plan.OrderCol{Col: nvis + len(over.PartitionBy) + i, Desc: o.Desc})
	}
	out := make(plan.Schema, nvis)
	for i := range nvis {
		spec.Keep = append(spec.Keep, i)
		out[i] = s.scope.cols[i]
	}
	out[rankAt] = plan.Column{Name: field.Alias, Type: plan.TypeBigint, NotNull: true}
	spec.Out = out

	// The mode: the first row by event time of an append-only stream is
	// deduplication (append-only); a window's Top-N emits when it closes;
	// everything else updates.
	switch {
	case s.appendOnly() && partitionsBy(exprs, spec.Partition, s.winEnd, nvis):
		spec.Mode, spec.TimeCol = plan.TopNWindow, s.winEnd
	case s.appendOnly() && fn == plan.RowNumber && limit == 1 && len(spec.Order) == 1 && !spec.Order[0].Desc && s.eventTime[spec.Order[0].Col]:
		spec.Mode, spec.TimeCol = plan.TopNDedup, spec.Order[0].Col
		spec.AllowedLateness, spec.TTL = s.lateness, b.opts.StateTTL
		if b.opts.StateTTL > 0 {
			b.stateTTLUnused = false
		}
	}

	par := max(b.opts.Parallelism, 1)
	if len(spec.Partition) == 0 {
		par = 1
	}
	tv := b.vertex(par, []plan.Edge{s.hashEdge(spec.Partition)}, spec)
	ts := &stream{cur: tv, scope: newScope(qual, out), eventTime: make([]bool, nvis), lateness: s.lateness,
		sources: s.sources, winStart: -1, winEnd: -1}
	if spec.Mode != plan.TopNUpdating {
		// Rows pass through whole and on time: their event-time and window
		// columns stay so.
		for i := range nvis {
			ts.eventTime[i] = i != rankAt && s.eventTime[i]
		}
		ts.winEnd = visibleCol(exprs, s.winEnd, nvis)
		ts.winStart = visibleCol(exprs, s.winStart, nvis)
		return ts, rest, nil
	}
	// An updating result, keyed on the partition's values and the rank
	// (or the row id of RANK and DENSE_RANK), emitted once per key and
	// barrier.
	c := &changelog{key: plan.KeyGroup}
	for i, e := range over.PartitionBy {
		c.keyOut = append(c.keyOut, visibleCol(exprs, nvis+i, nvis))
		c.keyNames = append(c.keyNames, groupItemText(e))
	}
	switch {
	case spec.KeyByRank():
		c.keyOut, c.keyNames = append(c.keyOut, rankAt), append(c.keyNames, field.Alias)
	case fn != plan.RowNumber:
		c.keyOut, c.keyNames = append(c.keyOut, -1), append(c.keyNames, "_row")
	}
	// On (partition, rank) or (partition, row id) the keys are not those
	// the exchange hashed on: a keyed sink takes them through a ByKey
	// exchange. On the partition alone they are.
	ts.changes, ts.rekey = c, par > 1 && len(c.keyOut) > len(spec.Partition)
	return ts, rest, nil
}

// rankFilter takes the conditions on the rank (named name, or qual.name)
// out of where: rn <= N, rn < N, rn = 1 (and the same written the other
// way round). It returns N and the other conditions.
func rankFilter(where []parser.Expr, qual, name, call string) (int64, []parser.Expr, error) {
	isRank := func(e parser.Expr) bool {
		c, ok := e.(*parser.ColumnRef)
		return ok && c.Name == name && (c.Table == "" || c.Table == qual)
	}
	limit := int64(-1)
	var rest []parser.Expr
	for _, w := range where {
		mentions := false
		walk(w, func(x parser.Expr) { mentions = mentions || isRank(x) })
		if !mentions {
			rest = append(rest, w)
			continue
		}
		n, ok := rankBound(w, isRank)
		if !ok {
			return 0, nil, errf(name, "a Top-N filters its rank as %s <= N, %s < N or %s = 1; this condition on %s is not one of those", name, name, name, name)
		}
		if limit >= 0 {
			return 0, nil, errf(name, "%s is filtered twice: give one condition %s <= N", name, name)
		}
		limit = n
	}
	switch {
	case limit < 0:
		return 0, nil, errf(name, "%s without a filter on %s: a Top-N needs WHERE %s <= N in the query that reads it (every rank would be an unbounded result)", call, name, name)
	case limit < 1:
		return 0, nil, errf(name, "%s <= %d selects no row: ranks start at 1", name, limit)
	case limit > maxTopN:
		return 0, nil, errf(name, "%s <= %d: a Top-N keeps at most %d rows per partition", name, limit, maxTopN)
	}
	return limit, rest, nil
}

// rankBound reads rn <= N, rn < N, rn = 1, N >= rn, N > rn, 1 = rn.
func rankBound(e parser.Expr, isRank func(parser.Expr) bool) (int64, bool) {
	bin, ok := e.(*parser.Binary)
	if !ok {
		return 0, false
	}
	op, l, r := bin.Op, bin.L, bin.R
	if isRank(r) {
		l, r = r, l
		op = map[string]string{">=": "<=", ">": "<", "=": "="}[op]
	}
	lit, ok := r.(*parser.Literal)
	if !isRank(l) || !ok || lit.Kind != parser.LitInt {
		return 0, false
	}
	switch op {
	case "<=":
		return lit.Int, true
	case "<":
		return lit.Int - 1, true
	case "=":
		return lit.Int, lit.Int == 1
	}
	return 0, false
}

// outputExprs are the expressions of the last operator of v's chain that
// compute its output columns (a Calc's projection, an aggregation's
// output), or nil.
func outputExprs(v *plan.Vertex) []plan.Expr {
	switch op := v.Ops[len(v.Ops)-1].(type) {
	case *plan.Calc:
		return op.Project
	case *plan.Aggregate:
		return op.Output
	}
	return nil
}

// visibleCol is the column before nvis that computes the same expression
// as column col, or -1.
func visibleCol(exprs []plan.Expr, col, nvis int) int {
	if col < 0 {
		return -1
	}
	if col < nvis {
		return col
	}
	if col >= len(exprs) {
		return -1
	}
	for i := range nvis {
		if exprs[i].String() == exprs[col].String() {
			return i
		}
	}
	return -1
}

// partitionsBy reports whether one of the partition columns is col or
// computes what it does.
func partitionsBy(exprs []plan.Expr, part []int, col, nvis int) bool {
	if col < 0 {
		return false
	}
	for _, p := range part {
		if p == col || visibleCol(exprs, p, nvis) >= 0 && visibleCol(exprs, p, nvis) == visibleCol(exprs, col, nvis) {
			return true
		}
	}
	return false
}
