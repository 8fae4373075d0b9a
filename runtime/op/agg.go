package op

import (
	"slices"
	"unsafe"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
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
// BENCHMARKS.md). Everything held is live: a group that a session merge
// absorbs leaves its window's list at once (the largest absorbed group
// moves to the merged session, taking its accumulators along, and the
// others are folded into it, smaller into larger), a window without groups
// is dropped, the close-order heap is rebuilt when stale entries outnumber
// the open windows, and maps are rebuilt when they shrink to a quarter of
// their peak (Go maps keep their largest table). StateBytes estimates the
// heap this takes, kept up to date by integer adds where state is created,
// grows or is dropped.
type hashAgg struct {
	spec   *plan.Aggregate
	nkeys  int
	wOff   int // window columns of the post-aggregation row (0 or 2)
	output []Eval
	having Eval
	// wins holds the open windows (running aggregates: one, the zero
	// window); ends orders windowed ones by end, so closing is a pop (it
	// may hold windows since dropped: they are skipped).
	wins     map[window.Window]*winGroups
	keys     map[string]*keyGroups // open groups by key
	ends     endHeap
	sessions map[string][]window.Window
	peaks    struct{ wins, keys, sessions int } // the maps' sizes at their largest (shrink)
	live     int                                // open groups
	dirty    []*group                           // changes mode: groups changed since the last barrier
	wm       int64
	outWM    int64 // the watermark stamped on emitted rows
	counters *Counters
	keyBuf   []byte
	valBuf   []byte // a COUNT(DISTINCT) member's encoding
	winBuf   []window.Window
	post     plan.Row
	slab     []plan.Value // output rows are carved from it
	// hot: the windows looked up most recently (a ring, never holding a
	// closed or dropped one).
	hot     [8]*winGroups
	hotNext int
	// Since the last snapshot: groups changed (written); the records of
	// groups removed (closed, or absorbed or moved by a session merge)
	// that a snapshot had written, and the chunk records of the
	// COUNT(DISTINCT) sets they dropped (deleted).
	changed     []*group
	removedRecs []winKey
	removedSets []setChunks
	nextSet     uint64 // the id of the next set to write chunks
	// bytes estimates the heap the state takes (StateBytes); groupCost and
	// keyCost are the fixed parts of a group and of a key.
	bytes     int64
	groupCost int
	keyCost   int
	// Changelogs, after the fields of every aggregation (their layout is
	// the append-only per-row path's). retracts, keepOld: spec.Retract,
	// spec.EmitBefore (changes mode). Retracting aggregations (retract.go):
	// the bags of the groups whose aggregates keep one, and the bag
	// records of removed groups to delete. before (keepOld): the row last
	// emitted for each group changed since (captured before its first
	// change of the epoch).
	retracts, keepOld bool
	bagAggs           bool // an aggregate keeps a bag
	bags              map[*group][]*bag
	removedBags       []bagDrop
	before            map[*group]plan.Row
}

var _ Operator = (*hashAgg)(nil)

// winGroups is one open window's groups, in creation order (a
// deterministic emission order when it closes). Groups that left it (a
// session merge moved or absorbed them) leave nil holes, compacted away
// once they are half the list.
type winGroups struct {
	win   window.Window
	list  []*group
	holes int
}

// keyGroups is one group key's open groups (one per window it is in: up to
// size/slide for HOP), so a row looks its key up once for all its windows.
type keyGroups struct {
	key    string // the encoded group key; the key columns are decoded from it
	groups []*group
}

type group struct {
	win   *winGroups
	kg    *keyGroups
	accs  []acc
	pos   int32 // its index in win.list
	flags groupFlags
}

// groupFlags: emitted, a row is out for it (a later failing HAVING deletes
// it); dirty, in hashAgg.dirty; changed, in hashAgg.changed; persisted, a
// snapshot wrote its record (at its current window); dead, closed or
// merged away.
type groupFlags uint8

const (
	gEmitted groupFlags = 1 << iota
	gDirty
	gChanged
	gPersisted
	gDead
)

func (g *group) is(f groupFlags) bool { return g.flags&f != 0 }

// group1 allocates a one-aggregate group and its accumulator together.
type group1 struct {
	group
	acc [1]acc
}

// Rough heap costs of the aggregation's structures (StateBytes), in bytes:
// a keyGroups (48) with its entry in keys (~32) and a session list's entry
// in sessions (~48); a winGroups (48) with its entry in wins (~32) and in
// ends (16, up to twice over); a group's entries in its window's and its
// key's lists (8 each, with their slack), and its session (16). Checked
// against runtime.MemStats by TestStateBytes.
const (
	keyCost     = 48 + 32
	sessKeyCost = 48
	winCost     = 48 + 32 + 24
	listCost    = 2 * 12
	sessCost    = 16
)

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
	a.groupCost = allocSize(int(unsafe.Sizeof(group1{}))) + listCost
	if len(spec.Aggs) != 1 {
		a.groupCost = allocSize(int(unsafe.Sizeof(group{}))) + allocSize(len(spec.Aggs)*int(unsafe.Sizeof(acc{}))) + listCost
	}
	a.keyCost = keyCost
	if spec.Retract {
		a.bags = map[*group][]*bag{}
		for _, ag := range spec.Aggs {
			a.bagAggs = a.bagAggs || usesBag(ag.Fn)
		}
	}
	if spec.EmitBefore {
		a.before = map[*group]plan.Row{}
	}
	a.retracts, a.keepOld = spec.Retract, a.before != nil
	if spec.Session {
		a.groupCost += sessCost
		a.keyCost += sessKeyCost
	}
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
			var err error
			if a.retracts && m.Op.Retracts() {
				err = a.takeBack(a.keyOf(m.Key), window.Window{}, r)
			} else {
				err = a.add(a.groupIn(a.keyOf(m.Key), window.Window{}), r)
			}
			if err != nil {
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
			var err error
			if a.retracts && m.Op.Retracts() {
				err = a.takeBack(kg, win, r)
			} else {
				err = a.add(a.groupIn(kg, win), r)
			}
			if err != nil {
				return err
			}
		}
		if late {
			a.counters.late(m, r[0].I)
		}
	}
	return emitIfAny(res, out)
}

