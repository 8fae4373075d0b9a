package planner

import (
	"cmp"
	"fmt"
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
	if j.Kind == parser.JoinRight {
		return b.rightJoin(j)
	}
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
	if left.upsert {
		return nil, nil, errf(left.table.Name, "a PRIMARY KEY table joins as the right side: FROM stream JOIN %s [AS OF TIMESTAMP stream.ts] ON ...", left.table.Name)
	}
	if right.upsert {
		if left.changes != nil {
			return nil, nil, errf("JOIN", "a stream-to-table join reads an append-only stream; this one updates (a running aggregate, or a filter or projection of one). Read the PRIMARY KEY table as a changelog instead: FROM (SELECT * FROM %s) AS t joins it as a regular join", right.table.Name)
		}
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
	if left.changes != nil || right.changes != nil {
		return b.changelogJoin(left, right, merged, spec, residual, rest)
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
	if spec.LeftTime >= 0 && (spec.Lower == math.MinInt64 || spec.Upper == math.MaxInt64) && b.opts.StateTTL > 0 {
		// Time bounded on one side only (ON l.ts >= r.ts): state_ttl bounds
		// the other, as it bounds both in a regular join.
		spec.Lower, spec.Upper, spec.TTL = max(spec.Lower, -b.opts.StateTTL), min(spec.Upper, b.opts.StateTTL), b.opts.StateTTL
		b.stateTTLUnused = false
	}
	if spec.LeftTime < 0 || spec.Lower == math.MinInt64 || spec.Upper == math.MaxInt64 {
		return nil, nil, errf("JOIN", "a join of two streams needs bounded state: time bounds on both sides' event-time columns (ON b.auction = a.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 SECOND), two windowed subqueries joined on window_end, or a regular join with SET_VAR(state_ttl='1h'); otherwise its state would grow without end")
	}
	if spec.Lower > spec.Upper {
		return nil, nil, errf("JOIN", "the join's time bounds are empty: left time - right time must be in [%dms, %dms]", spec.Lower, spec.Upper)
	}
	if err := checkKeyTypes(spec.LeftKeys, spec.RightKeys, left, right); err != nil {
		return nil, nil, err
	}
	out := joinedSchema(merged, nl, spec.Kind)
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

// checkKeyTypes refuses join keys of different types.
func checkKeyTypes(leftKeys, rightKeys []int, left, right *stream) error {
	for i, lk := range leftKeys {
		lc, rc := left.scope.cols[lk], right.scope.cols[rightKeys[i]]
		if lc.Type != rc.Type {
			return errf(lc.Name, "join on columns of mismatched types: %s.%s %s = %s.%s %s",
				left.scope.quals[lk], lc.Name, lc.Type, right.scope.quals[rightKeys[i]], rc.Name, rc.Type)
		}
	}
	return nil
}

// joinedSchema is the join's output: the left columns, then the right
// ones (nullable for a LEFT join).
func joinedSchema(merged *scope, nl int, kind plan.JoinKind) plan.Schema {
	out := make(plan.Schema, len(merged.cols))
	copy(out, merged.cols)
	if kind == plan.LeftJoin {
		for i := nl; i < len(out); i++ {
			out[i].NotNull = false
		}
	}
	return out
}

// changelogJoin plans a regular join of which a side updates (a running
// aggregate, a PRIMARY KEY table read as a changelog): its keys and
// residual are spec's; an event-time bound is refused (interval and window
// joins take append-only inputs). An append-only side's rows are held
// until state_ttl past the join's watermark. The output updates, keyed on
// the pair of rows it joins.
func (b *builder) changelogJoin(left, right *stream, merged *scope, spec *plan.IntervalJoin, residual, rest []parser.Expr) (*stream, []parser.Expr, error) {
	updating := func(s *stream) string {
		if s.changes != nil {
			return "updates (a running aggregate, a PRIMARY KEY table read as a changelog, or a filter or projection of one)"
		}
		return "is append-only"
	}
	if spec.LeftTime >= 0 || spec.Lower != math.MinInt64 || spec.Upper != math.MaxInt64 {
		return nil, nil, errf("JOIN", "interval and window joins take append-only inputs: this join bounds the sides' event times, and its left input %s, its right input %s; join the updating input without a time bound (a regular join)", updating(left), updating(right))
	}
	if len(spec.LeftKeys) == 0 {
		return nil, nil, errf("JOIN", "a join needs at least one equality between columns of its two sides (ON a.x = b.y); a non-equi join of two streams is not supported")
	}
	if err := checkKeyTypes(spec.LeftKeys, spec.RightKeys, left, right); err != nil {
		return nil, nil, err
	}
	nl := len(left.scope.cols)
	cj := &plan.ChangelogJoin{Kind: spec.Kind, LeftKeys: spec.LeftKeys, RightKeys: spec.RightKeys, Time: [2]int{-1, -1},
		Left: left.scope.cols, Right: right.scope.cols, Out: joinedSchema(merged, nl, spec.Kind)}
	for side, s := range []*stream{left, right} {
		cj.Updating[side] = s.changes != nil
		if cj.Updating[side] {
			continue
		}
		if b.opts.StateTTL <= 0 {
			return nil, nil, errf("state_ttl", "a join of an updating input with an append-only stream holds the stream's rows until state_ttl expires them: set SET_VAR(state_ttl='1h') (an updating input's rows are held while they are current, bounded by its keys)")
		}
		if cj.Time[side] = onlyEventTime(s); cj.Time[side] < 0 {
			return nil, nil, errf("state_ttl", "a join with state_ttl needs one event-time column on its append-only side to age its rows by")
		}
		cj.TTL = b.opts.StateTTL
		b.stateTTLUnused = false
	}
	var err error
	if cj.Residual, err = bindResidual(merged, residual); err != nil {
		return nil, nil, err
	}
	jv := b.joinVertex(left, right, spec.LeftKeys, spec.RightKeys, cj)
	s := &stream{cur: jv, scope: &scope{cols: cj.Out, quals: merged.quals}, eventTime: make([]bool, len(cj.Out)),
		lateness: max(left.lateness, right.lateness), sources: append(left.sources, right.sources...), winStart: -1, winEnd: -1,
		changes: &changelog{key: plan.KeyGroup, keyOut: []int{-1, -1}, keyNames: []string{"_left", "_right"}}, rekey: jv.Parallelism > 1, multi: true}
	return s, rest, nil
}

// rightJoin plans a RIGHT JOIN b ON ... as b LEFT JOIN a ON ..., then puts
// the columns back in the order written (a's, then b's).
func (b *builder) rightJoin(j *parser.Join) (*stream, []parser.Expr, error) {
	if j.Left.Join != nil {
		return nil, nil, errf("RIGHT", "RIGHT JOIN after another join: write the chain with LEFT JOIN, the preserved side first")
	}
	if j.Left.AsOf != nil || j.Right.AsOf != nil {
		return nil, nil, errf("AS", "AS OF TIMESTAMP in a RIGHT JOIN: write FROM stream LEFT JOIN t AS OF TIMESTAMP stream.ts ON ...")
	}
	swapped := &parser.Join{Kind: parser.JoinLeft, Left: j.Right, Right: j.Left, On: j.On}
	s, rest, err := b.join(swapped, nil)
	if err != nil {
		return nil, nil, err
	}
	// s's columns are the right side's, then the left side's.
	var nr int
	switch op := s.cur.Ops[len(s.cur.Ops)-1].(type) {
	case *plan.IntervalJoin:
		nr = len(op.Left)
	case *plan.TemporalJoin:
		nr = len(op.Left)
	case *plan.ChangelogJoin:
		nr = len(op.Left)
	default:
		panic(fmt.Sprintf("planner: a join planned as %s", op.OpName()))
	}
	perm := make([]int, 0, len(s.scope.cols))
	for i := nr; i < len(s.scope.cols); i++ {
		perm = append(perm, i)
	}
	for i := range nr {
		perm = append(perm, i)
	}
	out := make(plan.Schema, len(perm))
	quals := make([]string, len(perm))
	exprs := make([]plan.Expr, len(perm))
	et := make([]bool, len(perm))
	for k, i := range perm {
		out[k], quals[k], et[k] = s.scope.cols[i], s.scope.quals[i], s.eventTime[i]
		exprs[k] = &plan.ColRef{Index: i, Name: out[k].Name, T: out[k].Type}
	}
	s.cur.Ops = append(s.cur.Ops, &plan.Calc{Project: exprs, Out: out})
	r := *s
	r.scope, r.eventTime = &scope{cols: out, quals: quals}, et
	r.winStart, r.winEnd = -1, -1
	return &r, rest, nil
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
	if e == nil {
		return nil // a comma join's ON
	}
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
