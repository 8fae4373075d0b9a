package runtime

import (
	"container/heap"
	"slices"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// hashAgg is the keyed aggregation (plan.Aggregate): tumble, hop and given
// (cascading) windows, session windows (merged here), and running
// aggregates. It assigns rows to windows itself, so the exchange before it
// carries each input row once rather than once per window.
//
// Input rows are [window columns,] keys..., args... (see plan.Aggregate);
// Meta.Key is the encoded group key (set by the hash exchange) and Meta.WM
// the watermark before the row in log order.
//
// Output is a changelog on the upsert key: in changes mode, every group
// changed in an epoch is emitted at the barrier (an upsert, or a delete
// when it stops passing HAVING or a session it belonged to merged away);
// in on_window_close mode, one final row per window when the watermark
// passes window_end + allowed_lateness. Closed windows are purged.
//
// State: open windows, each with the list of its groups (closed as a
// whole), and open groups by key (keyGroups: a row looks its key up once for
// all its windows, then finds each window's group among the key's few). A
// group is one allocation with its accumulator (see memory in
// BENCHMARKS.md).
type hashAgg struct {
	spec   *plan.Aggregate
	nkeys  int
	wOff   int // window columns of the post-aggregation row (0 or 2)
	output []Eval
	having Eval
	// wins holds the open windows (running aggregates: one, the zero
	// window); ends orders windowed ones by end, so closing is a pop.
	wins     map[window.Window]*winGroups
	keys     map[string]*keyGroups // open groups by key
	ends     endHeap
	sessions map[string][]window.Window
	live     int      // open groups
	dirty    []*group // changes mode: groups changed since the last barrier
	wm       int64
	outWM    int64 // the watermark stamped on emitted rows
	counters *Counters
	keyBuf   []byte
	winBuf   []window.Window
	post     plan.Row
	slab     []plan.Value // output rows are carved from it
	// hot: the windows looked up most recently (a ring, never holding a
	// closed one).
	hot     [8]*winGroups
	hotNext int
	// Since the last snapshot: groups changed (written), and groups removed
	// (closed, or absorbed by a session merge) that a snapshot had written
	// (deleted).
	changed []*group
	removed []*group
}

var _ Operator = (*hashAgg)(nil)

// winGroups is one open window's groups, in creation order (a
// deterministic emission order when it closes).
type winGroups struct {
	win  window.Window
	list []*group
}

// keyGroups is one group key's open groups (one per window it is in: up to
// size/slide for HOP), so a row looks its key up once for all its windows.
type keyGroups struct {
	key    string // the encoded group key; the key columns are decoded from it
	groups []*group
}

type group struct {
	win  *winGroups
	kg   *keyGroups
	accs []acc
	// emitted: a row is out for it (a later failing HAVING deletes it);
	// dirty: in hashAgg.dirty; changed: in hashAgg.changed; persisted: a
	// snapshot wrote it; dead: closed or merged away.
	emitted, dirty, changed, persisted, dead bool
}

// group1 allocates a one-aggregate group and its accumulator together.
type group1 struct {
	group
	acc [1]acc
}

func newHashAgg(spec *plan.Aggregate, env *Env, c *Counters) (*hashAgg, error) {
	a := &hashAgg{spec: spec, nkeys: len(spec.Keys), wins: map[window.Window]*winGroups{}, keys: map[string]*keyGroups{}, sessions: map[string][]window.Window{},
		wm: window.NoWatermark, outWM: window.NoWatermark, counters: c}
	if spec.Windowed {
		a.wOff = 2
	}
	var err error
	if a.output, err = CompileAll(spec.Output, env); err != nil {
		return nil, err
	}
	if spec.Having != nil {
		if a.having, err = Compile(spec.Having, env); err != nil {
			return nil, err
		}
	}
	a.post = make(plan.Row, a.wOff+a.nkeys+len(spec.Aggs))
	return a, nil
}

func (a *hashAgg) Process(b *Batch, out Emitter) error {
	res := &Batch{}
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if a.spec.Windowed && m.WM > a.wm {
			if err := a.advance(m.WM, res); err != nil {
				return err
			}
		}
		if !a.spec.Windowed {
			if err := a.add(a.groupIn(a.keyOf(m.Key), window.Window{}), r); err != nil {
				return err
			}
			continue
		}
		if r[0].IsNull() {
			continue // no time, no window
		}
		w := a.spec.Window
		switch {
		case a.spec.Session:
			g, err := a.sessionGroup(r, m, res)
			if err != nil {
				return err
			}
			if g == nil {
				continue // late
			}
			if err := a.add(g, r); err != nil {
				return err
			}
			continue
		case w.Kind == plan.Given:
			// The row is [window_start, window_end, ...] already.
			win := window.Window{Start: r[0].I, End: r[1].I}
			if r[1].IsNull() || window.Late(win, a.spec.AllowedLateness, a.wm) {
				a.counters.late(m, win.End-1)
				continue
			}
			a.winBuf = append(a.winBuf[:0], win)
		case w.Kind == plan.Tumble:
			a.winBuf = append(a.winBuf[:0], window.Tumble(r[0].I, w.Size))
		default:
			a.winBuf = window.Hop(r[0].I, w.Slide, w.Size, a.winBuf[:0])
		}
		late := false
		var kg *keyGroups // looked up once for all the row's windows
		for _, win := range a.winBuf {
			// Judged against the operator's watermark (at least the row's):
			// a window it has closed never reopens.
			if !w.ProcTime && w.Kind != plan.Given && window.Late(win, a.spec.AllowedLateness, a.wm) {
				late = true
				continue
			}
			if kg == nil {
				kg = a.keyOf(m.Key)
			}
			if err := a.add(a.groupIn(kg, win), r); err != nil {
				return err
			}
		}
		if late {
			a.counters.late(m, r[0].I)
		}
	}
	return emitIfAny(res, out)
}

