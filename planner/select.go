package planner

import (
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// Catalog is what the planner reads of the catalog.
type Catalog interface {
	Table(name string) (*plan.TableDef, bool)
	View(name string) (*plan.ViewDef, bool)
	// ViewSelect is a view's query, for queries that read the view.
	ViewSelect(name string) (*parser.Select, bool)
}

// Query plans a continuous query over its FROM clause (tables, joins,
// subqueries, views), results into the sink named name. opts are the
// defaults with SET applied; sel's SET_VAR hints override them.
func Query(sel *parser.Select, cat Catalog, opts plan.Options, name string, sink plan.SinkKind) (*plan.Graph, error) {
	if err := ApplyOptions(&opts, sel.Hints, "SET_VAR"); err != nil {
		return nil, err
	}
	for _, h := range sel.Hints {
		if h.Name == "consistency" {
			return nil, errf(h.Name, "SET_VAR(consistency) chooses the rows a pull query (SELECT ... FROM view) reads, not an option of a view: a view's results are read at either consistency")
		}
	}
	if err := CheckIntervals(opts.CheckpointInterval, opts.EmitInterval); err != nil {
		return nil, err
	}
	b := &builder{cat: cat, opts: opts, stateTTLUnused: true}
	p, err := b.query(sel, false)
	if err != nil {
		return nil, err
	}
	if b.stateTTLUnused && opts.StateTTL > 0 {
		// The TTL bounds the state of regular stream-stream joins; nothing
		// this query keeps may expire by it, so refuse rather than ignore it.
		return nil, errf("state_ttl", "state_ttl applies to regular joins of two streams; this query has none")
	}
	if p.s.rekey && p.s.changes != nil {
		// The sink's tasks own keys by hash: its rows go to the owner.
		e := plan.Edge{From: p.s.cur.ID, Partition: plan.ByKey}
		e.Kind, e.UpsertKey = p.s.changes.kind()
		p.s.cur = b.vertex(p.s.cur.Parallelism, []plan.Edge{e})
	}
	p.s.cur.Ops = append(p.s.cur.Ops, &plan.Sink{Kind: sink, Name: name, Key: p.key, Consolidate: p.s.changes != nil && p.s.multi,
		AtMostOnce: sink == plan.SinkResults && opts.Delivery == plan.DeliveryAtMostOnce})
	opts.Parallelism = p.par
	return &plan.Graph{Vertices: b.vertices, Options: opts, Key: p.key, KeyOut: p.keyOut, KeyNames: p.keyNames, Out: p.out}, nil
}

// planned is a planned SELECT: the stream of its rows (s.cur produces them,
// s.scope names them), how they are keyed, and its output schema.
type planned struct {
	s   *stream
	key plan.KeyKind
	out plan.Schema
	par int
	// keyOut: for each value of the upsert key, the output column that
	// holds it, or -1 (not selected). Nil for append-only queries.
	keyOut   []int
	keyNames []string
}

// query plans a SELECT. A subquery (sub) must produce an insert-only
// stream: no running aggregate, windows emitted on close.
func (b *builder) query(sel *parser.Select, sub bool) (*planned, error) {
	if sel.From == nil {
		return nil, errf("", "a continuous query reads a table")
	}
	if len(sel.With) > 0 {
		saved := b.ctes
		defer func() { b.ctes = saved }()
		for _, c := range sel.With {
			b.ctes = &cteScope{name: c.Name, sel: c.Select, next: b.ctes}
		}
	}
	if len(sel.OrderBy) > 0 || sel.Limit >= 0 {
		return nil, errf("ORDER", "ORDER BY and LIMIT are for pull queries over a view, not for continuous queries")
	}
	if len(sel.UnionAll) > 0 {
		return b.unionAll(sel)
	}
	var where []parser.Expr
	if sel.Where != nil {
		if containsAggregate(sel.Where) {
			return nil, errf("WHERE", "aggregates are not allowed in WHERE; use HAVING")
		}
		where = conjuncts(sel.Where)
	}
	// An inner join takes the WHERE conditions that relate its two sides
	// (keys, time bounds) as if they were in ON, as SQL allows.
	var s *stream
	var err error
	if inner, at := b.rankCall(sel.From); inner != nil {
		// FROM (SELECT ..., ROW_NUMBER() OVER (...) AS rn ...) WHERE rn <= N
		s, where, err = b.topN(sel.From, inner, at, where)
	} else {
		s, where, err = b.fromWhere(sel.From, where)
	}
	if err != nil {
		return nil, err
	}
	if s.upsert {
		s = b.normalize(s)
	}
	base := s.scope
	var filter plan.Expr
	if len(where) > 0 {
		if filter, err = base.bind(andAll(where)); err != nil {
			return nil, err
		}
	}
	fields, err := expandStar(sel.Fields, base)
	if err != nil {
		return nil, err
	}
	if hasOverAggregate(fields) {
		return b.over(sel, s, filter, fields, sub) // over.go
	}
	agg := len(sel.GroupBy) > 0 || sel.Having != nil
	for _, f := range fields {
		agg = agg || containsAggregate(f.Expr)
	}
	if sel.Distinct {
		if agg {
			return nil, errf("DISTINCT", "SELECT DISTINCT with GROUP BY or aggregates: group by what should be distinct, or read the aggregation from a subquery")
		}
		// A running aggregate without aggregates (a row's group is
		// deleted when its last row is taken back).
		return b.aggregation(distinctGroups(sel, len(fields)), s, filter, fields, sub)
	}
	if !agg {
		return b.appendOnly(s, filter, fields, sub)
	}
	return b.aggregation(sel, s, filter, fields, sub)
}

// andAll joins conditions with AND.
func andAll(cs []parser.Expr) parser.Expr {
	e := cs[0]
	for _, c := range cs[1:] {
		e = &parser.Binary{Op: "AND", L: e, R: c}
	}
	return e
}

// expandStar replaces * (every column) and t.* (t's columns) by columns.
func expandStar(fields []parser.Field, sc *scope) ([]parser.Field, error) {
	var out []parser.Field
	for _, f := range fields {
		if !f.Star {
			out = append(out, f)
			continue
		}
		n := len(out)
		for i, c := range sc.cols {
			if f.Table == "" || strings.EqualFold(f.Table, sc.quals[i]) {
				out = append(out, parser.Field{Expr: &parser.ColumnRef{Table: sc.quals[i], Name: c.Name}, Text: c.Name})
			}
		}
		if len(out) == n {
			return nil, errf(f.Table, "unknown table %s in %s.*", f.Table, f.Table)
		}
	}
	return out, nil
}

// notNull reports whether e can never be NULL: a NOT NULL column, or a
// non-NULL constant. (Anything else is conservatively nullable.)
func notNull(e plan.Expr, in plan.Schema) bool {
	switch e := e.(type) {
	case *plan.ColRef:
		return e.Index < len(in) && in[e.Index].NotNull
	case *plan.Const:
		return !e.V.IsNull()
	}
	return false
}

// outputName is a result column's name: its alias, else its column name
// without the qualifier, else its text.
func outputName(f parser.Field) string {
	if f.Alias != "" {
		return f.Alias
	}
	if c, ok := f.Expr.(*parser.ColumnRef); ok {
		return c.Name
	}
	return f.Text
}

// outSchema names and types the result columns of exprs bound over in.
func outSchema(fields []parser.Field, exprs []plan.Expr, in plan.Schema) (plan.Schema, error) {
	if len(fields) > MaxColumns {
		return nil, errf("SELECT", "the select list has %d columns, over the limit of %d (the columns a table may have)", len(fields), MaxColumns)
	}
	out := make(plan.Schema, len(fields))
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		n := outputName(f)
		if k := plan.NameKey(n); seen[k] {
			return nil, errf(n, "duplicate output column %s; give it an alias with AS", n)
		} else {
			seen[k] = true
		}
		out[i] = plan.Column{Name: n, Type: exprs[i].Type(), NotNull: notNull(exprs[i], in)}
		if out[i].Type == plan.TypeNull {
			out[i].Type = plan.TypeBigint
		}
	}
	return out, nil
}

