package e2e

// The oracle: a naive batch evaluation of a streaming aggregation over a
// whole input log, written from the contract (docs/sql.md and docs/http-api.md)
// rather than from the engine. It processes rows one at a time in log order
// only where the contract makes the answer depend on that order (watermarks,
// lateness, sessions); everything else is computed in one pass over the
// rows a group ended up with.
//
// The contract, as implemented here:
//
//   - Row i's watermark is max(ts_0..ts_{i-1}) - watermark_delay over every
//     row of the log (the source's watermark: rows a WHERE removes still
//     advance it); there is none before the first row.
//   - Windows are half-open [start, end) in epoch milliseconds, aligned to the
//     epoch. A row is late for window w when w.end + allowed_lateness <= its
//     watermark. It updates the windows it is not late for; a row dropped from
//     at least one window counts once in late_rows. WHERE runs first: a row it
//     removes is never late.
//   - Sessions, per group key, in log order: before a row, every active
//     session whose end + allowed_lateness <= the row's watermark is closed
//     for good. The row forms [ts, ts+gap) and merges, transitively, with
//     every active session it overlaps. If the merged session's end +
//     allowed_lateness <= the watermark the row is late and nothing changes;
//     otherwise the merged session replaces the ones it absorbed.
//   - Emit mode changes: every window (open or closed) and every running
//     group, minus those failing HAVING. on_window_close: only windows with
//     end + allowed_lateness <= max(all ts) - watermark_delay.
//   - Running aggregates (GROUP BY without a window) count every row.
//   - A query without aggregation outputs one row per input row passing WHERE.
//   - COUNT(x) and COUNT(DISTINCT x) skip NULLs; SUM, AVG, MIN and MAX of no
//     non-NULL value are NULL; SUM of BIGINT is BIGINT, AVG is DOUBLE.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Row is one row, input or output: column name -> value. Values are nil
// (NULL), int64 (BIGINT), float64 (DOUBLE), string (VARCHAR) or Timestamp.
type Row map[string]any

// Timestamp is a TIMESTAMP(3) value: milliseconds since the Unix epoch, UTC.
type Timestamp int64

// timestampLayout is how the API writes timestamps: RFC 3339, UTC, millis.
const timestampLayout = "2006-01-02T15:04:05.000Z"

func (ts Timestamp) String() string {
	return time.UnixMilli(int64(ts)).UTC().Format(timestampLayout)
}

// MarshalJSON writes the API's form, so Rows can be posted as they are.
func (ts Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(ts.String())), nil
}

// Expr is a scalar expression over one input row; it returns a Row value.
type Expr func(Row) any

// colRef is the expression reading one column.
func colRef(name string) Expr { return func(r Row) any { return r[name] } }

// WindowKind says how a query assigns rows to windows.
type WindowKind int

const (
	NoWindow WindowKind = iota // a running aggregate, or no aggregation at all
	Tumble
	Hop
	Session
)

// Window describes the window function of a GROUP BY. Durations are in ms.
type Window struct {
	Kind  WindowKind
	Size  int64 // Tumble, Hop
	Slide int64 // Hop
	Gap   int64 // Session
}

func TumbleWindow(size int64) Window     { return Window{Kind: Tumble, Size: size} }
func HopWindow(slide, size int64) Window { return Window{Kind: Hop, Slide: slide, Size: size} }
func SessionWindow(gap int64) Window     { return Window{Kind: Session, Gap: gap} }

func (w Window) windowed() bool { return w.Kind != NoWindow }

func validateWindow(w Window) error {
	switch w.Kind {
	case NoWindow:
		return nil
	case Tumble:
		if w.Size <= 0 {
			return fmt.Errorf("tumble size %d", w.Size)
		}
	case Hop:
		if w.Size <= 0 || w.Slide <= 0 {
			return fmt.Errorf("hop slide %d size %d", w.Slide, w.Size)
		}
	case Session:
		if w.Gap <= 0 {
			return fmt.Errorf("session gap %d", w.Gap)
		}
	default:
		return fmt.Errorf("window kind %d", w.Kind)
	}
	return nil
}

// AggFunc is an aggregate function.
type AggFunc int

const (
	CountStar AggFunc = iota
	Count
	CountDistinct
	Sum
	Avg
	Min
	Max
)