// add folds row r into g.
func (a *hashAgg) add(g *group, r plan.Row) error {
	for j, ag := range a.spec.Aggs {
		v := plan.Null
		if ag.Arg >= 0 {
			v = r[ag.Arg]
		}
		if err := g.accs[j].add(ag.Fn, ag.T, v, a.keyBuf); err != nil {
			return err
		}
	}
	a.markDirty(g)
	return nil
}

// stateRows is the number of open groups.
func (a *hashAgg) stateRows() int { return a.live }

func emitIfAny(b *Batch, out Emitter) error {
	if b.Len() == 0 {
		return nil
	}
	return out.Emit(b)
}

// lookup returns the group of key in win, creating it as needed.
func (a *hashAgg) lookup(win window.Window, key string) *group {
	return a.groupIn(a.keyOf(key), win)
}

// keyOf returns key's open groups, creating the entry as needed.
func (a *hashAgg) keyOf(key string) *keyGroups {
	kg := a.keys[key]
	if kg == nil {
		kg = &keyGroups{key: key}
		a.keys[key] = kg
	}
	return kg
}

// find returns kg's group in win, or nil.
func (kg *keyGroups) find(win window.Window) *group {
	for _, g := range kg.groups {
		if g.win.win == win {
			return g
		}
	}
	return nil
}

// groupIn returns kg's group in win, creating it (and the window) as
// needed.
func (a *hashAgg) groupIn(kg *keyGroups, win window.Window) *group {
	if g := kg.find(win); g != nil {
		return g
	}
	// Consecutive rows mostly fall in the same windows: try the last ones
	// looked up before the window map.
	var wg *winGroups
	for _, h := range a.hot {
		if h != nil && h.win == win {
			wg = h
			break
		}
	}
	if wg == nil {
		if wg = a.wins[win]; wg == nil {
			wg = a.openWindow(win)
		}
		a.hot[a.hotNext] = wg
		a.hotNext = (a.hotNext + 1) % len(a.hot)
	}
	return a.newGroup(wg, kg)
}

func (a *hashAgg) openWindow(win window.Window) *winGroups {
	wg := &winGroups{win: win}
	a.wins[win] = wg
	if a.spec.Windowed {
		heap.Push(&a.ends, win)
	}
	return wg
}

func (a *hashAgg) newGroup(wg *winGroups, kg *keyGroups) *group {
	var g *group
	if len(a.spec.Aggs) == 1 {
		h := &group1{}
		h.accs = h.acc[:]
		g = &h.group
	} else {
		g = &group{accs: make([]acc, len(a.spec.Aggs))}
	}
	g.win, g.kg = wg, kg
	kg.groups = append(kg.groups, g)
	wg.list = append(wg.list, g)
	a.live++
	return g
}

