package runtime

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// hashAgg's checkpointed state: one record per group, keyed by
//
//	AppendValue(start) AppendValue(end) groupKey
//
// (start = end = 0 for running aggregates), valued
//
//	flags(1: emitted) accumulators...
//
// where an accumulator is n, i (varints), f (8 bytes), v (a value) and the
// COUNT(DISTINCT) set (count, then length-prefixed members, sorted so the
// encoding is deterministic). The key columns are decoded from groupKey
// when needed. Windows, sessions, the close-order heap and the dirty lists
// are derived on Restore.

// winKey names one group: its window and encoded group key.
type winKey struct {
	start, end int64
	key        string
}

func encodeWinKey(buf []byte, wk winKey) []byte {
	buf = AppendValue(buf, plan.Int(wk.start))
	buf = AppendValue(buf, plan.Int(wk.end))
	return append(buf, wk.key...)
}

func decodeWinKey(b []byte) (winKey, error) {
	s, rest, err := DecodeValue(b)
	if err != nil {
		return winKey{}, err
	}
	e, rest, err := DecodeValue(rest)
	if err != nil {
		return winKey{}, err
	}
	return winKey{start: s.I, end: e.I, key: string(rest)}, nil
}

func (a *hashAgg) encodeGroup(buf []byte, g *group) []byte {
	flags := byte(0)
	if g.emitted {
		flags = 1
	}
	buf = append(buf, flags)
	for i := range g.accs {
		c := &g.accs[i]
		buf = binary.AppendVarint(buf, c.n)
		buf = binary.AppendVarint(buf, c.i)
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(c.f))
		buf = AppendValue(buf, c.v)
		members := make([]string, 0, len(c.seen))
		for m := range c.seen {
			members = append(members, m)
		}
		sort.Strings(members)
		buf = binary.AppendUvarint(buf, uint64(len(members)))
		for _, m := range members {
			buf = binary.AppendUvarint(buf, uint64(len(m)))
			buf = append(buf, m...)
		}
	}
	return buf
}

// decodeGroup decodes a group record into g's accumulators.
func (a *hashAgg) decodeGroup(g *group, b []byte) error {
	if len(b) < 1 {
		return fmt.Errorf("empty group record")
	}
	g.emitted = b[0]&1 != 0
	b = b[1:]
	var err error
	for i := range g.accs {
		c := &g.accs[i]
		var k int
		if c.n, k = binary.Varint(b); k <= 0 {
			return fmt.Errorf("accumulator %d: bad count", i)
		}
		b = b[k:]
		if c.i, k = binary.Varint(b); k <= 0 {
			return fmt.Errorf("accumulator %d: bad sum", i)
		}
		b = b[k:]
		if len(b) < 8 {
			return fmt.Errorf("accumulator %d: short", i)
		}
		c.f = math.Float64frombits(binary.BigEndian.Uint64(b))
		b = b[8:]
		if c.v, b, err = DecodeValue(b); err != nil {
			return fmt.Errorf("accumulator %d: %w", i, err)
		}
		m, k := binary.Uvarint(b)
		if k <= 0 {
			return fmt.Errorf("accumulator %d: bad set size", i)
		}
		b = b[k:]
		if m > uint64(len(b)) {
			// Each member takes at least its length byte: a count above
			// that is corrupt (and must not size an allocation).
			return fmt.Errorf("accumulator %d: set of %d members in %d bytes", i, m, len(b))
		}
		if m > 0 {
			c.seen = make(map[string]struct{}, m)
		}
		for j := uint64(0); j < m; j++ {
			l, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < l {
				return fmt.Errorf("accumulator %d: bad set member", i)
			}
			c.seen[string(b[k:k+int(l)])] = struct{}{}
			b = b[k+int(l):]
		}
	}
	if len(b) > 0 {
		return fmt.Errorf("%d bytes after the last accumulator", len(b))
	}
	return nil
}

// checkGroup rejects a restored group the operator could not run with: a
// window that is not one of this aggregation's kind, or a group key that
// is not exactly its key columns' values (emit decodes them).
func (a *hashAgg) checkGroup(wk winKey) error {
	switch {
	case !a.spec.Windowed && (wk.start != 0 || wk.end != 0):
		return fmt.Errorf("window [%d, %d) of a running aggregate", wk.start, wk.end)
	case a.spec.Windowed && wk.start >= wk.end:
		return fmt.Errorf("empty window [%d, %d)", wk.start, wk.end)
	}
	b := []byte(wk.key)
	for i := range a.nkeys {
		var err error
		if _, b, err = DecodeValue(b); err != nil {
			return fmt.Errorf("group key column %d: %w", i, err)
		}
	}
	if len(b) > 0 {
		return fmt.Errorf("group key has %d bytes after its %d columns", len(b), a.nkeys)
	}
	return nil
}

// Snapshot writes the groups changed and deletes the groups removed since
// the last snapshot. Dirty groups were emitted by Barrier just before.
func (a *hashAgg) Snapshot(w StateWriter) error {
	if w.Full() {
		return a.snapshotAll(w)
	}
	var kb, vb []byte
	for _, g := range a.removed {
		kb = encodeWinKey(kb[:0], winKey{g.win.win.Start, g.win.win.End, g.kg.key})
		w.Delete(kb)
	}
	clear(a.removed)
	a.removed = a.removed[:0]
	for _, g := range a.changed {
		g.changed = false
		if g.dead {
			continue
		}
		kb = encodeWinKey(kb[:0], winKey{g.win.win.Start, g.win.win.End, g.kg.key})
		vb = a.encodeGroup(vb[:0], g)
		w.Put(kb, vb)
		g.persisted = true
	}
	clear(a.changed)
	a.changed = a.changed[:0]
	return nil
}

// snapshotAll writes every open group (a full snapshot).
func (a *hashAgg) snapshotAll(w StateWriter) error {
	for _, g := range a.changed {
		g.changed = false
	}
	clear(a.changed)
	a.changed = a.changed[:0]
	clear(a.removed)
	a.removed = a.removed[:0]
	var kb, vb []byte
	for _, wg := range a.wins {
		for _, g := range wg.list {
			if g.dead {
				continue
			}
			kb = encodeWinKey(kb[:0], winKey{wg.win.Start, wg.win.End, g.kg.key})
			vb = a.encodeGroup(vb[:0], g)
			w.Put(kb, vb)
			g.persisted = true
		}
	}
	return nil
}

// Restore loads the groups this task owns and rebuilds windows, sessions
// and the close-order heap from them.
func (a *hashAgg) Restore(r StateReader) error {
	return r.Scan(func(k, v []byte) error {
		wk, err := decodeWinKey(k)
		if err != nil {
			return fmt.Errorf("aggregation state key %x: %w", k, err)
		}
		if err := a.checkGroup(wk); err != nil {
			return fmt.Errorf("aggregation state key %x: %w", k, err)
		}
		if !r.Owns(wk.key) {
			return nil
		}
		g := a.lookup(window.Window{Start: wk.start, End: wk.end}, wk.key)
		if err := a.decodeGroup(g, v); err != nil {
			return fmt.Errorf("aggregation state of %x: %w", k, err)
		}
		g.persisted = true
		if a.spec.Session {
			list := a.sessions[wk.key]
			list = append(list, window.Window{Start: wk.start, End: wk.end})
			sort.Slice(list, func(i, j int) bool { return list[i].Start < list[j].Start })
			a.sessions[wk.key] = list
		}
		return nil
	})
}
