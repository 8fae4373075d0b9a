package op

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// cumAgg's checkpointed state: one record per group (group key and max
// window), keyed as hashAgg's group records (encodeWinKey: the max
// window's start and end, the group key) and valued
//
//	format(1) uvarint(closed) varint(run rows) accumulators...
//	uvarint(panes) { uvarint(k) varint(rows) accumulators... }...
//	uvarint(words) words... (the emitted bitset, 8 bytes each, big-endian)
//
// where an accumulator is n, i (varints), f (8 bytes), v (a value), and
// for a COUNT(DISTINCT) its members (uvarint count, uvarint byte length,
// then the members as the set's arena holds them). Retracting (an
// updating input), run's and each pane's accumulators are followed by
// the bags of those that keep one (MIN, MAX, COUNT(DISTINCT), in
// aggregate order): uvarint(members) { uvarint(length) member
// varint(rows) }..., members in byte order. A group changed since
// the last snapshot (a row, a window closed, a row emitted or deleted) is
// written whole; a group whose max window closed is deleted. The max
// windows and their close order, keys and dirty lists are derived on
// Restore. Sets are written whole with their group: CUMULATE's groups
// live one max window, and a COUNT(DISTINCT) of many members over a long
// max window writes them at every checkpoint that changed the group
// (hashAgg's chunk records would spare that; not done here).

const cumFormat = 1

func (a *cumAgg) encodeGroup(buf []byte, g *cumGroup) []byte {
	buf = append(buf, cumFormat)
	buf = binary.AppendUvarint(buf, uint64(g.closed))
	buf = binary.AppendVarint(buf, g.runRows)
	buf = a.encodeAccs(buf, g.run)
	buf = a.encodeBags(buf, g.runBags)
	buf = binary.AppendUvarint(buf, uint64(len(g.panes)))
	for _, p := range g.panes {
		buf = binary.AppendUvarint(buf, uint64(p.k))
		buf = binary.AppendVarint(buf, p.rows)
		buf = a.encodeAccs(buf, p.accs)
		buf = a.encodeBags(buf, p.bags)
	}
	buf = binary.AppendUvarint(buf, uint64(len(g.emitted)))
	for _, w := range g.emitted {
		buf = binary.BigEndian.AppendUint64(buf, w)
	}
	return buf
}

func (a *cumAgg) encodeAccs(buf []byte, accs []acc) []byte {
	for i := range accs {
		c := &accs[i]
		buf = binary.AppendVarint(buf, c.n)
		buf = binary.AppendVarint(buf, c.i)
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(c.f))
		buf = value.AppendValue(buf, c.v)
		if a.spec.Aggs[i].Fn == plan.AggCountDistinct {
			var arena []byte
			if c.set != nil {
				arena = c.set.arena
			}
			buf = binary.AppendUvarint(buf, uint64(c.set.len()))
			buf = binary.AppendUvarint(buf, uint64(len(arena)))
			buf = append(buf, arena...)
		}
	}
	return buf
}

// encodeBags appends bags (nil: all empty) of a retracting aggregation.
// A bag's changed members are not used here (a group is written whole):
// they are cleared.
func (a *cumAgg) encodeBags(buf []byte, bags []*bag) []byte {
	if !a.bagAggs {
		return buf
	}
	for j, ag := range a.spec.Aggs {
		if !usesBag(ag.Fn) {
			continue
		}
		var b *bag
		if bags != nil {
			b = bags[j]
		}
		if b == nil {
			buf = binary.AppendUvarint(buf, 0)
			continue
		}
		clear(b.changed)
		ms := make([]string, 0, len(b.counts))
		for m := range b.counts {
			ms = append(ms, m)
		}
		slices.Sort(ms)
		buf = binary.AppendUvarint(buf, uint64(len(ms)))
		for _, m := range ms {
			buf = binary.AppendUvarint(buf, uint64(len(m)))
			buf = append(buf, m...)
			buf = binary.AppendVarint(buf, b.counts[m])
		}
	}
	return buf
}