// kill removes g from its key's open groups (its window closed, or a
// session merge absorbed it); its window's list keeps it, dead.
func (a *hashAgg) kill(g *group) {
	g.dead = true
	a.live--
	kg := g.kg
	if i := slices.Index(kg.groups, g); i >= 0 {
		kg.groups = slices.Delete(kg.groups, i, i+1)
	}
	if len(kg.groups) == 0 && a.keys[kg.key] == kg {
		delete(a.keys, kg.key)
	}
	if g.persisted {
		a.removed = append(a.removed, g)
	}
}

func (a *hashAgg) markDirty(g *group) {
	a.markChanged(g)
	if !g.dirty {
		g.dirty = true
		if a.spec.EmitMode == plan.EmitChanges {
			a.dirty = append(a.dirty, g)
		}
	}
}

func (a *hashAgg) markChanged(g *group) {
	if g.changed {
		return
	}
	g.changed = true
	if len(a.changed) > 2*a.live+1024 {
		// Without snapshots (checkpoints off) nothing drains the list:
		// dropping the closed groups keeps it within the open ones.
		a.changed = slices.DeleteFunc(a.changed, func(g *group) bool { return g.dead })
	}
	a.changed = append(a.changed, g)
}

// sessionGroup merges the row's [ts, ts+gap) into its key's sessions and
// returns the group of the session it ends up in, or nil when that session
// is already closed (the row is late); an error when merging sessions
// overflows a SUM.
func (a *hashAgg) sessionGroup(r plan.Row, m *RowMeta, res *Batch) (*group, error) {
	ts := r[0].I
	list := a.sessions[m.Key]
	next, merged, absorbed := window.InsertSession(list, ts, a.spec.Window.Gap)
	if window.Late(merged, a.spec.AllowedLateness, a.wm) {
		a.counters.late(m, ts)
		return nil, nil
	}
	kg := a.keyOf(m.Key)
	g := a.groupIn(kg, merged)
	for _, old := range absorbed {
		og := kg.find(old)
		if og == nil {
			continue
		}
		for j, ag := range a.spec.Aggs {
			// Two sessions' sums that each fit may overflow together
			// (MaxInt64 in one, 1 in the other, and a row between them
			// merges them): the query fails as when a row's SUM overflows.
			if err := g.accs[j].merge(ag.Fn, ag.T, &og.accs[j]); err != nil {
				return nil, err
			}
		}
		if og.emitted {
			res.Append(nil, RowMeta{Key: a.upsertKey(og), Op: Delete, WM: m.WM})
		}
		a.kill(og) // its window's list entry stays, dead, until the window closes
	}
	a.sessions[m.Key] = next
	return g, nil
}

// advance moves the watermark and closes every window it passes.
func (a *hashAgg) advance(wm int64, res *Batch) error {
	// Rows emitted while closing carry the watermark before this advance
	// (outWM): downstream they are on time, as a window's result must be.
	a.outWM = a.forward(a.wm)
	defer func() { a.outWM = a.forward(wm) }()
	a.wm = wm
	for a.ends.Len() > 0 {
		top := a.ends[0]
		if !window.Late(top, a.spec.AllowedLateness, wm) {
			break
		}
		heap.Pop(&a.ends)
		wg := a.wins[top]
		if wg == nil {
			continue
		}
		delete(a.wins, top)
		a.forget(wg)
		for _, g := range wg.list {
			if g.dead {
				continue
			}
			switch a.spec.EmitMode {
			case plan.EmitOnWindowClose:
				a.emit(g, res, true)
			default:
				if g.dirty {
					a.emit(g, res, false)
				}
			}
			a.kill(g)
			if a.spec.Session {
				a.dropSession(g)
			}
		}
	}
	return nil
}

// forget drops a closing window from the hot ring.
func (a *hashAgg) forget(wg *winGroups) {
	for i, h := range a.hot {
		if h == wg {
			a.hot[i] = nil
		}
	}
}

