package runtime

import (
	"container/heap"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// hashAgg is the keyed aggregation (plan.Aggregate): tumble and hop windows
// (assigned upstream), session windows (merged here), and running
// aggregates. Input rows are [window_start, window_end,] keys..., args...;
// Meta.Key is the encoded group key (set by the hash exchange) and Meta.WM
// the watermark before the row in log order.
//
// Output is a changelog on the upsert key: in changes mode, every group
// changed in an epoch is emitted at the barrier (an upsert, or a delete
// when it stops passing HAVING or a session it belonged to merged away);
// in on_window_close mode, one final row per window when the watermark
// passes window_end + allowed_lateness. Closed windows are purged.
type hashAgg struct {
	spec     *plan.Aggregate
	nkeys    int
	wOff     int
	output   []Eval
	having   Eval
	groups   map[winKey]*group
	dirty    []*group
	sessions map[string][]window.Window
	ends     endHeap
	wm       int64
	outWM    int64 // the watermark stamped on emitted rows
	counters *Counters
	keyBuf   []byte
	post     plan.Row
	// Since the last snapshot: groups changed, and keys of groups removed
	// (closed, or absorbed by a session merge).
	changed map[winKey]*group
	removed []winKey
}

var _ Operator = (*hashAgg)(nil)

type winKey struct {
	start, end int64
	key        string
}

type group struct {
	wk      winKey
	keys    plan.Row
	accs    []acc
	emitted bool
	dirty   bool
	dead    bool
}

func newHashAgg(spec *plan.Aggregate, env *Env, c *Counters) (*hashAgg, error) {
	a := &hashAgg{spec: spec, nkeys: len(spec.Keys), groups: map[winKey]*group{}, sessions: map[string][]window.Window{},
		wm: window.NoWatermark, outWM: window.NoWatermark, counters: c, changed: map[winKey]*group{}}
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
		var g *group
		switch {
		case a.spec.Session:
			g = a.sessionGroup(r, m, res)
			if g == nil {
				continue // late
			}
		case a.spec.Windowed:
			wk := winKey{r[0].I, r[1].I, m.Key}
			if g = a.groups[wk]; g == nil {
				g = a.newGroup(wk, r)
			}
		default:
			wk := winKey{key: m.Key}
			if g = a.groups[wk]; g == nil {
				g = a.newGroup(wk, r)
			}
		}
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
	}
	return emitIfAny(res, out)
}

// stateRows is the number of open groups.
func (a *hashAgg) stateRows() int { return len(a.groups) }

func emitIfAny(b *Batch, out Emitter) error {
	if b.Len() == 0 {
		return nil
	}
	return out.Emit(b)
}

func (a *hashAgg) newGroup(wk winKey, r plan.Row) *group {
	g := &group{wk: wk, keys: append(plan.Row(nil), r[a.wOff:a.wOff+a.nkeys]...), accs: make([]acc, len(a.spec.Aggs))}
	a.groups[wk] = g
	if a.spec.Windowed {
		heap.Push(&a.ends, endItem{wk.end, wk})
	}
	return g
}

func (a *hashAgg) markDirty(g *group) {
	a.changed[g.wk] = g
	if !g.dirty {
		g.dirty = true
		if a.spec.EmitMode == plan.EmitChanges {
			a.dirty = append(a.dirty, g)
		}
	}
}

// sessionGroup merges the row's [ts, ts+gap) into its key's sessions and
// returns the group of the session it ends up in, or nil when that session
// is already closed (the row is late).
func (a *hashAgg) sessionGroup(r plan.Row, m *RowMeta, res *Batch) *group {
	ts := r[0].I
	list := a.sessions[m.Key]
	next, merged, absorbed := window.InsertSession(list, ts, a.spec.Window.Gap)
	if window.Late(merged, a.spec.AllowedLateness, a.wm) {
		a.counters.late(m, ts)
		return nil
	}
	wk := winKey{merged.Start, merged.End, m.Key}
	g := a.groups[wk]
	if g == nil {
		g = a.newGroup(wk, r)
	}
	for _, old := range absorbed {
		ok := winKey{old.Start, old.End, m.Key}
		og := a.groups[ok]
		if og == nil {
			continue
		}
		for j, ag := range a.spec.Aggs {
			// Overflow cannot happen merging sums that each fit and whose
			// rows were added one by one; an error here is a broken invariant.
			if err := g.accs[j].merge(ag.Fn, ag.T, &og.accs[j]); err != nil {
				panic(err)
			}
		}
		if og.emitted {
			res.Append(nil, RowMeta{Key: a.upsertKey(og), Op: Delete, WM: m.WM})
		}
		og.dead = true
		delete(a.groups, ok)
		a.removed = append(a.removed, ok)
	}
	a.sessions[m.Key] = next
	return g
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
		if !window.Late(window.Window{Start: top.wk.start, End: top.end}, a.spec.AllowedLateness, wm) {
			break
		}
		heap.Pop(&a.ends)
		g := a.groups[top.wk]
		if g == nil {
			continue // merged away
		}
		switch a.spec.EmitMode {
		case plan.EmitOnWindowClose:
			a.emit(g, res, true)
		default:
			if g.dirty {
				a.emit(g, res, false)
			}
		}
		g.dead = true
		delete(a.groups, top.wk)
		a.removed = append(a.removed, top.wk)
		if a.spec.Session {
			a.dropSession(top.wk)
		}
	}
	return nil
}

func (a *hashAgg) dropSession(wk winKey) {
	list := a.sessions[wk.key]
	for i, s := range list {
		if s.Start == wk.start && s.End == wk.end {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(a.sessions, wk.key)
	} else {
		a.sessions[wk.key] = list
	}
}

func (a *hashAgg) upsertKey(g *group) string {
	if !a.spec.Windowed {
		return g.wk.key
	}
	a.keyBuf = AppendValue(a.keyBuf[:0], plan.Time(g.wk.start))
	a.keyBuf = AppendValue(a.keyBuf, plan.Time(g.wk.end))
	a.keyBuf = append(a.keyBuf, g.wk.key...)
	return string(a.keyBuf)
}

// emit appends g's current result to res: an upsert, or a delete when it
// fails HAVING and was emitted before. final: on_window_close emission.
func (a *hashAgg) emit(g *group, res *Batch, final bool) {
	g.dirty = false
	p := a.post
	if a.spec.Windowed {
		p[0], p[1] = plan.Time(g.wk.start), plan.Time(g.wk.end)
	}
	copy(p[a.wOff:], g.keys)
	for j, ag := range a.spec.Aggs {
		p[a.wOff+a.nkeys+j] = g.accs[j].result(ag.Fn, ag.T)
	}
	if a.having != nil && !a.having(p).True() {
		if g.emitted && !final {
			res.Append(nil, RowMeta{Key: a.upsertKey(g), Op: Delete, WM: a.outWM})
			g.emitted = false
			a.changed[g.wk] = g
		}
		return
	}
	row := make(plan.Row, len(a.output))
	for i, o := range a.output {
		row[i] = o(p)
	}
	key := a.upsertKey(g)
	// ID: the result's identity for append-only consumers downstream.
	res.Append(row, RowMeta{Key: key, ID: key, Op: Upsert, WM: a.outWM})
	if !g.emitted {
		g.emitted = true
		a.changed[g.wk] = g
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
	a.dirty = a.dirty[:0]
	return emitIfAny(res, out)
}

type endItem struct {
	end int64
	wk  winKey
}

// endHeap orders open windows by end, so closing is a pop.
type endHeap []endItem

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(endItem)) }
func (h *endHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
