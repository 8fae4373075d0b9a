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

// hashAgg's checkpointed state: one record per group, keyed by
//
//	value.AppendValue(start) value.AppendValue(end) groupKey
//
// (start = end = 0 for running aggregates), valued
//
//	flags(1: emitted, 2: sets in chunk records) accumulators...
//
// where an accumulator is n, i (varints), f (8 bytes), v (a value), and
// for a COUNT(DISTINCT) its set's id, number of chunk records and number of
// members (uvarints). The members of a set are in chunk records keyed by
//
//	'm' uvarint(set id) uvarint(chunk) groupKey
//
// valued by members, each uvarint-length-prefixed, in the order the set
// first saw them. A delta writes one chunk (or a few, of at most
// setChunkBytes each) of the members a set gained since the last snapshot,
// and the group's record; a base writes every set whole, renumbering its
// chunks from 0. So a COUNT(DISTINCT) of a million values that gains a
// thousand writes a thousand members, not a million. A group's delete
// deletes its record and its sets' chunks by count (one delete per
// checkpoint that added members since the last base, not one per member).
// A session merge that moves a group to the merged window deletes its
// record at the old window and writes it at the new one; its sets keep
// their chunks (their keys name the set, not the window). Set ids are
// unique among a task's sets (new ones are above every id restored), and
// all the sets of one group key are at one task, so (group key, set id)
// names a set across restores at other parallelisms.
//
// State written before chunk records existed (flags without 2) holds each
// accumulator's set inline in its record: count, then the members;
// Restore reads it, and the next snapshot writes it in chunks.
//
// The key columns are decoded from groupKey when needed. Windows,
// sessions, the close-order heap and the dirty lists are derived on
// Restore.

// winKey names one group: its window and encoded group key.
type winKey struct {
	start, end int64
	key        string
}

func encodeWinKey(buf []byte, wk winKey) []byte {
	buf = value.AppendValue(buf, plan.Int(wk.start))
	buf = value.AppendValue(buf, plan.Int(wk.end))
	return append(buf, wk.key...)
}

func decodeWinKey(b []byte) (winKey, error) {
	s, rest, err := value.DecodeValue(b)
	if err != nil {
		return winKey{}, err
	}
	e, rest, err := value.DecodeValue(rest)
	if err != nil {
		return winKey{}, err
	}
	return winKey{start: s.I, end: e.I, key: string(rest)}, nil
}

const (
	// chunkRecord is the first byte of a chunk record's key (a group
	// record's starts with a value's kind).
	chunkRecord = 'm'
	// setChunkBytes bounds a chunk record's members (a set written whole
	// is split into chunks of about this size).
	setChunkBytes = 64 << 10
	flagEmitted   = 1
	flagChunked   = 2
)

// setChunks names the chunk records of one set: 0..chunks-1 of set id of
// group key key.
type setChunks struct {
	key    string
	id     uint64
	chunks uint32
}

func chunkKey(buf []byte, key string, id uint64, n uint32) []byte {
	buf = append(buf, chunkRecord)
	buf = binary.AppendUvarint(buf, id)
	buf = binary.AppendUvarint(buf, uint64(n))
	return append(buf, key...)
}

// chunkRef names one chunk record.
type chunkRef struct {
	key string
	id  uint64
	n   uint32
}