func (b *builder) appendOnly(s *stream, filter plan.Expr, fields []parser.Field, sub bool) (*planned, error) {
	opts, base := b.opts, s.scope
	if opts.EmitMode == plan.EmitOnWindowClose && !sub {
		return nil, errf("emit_mode", "emit_mode=on_window_close needs a windowed aggregation")
	}
	if opts.ResultsRetention > 0 {
		return nil, errf("results_retention", "results_retention drops rows of old windows; this query has no window")
	}
	exprs := make([]plan.Expr, len(fields))
	for i, f := range fields {
		if c, ok := f.Expr.(*parser.ColumnRef); ok && base.lookup(c) < 0 && (strings.EqualFold(c.Name, "window_start") || strings.EqualFold(c.Name, "window_end")) {
			return nil, errf(c.Name, "%s is only defined for a windowed aggregation (GROUP BY TUMBLE, HOP or SESSION_WINDOW)", c.Name)
		}
		e, err := base.bind(f.Expr)
		if err != nil {
			return nil, err
		}
		exprs[i] = e
	}
	out, err := outSchema(fields, exprs, base.cols)
	if err != nil {
		return nil, err
	}
	s.cur.Ops = append(s.cur.Ops, &plan.Calc{Filter: filter, Project: exprs, Out: out})
	ps := s.project(out, exprs)
	if c := ps.changes; c != nil {
		// Over an updating stream the rows keep its key.
		return &planned{s: ps, key: c.key, out: out, par: s.cur.Parallelism, keyOut: c.keyOut, keyNames: c.keyNames}, nil
	}
	return &planned{s: ps, key: plan.KeyRowID, out: out, par: s.cur.Parallelism}, nil
}