// takeBack takes row r (an updating input's delete or old row) back from
// kg's group in win.
func (a *hashAgg) takeBack(kg *keyGroups, win window.Window, r plan.Row) error {
	g := kg.find(win)
	if g == nil || g.accs[a.spec.RowCount].n <= 0 {
		return errUnmatchedRetraction
	}
	return a.retract(g, r)
}

// add folds row r into g. An append-only input's aggregation takes the
// loop of its own: it pays nothing for bags or retraction (the per-row
// path of most plans).
func (a *hashAgg) add(g *group, r plan.Row) error {
	if a.retracts {
		return a.apply(g, r, false)
	}
	if a.keepOld {
		a.keepBefore(g)
	}
	for j, ag := range a.spec.Aggs {
		v := plan.Null
		if ag.Arg >= 0 {
			v = r[ag.Arg]
		}
		var grown int
		var err error
		if ag.Concat != nil {
			grown, err = g.accs[j].addConcat(&a.spec.Aggs[j], r, &a.valBuf)
		} else {
			grown, err = g.accs[j].add(ag.Fn, ag.T, v, &a.valBuf)
		}
		a.bytes += int64(grown)
		if err != nil {
			return err
		}
	}
	a.markDirty(g)
	return nil
}

// retract takes row r back from g (a retracting aggregation).
func (a *hashAgg) retract(g *group, r plan.Row) error { return a.apply(g, r, true) }

// apply folds row r into g, or takes it back (back): a retracting
// aggregation.
func (a *hashAgg) apply(g *group, r plan.Row, back bool) error {
	a.keepBefore(g)
	var bags []*bag
	if a.bagAggs {
		bags = a.bagsOf(g)
	}
	for j, ag := range a.spec.Aggs {
		v := plan.Null
		if ag.Arg >= 0 {
			v = r[ag.Arg]
		}
		var bg *bag
		if bags != nil {
			bg = bags[j]
		}
		var grown int
		var err error
		switch {
		case ag.Concat != nil && back:
			grown, err = g.accs[j].retractConcat(&a.spec.Aggs[j], r, bg, &a.valBuf)
			grown = -grown
		case ag.Concat != nil:
			grown = g.accs[j].addConcatRetractable(&a.spec.Aggs[j], r, bg, &a.valBuf)
		case back:
			grown, err = g.accs[j].retract(ag.Fn, ag.T, v, bg, &a.valBuf)
			grown = -grown
		case bg != nil:
			grown, err = g.accs[j].addRetractable(ag.Fn, ag.T, v, bg, &a.valBuf)
		default:
			grown, err = g.accs[j].add(ag.Fn, ag.T, v, &a.valBuf)
		}
		a.bytes += int64(grown)
		if err != nil {
			return err
		}
	}
	a.markDirty(g)
	return nil
}