func decodeChunkKey(k []byte) (chunkRef, error) {
	if len(k) == 0 || k[0] != chunkRecord {
		return chunkRef{}, fmt.Errorf("not a chunk record")
	}
	id, w := binary.Uvarint(k[1:])
	if w <= 0 || id == 0 {
		return chunkRef{}, fmt.Errorf("bad set id")
	}
	rest := k[1+w:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > math.MaxUint32 {
		return chunkRef{}, fmt.Errorf("bad chunk number")
	}
	return chunkRef{key: string(rest[w:]), id: id, n: uint32(n)}, nil
}

func (a *hashAgg) encodeGroup(buf []byte, g *group) []byte {
	flags := byte(flagChunked)
	if g.is(gEmitted) {
		flags |= flagEmitted
	}
	buf = append(buf, flags)
	for i := range g.accs {
		c := &g.accs[i]
		buf = binary.AppendVarint(buf, c.n)
		buf = binary.AppendVarint(buf, c.i)
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(c.f))
		if fn := a.spec.Aggs[i].Fn; fn == plan.AggGroupConcat {
			buf = value.AppendValue(buf, plan.Null) // its result: recomputed on restore
		} else {
			buf = value.AppendValue(buf, c.v)
		}
		if hasAux(a.spec.Aggs[i].Fn) {
			buf = appendAux(buf, a.spec.Aggs[i].Fn, c)
		}
		if a.spec.Aggs[i].Fn == plan.AggCountDistinct {
			var id uint64
			var chunks uint32
			if c.set != nil {
				id, chunks = c.set.id, c.set.chunks
			}
			buf = binary.AppendUvarint(buf, id)
			buf = binary.AppendUvarint(buf, uint64(chunks))
			buf = binary.AppendUvarint(buf, uint64(c.set.len()))
		}
	}
	return buf
}

// writeSets writes the members g's COUNT(DISTINCT) sets gained since the
// last snapshot as chunk records; all: every member (a base).
func (a *hashAgg) writeSets(w StateWriter, g *group, all bool, kb []byte) []byte {
	for i := range g.accs {
		s := g.accs[i].set
		if s == nil || a.spec.Aggs[i].Fn != plan.AggCountDistinct {
			continue
		}
		if all {
			s.chunks, s.done = 0, 0
		}
		if s.done == len(s.arena) {
			continue
		}
		if s.id == 0 {
			a.nextSet = max(a.nextSet, 1)
			s.id = a.nextSet
			a.nextSet++
		}
		for s.done < len(s.arena) {
			end := s.done
			for end < len(s.arena) && (end == s.done || end-s.done < setChunkBytes) {
				_, end = s.member(end)
			}
			kb = chunkKey(kb[:0], g.kg.key, s.id, s.chunks)
			w.Put(kb, s.arena[s.done:end])
			s.chunks++
			s.done = end
		}
	}
	return kb
}

// setWant is a restored group's set still to be filled from its chunk
// records.
type setWant struct {
	acc     *acc
	key     string
	id      uint64
	chunks  uint32
	members uint64
}

