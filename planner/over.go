package planner

import (
	"strings"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// OVER aggregations: agg(x) OVER (PARTITION BY k ORDER BY t frame) in a
// select list without GROUP BY (plan.Over). Every call of one SELECT
// shares its window (PARTITION BY, ORDER BY and frame): one operator
// computes them over the same rows. ROW_NUMBER, RANK and DENSE_RANK are
// Top-N's, planned elsewhere.

// overCalls are the window calls in the select list, in order.
func overCalls(fields []parser.Field) []*parser.Over {
	var out []*parser.Over
	for _, f := range fields {
		walk(f.Expr, func(x parser.Expr) {
			if o, ok := x.(*parser.Over); ok {
				out = append(out, o)
			}
		})
	}
	return out
}

// isOverAggregate reports whether a window call is one OVER aggregations
// plan (not a ranking function).
func isOverAggregate(name string) bool {
	_, ok := overFns[name]
	return ok
}

var overFns = map[string]plan.OverFn{
	"count": plan.OverCount, "sum": plan.OverSum, "avg": plan.OverAvg, "min": plan.OverMin, "max": plan.OverMax,
	"first_value": plan.OverFirstValue, "last_value": plan.OverLastValue,
}

// hasOverAggregate reports whether the select list has an OVER
// aggregation: the query is planned by over.
func hasOverAggregate(fields []parser.Field) bool {
	for _, o := range overCalls(fields) {
		if isOverAggregate(o.Name) {
			return true
		}
	}
	return false
}

// overWindow is the bound window of a call, to compare calls by.
type overWindow struct {
	partition []int // exprKeys numbers
	order     int
	frame     plan.OverFrame
}

func (w overWindow) equal(o overWindow) bool {
	if len(w.partition) != len(o.partition) || w.order != o.order || w.frame != o.frame {
		return false
	}
	for i := range w.partition {
		if w.partition[i] != o.partition[i] {
			return false
		}
	}
	return true
}

// over plans a SELECT whose list has OVER aggregations: a Calc (the
// filter; the input's columns and the window's expressions), a hash
// exchange on the PARTITION BY values, and plan.Over, whose Output
// computes the select list.
func (b *builder) over(sel *parser.Select, st *stream, filter plan.Expr, fields []parser.Field, sub bool) (*planned, error) {
	opts, base := b.opts, st.scope
	agg := len(sel.GroupBy) > 0 || sel.Having != nil
	for _, f := range fields {
		agg = agg || containsAggregate(f.Expr)
	}
	if agg {
		return nil, errf("OVER", "OVER aggregations and GROUP BY or aggregates in one SELECT: aggregate in a subquery (SELECT ... OVER (...) FROM (SELECT ... GROUP BY ...) q)")
	}
	if sel.Distinct {
		return nil, errf("DISTINCT", "SELECT DISTINCT with OVER aggregations: read the OVER query from a subquery and group by what should be distinct")
	}
	if opts.EmitMode == plan.EmitOnWindowClose && !sub {
		return nil, errf("emit_mode", "emit_mode=on_window_close needs a windowed aggregation (an OVER aggregation emits each row once the watermark passes it)")
	}
	if opts.ResultsRetention > 0 {
		return nil, errf("results_retention", "results_retention drops rows of old windows; this query has no window")
	}
	updating := st.changes != nil
	calls := overCalls(fields)
	ekeys := newExprKeys()

	// The pre-exchange projection: the input's columns, then the window's
	// expressions that are not columns (deduplicated).
	project := make([]plan.Expr, len(base.cols))
	calcOut := append(plan.Schema(nil), base.cols...)
	for i, c := range base.cols {
		project[i] = &plan.ColRef{Index: i, Name: c.Name, T: c.Type}
		calcOut[i].NotNull = false
	}
	colOf := map[int]int{} // exprKeys number -> column of the projection
	for i, x := range project {
		colOf[ekeys.id(x)] = i
	}
	column := func(x plan.Expr) int {
		if i, ok := colOf[ekeys.id(x)]; ok {
			return i
		}
		i := len(project)
		colOf[ekeys.id(x)] = i
		project = append(project, x)
		calcOut = append(calcOut, plan.Column{Name: exprName(x), Type: x.Type()})
		return i
	}

	var win overWindow
	var spec plan.Over
	var callIdx []int // per call of calls: its index in spec.Calls
	seen := map[[2]int]int{}
	for k, o := range calls {
		if !isOverAggregate(o.Name) {
			switch o.Name {
			case "row_number", "rank", "dense_rank":
				return nil, errf(o.Name, "%s() is for Top-N: SELECT ... FROM (SELECT ..., %s() OVER (...) AS rn FROM s) WHERE rn <= N; it cannot be computed beside OVER aggregations", strings.ToUpper(o.Name), strings.ToUpper(o.Name))
			}
			return nil, errf(o.Name, "window function %s is not supported: OVER aggregations are COUNT, SUM, AVG, MIN, MAX, FIRST_VALUE and LAST_VALUE", strings.ToUpper(o.Name))
		}
		w, err := b.overWindow(o, st, ekeys)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			win = w
			spec.Frame = w.frame
			for _, p := range o.PartitionBy {
				x, _ := base.bind(p)
				spec.Partition = append(spec.Partition, column(x))
			}
			x, _ := base.bind(o.OrderBy[0].Expr)
			spec.Order = column(x)
		} else if !win.equal(w) {
			return nil, errf("OVER", "%s and %s use different windows: the OVER calls of one SELECT share one PARTITION BY, ORDER BY and frame (compute the other in a subquery)", calls[0].Text, o.Text)
		}
		c, err := bindOverCall(o, base)
		if err != nil {
			return nil, err
		}
		key := [2]int{int(c.Fn), -1}
		if c.Fn != plan.OverCountStar {
			x, _ := base.bind(o.Args[0])
			c.Arg = column(x)
			key[1] = c.Arg
		}
		i, ok := seen[key]
		if !ok {
			i = len(spec.Calls)
			seen[key] = i
			spec.Calls = append(spec.Calls, c)
		}
		callIdx = append(callIdx, i)
	}

	// The select list over [projection..., call results...].
	post := append(plan.Schema(nil), calcOut...)
	for _, c := range spec.Calls {
		post = append(post, plan.Column{Name: c.String(), Type: c.T, NotNull: c.Fn == plan.OverCount || c.Fn == plan.OverCountStar})
	}
	byNode := map[*parser.Over]int{}
	for k, o := range calls {
		byNode[o] = callIdx[k]
	}
	ps := base.plain()
	ps.rewrite = func(e parser.Expr) (plan.Expr, bool, error) {
		if o, ok := e.(*parser.Over); ok {
			i := len(calcOut) + byNode[o]
			return &plan.ColRef{Index: i, Name: post[i].Name, T: post[i].Type}, true, nil
		}
		return nil, false, nil
	}
	output := make([]plan.Expr, len(fields))
	for i, f := range fields {
		if c, ok := f.Expr.(*parser.ColumnRef); ok && base.lookup(c) < 0 && (strings.EqualFold(c.Name, "window_start") || strings.EqualFold(c.Name, "window_end")) {
			return nil, errf(c.Name, "%s is only defined for a windowed aggregation (GROUP BY TUMBLE, HOP or SESSION_WINDOW)", c.Name)
		}
		x, err := ps.bind(f.Expr)
		if err != nil {
			return nil, err
		}
		output[i] = x
	}
	out, err := outSchema(fields, output, post)
	if err != nil {
		return nil, err
	}
	// The operator holds its input rows: they carry only the columns it
	// reads (the select list's, the window's and the calls' arguments).
	used := make([]bool, len(calcOut))
	for _, x := range output {
		markCols(x, used)
	}
	used[spec.Order] = true
	for _, p := range spec.Partition {
		used[p] = true
	}
	for _, c := range spec.Calls {
		if c.Arg >= 0 {
			used[c.Arg] = true
		}
	}
	at := make([]int, len(post)) // old column -> new
	var keptProject []plan.Expr
	var keptOut plan.Schema
	for i := range calcOut {
		at[i] = -1
		if used[i] {
			at[i] = len(keptProject)
			keptProject = append(keptProject, project[i])
			keptOut = append(keptOut, calcOut[i])
		}
	}
	for i := len(calcOut); i < len(post); i++ {
		at[i] = len(keptOut) + i - len(calcOut)
	}
	project, calcOut = keptProject, keptOut
	spec.Order = at[spec.Order]
	for i, p := range spec.Partition {
		spec.Partition[i] = at[p]
	}
	names := make([]string, 0, len(calcOut)+len(spec.Calls))
	for _, c := range calcOut {
		names = append(names, c.Name)
	}
	for i, c := range spec.Calls {
		if c.Arg >= 0 {
			spec.Calls[i].Arg = at[c.Arg]
		}
		names = append(names, spec.Calls[i].String())
	}
	for i, x := range output {
		output[i] = remapCols(x, at, names)
	}
	spec.Updating, spec.AllowedLateness = updating, st.lateness
	spec.In, spec.Output, spec.Out = calcOut, output, out
	if updating {
		spec.AllowedLateness = 0
	}

	st.cur.Ops = append(st.cur.Ops, &plan.Calc{Filter: filter, Project: project, Out: calcOut})
	in := st.project(calcOut, project)
	par := max(opts.Parallelism, 1)
	if len(spec.Partition) == 0 {
		par = 1 // one partition: nothing to spread
	}
	ov := b.vertex(par, []plan.Edge{in.hashEdge(spec.Partition)}, &spec)

	res := &stream{cur: ov, scope: newScope("", out), eventTime: make([]bool, len(out)), lateness: st.lateness,
		sources: st.sources, winStart: -1, winEnd: -1}
	if !updating {
		// Rows leave in event-time order once the watermark passes them:
		// the ORDER BY column stays an event-time column.
		for i, x := range output {
			if c, ok := x.(*plan.ColRef); ok && c.Index == spec.Order {
				res.eventTime[i] = true
			}
		}
		return &planned{s: res, key: plan.KeyRowID, out: out, par: par}, nil
	}
	// Updating: keyed on the input's key. A row may move between
	// partitions (tasks) when its PARTITION BY values change: the sink
	// takes the rows by key and nets each epoch's changes.
	c := in.changes
	keyOut := make([]int, len(c.keyOut))
	for k, col := range c.keyOut {
		keyOut[k] = -1
		for i, x := range output {
			if r, ok := x.(*plan.ColRef); ok && col >= 0 && r.Index == col {
				keyOut[k] = i
				break
			}
		}
	}
	res.changes = &changelog{key: c.key, keyOut: keyOut, keyNames: c.keyNames}
	res.rekey, res.multi = true, true
	return &planned{s: res, key: c.key, out: out, par: par, keyOut: keyOut, keyNames: c.keyNames}, nil
}