// bagsOf returns g's bags, one per aggregate that keeps one (nil for the
// others), creating them as needed.
func (a *hashAgg) bagsOf(g *group) []*bag {
	bs := a.bags[g]
	if bs == nil {
		bs = make([]*bag, len(a.spec.Aggs))
		for j, ag := range a.spec.Aggs {
			if usesBag(ag.Fn) {
				bs[j] = newBag()
			}
		}
		a.bags[g] = bs
	}
	return bs
}

// bagOf is g's bag of aggregate j (nil when it keeps none).
func (a *hashAgg) bagOf(g *group, j int) *bag {
	if !a.bagAggs {
		return nil
	}
	return a.bagsOf(g)[j]
}

// keepBefore keeps the row last emitted for g before its first change of
// the epoch, for the update's old row (spec.EmitBefore).
func (a *hashAgg) keepBefore(g *group) {
	if a.before == nil || g.is(gDirty) || !g.is(gEmitted) {
		return
	}
	if _, ok := a.before[g]; ok {
		return
	}
	row, _ := a.result(g)
	a.before[g] = row
}

// emitted is the row last emitted for g, which is emitted (a delete's row).
func (a *hashAgg) emitted(g *group) plan.Row {
	if row, ok := a.before[g]; ok {
		delete(a.before, g)
		return row
	}
	row, _ := a.result(g)
	return row
}

// StateRows is the number of open groups.
func (a *hashAgg) StateRows() int { return a.live }

// StateBytes estimates the heap the open windows, keys and groups take,
// their accumulators' COUNT(DISTINCT) sets and MIN/MAX strings included.
func (a *hashAgg) StateBytes() int64 { return a.bytes }

// accBytes is what g's accumulators hold beyond their fixed size.
func accBytes(g *group) int {
	n := 0
	for i := range g.accs {
		n += g.accs[i].set.size() + len(g.accs[i].v.S)
	}
	return n
}

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
		a.peaks.keys = max(a.peaks.keys, len(a.keys))
		a.bytes += int64(a.keyCost + allocSize(len(key)))
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
	return a.newGroup(a.windowOf(win), kg)
}

// windowOf returns the open window win, opening it as needed.
func (a *hashAgg) windowOf(win window.Window) *winGroups {
	// Consecutive rows mostly fall in the same windows: try the last ones
	// looked up before the window map.
	for _, h := range a.hot {
		if h != nil && h.win == win {
			return h
		}
	}
	wg := a.wins[win]
	if wg == nil {
		wg = a.openWindow(win)
	}
	a.hot[a.hotNext] = wg
	a.hotNext = (a.hotNext + 1) % len(a.hot)
	return wg
}

func (a *hashAgg) openWindow(win window.Window) *winGroups {
	wg := &winGroups{win: win}
	a.wins[win] = wg
	a.peaks.wins = max(a.peaks.wins, len(a.wins))
	a.bytes += winCost
	if a.spec.Windowed {
		a.pushEnd(win)
	}
	return wg
}

// pushEnd adds an open window to the close order.
func (a *hashAgg) pushEnd(win window.Window) {
	if len(a.ends) < 2*len(a.wins)+1024 {
		a.ends.push(win)
		return
	}
	// Mostly windows dropped or moved before they closed (sessions that
	// merged): rebuild the heap from the open ones.
	a.ends = a.ends[:0]
	for w := range a.wins {
		a.ends = append(a.ends, w)
	}
	a.ends.init()
}