func containsAggregate(e parser.Expr) bool {
	found := false
	walk(e, func(x parser.Expr) {
		if f, ok := x.(*parser.Func); ok && isAggregate(f.Name) {
			found = true
		}
	})
	return found
}

// walk calls fn on e and every expression below it.
func walk(e parser.Expr, fn func(parser.Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch e := e.(type) {
	case *parser.Binary:
		walk(e.L, fn)
		walk(e.R, fn)
	case *parser.Unary:
		walk(e.X, fn)
	case *parser.Func:
		for _, a := range e.Args {
			walk(a, fn)
		}
		for _, o := range e.Order {
			walk(o.Expr, fn)
		}
	case *parser.Interval:
		walk(e.Value, fn)
	case *parser.Case:
		walk(e.Operand, fn)
		for _, w := range e.Whens {
			walk(w.Cond, fn)
			walk(w.Result, fn)
		}
		walk(e.Else, fn)
	case *parser.In:
		walk(e.X, fn)
		for _, x := range e.List {
			walk(x, fn)
		}
	case *parser.Between:
		walk(e.X, fn)
		walk(e.Lo, fn)
		walk(e.Hi, fn)
	case *parser.IsNull:
		walk(e.X, fn)
	case *parser.Like:
		walk(e.X, fn)
		walk(e.Pattern, fn)
	case *parser.Cast:
		walk(e.X, fn)
	}
}

// windowCall recognises TUMBLE, HOP, CUMULATE and SESSION_WINDOW in GROUP BY.
func windowCall(e parser.Expr, st *stream) (*plan.WindowSpec, error) {
	base := st.scope
	f, ok := e.(*parser.Func)
	if !ok || !isWindowFunc(f.Name) {
		return nil, nil
	}
	name := strings.ToUpper(f.Name)
	want := map[string]int{"tumble": 2, "hop": 3, "session_window": 2, "session": 2, "cumulate": 3}[f.Name]
	if len(f.Args) != want {
		return nil, errf(f.Name, "%s takes %d arguments (time column and duration%s)", name, want, map[bool]string{true: "s", false: ""}[want == 3])
	}
	spec := &plan.WindowSpec{}
	switch t := f.Args[0].(type) {
	case *parser.Func:
		if t.Name != "proctime" || len(t.Args) != 0 {
			return nil, errf(t.Name, "the time argument of %s must be the event-time column or PROCTIME()", name)
		}
		spec.ProcTime = true
	case *parser.ColumnRef:
		x, err := base.bind(t)
		if err != nil {
			return nil, err
		}
		col := x.(*plan.ColRef).Index
		if tbl := st.table; tbl != nil {
			if tbl.EventTime < 0 {
				return nil, errf(t.Name, "table %s has no event_time column (ENGINE_ATTRIBUTE event_time); window on PROCTIME() or declare one", tbl.Name)
			}
			if col != tbl.EventTime {
				return nil, errf(t.Name, "%s windows on %s, but the event-time column of %s is %s", name, t.Name, tbl.Name, tbl.Columns[tbl.EventTime].Name)
			}
		} else if !st.eventTime[col] {
			return nil, errf(t.Name, "%s windows on %s, which is not an event-time column", name, t.Name)
		}
		spec.TimeCol = col
	default:
		return nil, errf(f.Name, "the time argument of %s must be the event-time column or PROCTIME()", name)
	}
	durs := make([]int64, 0, 2)
	for _, a := range f.Args[1:] {
		l, ok := a.(*parser.Literal)
		if !ok || l.Kind != parser.LitString {
			return nil, errf(f.Name, "%s durations are strings such as '10s' or '500ms'", name)
		}
		d, err := value.ParseDuration(l.Str)
		if err != nil {
			return nil, errf(l.Str, "%s: %v", name, err)
		}
		durs = append(durs, d)
	}
	switch f.Name {
	case "tumble":
		spec.Kind, spec.Size, spec.Slide = plan.Tumble, durs[0], durs[0]
	case "hop":
		spec.Kind, spec.Slide, spec.Size = plan.Hop, durs[0], durs[1]
		if spec.Size/spec.Slide > MaxHopWindows {
			return nil, errf(f.Name, "HOP of size %s sliding every %s puts each row in %d windows; at most %d are allowed",
				window.FormatDuration(spec.Size), window.FormatDuration(spec.Slide), spec.Size/spec.Slide, MaxHopWindows)
		}
	case "cumulate":
		if err := cumulateSpec(spec, durs[0], durs[1]); err != nil {
			return nil, err
		}
	default:
		if spec.ProcTime {
			return nil, errf(f.Name, "SESSION_WINDOW needs an event-time column, not PROCTIME()")
		}
		spec.Kind, spec.Gap = plan.Session, durs[0]
	}
	return spec, nil
}

// MaxHopWindows bounds how many windows one row may fall in (size/slide).
const MaxHopWindows = 1000

type aggKey struct {
	fn  plan.AggFn
	arg int // the argument's exprKeys number
	// concat: GROUP_CONCAT's ORDER BY keys' numbers and directions, its
	// DISTINCT and separator (aggconcat.go).
	concat string
}

func (b *builder) aggregation(sel *parser.Select, st *stream, filter plan.Expr, fields []parser.Field, sub bool) (*planned, error) {
	opts, base := b.opts, st.scope
	// GROUP BY: at most one window, then key expressions.
	var win *plan.WindowSpec
	ekeys := newExprKeys()
	items, err := groupItems(sel.GroupBy, fields, base)
	if err != nil {
		return nil, err
	}
	// The window first, so that its window_start and window_end may come
	// before it in GROUP BY.
	isWin := make([]bool, len(items))
	for i, g := range items {
		w, err := windowCall(g, st)
		if err != nil {
			return nil, err
		}
		if w != nil {
			if win != nil {
				return nil, errf("GROUP", "GROUP BY has more than one window")
			}
			win, isWin[i] = w, true
		}
	}
	groups, groupIdx, err := groupKeys(items, isWin, win != nil, base, ekeys)
	if err != nil {
		return nil, err
	}
	if win == nil {
		win, groups, groupIdx = givenWindow(st, groups, ekeys)
	}
	if win == nil && opts.ResultsRetention > 0 {
		return nil, errf("results_retention", "results_retention drops rows of old windows; this query has no window")
	}
	if win == nil && sub {
		// A running aggregate read by another query emits its changes (a
		// subquery's windows emit on close).
		opts.EmitMode = plan.EmitChanges
	}
	if win == nil && opts.EmitMode == plan.EmitOnWindowClose {
		return nil, errf("emit_mode", "emit_mode=on_window_close needs a windowed aggregation; a running aggregate (GROUP BY without a window) emits changes")
	}
	retract := st.changes != nil
	if retract && win != nil && win.Kind == plan.Session {
		return nil, errf("SESSION_WINDOW", "SESSION_WINDOW needs an append-only input: a row taken back cannot split a session it merged; this input updates (a running aggregate)")
	}

	gr, err := bindGrouped(sel.Having, fields, nil, base, win, groups, groupIdx, ekeys, retract)
	if err != nil {
		return nil, err
	}
	aggs, args, post, output, out, having := gr.aggs, gr.args, gr.post, gr.output, gr.out, gr.having
	wOff, inOff, rowCount := gr.wOff, gr.inOff, gr.rowCount
	// The pre-aggregation projection: [time,] keys..., aggregate arguments...
	var project []plan.Expr
	var calcOut plan.Schema
	if win != nil && win.Kind == plan.Given {
		project = append(project, &plan.ColRef{Index: win.TimeCol, Name: "window_start", T: plan.TypeTimestamp},
			&plan.ColRef{Index: win.EndCol, Name: "window_end", T: plan.TypeTimestamp})
		calcOut = append(calcOut, post[0], post[1])
	} else if win != nil {
		var t plan.Expr
		if win.ProcTime {
			if len(st.sources) > 1 {
				return nil, errf("PROCTIME", "PROCTIME() windows over a join are not supported; window on an event-time column")
			}
			t = &plan.Call{Fn: "proctime", T: plan.TypeTimestamp}
			st.sources[0].ProcTime = true
		} else {
			t = &plan.ColRef{Index: win.TimeCol, Name: base.cols[win.TimeCol].Name, T: plan.TypeTimestamp}
		}
		project = append(project, t)
		calcOut = append(calcOut, plan.Column{Name: "_time", Type: plan.TypeTimestamp})
	}
	for _, g := range groups {
		project = append(project, g)
		calcOut = append(calcOut, plan.Column{Name: exprName(g), Type: g.Type()})
	}
	for _, a := range args {
		project = append(project, a)
		calcOut = append(calcOut, plan.Column{Name: a.String(), Type: a.Type()})
	}
	st.cur.Ops = append(st.cur.Ops, &plan.Calc{Filter: filter, Project: project, Out: calcOut})
	if win != nil {
		win.TimeCol, win.EndCol = 0, 1
	}
	keys := make([]int, len(groups))
	for i := range groups {
		keys[i] = inOff + i
	}
	p := opts.Parallelism
	if p < 1 {
		p = 1
	}
	if len(groups) == 0 {
		p = 1 // one group per window: nothing to spread
	}
	opts.Parallelism = p
	key := plan.KeyGroup
	if win != nil {
		key = plan.KeyWindowGroup
	}
	if win != nil && win.Kind == plan.Cumulate {
		for _, a := range aggs {
			if a.Fn >= plan.AggVarPop {
				return nil, errf("CUMULATE", "%s in a CUMULATE window: CUMULATE windows take COUNT, COUNT(DISTINCT), SUM, AVG, MIN and MAX; use TUMBLE or HOP, or a running aggregate, for %s", strings.ToUpper(a.Fn.String()), strings.ToUpper(a.Fn.String()))
			}
		}
	}
	ag := &plan.Aggregate{Windowed: win != nil, Keys: keys, Aggs: aggs, Having: having, Output: output, Out: out, EmitMode: opts.EmitMode, AllowedLateness: st.lateness,
		Retract: retract, RowCount: max(rowCount, 0), EmitBefore: sub && opts.EmitMode == plan.EmitChanges}
	if win != nil {
		ag.Window = *win
		ag.Session = win.Kind == plan.Session
	}
	// The edge carries the projection's rows: an updating input is keyed
	// on what the projection kept of its key.
	av := b.vertex(p, []plan.Edge{st.project(calcOut, project).hashEdge(keys)}, ag)
	keyOut := make([]int, wOff+len(groups))
	keyNames := make([]string, len(keyOut))
	for k := range keyOut {
		keyOut[k], keyNames[k] = -1, post[k].Name
	}
	for i, x := range output {
		if c, ok := x.(*plan.ColRef); ok && c.Index < len(keyOut) && keyOut[c.Index] < 0 {
			keyOut[c.Index] = i
		}
	}
	var changes *changelog
	if opts.EmitMode == plan.EmitChanges {
		changes = &changelog{key: key, keyOut: keyOut, keyNames: keyNames}
	}
	return &planned{s: st.aggregated(av, out, output, win != nil, changes), key: key, out: out, par: p, keyOut: keyOut, keyNames: keyNames}, nil
}

// groupKeys binds the GROUP BY items that are not the window (isWin) over
// base, each distinct expression once: the group keys, and their numbers
// (ekeys) -> their position. windowed: window_start and window_end name
// the window, already the key.
func groupKeys(items []parser.Expr, isWin []bool, windowed bool, base *scope, ekeys *exprKeys) ([]plan.Expr, map[int]int, error) {
	var groups []plan.Expr
	groupIdx := map[int]int{}
	for i, g := range items {
		if isWin[i] {
			continue
		}
		if containsAggregate(g) {
			return nil, nil, errf("GROUP", "aggregates are not allowed in GROUP BY")
		}
		if c, ok := g.(*parser.ColumnRef); ok && windowed && base.lookup(c) < 0 && (strings.EqualFold(c.Name, "window_start") || strings.EqualFold(c.Name, "window_end")) {
			continue // GROUP BY TUMBLE(...), window_start: already the key
		}
		x, err := base.bind(g)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := groupIdx[ekeys.id(x)]; dup {
			continue
		}
		groupIdx[ekeys.id(x)] = len(groups)
		groups = append(groups, x)
	}
	return groups, groupIdx, nil
}

// grouped is an aggregation bound apart from what runs it (a stream's
// Aggregate, or a pull query over a view's rows): its keys, aggregates and
// their input columns, the post-aggregation row ([window_start,
// window_end,] keys..., aggs...) and the select list and HAVING over it.
type grouped struct {
	groups []plan.Expr
	aggs   []plan.Agg
	args   []plan.Expr // the aggregates' input expressions, each once
	// wOff: window columns of the post-aggregation row; inOff: window
	// columns of the aggregation's input (its time column, or a cascading
	// window's start and end).
	wOff, inOff int
	rowCount    int // the aggregate counting each group's rows (retract), or -1
	post        plan.Schema
	postScope   *scope // binds expressions over the post-aggregation row
	output      []plan.Expr
	out         plan.Schema
	having      plan.Expr
}

// bindGrouped binds the aggregates of fields, of having and of more (a
// pull query's ORDER BY), deduplicated, over base grouped by groups
// (numbered by ekeys in groupIdx) in win (nil: none); retract: the input
// updates, so the aggregates must take rows back.
func bindGrouped(havingExpr parser.Expr, fields []parser.Field, more []parser.Expr, base *scope, win *plan.WindowSpec, groups []plan.Expr, groupIdx map[int]int, ekeys *exprKeys, retract bool) (*grouped, error) {
	// Aggregates of SELECT and HAVING, deduplicated, with their arguments.
	var aggs []plan.Agg
	var args []plan.Expr
	argIdx := map[int]int{}
	aggIdx := map[aggKey]int{}
	wOff, inOff := 0, 0
	if win != nil {
		wOff, inOff = 2, 1
		if win.Kind == plan.Given {
			inOff = 2
		}
	}
	var aggErr error
	collect := func(e parser.Expr) {
		walk(e, func(x parser.Expr) {
			f, ok := x.(*parser.Func)
			if !ok || !isAggregate(f.Name) || aggErr != nil {
				return
			}
			a, key, aargs, err := bindAgg(f, base, ekeys)
			if err != nil {
				aggErr = err
				return
			}
			if retract && !retractable(a.Fn) {
				aggErr = errf(f.Name, "%s cannot take rows back, and this input updates (a running aggregate, a join of updating inputs, a PRIMARY KEY table): use COUNT(DISTINCT ...) for an exact count that retracts", strings.ToUpper(f.Name))
				return
			}
			if _, ok := aggIdx[key]; ok {
				return
			}
			// The aggregate's input columns: its argument, then GROUP_CONCAT's
			// ORDER BY keys, each once among all the aggregates' arguments.
			col := func(arg plan.Expr) int {
				i, ok := argIdx[ekeys.id(arg)]
				if !ok {
					i = len(args)
					argIdx[ekeys.id(arg)] = i
					args = append(args, arg)
				}
				return inOff + len(groups) + i
			}
			if a.Fn != plan.AggCountStar {
				a.Arg = col(aargs[0])
			}
			if a.Concat != nil {
				for k := range a.Concat.Order {
					a.Concat.Order[k].Arg = col(aargs[1+k])
				}
			}
			aggIdx[key] = len(aggs)
			aggs = append(aggs, a)
		})
	}
	for _, f := range fields {
		collect(f.Expr)
	}
	collect(havingExpr)
	for _, e := range more {
		collect(e)
	}
	if aggErr != nil {
		return nil, aggErr
	}
	rowCount := -1
	if retract {
		// Each group's row count, so a group whose rows are all taken back
		// is deleted: the query's own COUNT(*), or one added for it.
		if i, ok := aggIdx[aggKey{fn: plan.AggCountStar}]; ok {
			rowCount = i
		} else {
			rowCount = len(aggs)
			aggs = append(aggs, plan.Agg{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint})
		}
	}

	// The post-aggregation row: [window_start, window_end,] keys..., aggs...
	post := plan.Schema{}
	if win != nil {
		post = append(post, plan.Column{Name: "window_start", Type: plan.TypeTimestamp, NotNull: true},
			plan.Column{Name: "window_end", Type: plan.TypeTimestamp, NotNull: true})
	}
	for _, g := range groups {
		post = append(post, plan.Column{Name: exprName(g), Type: g.Type(), NotNull: notNull(g, base.cols)})
	}
	for _, a := range aggs {
		counts := a.Fn == plan.AggCountStar || a.Fn == plan.AggCount || a.Fn == plan.AggCountDistinct || neverNull(a.Fn)
		post = append(post, plan.Column{Name: a.String(), Type: a.T, NotNull: counts})
	}
	postScope := base.plain()
	memo := base.plain()
	memo.memo = map[parser.Expr]bound{}
	postScope.rewrite = func(e parser.Expr) (plan.Expr, bool, error) {
		switch e := e.(type) {
		case *parser.Func:
			if isAggregate(e.Name) {
				_, key, _, err := bindAgg(e, base, ekeys)
				if err != nil {
					return nil, true, err
				}
				i := aggIdx[key]
				return &plan.ColRef{Index: wOff + len(groups) + i, Name: post[wOff+len(groups)+i].Name, T: aggs[i].T}, true, nil
			}
		case *parser.ColumnRef:
			if win != nil && win.Kind == plan.Given {
				switch base.lookup(e) {
				case win.TimeCol:
					return &plan.ColRef{Index: 0, Name: "window_start", T: plan.TypeTimestamp}, true, nil
				case win.EndCol:
					return &plan.ColRef{Index: 1, Name: "window_end", T: plan.TypeTimestamp}, true, nil
				}
			}
			if win != nil && base.lookup(e) < 0 {
				switch strings.ToLower(e.Name) {
				case "window_start":
					return &plan.ColRef{Index: 0, Name: "window_start", T: plan.TypeTimestamp}, true, nil
				case "window_end":
					return &plan.ColRef{Index: 1, Name: "window_end", T: plan.TypeTimestamp}, true, nil
				}
			}
		}
		// e over the input: a GROUP BY expression, or a column of one (an
		// aggregate inside e makes this fail; it is bound below, by the
		// rewrite). memo binds each node once, ekeys numbers it once: the
		// rewrite is consulted at every level of e, so this stays linear.
		x, err := memo.bind(e)
		if err != nil {
			if _, isCol := e.(*parser.ColumnRef); isCol {
				return nil, true, err
			}
			return nil, false, nil
		}
		if i, ok := groupIdx[ekeys.id(x)]; ok {
			return &plan.ColRef{Index: wOff + i, Name: exprName(x), T: x.Type()}, true, nil
		}
		if c, ok := e.(*parser.ColumnRef); ok {
			return nil, true, errf(c.Name, "column %s must appear in GROUP BY or inside an aggregate", c.Name)
		}
		if _, ok := e.(*parser.Literal); ok {
			return x, true, nil
		}
		return nil, false, nil
	}
	output := make([]plan.Expr, len(fields))
	for i, f := range fields {
		x, err := postScope.bind(f.Expr)
		if err != nil {
			return nil, err
		}
		output[i] = x
	}
	out, err := outSchema(fields, output, post)
	if err != nil {
		return nil, err
	}
	var having plan.Expr
	if havingExpr != nil {
		// HAVING may name a select alias (HAVING n > 1), as in MySQL; a
		// column of the input of that name comes first, as in GROUP BY.
		hs := *postScope
		hs.rewrite = func(e parser.Expr) (plan.Expr, bool, error) {
			if c, ok := e.(*parser.ColumnRef); ok && c.Table == "" && len(base.index().cols[foldKey(c.Name)]) == 0 {
				if f := aliasField(fields, c.Name); f != nil {
					x, err := postScope.bind(f.Expr)
					return x, true, err
				}
			}
			return postScope.rewrite(e)
		}
		if having, err = hs.bind(havingExpr); err != nil {
			return nil, err
		}
	}
	return &grouped{groups: groups, aggs: aggs, args: args, wOff: wOff, inOff: inOff, rowCount: rowCount,
		post: post, postScope: postScope, output: output, out: out, having: having}, nil
}

// groupItems resolves the items of GROUP BY as MySQL does: a position
// names that column of the select list (GROUP BY 1 is the first), and a
// name that is no column of the input names the select-list item of that
// alias (the input's columns come first, as in MySQL).
func groupItems(items []parser.Expr, fields []parser.Field, base *scope) ([]parser.Expr, error) {
	out := make([]parser.Expr, len(items))
	for i, g := range items {
		out[i] = g
		var f *parser.Field
		switch g := g.(type) {
		case *parser.Position:
			if g.N < 1 || g.N > len(fields) {
				return nil, errf("GROUP", "GROUP BY %d: the select list has %d columns (positions count from 1)", g.N, len(fields))
			}
			f = &fields[g.N-1]
		case *parser.ColumnRef:
			if g.Table != "" || len(base.index().cols[foldKey(g.Name)]) > 0 {
				continue
			}
			if f = aliasField(fields, g.Name); f == nil {
				continue // not an alias: bound (and refused) as a column
			}
		default:
			continue
		}
		if containsAggregate(f.Expr) {
			return nil, errf("GROUP", "GROUP BY %s: %s is an aggregate; group by columns or expressions of the input", groupItemText(g), outputName(*f))
		}
		out[i] = f.Expr
	}
	return out, nil
}

// aliasField is the select-list item whose alias is name, or nil.
func aliasField(fields []parser.Field, name string) *parser.Field {
	for k := range fields {
		if fields[k].Alias != "" && strings.EqualFold(fields[k].Alias, name) {
			return &fields[k]
		}
	}
	return nil
}

// groupItemText is a GROUP BY item as written, for messages.
func groupItemText(e parser.Expr) string {
	switch e := e.(type) {
	case *parser.Position:
		return strconv.Itoa(e.N)
	case *parser.ColumnRef:
		return e.Name
	}
	return "item"
}

// givenWindow recognises cascading windows: GROUP BY an upstream window's
// window_start and window_end (columns the stream carries from a windowed
// subquery or view) is a windowed aggregation over those same windows. It
// returns the window and the remaining group keys.
func givenWindow(st *stream, groups []plan.Expr, ekeys *exprKeys) (*plan.WindowSpec, []plan.Expr, map[int]int) {
	hasStart, hasEnd := false, false
	var rest []plan.Expr
	for _, g := range groups {
		c, ok := g.(*plan.ColRef)
		switch {
		case ok && st.winStart >= 0 && c.Index == st.winStart:
			hasStart = true
		case ok && st.winEnd >= 0 && c.Index == st.winEnd:
			hasEnd = true
		default:
			rest = append(rest, g)
		}
	}
	idx := map[int]int{}
	if !hasStart || !hasEnd {
		for i, g := range groups {
			idx[ekeys.id(g)] = i
		}
		return nil, groups, idx
	}
	for i, g := range rest {
		idx[ekeys.id(g)] = i
	}
	return &plan.WindowSpec{Kind: plan.Given, TimeCol: st.winStart, EndCol: st.winEnd}, rest, idx
}

// bindAgg binds one aggregate call; the key identifies duplicates. It
// returns the call's input expressions too: its argument, then
// GROUP_CONCAT's ORDER BY keys (the caller numbers them as input columns).
func bindAgg(f *parser.Func, base *scope, ekeys *exprKeys) (plan.Agg, aggKey, []plan.Expr, error) {
	if f.Star {
		return plan.Agg{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, aggKey{fn: plan.AggCountStar}, nil, nil
	}
	if f.Name == "group_concat" {
		return bindGroupConcat(f, base, ekeys)
	}
	if len(f.Args) != 1 {
		return plan.Agg{}, aggKey{}, nil, errf(f.Name, "%s takes one argument", strings.ToUpper(f.Name))
	}
	if containsAggregate(f.Args[0]) {
		return plan.Agg{}, aggKey{}, nil, errf(f.Name, "aggregates cannot be nested")
	}
	arg, err := base.bind(f.Args[0])
	if err != nil {
		return plan.Agg{}, aggKey{}, nil, err
	}
	// The registry's type rule; COUNT with DISTINCT counts distinct values.
	fn := funcs.Lookup(f.Name)
	t, err := fn.Result(strings.ToUpper(f.Name), []plan.Expr{arg})
	if err != nil {
		return plan.Agg{}, aggKey{}, nil, funcError(f.Name, "", err)
	}
	a := plan.Agg{Fn: fn.Agg, T: t}
	if fn.Agg == plan.AggCount && f.Distinct {
		a.Fn = plan.AggCountDistinct
	}
	return a, aggKey{fn: a.Fn, arg: ekeys.id(arg)}, []plan.Expr{arg}, nil
}

// distinctGroups is SELECT DISTINCT of n selected columns as what it is:
// the groups of every selected column (GROUP BY 1, ..., n).
func distinctGroups(sel *parser.Select, n int) *parser.Select {
	d := *sel
	d.GroupBy = make([]parser.Expr, n)
	for i := range n {
		d.GroupBy[i] = &parser.Position{N: i + 1}
	}
	return &d
}

// exprName names an intermediate column: a column keeps its name.
func exprName(e plan.Expr) string {
	if c, ok := e.(*plan.ColRef); ok {
		return c.Name
	}
	return e.String()
}