// Agg is one aggregate of a query. Arg is nil for CountStar. A Hidden
// aggregate is computed for HAVING only and is not an output column.
type Agg struct {
	As     string
	Func   AggFunc
	Arg    Expr
	Hidden bool
}

// Column is one output column of a query without aggregation.
type Column struct {
	As   string
	Expr Expr
}

// Query is the oracle's form of one continuous query over one source.
//
// An aggregating query has Aggs; its output columns are window_start and
// window_end (windowed queries), then GroupBy (input column names, output
// under the same names), then the non-hidden Aggs in order. A query without
// aggregation has Project instead, and neither Window nor GroupBy.
type Query struct {
	Window        Window
	GroupBy       []string
	Where         func(Row) bool // nil: every row
	Aggs          []Agg
	Having        func(Row) bool // over the output row, hidden aggregates included
	Project       []Column
	OnWindowClose bool
}

// Source describes the table a query reads: its event-time column and its
// watermark settings, in milliseconds.
type Source struct {
	TimeCol         string
	WatermarkDelay  int64
	AllowedLateness int64
}

// Result is what a query's results table must hold once it has processed a
// log. Key lists the upsert key columns; it is nil for an append-only query,
// whose rows form a multiset. Late is the query's late_rows counter.
type Result struct {
	Columns []string
	Key     []string
	Rows    []Row
	Late    int64
}

// Evaluate runs q over log (rows in log order) read from src. It panics on a
// query the contract does not allow, such as on_window_close without a window:
// that is a bug in the test, not in the engine.
func Evaluate(src Source, q Query, log []Row) Result {
	if err := q.check(); err != nil {
		panic(fmt.Sprintf("oracle: invalid query: %v", err))
	}
	res := Result{Columns: q.outputColumns(), Key: q.key()}
	if q.Project != nil {
		for _, r := range log {
			if !q.passes(r) {
				continue
			}
			out := Row{}
			for _, c := range q.Project {
				out[c.As] = c.Expr(r)
			}
			res.Rows = append(res.Rows, out)
		}
		return res
	}

	wm := watermark{delay: src.WatermarkDelay}
	var groups []*group
	switch q.Window.Kind {
	case NoWindow:
		groups = runningGroups(q, log)
	case Session:
		groups, res.Late = sessionGroups(src, q, log, &wm)
	default:
		groups, res.Late = fixedWindowGroups(src, q, log, &wm)
	}
	for _, g := range groups {
		// After the whole log wm is max(all ts) - delay: the final watermark.
		if q.OnWindowClose && !wm.passed(g.w.end, src.AllowedLateness) {
			continue
		}
		out := q.outputRow(g)
		if q.Having != nil && !q.Having(out) {
			continue
		}
		for _, a := range q.Aggs {
			if a.Hidden {
				delete(out, a.As)
			}
		}
		res.Rows = append(res.Rows, out)
	}
	return res
}

func (q Query) check() error {
	if err := validateWindow(q.Window); err != nil {
		return err
	}
	if (q.Project == nil) == (q.Aggs == nil) {
		return fmt.Errorf("need exactly one of Aggs and Project")
	}
	if q.Project != nil && (q.Window.windowed() || q.GroupBy != nil || q.Having != nil) {
		return fmt.Errorf("a query without aggregation has no window, GROUP BY or HAVING")
	}
	if q.OnWindowClose && !q.Window.windowed() {
		return fmt.Errorf("on_window_close needs a window")
	}
	for _, a := range q.Aggs {
		if (a.Func == CountStar) != (a.Arg == nil) {
			return fmt.Errorf("aggregate %s: Arg must be nil exactly for COUNT(*)", a.As)
		}
	}
	return nil
}

func (q Query) passes(r Row) bool { return q.Where == nil || q.Where(r) }

func (q Query) outputColumns() []string {
	if q.Project != nil {
		cols := make([]string, len(q.Project))
		for i, c := range q.Project {
			cols[i] = c.As
		}
		return cols
	}
	cols := q.key()
	for _, a := range q.Aggs {
		if !a.Hidden {
			cols = append(cols, a.As)
		}
	}
	return cols
}

// key returns the upsert key: (window_start, window_end, GROUP BY columns)
// for a windowed aggregation, the GROUP BY columns (possibly none) for a
// running aggregate, nil for an append-only query.
func (q Query) key() []string {
	if q.Project != nil {
		return nil
	}
	key := []string{}
	if q.Window.windowed() {
		key = append(key, "window_start", "window_end")
	}
	return append(key, q.GroupBy...)
}