// dropWindow removes wg from the open windows (it closed, or its last
// group left it); its entry in ends stays until popped or rebuilt.
func (a *hashAgg) dropWindow(wg *winGroups) {
	delete(a.wins, wg.win)
	a.bytes -= winCost
	for i, h := range a.hot {
		if h == wg {
			a.hot[i] = nil
		}
	}
	if shrink(len(a.wins), &a.peaks.wins) {
		a.wins = rebuilt(a.wins)
	}
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
	g.kg = kg
	kg.groups = append(kg.groups, g)
	a.join(g, wg)
	a.live++
	a.bytes += int64(a.groupCost)
	return g
}

// join appends g to wg's list.
func (a *hashAgg) join(g *group, wg *winGroups) {
	g.win, g.pos = wg, int32(len(wg.list))
	wg.list = append(wg.list, g)
}

// detach takes g out of its window's list (a session merge moves or
// absorbs it): a window left without groups is dropped, and a list half
// holes is compacted.
func (a *hashAgg) detach(g *group) {
	wg := g.win
	wg.list[g.pos] = nil
	wg.holes++
	switch {
	case wg.holes == len(wg.list):
		if a.wins[wg.win] == wg {
			a.dropWindow(wg)
		}
	case wg.holes > 8 && 2*wg.holes > len(wg.list):
		n := 0
		for _, h := range wg.list {
			if h != nil {
				h.pos = int32(n)
				wg.list[n] = h
				n++
			}
		}
		clear(wg.list[n:])
		wg.list, wg.holes = slices.Clip(wg.list[:n]), 0
	}
}

// kill removes g from its key's open groups (its window closed, or a
// session merge absorbed it: then the caller detached it from its window)
// and queues the deletes of what a snapshot wrote of it.
func (a *hashAgg) kill(g *group) {
	g.flags |= gDead
	a.live--
	a.bytes -= int64(a.groupCost + accBytes(g))
	kg := g.kg
	if i := slices.Index(kg.groups, g); i >= 0 {
		kg.groups = slices.Delete(kg.groups, i, i+1)
	}
	if len(kg.groups) == 0 && a.keys[kg.key] == kg {
		delete(a.keys, kg.key)
		a.bytes -= int64(a.keyCost + allocSize(len(kg.key)))
		if shrink(len(a.keys), &a.peaks.keys) {
			a.keys = rebuilt(a.keys)
		}
	}
	if g.is(gPersisted) {
		a.removedRecs = append(a.removedRecs, winKey{g.win.win.Start, g.win.win.End, kg.key})
	}
	a.dropSets(g)
	if a.bags != nil {
		a.dropBags(g)
	}
	if a.before != nil {
		delete(a.before, g)
	}
}

// dropSets queues the deletes of the chunk records of g's COUNT(DISTINCT)
// sets.
func (a *hashAgg) dropSets(g *group) {
	for i := range g.accs {
		if s := g.accs[i].set; s != nil && s.chunks > 0 {
			a.removedSets = append(a.removedSets, setChunks{key: g.kg.key, id: s.id, chunks: s.chunks})
		}
	}
}

func (a *hashAgg) markDirty(g *group) {
	a.markChanged(g)
	if !g.is(gDirty) {
		g.flags |= gDirty
		if a.spec.EmitMode == plan.EmitChanges {
			a.dirty = append(a.dirty, g)
		}
	}
}

func (a *hashAgg) markChanged(g *group) {
	if g.is(gChanged) {
		return
	}
	g.flags |= gChanged
	if len(a.changed) > 2*a.live+1024 {
		// Without snapshots (checkpoints off) nothing drains the list:
		// dropping the closed groups keeps it within the open ones.
		a.changed = slices.DeleteFunc(a.changed, func(g *group) bool { return g.is(gDead) })
	}
	a.changed = append(a.changed, g)
}