// decodeBags decodes the bags encodeBags wrote into *bags (left nil when
// every one is empty), checking each retracting COUNT(DISTINCT) counts its
// bag's members.
func (a *cumAgg) decodeBags(bags *[]*bag, accs []acc, b []byte) ([]byte, error) {
	if !a.bagAggs {
		return b, nil
	}
	for j, ag := range a.spec.Aggs {
		if !usesBag(ag.Fn) {
			continue
		}
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k)/2 {
			// A member takes at least its length and its count.
			return b, fmt.Errorf("aggregate %d: bad bag size", j)
		}
		b = b[k:]
		var bg *bag
		if n > 0 {
			if *bags == nil {
				*bags = make([]*bag, len(a.spec.Aggs))
			}
			bg = newBag()
			(*bags)[j] = bg
		}
		for range n {
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return b, fmt.Errorf("aggregate %d: bad bag member", j)
			}
			m := string(b[k : k+int(l)])
			b = b[k+int(l):]
			c, k := binary.Varint(b)
			if k <= 0 || c <= 0 {
				return b, fmt.Errorf("aggregate %d: bad bag count", j)
			}
			b = b[k:]
			if _, dup := bg.counts[m]; dup {
				return b, fmt.Errorf("aggregate %d: bag member twice", j)
			}
			if _, _, err := value.DecodeValue([]byte(m)); err != nil {
				return b, fmt.Errorf("aggregate %d: bag member: %w", j, err)
			}
			bg.counts[m] = c
		}
		if ag.Fn == plan.AggCountDistinct && uint64(accs[j].n) != n {
			return b, fmt.Errorf("aggregate %d: COUNT(DISTINCT) of %d with %d members in its bag", j, accs[j].n, n)
		}
	}
	if *bags != nil {
		for j, ag := range a.spec.Aggs {
			if usesBag(ag.Fn) && (*bags)[j] == nil {
				(*bags)[j] = newBag()
			}
		}
	}
	return b, nil
}

// decodeGroup decodes a group record into g (its run, panes and emitted
// bits), checking it is one this aggregation could have written.
func (a *cumAgg) decodeGroup(g *cumGroup, b []byte) error {
	if len(b) < 1 || b[0] != cumFormat {
		return fmt.Errorf("not a CUMULATE group record")
	}
	b = b[1:]
	closed, k := binary.Uvarint(b)
	if k <= 0 || closed >= uint64(a.n) {
		return fmt.Errorf("bad closed windows (%d of %d)", closed, a.n)
	}
	b = b[k:]
	g.closed = int(closed)
	if g.runRows, k = binary.Varint(b); k <= 0 || g.runRows < 0 {
		return fmt.Errorf("bad row count")
	}
	b = b[k:]
	var err error
	if b, err = a.decodeAccs(g.run, b); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if b, err = a.decodeBags(&g.runBags, g.run, b); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	np, k := binary.Uvarint(b)
	if k <= 0 || np > uint64(a.n-g.closed) {
		return fmt.Errorf("bad pane count")
	}
	b = b[k:]
	last := g.closed
	for range np {
		pk, k := binary.Uvarint(b)
		if k <= 0 || pk <= uint64(last) || pk > uint64(a.n) {
			return fmt.Errorf("pane %d after %d (closed %d of %d)", pk, last, g.closed, a.n)
		}
		b = b[k:]
		p := cumPane{k: int(pk), accs: make([]acc, len(a.spec.Aggs))}
		if p.rows, k = binary.Varint(b); k <= 0 || p.rows <= 0 {
			return fmt.Errorf("pane %d: bad row count", pk)
		}
		b = b[k:]
		if b, err = a.decodeAccs(p.accs, b); err != nil {
			return fmt.Errorf("pane %d: %w", pk, err)
		}
		if b, err = a.decodeBags(&p.bags, p.accs, b); err != nil {
			return fmt.Errorf("pane %d: %w", pk, err)
		}
		g.panes = append(g.panes, p)
		last = p.k
	}
	nw, k := binary.Uvarint(b)
	if k <= 0 || (nw != 0 && nw != uint64(a.n/64+1)) || uint64(len(b)-k) < 8*nw {
		return fmt.Errorf("bad emitted bitset")
	}
	b = b[k:]
	if nw > 0 {
		g.emitted = make([]uint64, nw)
		for i := range g.emitted {
			g.emitted[i] = binary.BigEndian.Uint64(b)
			b = b[8:]
		}
	}
	if len(b) > 0 {
		return fmt.Errorf("%d bytes after the group", len(b))
	}
	if g.runRows == 0 && len(g.panes) == 0 && !a.retracts {
		// (Retracting, a group whose rows were all taken back stays
		// until its max window closes.)
		return fmt.Errorf("a group without rows")
	}
	return nil
}