func (a *hashAgg) dropSession(g *group) {
	list := a.sessions[g.kg.key]
	for i, s := range list {
		if s == g.win.win {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(a.sessions, g.kg.key)
	} else {
		a.sessions[g.kg.key] = list
	}
}

func (a *hashAgg) upsertKey(g *group) string {
	if !a.spec.Windowed {
		return g.kg.key
	}
	a.keyBuf = AppendValue(a.keyBuf[:0], plan.Time(g.win.win.Start))
	a.keyBuf = AppendValue(a.keyBuf, plan.Time(g.win.win.End))
	a.keyBuf = append(a.keyBuf, g.kg.key...)
	return string(a.keyBuf)
}

// emit appends g's current result to res: an upsert, or a delete when it
// fails HAVING and was emitted before. final: on_window_close emission.
func (a *hashAgg) emit(g *group, res *Batch, final bool) {
	g.dirty = false
	p := a.post
	if a.spec.Windowed {
		p[0], p[1] = plan.Time(g.win.win.Start), plan.Time(g.win.win.End)
	}
	// The key columns, decoded from the group key (encoded by the exchange
	// from exactly these columns); the bytes are only read.
	kb := unsafeBytes(g.kg.key)
	for i := range a.nkeys {
		var err error
		if p[a.wOff+i], kb, err = DecodeValue(kb); err != nil {
			panic("runtime: group key does not decode: " + err.Error())
		}
	}
	for j, ag := range a.spec.Aggs {
		p[a.wOff+a.nkeys+j] = g.accs[j].result(ag.Fn, ag.T)
	}
	if a.having != nil && !a.having(p).True() {
		if g.emitted && !final {
			res.Append(nil, RowMeta{Key: a.upsertKey(g), Op: Delete, WM: a.outWM})
			g.emitted = false
			a.markChanged(g)
		}
		return
	}
	// Output rows are carved from one allocation per batch of emissions,
	// of up to 256 rows: no more than the open groups (what is left of it
	// stays, and thousands of queries with a handful of groups each would
	// keep 256 rows each).
	if len(a.slab) < len(a.output) {
		a.slab = make([]plan.Value, len(a.output)*min(256, max(8, a.live)))
	}
	row := plan.Row(a.slab[:len(a.output):len(a.output)])
	a.slab = a.slab[len(a.output):]
	for i, o := range a.output {
		row[i] = o(p)
	}
	key := a.upsertKey(g)
	// ID: the result's identity for append-only consumers downstream.
	res.Append(row, RowMeta{Key: key, ID: key, Op: Upsert, WM: a.outWM})
	if !g.emitted {
		g.emitted = true
		a.markChanged(g)
	}
}

// Watermark closes the windows wm passes. In on_window_close mode it
// forwards wm - allowed_lateness: a window's row (its event time is
// window_end) is emitted when wm reaches window_end + allowed_lateness, so
// no later row is older than that (SPEC 5: operators that delay output hold
// back the watermark they forward).
func (a *hashAgg) Watermark(wm int64, out Emitter) (int64, error) {
	if !a.spec.Windowed {
		return wm, nil
	}
	if wm > a.wm {
		res := &Batch{}
		if err := a.advance(wm, res); err != nil {
			return wm, err
		}
		if err := emitIfAny(res, out); err != nil {
			return wm, err
		}
	}
	return a.forward(a.wm), nil
}

// forward is the watermark forwarded for input watermark wm.
func (a *hashAgg) forward(wm int64) int64 {
	if a.spec.EmitMode != plan.EmitOnWindowClose || wm == window.NoWatermark {
		return wm
	}
	if wm < window.NoWatermark+a.spec.AllowedLateness {
		return window.NoWatermark
	}
	return wm - a.spec.AllowedLateness
}

func (a *hashAgg) Barrier(_ Barrier, out Emitter) error {
	if len(a.dirty) == 0 {
		return nil
	}
	res := &Batch{}
	for _, g := range a.dirty {
		if !g.dead && g.dirty {
			a.emit(g, res, false)
		}
	}
	clear(a.dirty) // drop the pointers: closed groups can be collected
	a.dirty = a.dirty[:0]
	return emitIfAny(res, out)
}

// endHeap orders open windows by end (then start), so closing is a pop.
type endHeap []window.Window

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	return h[i].End < h[j].End || h[i].End == h[j].End && h[i].Start < h[j].Start
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(window.Window)) }
func (h *endHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