// markCols marks the columns e reads.
func markCols(e plan.Expr, used []bool) {
	switch e := e.(type) {
	case *plan.ColRef:
		if e.Index < len(used) {
			used[e.Index] = true
		}
	case *plan.Call:
		for _, a := range e.Args {
			markCols(a, used)
		}
	}
}

// remapCols is e reading column at[i] (named names[at[i]]) where it
// read column i.
func remapCols(e plan.Expr, at []int, names []string) plan.Expr {
	switch e := e.(type) {
	case *plan.ColRef:
		c := *e
		c.Index = at[e.Index]
		c.Name = names[c.Index]
		return &c
	case *plan.Call:
		c := *e
		c.Args = make([]plan.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = remapCols(a, at, names)
		}
		return &c
	}
	return e
}

// overWindow checks and binds a call's window: its PARTITION BY, ORDER
// BY (one ascending item: over an append-only input, its event-time
// column) and frame (ending at the current row).
func (b *builder) overWindow(o *parser.Over, st *stream, ekeys *exprKeys) (overWindow, error) {
	base := st.scope
	var w overWindow
	for _, p := range o.PartitionBy {
		x, err := base.bind(p)
		if err != nil {
			return w, err
		}
		w.partition = append(w.partition, ekeys.id(x))
	}
	if len(o.OrderBy) != 1 {
		return w, errf("ORDER", "%s: OVER aggregations need ORDER BY one column (the stream's event time, ascending); it has %d", o.Text, len(o.OrderBy))
	}
	ob := o.OrderBy[0]
	if _, ok := ob.Expr.(*parser.Position); ok {
		return w, errf("ORDER", "%s: ORDER BY a position is not allowed in OVER", o.Text)
	}
	x, err := base.bind(ob.Expr)
	if err != nil {
		return w, err
	}
	name := x.String()
	if c, ok := ob.Expr.(*parser.ColumnRef); ok {
		name = c.Name
	}
	if ob.Desc {
		return w, errf(name, "%s: OVER aggregations order by %s ascending (rows are computed as time passes them); DESC is for Top-N (ROW_NUMBER)", o.Text, name)
	}
	if st.changes == nil {
		c, ok := x.(*plan.ColRef)
		switch {
		case !ok:
			return w, errf(name, "%s: ORDER BY %s: OVER aggregations of an append-only stream order by its event-time column", o.Text, name)
		case st.table != nil && st.table.EventTime < 0:
			return w, errf(name, "%s: table %s has no event_time column (ENGINE_ATTRIBUTE event_time): OVER aggregations order by event time", o.Text, st.table.Name)
		case st.table != nil && c.Index != st.table.EventTime:
			return w, errf(name, "%s: ORDER BY %s, but the event-time column of %s is %s: OVER aggregations of an append-only stream order by its event time", o.Text, name, st.table.Name, st.table.Columns[st.table.EventTime].Name)
		case !st.eventTime[c.Index]:
			return w, errf(name, "%s: ORDER BY %s, which is not an event-time column: OVER aggregations of an append-only stream order by its event time", o.Text, name)
		}
	}
	w.order = ekeys.id(x)
	// No frame: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW, as SQL
	// says.
	w.frame = plan.OverFrame{Unit: plan.FrameRange, Unbounded: true}
	f := o.Frame
	if f == nil {
		return w, nil
	}
	unit := "ROWS"
	w.frame.Unit, w.frame.Unbounded = plan.FrameRows, false
	if f.Kind == parser.FrameRange {
		unit, w.frame.Unit = "RANGE", plan.FrameRange
	}
	if f.End.Kind != parser.BoundCurrentRow {
		return w, errf(unit, "%s: the frame must end at CURRENT ROW (a frame ending after the current row would wait for rows after it)", o.Text)
	}
	switch s := f.Start; {
	case s.Kind == parser.BoundCurrentRow:
	case s.Kind != parser.BoundPreceding:
		return w, errf(unit, "%s: the frame must start at or before the current row", o.Text)
	case s.Unbounded:
		w.frame.Unbounded = true
	case w.frame.Unit == plan.FrameRows:
		n, ok := intLiteral(s.N)
		if !ok || n < 0 {
			return w, errf("ROWS", "%s: ROWS BETWEEN n PRECEDING takes a non-negative integer n", o.Text)
		}
		if n > MaxOverRows {
			return w, errf("ROWS", "%s: ROWS BETWEEN %d PRECEDING keeps %d rows per partition; at most %d are allowed", o.Text, n, n+1, MaxOverRows)
		}
		w.frame.N = n
	default:
		iv, ok := s.N.(*parser.Interval)
		if !ok {
			return w, errf("RANGE", "%s: RANGE BETWEEN takes INTERVAL n UNIT PRECEDING (such as INTERVAL 10 SECOND)", o.Text)
		}
		n, ok := intLiteral(iv.Value)
		if !ok || n < 0 {
			return w, errf("INTERVAL", "%s: the RANGE interval is a non-negative integer number of %s", o.Text, iv.Unit)
		}
		unitMs, err := intervalMillis(iv.Unit)
		if err != nil {
			return w, err
		}
		if span := plan.MaxTime - plan.MinTime; n > span/unitMs {
			return w, errf("INTERVAL", "INTERVAL %d %s is longer than the TIMESTAMP range (%s)", n, iv.Unit, plan.TimeRange)
		}
		if x.Type() != plan.TypeTimestamp {
			return w, errf(name, "%s: a RANGE INTERVAL frame orders by a TIMESTAMP; %s is %s", o.Text, name, x.Type())
		}
		w.frame.N = n * unitMs
	}
	return w, nil
}