// decodeGroup decodes a group record into g's accumulators; the sets of a
// record of chunks are appended to want, to be filled from their chunks.
func (a *hashAgg) decodeGroup(g *group, b []byte, want []setWant) ([]setWant, error) {
	if len(b) < 1 {
		return want, fmt.Errorf("empty group record")
	}
	flags := b[0]
	if flags&^(flagEmitted|flagChunked) != 0 {
		return want, fmt.Errorf("unknown flags %#x", flags)
	}
	if flags&flagEmitted != 0 {
		g.flags |= gEmitted
	}
	b = b[1:]
	var err error
	for i := range g.accs {
		c := &g.accs[i]
		distinct := a.spec.Aggs[i].Fn == plan.AggCountDistinct
		var k int
		if c.n, k = binary.Varint(b); k <= 0 {
			return want, fmt.Errorf("accumulator %d: bad count", i)
		}
		b = b[k:]
		if c.i, k = binary.Varint(b); k <= 0 {
			return want, fmt.Errorf("accumulator %d: bad sum", i)
		}
		b = b[k:]
		if len(b) < 8 {
			return want, fmt.Errorf("accumulator %d: short", i)
		}
		c.f = math.Float64frombits(binary.BigEndian.Uint64(b))
		b = b[8:]
		if c.v, b, err = value.DecodeValue(b); err != nil {
			return want, fmt.Errorf("accumulator %d: %w", i, err)
		}
		if hasAux(a.spec.Aggs[i].Fn) {
			if b, err = decodeAux(b, &a.spec.Aggs[i], c); err != nil {
				return want, fmt.Errorf("accumulator %d: %w", i, err)
			}
		}
		if flags&flagChunked != 0 {
			if !distinct {
				continue
			}
			var f [3]uint64 // id, chunks, members
			for j := range f {
				if f[j], k = binary.Uvarint(b); k <= 0 {
					return want, fmt.Errorf("accumulator %d: bad set", i)
				}
				b = b[k:]
			}
			switch {
			case f[1] > math.MaxUint32:
				return want, fmt.Errorf("accumulator %d: %d chunks", i, f[1])
			case f[0] == 0 && f[1] > 0:
				return want, fmt.Errorf("accumulator %d: chunks of set 0", i)
			}
			want = append(want, setWant{acc: c, key: g.kg.key, id: f[0], chunks: uint32(f[1]), members: f[2]})
			continue
		}
		// The inline set of the older format.
		m, k := binary.Uvarint(b)
		if k <= 0 {
			return want, fmt.Errorf("accumulator %d: bad set size", i)
		}
		b = b[k:]
		if m > uint64(len(b)) {
			// Each member takes at least its length byte: a count above
			// that is corrupt.
			return want, fmt.Errorf("accumulator %d: set of %d members in %d bytes", i, m, len(b))
		}
		if m > 0 && !distinct {
			return want, fmt.Errorf("accumulator %d: a set of %d members for %s", i, m, a.spec.Aggs[i].Fn)
		}
		for j := uint64(0); j < m; j++ {
			l, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < l {
				return want, fmt.Errorf("accumulator %d: bad set member", i)
			}
			if c.set == nil {
				c.set = &distinctSet{}
			}
			if _, err := c.set.add(b[k : k+int(l)]); err != nil {
				return want, fmt.Errorf("accumulator %d: %w", i, err)
			}
			b = b[k+int(l):]
		}
	}
	if len(b) > 0 {
		return want, fmt.Errorf("%d bytes after the last accumulator", len(b))
	}
	return want, nil
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
		if _, b, err = value.DecodeValue(b); err != nil {
			return fmt.Errorf("group key column %d: %w", i, err)
		}
	}
	if len(b) > 0 {
		return fmt.Errorf("group key has %d bytes after its %d columns", len(b), a.nkeys)
	}
	return nil
}

// Snapshot deletes the records of the groups removed and the chunks of
// the sets dropped, and writes the groups changed (with the members their
// sets gained), since the last snapshot. Dirty groups were emitted by
// Barrier just before.
func (a *hashAgg) Snapshot(w StateWriter) error {
	if w.Full() {
		return a.snapshotAll(w)
	}
	var kb, vb []byte
	for _, wk := range a.removedRecs {
		w.Delete(encodeWinKey(kb[:0], wk))
	}
	for _, sc := range a.removedSets {
		for n := range sc.chunks {
			w.Delete(chunkKey(kb[:0], sc.key, sc.id, n))
		}
	}
	a.clearRemoved()
	kb = a.deleteBags(w, kb)
	for _, g := range a.changed {
		g.flags &^= gChanged
		if g.is(gDead) {
			continue
		}
		kb = a.writeSets(w, g, false, kb)
		kb, vb = a.writeBags(w, g, false, kb, vb)
		kb = encodeWinKey(kb[:0], winKey{g.win.win.Start, g.win.win.End, g.kg.key})
		vb = a.encodeGroup(vb[:0], g)
		w.Put(kb, vb)
		g.flags |= gPersisted
	}
	clear(a.changed)
	a.changed = a.changed[:0]
	return nil
}

func (a *hashAgg) clearRemoved() {
	clear(a.removedRecs)
	a.removedRecs = a.removedRecs[:0]
	clear(a.removedSets)
	a.removedSets = a.removedSets[:0]
}

// snapshotAll writes every open group and its sets whole (a full
// snapshot).
func (a *hashAgg) snapshotAll(w StateWriter) error {
	for _, g := range a.changed {
		g.flags &^= gChanged
	}
	clear(a.changed)
	a.changed = a.changed[:0]
	a.clearRemoved()
	clear(a.removedBags)
	a.removedBags = a.removedBags[:0]
	var kb, vb []byte
	// In window order: set ids are assigned as sets are first written, and
	// a base is then the same for the same state (operator scripts).
	wins := make([]*winGroups, 0, len(a.wins))
	for _, wg := range a.wins {
		wins = append(wins, wg)
	}
	slices.SortFunc(wins, func(x, y *winGroups) int {
		return cmp.Or(cmp.Compare(x.win.Start, y.win.Start), cmp.Compare(x.win.End, y.win.End))
	})
	for _, wg := range wins {
		for _, g := range wg.list {
			if g == nil {
				continue
			}
			kb = a.writeSets(w, g, true, kb)
			kb, vb = a.writeBags(w, g, true, kb, vb)
			kb = encodeWinKey(kb[:0], winKey{wg.win.Start, wg.win.End, g.kg.key})
			vb = a.encodeGroup(vb[:0], g)
			w.Put(kb, vb)
			g.flags |= gPersisted
		}
	}
	return nil
}