func (q Query) groupValues(r Row) []any {
	vals := make([]any, len(q.GroupBy))
	for i, c := range q.GroupBy {
		vals[i] = r[c]
	}
	return vals
}

// window is a half-open interval [start, end) in epoch milliseconds.
type window struct{ start, end int64 }

// group is one result row in the making: a window (zero for running
// aggregates), the GROUP BY values and the rows aggregated into it.
type group struct {
	w    window
	keys []any
	rows []Row
}

func (q Query) outputRow(g *group) Row {
	out := Row{}
	if q.Window.windowed() {
		out["window_start"] = Timestamp(g.w.start)
		out["window_end"] = Timestamp(g.w.end)
	}
	for i, c := range q.GroupBy {
		out[c] = g.keys[i]
	}
	for _, a := range q.Aggs {
		out[a.As] = aggregate(a, g.rows)
	}
	return out
}

// watermark tracks max(ts) - delay over the rows observed so far.
type watermark struct {
	delay int64
	seen  bool
	max   int64
}

func (w *watermark) observe(ts int64) {
	if !w.seen || ts > w.max {
		w.seen, w.max = true, ts
	}
}

// passed reports whether a window ending at end is closed under this
// watermark: end + lateness <= watermark. Nothing is closed before the
// first row.
func (w *watermark) passed(end, lateness int64) bool {
	return w.seen && end+lateness <= w.max-w.delay
}

