package planner

import (
	"cmp"
	"math"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// join plans `left JOIN right ON ...` of two streams as an interval join:
// the ON condition must equate columns of the two sides and bound the
// left event time by the right one (or the other way round); equal window
// columns (window_end = window_end) of two windowed streams bound them to
// the same window. extra are WHERE conditions of an inner join: those that
// are keys or bounds are used, the others returned.
func (b *builder) join(j *parser.Join, extra []parser.Expr) (*stream, []parser.Expr, error) {
	left, err := b.from(j.Left)
	if err != nil {
		return nil, nil, err
	}
	rref := *j.Right
	rref.AsOf = nil
	right, err := b.from(&rref)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range []*stream{left, right} {
		if s.changes != nil {
			return nil, nil, errf("JOIN", "a join reads append-only streams and PRIMARY KEY tables; this input is an updating result (a running aggregate, or a filter or projection of one), which interval, window and stream-to-table joins cannot take back rows from")
		}
	}
	if left.upsert {
		return nil, nil, errf(left.table.Name, "a PRIMARY KEY table joins as the right side: FROM stream JOIN %s [AS OF TIMESTAMP stream.ts] ON ...", left.table.Name)
	}
	if right.upsert {
		return b.temporalJoin(j, extra, left, right)
	}
	if j.Right.AsOf != nil {
		return nil, nil, errf(j.Right.Qualifier(), "AS OF TIMESTAMP joins a PRIMARY KEY table; %s has no PRIMARY KEY", j.Right.Name)
	}
	nl := len(left.scope.cols)
	merged := &scope{cols: append(append(plan.Schema{}, left.scope.cols...), right.scope.cols...),
		quals: append(append([]string{}, left.scope.quals...), right.scope.quals...)}
	spec := &plan.IntervalJoin{Kind: plan.InnerJoin, LeftTime: -1, RightTime: -1, Lower: math.MinInt64, Upper: math.MaxInt64,
		Left: left.scope.cols, Right: right.scope.cols}
	if j.Kind == parser.JoinLeft {
		spec.Kind = plan.LeftJoin
	}
	var residual, rest []parser.Expr
	for _, c := range conjuncts(j.On) {
		ok, err := b.joinCondition(c, merged, nl, left, right, spec)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			residual = append(residual, c)
		}
	}
	var pushed [2][]plan.Expr
	for _, c := range extra {
		if ok, err := b.joinCondition(c, merged, nl, left, right, spec); err != nil || !ok {
			if side, x := pushable(c, merged, left, right, spec.Kind); x != nil {
				pushed[side] = append(pushed[side], x)
				continue
			}
			rest = append(rest, c) // a filter after the join (or its error, reported there)
		}
	}
	// WHERE conditions on one side's columns filter that side before the
	// join: rows that cannot match are neither shuffled nor held.
	for side, s := range []*stream{left, right} {
		if len(pushed[side]) > 0 {
			s.cur.Ops = append(s.cur.Ops, &plan.Calc{Filter: andExprs(pushed[side]), Out: schemaOf(s.cur)})
		}
	}
	if len(spec.LeftKeys) == 0 {
		return nil, nil, errf("JOIN", "a join needs at least one equality between columns of its two sides (ON a.x = b.y); a non-equi join of two streams is not supported")
	}
	if spec.LeftTime < 0 {
		// Two windowed streams joined on their windows: window_end = window_end.
		for k, lk := range spec.LeftKeys {
			if rk := spec.RightKeys[k]; lk == left.winEnd && rk == right.winEnd {
				spec.LeftTime, spec.RightTime, spec.Lower, spec.Upper = lk, rk, 0, 0
			}
		}
	}
	if spec.LeftTime < 0 && spec.Lower == math.MinInt64 && spec.Upper == math.MaxInt64 && b.opts.StateTTL > 0 {
		// A regular join: rows are kept until the other side's watermark is
		// state_ttl past them (event time, so results stay deterministic).
		lt, rt := onlyEventTime(left), onlyEventTime(right)
		if lt < 0 || rt < 0 {
			return nil, nil, errf("state_ttl", "a regular join with state_ttl needs one event-time column on each side to age its state by")
		}
		spec.LeftTime, spec.RightTime, spec.Lower, spec.Upper, spec.TTL = lt, rt, -b.opts.StateTTL, b.opts.StateTTL, b.opts.StateTTL
		b.stateTTLUnused = false
	}
	if spec.LeftTime < 0 || spec.Lower == math.MinInt64 || spec.Upper == math.MaxInt64 {
		return nil, nil, errf("JOIN", "a join of two streams needs bounded state: time bounds on both sides' event-time columns (ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND), two windowed subqueries joined on window_end, or a regular join with SET_VAR(state_ttl='1h'); otherwise its state would grow without end")
	}
	if spec.Lower > spec.Upper {
		return nil, nil, errf("JOIN", "the join's time bounds are empty: left time - right time must be in [%dms, %dms]", spec.Lower, spec.Upper)
	}
	for i, lk := range spec.LeftKeys {
		lt, rt := spec.Left[lk].Type, spec.Right[spec.RightKeys[i]].Type
		if lt != rt {
			return nil, nil, errf(spec.Left[lk].Name, "join on columns of mismatched types: %s.%s %s = %s.%s %s",
				left.scope.quals[lk], spec.Left[lk].Name, lt, right.scope.quals[spec.RightKeys[i]], spec.Right[spec.RightKeys[i]].Name, rt)
		}
	}
	out := make(plan.Schema, len(merged.cols))
	copy(out, merged.cols)
	if spec.Kind == plan.LeftJoin {
		for i := nl; i < len(out); i++ {
			out[i].NotNull = false
		}
	}
	spec.Out = out
	if spec.Residual, err = bindResidual(merged, residual); err != nil {
		return nil, nil, err
	}
	jv := b.joinVertex(left, right, spec.LeftKeys, spec.RightKeys, spec)
	s := &stream{cur: jv, scope: &scope{cols: out, quals: merged.quals},
		eventTime: append(append([]bool{}, left.eventTime...), right.eventTime...),
		lateness:  max(left.lateness, right.lateness), sources: append(left.sources, right.sources...),
		winStart: left.winStart, winEnd: left.winEnd}
	return s, rest, nil
}