func (a *cumAgg) decodeAccs(accs []acc, b []byte) ([]byte, error) {
	var err error
	for i := range accs {
		c := &accs[i]
		var k int
		if c.n, k = binary.Varint(b); k <= 0 {
			return b, fmt.Errorf("accumulator %d: bad count", i)
		}
		b = b[k:]
		if c.i, k = binary.Varint(b); k <= 0 {
			return b, fmt.Errorf("accumulator %d: bad sum", i)
		}
		b = b[k:]
		if len(b) < 8 {
			return b, fmt.Errorf("accumulator %d: short", i)
		}
		c.f = math.Float64frombits(binary.BigEndian.Uint64(b))
		b = b[8:]
		if c.v, b, err = value.DecodeValue(b); err != nil {
			return b, fmt.Errorf("accumulator %d: %w", i, err)
		}
		if a.spec.Aggs[i].Fn != plan.AggCountDistinct {
			continue
		}
		if c.n != 0 && !a.retracts {
			// A COUNT(DISTINCT) counts its set (result reads n only for
			// the scratch of changes mode, and retracting, where n is its
			// bag's size and the set stays empty).
			return b, fmt.Errorf("accumulator %d: a COUNT(DISTINCT) with a count of %d", i, c.n)
		}
		m, k := binary.Uvarint(b)
		if k <= 0 {
			return b, fmt.Errorf("accumulator %d: bad set size", i)
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) || m > l {
			// Each member takes at least its length byte.
			return b, fmt.Errorf("accumulator %d: bad set length", i)
		}
		b = b[k:]
		if m > 0 && a.retracts {
			return b, fmt.Errorf("accumulator %d: a retracting COUNT(DISTINCT) with a set", i)
		}
		if m > 0 {
			c.set = &distinctSet{}
			if _, err := c.set.addEncoded(b[:l]); err != nil {
				return b, fmt.Errorf("accumulator %d: %w", i, err)
			}
			if uint64(c.set.len()) != m || uint64(len(c.set.arena)) != l {
				// (A member twice leaves the arena shorter.)
				return b, fmt.Errorf("accumulator %d: %d distinct members in %d bytes, the record says %d in %d", i, c.set.len(), len(c.set.arena), m, l)
			}
		} else if l > 0 {
			return b, fmt.Errorf("accumulator %d: %d bytes of an empty set", i, l)
		}
		b = b[l:]
	}
	return b, nil
}

// checkGroup rejects a record the operator could not run with: a window
// that is not one of its max windows, or a group key that is not exactly
// its key columns' values (emission decodes them).
func (a *cumAgg) checkGroup(wk winKey) error {
	if w := window.Tumble(wk.start, a.size); w.Start != wk.start || w.End != wk.end {
		return fmt.Errorf("window [%d, %d) is not a max window of %dms", wk.start, wk.end, a.size)
	}
	b := []byte(wk.key)
	for i := range a.nkeys {
		var err error
		if _, b, err = value.DecodeValue(b); err != nil {
			return fmt.Errorf("group key column %d: %w", i, err)
		}
	}
	if len(b) > 0 {
		return fmt.Errorf("group key has %d bytes after its %d columns", len(b), a.nkeys)
	}
	return nil
}

// Snapshot deletes the records of the groups whose max window closed and
// writes the groups changed since the last snapshot (Barrier emitted the
// dirty ones just before).
func (a *cumAgg) Snapshot(w StateWriter) error {
	var kb, vb []byte
	full := w.Full()
	if !full {
		for _, wk := range a.removed {
			w.Delete(encodeWinKey(kb[:0], wk))
		}
	}
	clear(a.removed)
	a.removed = a.removed[:0]
	put := func(g *cumGroup) {
		kb = encodeWinKey(kb[:0], winKey{g.win.start, window.SatAdd(g.win.start, a.size), g.kg.key})
		vb = a.encodeGroup(vb[:0], g)
		w.Put(kb, vb)
		g.flags |= gPersisted
	}
	for _, g := range a.changed {
		g.flags &^= gChanged
		if !full && !g.is(gDead) {
			put(g)
		}
	}
	clear(a.changed)
	a.changed = a.changed[:0]
	if full {
		// In window order, then in group order: a base is the same for
		// the same state.
		wins := make([]*cumWin, 0, len(a.wins))
		for _, cw := range a.wins {
			wins = append(wins, cw)
		}
		slices.SortFunc(wins, func(x, y *cumWin) int { return cmp.Compare(x.start, y.start) })
		for _, cw := range wins {
			for _, g := range cw.groups {
				put(g)
			}
		}
	}
	return nil
}

// Restore loads the groups this task owns and rebuilds the max windows
// (each closed as far as the least of its groups), their close order and
// the keys.
func (a *cumAgg) Restore(r StateReader) error {
	err := r.Scan(func(k, v []byte) error {
		wk, err := decodeWinKey(k)
		if err != nil {
			return fmt.Errorf("CUMULATE state key %x: %w", k, err)
		}
		if err := a.checkGroup(wk); err != nil {
			return fmt.Errorf("CUMULATE state key %x: %w", k, err)
		}
		if !r.Owns(wk.key) {
			return nil
		}
		g := a.groupOf(wk.start, wk.key)
		if g.runRows != 0 || len(g.panes) != 0 || g.is(gPersisted) {
			return fmt.Errorf("CUMULATE state key %x: the group twice", k)
		}
		if err := a.decodeGroup(g, v); err != nil {
			return fmt.Errorf("CUMULATE state of %x: %w", k, err)
		}
		g.flags |= gPersisted
		if a.spec.EmitMode == plan.EmitChanges {
			// Snapshots follow barriers: the windows up to the last pane
			// are out, the later ones wait.
			g.dirtyFrom = g.pending(a.n)
		}
		a.bytes += int64(cumAccBytes(g.run) + bagsBytes(g.runBags))
		for i := range g.panes {
			a.bytes += int64(a.paneBytes(&g.panes[i]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, cw := range a.wins {
		cw.closed = a.n
		for _, g := range cw.groups {
			cw.closed = min(cw.closed, g.closed)
		}
	}
	return nil
}