func timeOf(r Row, col string) int64 {
	ts, ok := r[col].(Timestamp)
	if !ok {
		panic(fmt.Sprintf("oracle: event-time column %q holds %T, want Timestamp", col, r[col]))
	}
	return int64(ts)
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// assignWindows returns the TUMBLE or HOP windows holding ts, by start.
// A HOP window is [k*slide, k*slide+size) for every k with start <= ts <
// start+size; with slide > size a row can fall in no window at all.
func assignWindows(w Window, ts int64) []window {
	switch w.Kind {
	case Tumble:
		start := floorDiv(ts, w.Size) * w.Size
		return []window{{start, start + w.Size}}
	case Hop:
		var out []window
		for start := floorDiv(ts, w.Slide) * w.Slide; start+w.Size > ts; start -= w.Slide {
			out = append(out, window{start, start + w.Size})
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	panic(fmt.Sprintf("oracle: assignWindows(%v)", w))
}

func fixedWindowGroups(src Source, q Query, log []Row, wm *watermark) ([]*group, int64) {
	index := map[string]*group{}
	var groups []*group
	var late int64
	for _, r := range log {
		ts := timeOf(r, src.TimeCol)
		if q.passes(r) {
			keys := q.groupValues(r)
			dropped := false
			for _, w := range assignWindows(q.Window, ts) {
				if wm.passed(w.end, src.AllowedLateness) {
					dropped = true
					continue
				}
				k := canonKey(append([]any{w.start, w.end}, keys...))
				g := index[k]
				if g == nil {
					g = &group{w: w, keys: keys}
					index[k] = g
					groups = append(groups, g)
				}
				g.rows = append(g.rows, r)
			}
			if dropped {
				late++
			}
		}
		wm.observe(ts)
	}
	return groups, late
}

func sessionGroups(src Source, q Query, log []Row, wm *watermark) ([]*group, int64) {
	type keyState struct {
		active, closed []*group
	}
	states := map[string]*keyState{}
	var order []*keyState
	var late int64
	for _, r := range log {
		ts := timeOf(r, src.TimeCol)
		if q.passes(r) {
			keys := q.groupValues(r)
			k := canonKey(keys)
			st := states[k]
			if st == nil {
				st = &keyState{}
				states[k] = st
				order = append(order, st)
			}
			// Close what the watermark has passed: those can no longer merge.
			// (Other keys' sessions close too, but nothing observes that
			// before their next row or the end.)
			var open []*group
			for _, s := range st.active {
				if wm.passed(s.w.end, src.AllowedLateness) {
					st.closed = append(st.closed, s)
				} else {
					open = append(open, s)
				}
			}
			st.active = open
			// Merge with every active session the row overlaps, transitively.
			merged := window{ts, ts + q.Window.Gap}
			absorbed := make([]bool, len(open))
			for changed := true; changed; {
				changed = false
				for i, s := range open {
					if !absorbed[i] && s.w.start < merged.end && merged.start < s.w.end {
						absorbed[i], changed = true, true
						merged.start = min(merged.start, s.w.start)
						merged.end = max(merged.end, s.w.end)
					}
				}
			}
			if wm.passed(merged.end, src.AllowedLateness) {
				late++
			} else {
				ns := &group{w: merged, keys: keys}
				var rest []*group
				for i, s := range open {
					if absorbed[i] {
						ns.rows = append(ns.rows, s.rows...)
					} else {
						rest = append(rest, s)
					}
				}
				ns.rows = append(ns.rows, r)
				st.active = append(rest, ns)
			}
		}
		wm.observe(ts)
	}
	var groups []*group
	for _, st := range order {
		groups = append(groups, st.closed...)
		groups = append(groups, st.active...)
	}
	return groups, late
}

func runningGroups(q Query, log []Row) []*group {
	index := map[string]*group{}
	var groups []*group
	for _, r := range log {
		if !q.passes(r) {
			continue
		}
		keys := q.groupValues(r)
		k := canonKey(keys)
		g := index[k]
		if g == nil {
			g = &group{keys: keys}
			index[k] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, r)
	}
	return groups
}

// aggregate computes one aggregate over a group's rows.
func aggregate(a Agg, rows []Row) any {
	if a.Func == CountStar {
		return int64(len(rows))
	}
	var vals []any
	for _, r := range rows {
		if v := a.Arg(r); v != nil {
			vals = append(vals, v)
		}
	}
	switch a.Func {
	case Count:
		return int64(len(vals))
	case CountDistinct:
		seen := map[string]bool{}
		for _, v := range vals {
			seen[keyPart(v)] = true
		}
		return int64(len(seen))
	case Sum:
		if len(vals) == 0 {
			return nil
		}
		return sumValues(a.As, vals)
	case Avg:
		if len(vals) == 0 {
			return nil
		}
		switch s := sumValues(a.As, vals).(type) {
		case int64:
			return float64(s) / float64(len(vals))
		case float64:
			return s / float64(len(vals))
		}
	case Min, Max:
		if len(vals) == 0 {
			return nil
		}
		best := vals[0]
		for _, v := range vals[1:] {
			c := compareValues(v, best)
			if (a.Func == Min && c < 0) || (a.Func == Max && c > 0) {
				best = v
			}
		}
		return best
	}
	panic(fmt.Sprintf("oracle: aggregate %s: function %d", a.As, a.Func))
}

// sumValues adds non-NULL numbers: BIGINT stays BIGINT (overflow is an
// error in the engine, so a test that overflows is wrong), a DOUBLE makes
// the sum DOUBLE.
func sumValues(name string, vals []any) any {
	var isum int64
	var fsum float64
	double := false
	for _, v := range vals {
		switch x := v.(type) {
		case int64:
			if (x > 0 && isum > math.MaxInt64-x) || (x < 0 && isum < math.MinInt64-x) {
				panic(fmt.Sprintf("oracle: SUM %s overflows BIGINT", name))
			}
			isum += x
			fsum += float64(x)
		case float64:
			double = true
			fsum += x
		default:
			panic(fmt.Sprintf("oracle: SUM/AVG %s over %T", name, v))
		}
	}
	if double {
		return fsum
	}
	return isum
}

// compareValues orders two non-NULL values of the same type.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp3(x < y, x > y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp3(x < y, x > y)
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case Timestamp:
		if y, ok := b.(Timestamp); ok {
			return cmp3(x < y, x > y)
		}
	}
	panic(fmt.Sprintf("oracle: cannot compare %T with %T", a, b))
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// keyPart is the canonical text of one value inside a key. It accepts the
// oracle's Go values and values decoded from JSON with UseNumber (strings,
// json.Number via fmt.Stringer, nil) and maps a Timestamp and its API string
// to the same text, so expected and served rows key alike.
func keyPart(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case int64:
		return "n:" + strconv.FormatInt(x, 10)
	case float64:
		return "n:" + strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return "s:" + x
	case Timestamp:
		return "s:" + x.String()
	case bool:
		return "b:" + strconv.FormatBool(x)
	case fmt.Stringer: // json.Number
		return "n:" + x.String()
	}
	return fmt.Sprintf("?%T:%v", v, v)
}

// canonKey is the canonical text of a tuple of values.
func canonKey(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = strconv.Quote(keyPart(v))
	}
	return strings.Join(parts, ",")
}