// sessionGroup merges the row's [ts, ts+gap) into its key's sessions and
// returns the group of the session it ends up in, or nil when that session
// is already closed (the row is late); an error when merging sessions
// overflows a SUM.
//
// A row that extends or bridges sessions moves the largest of their groups
// (by COUNT(DISTINCT) members) to the merged session and folds the others
// into it, each set smaller into larger: a session growing by a row at a
// time costs O(1) per row, not a copy of its state (which made a long
// session with distinct values quadratic in time and, since absorbed
// groups stayed in their windows until those closed, in memory).
func (a *hashAgg) sessionGroup(r plan.Row, m *RowMeta, res *Batch) (*group, error) {
	ts := r[0].I
	list := a.sessions[m.Key]
	merged, i, j := window.SessionSpan(list, ts, a.spec.Window.Gap)
	if window.Late(merged, a.spec.AllowedLateness, a.wm) {
		a.counters.late(m, ts)
		return nil, nil
	}
	kg := a.keyOf(m.Key)
	if j == i+1 && list[i] == merged {
		return a.groupIn(kg, merged), nil // inside a session, unchanged
	}
	var keep *group
	for _, old := range list[i:j] {
		if og := kg.find(old); og != nil && (keep == nil || setMembers(og) > setMembers(keep)) {
			keep = og
		}
	}
	for _, old := range list[i:j] {
		og := kg.find(old)
		if og == nil || og == keep {
			continue
		}
		for k, ag := range a.spec.Aggs {
			// Two sessions' sums that each fit may overflow together
			// (MaxInt64 in one, 1 in the other, and a row between them
			// merges them): the query fails as when a row's SUM overflows.
			grown, err := keep.accs[k].merge(ag.Fn, ag.T, &a.spec.Aggs[k], &og.accs[k])
			a.bytes += int64(grown)
			if err != nil {
				return nil, err
			}
		}
		if og.is(gEmitted) {
			res.Append(nil, RowMeta{Key: a.upsertKey(og), Op: Delete, WM: m.WM})
		}
		a.detach(og)
		a.kill(og)
	}
	a.sessions[m.Key] = slices.Replace(list, i, j, merged)
	a.peaks.sessions = max(a.peaks.sessions, len(a.sessions))
	if keep == nil {
		return a.groupIn(kg, merged), nil
	}
	a.move(keep, merged, m.WM, res)
	return keep, nil
}

// setMembers is the number of members in g's COUNT(DISTINCT) sets.
func setMembers(g *group) int {
	n := 0
	for i := range g.accs {
		n += g.accs[i].set.len()
	}
	return n
}

// move takes g to window win (a session merge): its old result is deleted
// and its old record queued for deletion; its accumulators and their
// chunk records stay.
func (a *hashAgg) move(g *group, win window.Window, wm int64, res *Batch) {
	if g.is(gEmitted) {
		res.Append(nil, RowMeta{Key: a.upsertKey(g), Op: Delete, WM: wm})
		g.flags &^= gEmitted
	}
	if g.is(gPersisted) {
		a.removedRecs = append(a.removedRecs, winKey{g.win.win.Start, g.win.win.End, g.kg.key})
		g.flags &^= gPersisted
	}
	if wg := g.win; len(wg.list) == 1 && a.wins[win] == nil {
		// Alone in its window (a session of its own key's): the window
		// moves with it.
		delete(a.wins, wg.win)
		wg.win = win
		a.wins[win] = wg
		a.pushEnd(win)
	} else {
		a.detach(g)
		a.join(g, a.windowOf(win))
	}
	a.markChanged(g)
}