// pushable returns a WHERE conjunct bound to the one side it reads (0:
// left, 1: right), when it may filter that side before the join: it binds
// on the joined columns (so errors are the join's), on exactly one side,
// and is not on the right of a LEFT join (whose unmatched left rows it
// must still see padded with NULLs).
func pushable(c parser.Expr, merged *scope, left, right *stream, kind plan.JoinKind) (int, plan.Expr) {
	if _, err := merged.bind(c); err != nil {
		return 0, nil
	}
	l, lerr := left.scope.plain().bind(c)
	r, rerr := right.scope.plain().bind(c)
	switch {
	case lerr == nil && rerr != nil:
		return 0, l
	case rerr == nil && lerr != nil && kind == plan.InnerJoin:
		return 1, r
	}
	return 0, nil
}

// andExprs is the conjunction of xs.
func andExprs(xs []plan.Expr) plan.Expr {
	x := xs[0]
	for _, y := range xs[1:] {
		x = &plan.Call{Fn: "and", Args: []plan.Expr{x, y}, T: plan.TypeBoolean}
	}
	return x
}

// onlyEventTime is the stream's one event-time column, or -1.
func onlyEventTime(s *stream) int {
	found := -1
	for i, et := range s.eventTime {
		if et {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}

// conjuncts splits a AND b AND c.
func conjuncts(e parser.Expr) []parser.Expr {
	if bin, ok := e.(*parser.Binary); ok && strings.EqualFold(bin.Op, "AND") {
		return append(conjuncts(bin.L), conjuncts(bin.R)...)
	}
	return []parser.Expr{e}
}

// joinCondition records c in spec when it is a key equality or a time
// bound between the sides; false means it is a residual condition.
func (b *builder) joinCondition(c parser.Expr, merged *scope, nl int, left, right *stream, spec *plan.IntervalJoin) (bool, error) {
	switch c := c.(type) {
	case *parser.Binary:
		if c.Op == "=" {
			l, lok := c.L.(*parser.ColumnRef)
			r, rok := c.R.(*parser.ColumnRef)
			if lok && rok {
				li, ri := merged.lookup(l), merged.lookup(r)
				if li >= 0 && ri >= 0 && (li < nl) != (ri < nl) {
					if li > ri {
						li, ri = ri, li
					}
					spec.LeftKeys = append(spec.LeftKeys, li)
					spec.RightKeys = append(spec.RightKeys, ri-nl)
					return true, nil
				}
			}
		}
		op := map[string]string{">=": ">=", ">": ">", "<=": "<=", "<": "<"}[c.Op]
		if op == "" {
			return false, nil
		}
		return b.timeBound(c.L, op, c.R, merged, nl, left, right, spec)
	case *parser.Between:
		if c.Not {
			return false, nil
		}
		lo, err := b.timeBound(c.X, ">=", c.Lo, merged, nl, left, right, spec)
		if err != nil || !lo {
			return false, err
		}
		return b.timeBound(c.X, "<=", c.Hi, merged, nl, left, right, spec)
	}
	return false, nil
}

// timeOffset recognises `col`, `col + INTERVAL n UNIT`, `col - INTERVAL n
// UNIT` (and DATE_ADD/DATE_SUB): the column and the offset in ms.
// An offset is at most the span of the TIMESTAMP range, so bounds and
// their sums never overflow.
func timeOffset(e parser.Expr, merged *scope) (int, int64, bool, error) {
	switch e := e.(type) {
	case *parser.ColumnRef:
		i := merged.lookup(e)
		return i, 0, i >= 0, nil
	case *parser.Func:
		if (e.Name != "date_add" && e.Name != "date_sub") || len(e.Args) != 2 {
			return -1, 0, false, nil
		}
		c, ok := e.Args[0].(*parser.ColumnRef)
		iv, ok2 := e.Args[1].(*parser.Interval)
		if !ok || !ok2 {
			return -1, 0, false, nil
		}
		n, ok := intLiteral(iv.Value)
		unit, err := intervalMillis(iv.Unit)
		if !ok || err != nil {
			return -1, 0, false, nil
		}
		if span := plan.MaxTime - plan.MinTime; n > span/unit || n < -span/unit {
			return -1, 0, false, errf("INTERVAL", "INTERVAL %d %s is longer than the TIMESTAMP range (%s)", n, strings.ToUpper(iv.Unit), plan.TimeRange)
		}
		i := merged.lookup(c)
		if e.Name == "date_sub" {
			n = -n
		}
		return i, n * unit, i >= 0, nil
	}
	return -1, 0, false, nil
}

func intLiteral(e parser.Expr) (int64, bool) {
	switch e := e.(type) {
	case *parser.Literal:
		return e.Int, e.Kind == parser.LitInt
	case *parser.Unary:
		if e.Op == "-" {
			n, ok := intLiteral(e.X)
			return -n, ok
		}
	}
	return 0, false
}

// timeBound records `a op b` when a and b are (offset) event-time columns
// of opposite sides: as a bound on left.time - right.time.
func (b *builder) timeBound(a parser.Expr, op string, bx parser.Expr, merged *scope, nl int, left, right *stream, spec *plan.IntervalJoin) (bool, error) {
	ai, ao, ok1, err1 := timeOffset(a, merged)
	bi, bo, ok2, err2 := timeOffset(bx, merged)
	if err := cmp.Or(err1, err2); err != nil {
		return false, err
	}
	if !ok1 || !ok2 || (ai < nl) == (bi < nl) {
		return false, nil
	}
	if merged.cols[ai].Type != plan.TypeTimestamp || merged.cols[bi].Type != plan.TypeTimestamp {
		return false, nil
	}
	// Normalise to L op R + k, with L the left column.
	if ai >= nl {
		ai, ao, bi, bo = bi, bo, ai, ao
		op = map[string]string{">=": "<=", ">": "<", "<=": ">=", "<": ">"}[op]
	}
	ri := bi - nl
	if !left.eventTime[ai] || !right.eventTime[ri] {
		return false, errf(merged.cols[ai].Name, "join time bounds must compare the event-time columns of the two sides")
	}
	if (spec.LeftTime >= 0 && spec.LeftTime != ai) || (spec.RightTime >= 0 && spec.RightTime != ri) {
		return false, errf(merged.cols[ai].Name, "join time bounds must all use the same event-time column of each side")
	}
	spec.LeftTime, spec.RightTime = ai, ri
	k := bo - ao // L + ao op R + bo  =>  L - R op bo - ao
	switch op {
	case ">=":
		spec.Lower = max(spec.Lower, k)
	case ">":
		spec.Lower = max(spec.Lower, k+1)
	case "<=":
		spec.Upper = min(spec.Upper, k)
	case "<":
		spec.Upper = min(spec.Upper, k-1)
	}
	return true, nil
}

// bindResidual binds a join's residual conditions (those that are not
// key equalities or time bounds) on the joined columns: nil for none.
func bindResidual(merged *scope, residual []parser.Expr) (plan.Expr, error) {
	if len(residual) == 0 {
		return nil, nil
	}
	return merged.bind(andAll(residual))
}

// joinVertex adds the vertex of a join, each side's rows hashed on its
// key columns so that matching rows meet in one task.
func (b *builder) joinVertex(left, right *stream, leftKeys, rightKeys []int, join plan.Op) *plan.Vertex {
	return b.vertex(max(b.opts.Parallelism, 1), []plan.Edge{
		left.hashEdge(leftKeys), right.hashEdge(rightKeys),
	}, join)
}