// MaxOverRows bounds ROWS BETWEEN n PRECEDING: the rows kept per
// partition.
const MaxOverRows = 10000

// bindOverCall binds a call's function and type (its argument column is
// the caller's).
func bindOverCall(o *parser.Over, base *scope) (plan.OverCall, error) {
	if o.Star {
		return plan.OverCall{Fn: plan.OverCountStar, Arg: -1, T: plan.TypeBigint}, nil
	}
	name := strings.ToUpper(o.Name)
	if o.Distinct {
		return plan.OverCall{}, errf(o.Name, "%s(DISTINCT ...) OVER is not supported", name)
	}
	if len(o.Args) != 1 {
		return plan.OverCall{}, errf(o.Name, "%s takes one argument", name)
	}
	if containsAggregate(o.Args[0]) || len(overCalls([]parser.Field{{Expr: o.Args[0]}})) > 0 {
		return plan.OverCall{}, errf(o.Name, "%s: aggregates and window calls cannot be nested", o.Text)
	}
	arg, err := base.bind(o.Args[0])
	if err != nil {
		return plan.OverCall{}, err
	}
	fn := overFns[o.Name]
	if fn == plan.OverFirstValue || fn == plan.OverLastValue {
		t := arg.Type()
		if t == plan.TypeNull {
			t = plan.TypeBigint
		}
		return plan.OverCall{Fn: fn, T: t}, nil
	}
	// The aggregate's type rule, as without OVER.
	t, err := funcs.Lookup(o.Name).Result(name, []plan.Expr{arg})
	if err != nil {
		return plan.OverCall{}, funcError(o.Name, "", err)
	}
	return plan.OverCall{Fn: fn, T: t}, nil
}
