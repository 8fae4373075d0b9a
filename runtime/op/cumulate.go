package op

import (
	"bytes"
	"errors"
	"slices"
	"unsafe"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// cumAgg is the aggregation of CUMULATE(ts, step, size) windows
// (plan.Aggregate with Window.Kind plan.Cumulate; window/cumulate.go): for
// each size-aligned max window [s, s+size), the cumulative windows [s,
// s+k*step), k = 1..n (n = size/step), each a result row keyed on
// (window_start, window_end, group) and closed when the watermark reaches
// its end + allowed_lateness.
//
// State is per group and max window, not per cumulative window: the
// windows of one max window share it. A group keeps run, the accumulators
// of the rows of the windows closed so far (panes 1..closed), and a
// sparse, ascending list of panes, one accumulator set for each later
// step that has rows. Window k's value is run plus the panes up to k:
// closing window k folds pane k into run and reads run. A single running
// accumulator would not do: with disorder, a row of a later pane arrives
// before an earlier window closes and must not count in it. In order, a
// group holds run and the pane being filled (and the one before, until
// the watermark closes its window), whatever n is.
//
// A row of a pane whose windows are closed (late for them) is counted
// late once and folded into run: it is in every open window of its max
// window. A row of a max window all closed is dropped (late). So a row
// is in pane k if k was open when it came, else in run, and a retraction
// finds it by the same rule.
//
// Emission: on_window_close, window k's row when it closes (a group
// without rows up to k has none); changes, at every barrier each window
// from the lowest one a row changed since the last barrier to the group's
// last pane (its value computed from run and the panes in a scratch
// accumulator set), and at its close when it changed since it was last
// emitted (or never was: the windows past the last pane wait for a row
// or their close, so a row costs the windows up to its step, not every
// window to the max window's end): an upsert, or a delete of a window
// that was emitted and now fails HAVING (emitted windows are a bitset per
// group).
//
// closed is per group (the windows it has closed): each task closes by its
// own watermark, and a restore at another parallelism may bring groups of
// one max window closed to different points into one task; the max
// window's closed is the least of its groups'. Windows close in max-window
// start order (every window of [s, s+size) ends before the first of the
// next one), so the open max windows are a heap by start and closing looks
// at its top only.
//
// Over an updating input (spec.Retract) rows are taken back from where
// they were added (pane k, or run once k is closed; late for the closed
// windows, as hashAgg's late retractions are), each accumulator set with
// its bags (retract.go) for MIN, MAX and COUNT(DISTINCT); run and the
// panes count their rows, a pane whose rows are all taken back goes, and
// a window without rows is deleted (changes mode) or has no row.
type cumAgg struct {
	spec       *plan.Aggregate
	step, size int64
	n          int // cumulative windows per max window
	nkeys      int
	output     []Eval
	having     Eval
	wins       map[int64]*cumWin // open max windows by start
	order      []*cumWin         // the open max windows, a heap by start
	keys       map[string]*cumKey
	peaks      struct{ wins, keys int }
	hot        *cumWin // the max window looked up last
	live       int     // open groups
	dirty      []*cumGroup
	changed    []*cumGroup
	removed    []winKey // records of dead groups a snapshot wrote
	wm, outWM  int64
	counters   *Counters
	retracts   bool // spec.Retract
	bagAggs    bool // retracting, an aggregate keeps a bag
	keyBuf     []byte
	valBuf     []byte
	post       plan.Row
	slab       []plan.Value
	// scratch: a window's value in changes mode (run plus its panes),
	// with COUNT(DISTINCT) sets of its own.
	scratch   []acc
	scratchDS []*distinctSet
	bytes     int64
	groupCost int
	paneCost  int
}

var _ Operator = (*cumAgg)(nil)

// cumWin is one open max window [start, start+size) with its groups.
type cumWin struct {
	start  int64
	closed int // the least of its groups' closed
	groups []*cumGroup
}

// cumKey is one group key's open groups, one per open max window.
type cumKey struct {
	key    string
	groups []*cumGroup
}

type cumGroup struct {
	win     *cumWin
	kg      *cumKey
	closed  int   // windows 1..closed are closed (their panes are in run)
	runRows int64 // rows in run
	run     []acc
	runBags []*bag    // retracting: run's bags (nil until needed)
	panes   []cumPane // ascending by k, every k > closed
	emitted []uint64  // changes mode: bit k, window k's row is out
	// dirtyFrom: changes mode, windows dirtyFrom..n are not out with
	// their current value (0: all are). A barrier emits them up to the
	// last pane (reached: they changed); the later ones, which hold the
	// same rows, are emitted when a row reaches them or they close.
	dirtyFrom int
	flags     groupFlags // gDirty, gChanged, gPersisted, gDead
}

// cumPane is the rows of one step of a max window (k: its window number).
type cumPane struct {
	k    int
	rows int64
	accs []acc
	bags []*bag // retracting: its bags (nil until needed)
}

// Heap costs beyond the groups' accumulators (StateBytes): a cumWin (48)
// with its entries in wins and order; a cumKey (48) with its entry in
// keys; a group's entries in its window's and key's lists.
const (
	cumWinCost = 48 + 32 + 8
	cumKeyCost = 48 + 32
	// cumBagCost is a bag with its two maps, empty.
	cumBagCost = 16 + 2*48
)

func newCumAgg(spec *plan.Aggregate, env *Env, c *Counters) (*cumAgg, error) {
	w := spec.Window
	if w.Slide <= 0 || w.Size <= 0 || w.Size%w.Slide != 0 {
		return nil, errors.New("CUMULATE: the max size must be a positive multiple of the step")
	}
	if spec.EmitBefore || spec.Session || !spec.Windowed {
		return nil, errors.New("CUMULATE: a windowed aggregation emitting no old rows only")
	}
	a := &cumAgg{spec: spec, step: w.Slide, size: w.Size, n: int(w.Size / w.Slide), nkeys: len(spec.Keys),
		wins: map[int64]*cumWin{}, keys: map[string]*cumKey{}, wm: window.NoWatermark, outWM: window.NoWatermark, counters: c}
	a.retracts = spec.Retract
	for _, ag := range spec.Aggs {
		a.bagAggs = a.bagAggs || (a.retracts && usesBag(ag.Fn))
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
	a.post = make(plan.Row, 2+a.nkeys+len(spec.Aggs))
	accsCost := allocSize(len(spec.Aggs) * int(unsafe.Sizeof(acc{})))
	a.groupCost = allocSize(int(unsafe.Sizeof(cumGroup{}))) + accsCost + 2*8
	a.paneCost = accsCost
	if spec.EmitMode == plan.EmitChanges {
		a.groupCost += allocSize(8 * (a.n/64 + 1))
		a.scratch = make([]acc, len(spec.Aggs))
		a.scratchDS = make([]*distinctSet, len(spec.Aggs))
	}
	return a, nil
}

func cumWinLess(x, y *cumWin) bool { return x.start < y.start }

// end is the end of window k of the max window starting at start.
func (a *cumAgg) end(start int64, k int) int64 { return window.CumulateEnd(start, a.step, k) }

// closedAt is how many windows of the max window starting at start are
// closed at watermark wm.
func (a *cumAgg) closedAt(start, wm int64) int {
	if wm == window.NoWatermark {
		return 0
	}
	x := window.SatSub(window.SatSub(wm, a.spec.AllowedLateness), start)
	if x < a.step {
		return 0
	}
	return int(min(x/a.step, int64(a.n)))
}

func (a *cumAgg) Process(b *Batch, out Emitter) error {
	res := &Batch{}
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if m.WM > a.wm {
			if err := a.advance(m.WM, res); err != nil {
				return err
			}
		}
		if r[0].IsNull() {
			continue // no time, no window
		}
		ts := r[0].I
		mw, pane := window.CumulatePane(ts, a.step, a.size)
		if window.Late(mw, a.spec.AllowedLateness, a.wm) {
			a.counters.late(m, ts)
			continue
		}
		g := a.groupOf(mw.Start, m.Key)
		if pane <= g.closed {
			// Late for windows pane..closed; on time for the later ones,
			// which run feeds.
			a.counters.late(m, ts)
			pane = 0
		}
		if err := a.apply(g, pane, r, a.retracts && m.Op.Retracts()); err != nil {
			return err
		}
	}
	return emitIfAny(res, out)
}

// groupOf returns key's group in the max window starting at start,
// opening both as needed.
func (a *cumAgg) groupOf(start int64, key string) *cumGroup {
	cw := a.hot
	if cw == nil || cw.start != start {
		if cw = a.wins[start]; cw == nil {
			cw = &cumWin{start: start, closed: a.closedAt(start, a.wm)}
			a.wins[start] = cw
			a.order = heapPush(a.order, cw, cumWinLess)
			a.peaks.wins = max(a.peaks.wins, len(a.wins))
			a.bytes += cumWinCost
		}
		a.hot = cw
	}
	kg := a.keys[key]
	if kg == nil {
		kg = &cumKey{key: key}
		a.keys[key] = kg
		a.peaks.keys = max(a.peaks.keys, len(a.keys))
		a.bytes += int64(cumKeyCost + allocSize(len(key)))
	}
	for _, g := range kg.groups {
		if g.win == cw {
			return g
		}
	}
	g := &cumGroup{win: cw, kg: kg, closed: max(cw.closed, a.closedAt(start, a.wm)), run: make([]acc, len(a.spec.Aggs))}
	kg.groups = append(kg.groups, g)
	cw.groups = append(cw.groups, g)
	a.live++
	a.bytes += int64(a.groupCost)
	return g
}

// apply folds row r into g's pane k (k > g.closed), or into run (k = 0:
// the row is late for the windows of its pane), or takes it back from
// there (back).
func (a *cumAgg) apply(g *cumGroup, k int, r plan.Row, back bool) error {
	accs, bags, rows := g.run, &g.runBags, &g.runRows
	pi := -1
	if k > 0 {
		if pi = g.paneIndex(k); pi < 0 {
			if back {
				return errUnmatchedRetraction
			}
			pi, _ = slices.BinarySearchFunc(g.panes, k, func(p cumPane, k int) int { return p.k - k })
			g.panes = slices.Insert(g.panes, pi, cumPane{k: k, accs: make([]acc, len(a.spec.Aggs))})
			a.bytes += int64(a.paneCost)
		}
		p := &g.panes[pi]
		accs, bags, rows = p.accs, &p.bags, &p.rows
	}
	if back && *rows <= 0 {
		return errUnmatchedRetraction
	}
	if a.bagAggs && *bags == nil {
		*bags = make([]*bag, len(a.spec.Aggs))
		for j, ag := range a.spec.Aggs {
			if usesBag(ag.Fn) {
				(*bags)[j] = newBag()
				a.bytes += cumBagCost
			}
		}
	}
	for j, ag := range a.spec.Aggs {
		v := plan.Null
		if ag.Arg >= 0 {
			v = r[ag.Arg]
		}
		var bg *bag
		if *bags != nil {
			bg = (*bags)[j]
		}
		var grown int
		var err error
		switch {
		case back:
			grown, err = accs[j].retract(ag.Fn, ag.T, v, bg, &a.valBuf)
			grown = -grown
		case bg != nil:
			grown, err = accs[j].addRetractable(ag.Fn, ag.T, v, bg, &a.valBuf)
		default:
			grown, err = accs[j].add(ag.Fn, ag.T, v, &a.valBuf)
		}
		a.bytes += int64(grown)
		if err != nil {
			return err
		}
	}
	if back {
		*rows--
		if pi >= 0 && *rows == 0 {
			// Every row of the pane taken back: it holds nothing.
			a.bytes -= int64(a.paneBytes(&g.panes[pi]))
			g.panes = slices.Delete(g.panes, pi, pi+1)
		}
	} else {
		*rows++
	}
	if a.spec.EmitMode == plan.EmitChanges {
		if !g.is(gDirty) {
			g.flags |= gDirty
			a.dirty = append(a.dirty, g)
		}
		from := k
		if k == 0 {
			from = g.closed + 1
		}
		if g.dirtyFrom == 0 || from < g.dirtyFrom {
			g.dirtyFrom = from
		}
	}
	a.markChanged(g)
	return nil
}

// paneBytes is what pane p takes: its accumulators and bags.
func (a *cumAgg) paneBytes(p *cumPane) int {
	return a.paneCost + cumAccBytes(p.accs) + bagsBytes(p.bags)
}

// bagsBytes is what bags take (walking them: a pane or group that goes).
func bagsBytes(bags []*bag) int {
	n := 0
	for _, b := range bags {
		if b != nil {
			n += cumBagCost + b.size()
		}
	}
	return n
}

// paneIndex returns the index of g's pane k, or -1. Rows mostly go to the
// last pane.
func (g *cumGroup) paneIndex(k int) int {
	for i := len(g.panes) - 1; i >= 0; i-- {
		switch p := &g.panes[i]; {
		case p.k == k:
			return i
		case p.k < k:
			return -1
		}
	}
	return -1
}

func (g *cumGroup) is(f groupFlags) bool { return g.flags&f != 0 }

func (a *cumAgg) markChanged(g *cumGroup) {
	if g.is(gChanged) {
		return
	}
	g.flags |= gChanged
	if len(a.changed) > 2*a.live+1024 {
		// Without snapshots nothing drains the list: keep it within the
		// open groups.
		a.changed = slices.DeleteFunc(a.changed, func(g *cumGroup) bool { return g.is(gDead) })
	}
	a.changed = append(a.changed, g)
}

// advance moves the watermark and closes every window it passes.
func (a *cumAgg) advance(wm int64, res *Batch) error {
	// Rows emitted while closing carry the watermark before this advance:
	// downstream they are on time, as a window's result must be.
	a.outWM = a.forward(a.wm)
	a.wm = wm
	for len(a.order) > 0 {
		cw := a.order[0]
		for cw.closed < a.n && window.Late(window.Window{Start: cw.start, End: a.end(cw.start, cw.closed+1)}, a.spec.AllowedLateness, wm) {
			if err := a.closeNext(cw, res); err != nil {
				return err
			}
		}
		if cw.closed < a.n {
			break // the next max windows' windows all end later
		}
		_, a.order = heapPop(a.order, cumWinLess)
		a.dropWindow(cw)
	}
	a.outWM = a.forward(wm)
	return nil
}

// closeNext closes window closed+1 of cw: each group not past it folds
// that pane into run and emits the window.
func (a *cumAgg) closeNext(cw *cumWin, res *Batch) error {
	k := cw.closed + 1
	cw.closed = k
	for _, g := range cw.groups {
		if g.closed >= k {
			continue // closed by a task with a later watermark (restored here)
		}
		g.closed = k
		if len(g.panes) > 0 && g.panes[0].k == k {
			if err := a.fold(g); err != nil {
				return err
			}
		}
		switch {
		case a.spec.EmitMode == plan.EmitOnWindowClose:
			a.emitWin(g, g.run, k, g.runRows, res, true)
		case g.dirtyFrom != 0 && g.dirtyFrom <= k:
			a.emitWin(g, g.run, k, g.runRows, res, false)
			if g.dirtyFrom = k + 1; k == a.n {
				g.dirtyFrom = 0
			}
		}
		if k < a.n {
			a.markChanged(g) // its closed moved
		}
	}
	return nil
}

// fold merges g's first pane into run and drops it. Two sums that each
// fit may overflow together: the window's SUM overflows, and the query
// fails as when a row's does. Retracting, the pane's bags are added to
// run's (a COUNT(DISTINCT) is then its bag's size).
func (a *cumAgg) fold(g *cumGroup) error {
	p := &g.panes[0]
	before := cumAccBytes(g.run) + cumAccBytes(p.accs)
	for j, ag := range a.spec.Aggs {
		if _, err := g.run[j].merge(ag.Fn, ag.T, &a.spec.Aggs[j], &p.accs[j]); err != nil {
			return err
		}
	}
	a.bytes += int64(cumAccBytes(g.run) - before - a.paneCost)
	if p.bags != nil {
		if g.runBags == nil {
			g.runBags, p.bags = p.bags, nil // run had none: it takes the pane's
		} else {
			for j, pb := range p.bags {
				if pb == nil {
					continue
				}
				rb := g.runBags[j]
				for m, c := range pb.counts {
					if _, ok := rb.counts[m]; !ok {
						a.bytes += int64(memberCost(len(m)))
					}
					rb.counts[m] += c
					rb.changed[m] = struct{}{}
				}
			}
			a.bytes -= int64(bagsBytes(p.bags))
		}
		for j, rb := range g.runBags {
			if a.spec.Aggs[j].Fn == plan.AggCountDistinct {
				g.run[j].n = int64(len(rb.counts))
			}
		}
	}
	g.runRows += p.rows
	g.panes = slices.Delete(g.panes, 0, 1)
	return nil
}

// cumAccBytes is what accumulators hold beyond their fixed size.
func cumAccBytes(accs []acc) int {
	n := 0
	for i := range accs {
		n += accs[i].set.size() + len(accs[i].v.S)
	}
	return n
}

// dropWindow removes a max window all of whose windows closed, with its
// groups.
func (a *cumAgg) dropWindow(cw *cumWin) {
	delete(a.wins, cw.start)
	a.bytes -= cumWinCost
	if a.hot == cw {
		a.hot = nil
	}
	if shrink(len(a.wins), &a.peaks.wins) {
		a.wins = rebuilt(a.wins)
	}
	for _, g := range cw.groups {
		a.kill(g)
	}
	cw.groups = nil
}

func (a *cumAgg) kill(g *cumGroup) {
	g.flags |= gDead
	a.live--
	b := a.groupCost + cumAccBytes(g.run) + bagsBytes(g.runBags)
	for i := range g.panes {
		b += a.paneBytes(&g.panes[i])
	}
	a.bytes -= int64(b)
	kg := g.kg
	if i := slices.Index(kg.groups, g); i >= 0 {
		kg.groups = slices.Delete(kg.groups, i, i+1)
	}
	if len(kg.groups) == 0 && a.keys[kg.key] == kg {
		delete(a.keys, kg.key)
		a.bytes -= int64(cumKeyCost + allocSize(len(kg.key)))
		if shrink(len(a.keys), &a.peaks.keys) {
			a.keys = rebuilt(a.keys)
		}
	}
	if g.is(gPersisted) {
		a.removed = append(a.removed, winKey{g.win.start, window.SatAdd(g.win.start, a.size), kg.key})
	}
}

// emitWin appends window k's row of g, whose value accs hold over rows
// rows: an upsert, or (not final) a delete when it has no rows or fails
// HAVING and was emitted.
func (a *cumAgg) emitWin(g *cumGroup, accs []acc, k int, rows int64, res *Batch, final bool) {
	start, end := g.win.start, a.end(g.win.start, k)
	var row plan.Row
	pass := false
	if rows > 0 {
		row, pass = a.result(g, accs, start, end)
	}
	if !pass {
		if !final && g.bit(k) {
			key := a.upsertKey(start, end, g.kg.key)
			res.Append(nil, RowMeta{Key: key, ID: key, Op: Delete, WM: a.outWM})
			g.setBit(k, a.n, false)
			a.markChanged(g)
		}
		return
	}
	key := a.upsertKey(start, end, g.kg.key)
	res.Append(row, RowMeta{Key: key, ID: key, Op: Upsert, WM: a.outWM})
	if !final && !g.bit(k) {
		g.setBit(k, a.n, true)
		a.markChanged(g)
	}
}

func (g *cumGroup) bit(k int) bool {
	return k/64 < len(g.emitted) && g.emitted[k/64]&(1<<(k%64)) != 0
}

// setBit sets window k's bit of g, whose max window has n windows.
func (g *cumGroup) setBit(k, n int, on bool) {
	if g.emitted == nil {
		if !on {
			return
		}
		g.emitted = make([]uint64, n/64+1)
	}
	if on {
		g.emitted[k/64] |= 1 << (k % 64)
	} else {
		g.emitted[k/64] &^= 1 << (k % 64)
	}
}

func (a *cumAgg) upsertKey(start, end int64, key string) string {
	a.keyBuf = value.AppendValue(a.keyBuf[:0], plan.Time(start))
	a.keyBuf = value.AppendValue(a.keyBuf, plan.Time(end))
	a.keyBuf = append(a.keyBuf, key...)
	return string(a.keyBuf)
}

// result computes the output row of g's window [start, end) from accs;
// false when it fails HAVING.
func (a *cumAgg) result(g *cumGroup, accs []acc, start, end int64) (plan.Row, bool) {
	p := a.post
	p[0], p[1] = plan.Time(start), plan.Time(end)
	kb := KeyBytes(g.kg.key)
	for i := range a.nkeys {
		var err error
		if p[2+i], kb, err = value.DecodeValue(kb); err != nil {
			panic("runtime: group key does not decode: " + err.Error())
		}
	}
	for j, ag := range a.spec.Aggs {
		p[2+a.nkeys+j] = accs[j].result(ag.Fn, ag.T)
	}
	if a.having != nil && !a.having(p).True() {
		return nil, false
	}
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

// Watermark closes the windows wm passes; in on_window_close mode it
// forwards wm - allowed_lateness, as hashAgg does.
func (a *cumAgg) Watermark(wm int64, out Emitter) (int64, error) {
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

func (a *cumAgg) forward(wm int64) int64 {
	if a.spec.EmitMode != plan.EmitOnWindowClose {
		return wm
	}
	return window.HoldBack(wm, a.spec.AllowedLateness)
}

// Barrier emits, in changes mode, every window a row changed since the
// last barrier: windows dirtyFrom up to the last pane of each dirty
// group, each run plus its panes up to it.
func (a *cumAgg) Barrier(_ Barrier, out Emitter) error {
	if len(a.dirty) == 0 {
		return nil
	}
	res := &Batch{}
	for _, g := range a.dirty {
		if g.is(gDead) || g.dirtyFrom == 0 {
			g.flags &^= gDirty
			continue
		}
		if err := a.emitOpen(g, res); err != nil {
			return err
		}
		g.flags &^= gDirty
		g.dirtyFrom = g.pending(a.n)
	}
	clear(a.dirty)
	a.dirty = a.dirty[:0]
	return emitIfAny(res, out)
}

// pending is the first window of g past its last pane (n+1 is none: 0),
// which a barrier leaves for later: dirtyFrom after a barrier.
func (g *cumGroup) pending(n int) int {
	hi := g.closed
	if len(g.panes) > 0 {
		hi = g.panes[len(g.panes)-1].k
	}
	if hi >= n {
		return 0
	}
	return hi + 1
}

// emitOpen emits g's open windows from dirtyFrom to its last pane. The
// scratch accumulators start as run and take each pane in turn; a
// COUNT(DISTINCT)'s scratch set holds only the panes' members that run
// lacks (its count is run's plus theirs), so run's set, which grows with
// the max window, is not copied at every barrier.
func (a *cumAgg) emitOpen(g *cumGroup, res *Batch) error {
	from := max(g.dirtyFrom, g.closed+1)
	if len(g.panes) == 0 {
		return nil
	}
	last := g.panes[len(g.panes)-1].k
	s := a.scratch
	for j, ag := range a.spec.Aggs {
		s[j] = g.run[j]
		s[j].set = nil
		if ag.Fn == plan.AggCountDistinct {
			if a.scratchDS[j] == nil {
				a.scratchDS[j] = &distinctSet{}
			}
			a.scratchDS[j].reset()
			s[j].n = int64(a.distinctOfRun(g, j))
		}
	}
	rows, pi := g.runRows, 0
	for k := g.closed + 1; k <= last; k++ {
		if pi < len(g.panes) && g.panes[pi].k == k {
			p := &g.panes[pi]
			for j, ag := range a.spec.Aggs {
				if ag.Fn == plan.AggCountDistinct {
					if err := a.addMissing(g, p, j); err != nil {
						return err
					}
					// result reads a set-less COUNT(DISTINCT)'s n.
					s[j].n = int64(a.distinctOfRun(g, j) + a.scratchDS[j].len())
					continue
				}
				if _, err := s[j].merge(ag.Fn, ag.T, &a.spec.Aggs[j], &p.accs[j]); err != nil {
					return err
				}
			}
			rows += p.rows
			pi++
		}
		if k >= from {
			a.emitWin(g, s, k, rows, res, false)
		}
	}
	return nil
}

// distinctOfRun is the distinct members of run's aggregate j, a
// COUNT(DISTINCT): its set's, or retracting, its bag's.
func (a *cumAgg) distinctOfRun(g *cumGroup, j int) int {
	if a.retracts {
		return int(g.run[j].n)
	}
	return g.run[j].set.len()
}

// addMissing adds to aggregate j's scratch set the members of pane p's
// COUNT(DISTINCT) that run lacks (its set's, or retracting, its bag's).
func (a *cumAgg) addMissing(g *cumGroup, p *cumPane, j int) error {
	ds := a.scratchDS[j]
	if !a.retracts {
		return ds.addMissing(p.accs[j].set, g.run[j].set)
	}
	if p.bags == nil {
		return nil
	}
	var rb *bag
	if g.runBags != nil {
		rb = g.runBags[j]
	}
	for m := range p.bags[j].counts {
		if rb != nil {
			if _, ok := rb.counts[m]; ok {
				continue
			}
		}
		if _, err := ds.add(KeyBytes(m)); err != nil {
			return err
		}
	}
	return nil
}

// reset empties a scratch set, keeping its allocations.
func (s *distinctSet) reset() {
	s.arena = s.arena[:0]
	clear(s.slots)
	s.n, s.id, s.chunks, s.done = 0, 0, 0, 0
}

// addMissing adds o's members that not has not (either may be nil).
func (s *distinctSet) addMissing(o, not *distinctSet) error {
	if o == nil {
		return nil
	}
	for off := 0; off < len(o.arena); {
		var m []byte
		m, off = o.member(off)
		if not.contains(m) {
			continue
		}
		if _, err := s.add(m); err != nil {
			return err
		}
	}
	return nil
}

// contains reports whether m is a member (false for a nil set).
func (s *distinctSet) contains(m []byte) bool {
	if s == nil || len(s.slots) == 0 {
		return false
	}
	h := setHash(m)
	mask := uint32(len(s.slots) - 1)
	for i := h & mask; s.slots[i] != 0; i = (i + 1) & mask {
		if uint32(s.slots[i]>>32) == h {
			if got, _ := s.member(int(uint32(s.slots[i])) - 1); bytes.Equal(got, m) {
				return true
			}
		}
	}
	return false
}

// StateRows is the number of open groups (one per group and max window).
func (a *cumAgg) StateRows() int { return a.live }

// StateBytes estimates the heap the open max windows, keys, groups and
// panes take, their COUNT(DISTINCT) sets and MIN/MAX strings included.
func (a *cumAgg) StateBytes() int64 { return a.bytes }