// advance moves the watermark and closes every window it passes.
func (a *hashAgg) advance(wm int64, res *Batch) error {
	// Rows emitted while closing carry the watermark before this advance
	// (outWM): downstream they are on time, as a window's result must be.
	a.outWM = a.forward(a.wm)
	defer func() { a.outWM = a.forward(wm) }()
	a.wm = wm
	for len(a.ends) > 0 {
		top := a.ends[0]
		if !window.Late(top, a.spec.AllowedLateness, wm) {
			break
		}
		a.ends.pop()
		wg := a.wins[top]
		if wg == nil {
			continue // dropped when its last group left
		}
		a.dropWindow(wg)
		for _, g := range wg.list {
			if g == nil {
				continue
			}
			switch a.spec.EmitMode {
			case plan.EmitOnWindowClose:
				a.emit(g, res, true)
			default:
				if g.is(gDirty) {
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
		if shrink(len(a.sessions), &a.peaks.sessions) {
			a.sessions = rebuilt(a.sessions)
		}
	} else {
		a.sessions[g.kg.key] = list
	}
}

func (a *hashAgg) upsertKey(g *group) string {
	if !a.spec.Windowed {
		return g.kg.key
	}
	a.keyBuf = value.AppendValue(a.keyBuf[:0], plan.Time(g.win.win.Start))
	a.keyBuf = value.AppendValue(a.keyBuf, plan.Time(g.win.win.End))
	a.keyBuf = append(a.keyBuf, g.kg.key...)
	return string(a.keyBuf)
}

// result computes g's output row; false when it fails HAVING (then the
// row is nil). The row is carved from the slab: it is the caller's.
func (a *hashAgg) result(g *group) (plan.Row, bool) {
	p := a.post
	if a.spec.Windowed {
		p[0], p[1] = plan.Time(g.win.win.Start), plan.Time(g.win.win.End)
	}
	// The key columns, decoded from the group key (encoded by the exchange
	// from exactly these columns); the bytes are only read.
	kb := KeyBytes(g.kg.key)
	for i := range a.nkeys {
		var err error
		if p[a.wOff+i], kb, err = value.DecodeValue(kb); err != nil {
			panic("runtime: group key does not decode: " + err.Error())
		}
	}
	for j, ag := range a.spec.Aggs {
		if c := &g.accs[j]; c.i == stale && refreshes(ag.Fn) {
			a.bytes += int64(c.refresh(&a.spec.Aggs[j], a.bagOf(g, j)))
		}
		p[a.wOff+a.nkeys+j] = g.accs[j].result(ag.Fn, ag.T)
	}
	if a.having != nil && !a.having(p).True() {
		return nil, false
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
	return row, true
}

// emit appends g's current result to res: an upsert (after the old row,
// spec.EmitBefore), or a delete when it fails HAVING or, retracting, has
// no rows left, and was emitted before. final: on_window_close emission.
// It reports whether g has no rows left (a retracting aggregation's
// caller then removes it).
func (a *hashAgg) emit(g *group, res *Batch, final bool) bool {
	g.flags &^= gDirty
	empty := a.spec.Retract && g.accs[a.spec.RowCount].n == 0
	var old plan.Row
	if a.before != nil && g.is(gEmitted) {
		old = a.emitted(g)
	}
	var row plan.Row
	pass := false
	if !empty {
		row, pass = a.result(g)
	}
	if !pass {
		if g.is(gEmitted) && !final {
			key := a.upsertKey(g)
			res.Append(old, RowMeta{Key: key, ID: key, Op: Delete, WM: a.outWM})
			g.flags &^= gEmitted
			a.markChanged(g)
		}
		return empty
	}
	key := a.upsertKey(g)
	if old != nil {
		if slices.EqualFunc(old, row, func(x, y plan.Value) bool { return x == y }) {
			return false // unchanged: nothing to take back or add
		}
		res.Append(old, RowMeta{Key: key, ID: key, Op: Before, WM: a.outWM})
	}
	// ID: the result's identity for append-only consumers downstream.
	res.Append(row, RowMeta{Key: key, ID: key, Op: Upsert, WM: a.outWM})
	if !g.is(gEmitted) {
		g.flags |= gEmitted
		a.markChanged(g)
	}
	return false
}

// Watermark closes the windows wm passes. In on_window_close mode it
// forwards wm - allowed_lateness: a window's row (its event time is
// window_end) is emitted when wm reaches window_end + allowed_lateness, so
// no later row is older than that (DESIGN.md's invariants: operators that delay output hold
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
	if a.spec.EmitMode != plan.EmitOnWindowClose {
		return wm
	}
	return window.HoldBack(wm, a.spec.AllowedLateness)
}

func (a *hashAgg) Barrier(_ Barrier, out Emitter) error {
	if len(a.dirty) == 0 {
		return nil
	}
	res := &Batch{}
	for _, g := range a.dirty {
		if g.flags&(gDead|gDirty) == gDirty && a.emit(g, res, false) {
			a.detach(g) // its last row was taken back
			a.kill(g)
		}
	}
	clear(a.dirty) // drop the pointers: closed groups can be collected
	a.dirty = a.dirty[:0]
	return emitIfAny(res, out)
}

// endHeap orders open windows by end (then start), so closing is a pop.
type endHeap []window.Window

func endsBefore(a, b window.Window) bool {
	return a.End < b.End || a.End == b.End && a.Start < b.Start
}

func (h *endHeap) push(w window.Window) { *h = heapPush(*h, w, endsBefore) }
func (h *endHeap) pop()                 { _, *h = heapPop(*h, endsBefore) }
func (h endHeap) init()                 { heapInit(h, endsBefore) }