// Restore loads the groups this task owns, with their sets' chunks, and
// rebuilds windows, sessions and the close-order heap from them.
func (a *hashAgg) Restore(r StateReader) error {
	var want []setWant
	chunks := map[chunkRef][]byte{}
	type bagRec struct {
		ref bagRef
		v   []byte
	}
	var bagRecs []bagRec
	err := r.Scan(func(k, v []byte) error {
		if len(k) > 0 && k[0] == bagRecord {
			ref, err := decodeBagKey(k)
			if err != nil {
				return fmt.Errorf("aggregation state key %x: %w", k, err)
			}
			if r.Owns(ref.group.key) {
				bagRecs = append(bagRecs, bagRec{ref, v})
			}
			return nil
		}
		if len(k) > 0 && k[0] == chunkRecord {
			ref, err := decodeChunkKey(k)
			if err != nil {
				return fmt.Errorf("aggregation state key %x: %w", k, err)
			}
			if r.Owns(ref.key) {
				chunks[ref] = v
			}
			return nil
		}
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
		if want, err = a.decodeGroup(g, v, want); err != nil {
			return fmt.Errorf("aggregation state of %x: %w", k, err)
		}
		g.flags |= gPersisted
		if a.spec.Session {
			a.sessions[wk.key] = append(a.sessions[wk.key], window.Window{Start: wk.start, End: wk.end})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, sw := range want {
		if uint64(sw.chunks) > uint64(len(chunks)) {
			return fmt.Errorf("aggregation state of group %x: set %d has %d chunks, only %d chunk records are left: some are missing", sw.key, sw.id, sw.chunks, len(chunks))
		}
		if (sw.members > 0 || sw.chunks > 0) && sw.acc.set == nil {
			sw.acc.set = &distinctSet{}
		}
		for n := range sw.chunks {
			ref := chunkRef{key: sw.key, id: sw.id, n: n}
			b, ok := chunks[ref]
			if !ok {
				return fmt.Errorf("aggregation state of group %x: chunk %d of set %d is missing", sw.key, n, sw.id)
			}
			delete(chunks, ref)
			if _, err := sw.acc.set.addEncoded(b); err != nil {
				return fmt.Errorf("aggregation state of group %x: chunk %d of set %d: %w", sw.key, n, sw.id, err)
			}
		}
		if got := uint64(sw.acc.set.len()); got != sw.members {
			return fmt.Errorf("aggregation state of group %x: set %d has %d members in its chunks, its group says %d", sw.key, sw.id, got, sw.members)
		}
		if s := sw.acc.set; s != nil {
			s.id, s.chunks, s.done = sw.id, sw.chunks, len(s.arena)
		}
		a.nextSet = max(a.nextSet, sw.id+1)
	}
	for ref := range chunks {
		return fmt.Errorf("aggregation state of group %x: chunk %d of set %d belongs to no group", ref.key, ref.n, ref.id)
	}
	for _, br := range bagRecs {
		if err := a.restoreBag(br.ref, br.v); err != nil {
			return fmt.Errorf("aggregation state of group %x: %w", br.ref.group.key, err)
		}
	}
	for key, list := range a.sessions {
		slices.SortFunc(list, func(x, y window.Window) int { return cmp.Compare(x.Start, y.Start) })
		a.sessions[key] = list
	}
	for _, wg := range a.wins {
		for _, g := range wg.list {
			a.bytes += int64(accBytes(g))
		}
	}
	return nil
}
