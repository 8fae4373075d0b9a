package op

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// Retraction: an aggregation over an updating input (plan.Aggregate.Retract)
// takes rows back as well as adding them. COUNT, SUM and AVG subtract; a
// SUM or AVG that no row feeds any more is reset to exactly zero (so a
// DOUBLE sum carries no rounding from rows taken back). COUNT(DISTINCT)
// and MIN/MAX keep the values their rows hold, with a count of rows per
// value (a bag): a value leaves COUNT(DISTINCT) when its last row is taken
// back, and when the current MIN or MAX loses its last row the next one
// is found among the bag's values (as Flink's MinWithRetract does: a scan
// of the group's distinct values, on that retraction only). The
// COUNT(DISTINCT) of a retracting aggregation is its bag's size, held in
// acc.n; its acc.set stays nil.
//
// A group's bags live in hashAgg.bags, outside the group, so that groups
// of append-only aggregations stay their size.

// bag is a multiset of encoded values (AppendValue) with the number of
// rows holding each, and the values whose count changed since the last
// snapshot.
type bag struct {
	counts  map[string]int64
	changed map[string]struct{}
}

// bagMemberCost estimates a bag member's heap bytes beyond its encoding's
// allocation: its entries in counts and changed, with the maps' slack
// (checked against runtime.MemStats by TestStateBytes).
const bagMemberCost = 80

// memberCost is what a bag member of encoding length n takes.
func memberCost(n int) int { return bagMemberCost + allocSize(n) }

func newBag() *bag {
	return &bag{counts: map[string]int64{}, changed: map[string]struct{}{}}
}

// add counts one more row of member m and returns the bytes the bag grew by.
func (b *bag) add(m []byte) int {
	grown := 0
	n, ok := b.counts[string(m)]
	if !ok {
		grown = memberCost(len(m))
	}
	k := string(m)
	b.counts[k] = n + 1
	b.changed[k] = struct{}{}
	return grown
}

// remove counts one row of m fewer. It returns the bytes the bag shrank
// by, whether m's last row left, and an error when m has no rows (the
// input took back a row it never added).
func (b *bag) remove(m []byte) (int, bool, error) {
	n, ok := b.counts[string(m)]
	if !ok {
		return 0, false, errUnmatchedRetraction
	}
	k := string(m)
	b.changed[k] = struct{}{}
	if n == 1 {
		delete(b.counts, k)
		return memberCost(len(m)), true, nil
	}
	b.counts[k] = n - 1
	return 0, false, nil
}

// size is the bag's estimated heap bytes.
func (b *bag) size() int {
	n := 0
	for k := range b.counts {
		n += memberCost(len(k))
	}
	return n
}

// extreme is the least (min) or greatest value in the bag, or NULL when
// it is empty.
func (b *bag) extreme(min bool) plan.Value {
	best := plan.Null
	for k := range b.counts {
		v, _, err := value.DecodeValue(KeyBytes(k))
		if err != nil {
			panic("runtime: a bag member does not decode: " + err.Error())
		}
		if best.IsNull() {
			best = v
			continue
		}
		if c := value.Compare(v, best); c != 0 && (c < 0) == min {
			best = v
		}
	}
	return best
}

// errUnmatchedRetraction: an updating input took back a row the
// aggregation does not hold. Upstream operators only retract what they
// emitted, so this is a broken invariant, reported as the query's error.
var errUnmatchedRetraction = fmt.Errorf("an updating input took back a row the aggregation does not hold")

// usesBag reports whether a retracting aggregation keeps a bag for fn.
func usesBag(fn plan.AggFn) bool {
	switch fn {
	case plan.AggCountDistinct, plan.AggMin, plan.AggMax, plan.AggVarPop, plan.AggVarSamp, plan.AggStddevPop,
		plan.AggStddevSamp, plan.AggBitAnd, plan.AggBitOr, plan.AggGroupConcat:
		return true
	}
	return false
}

// addRetractable folds v into a retracting aggregation's accumulator; bg
// is its bag (COUNT(DISTINCT), MIN, MAX). It returns the bytes the bag
// grew by.
func (a *acc) addRetractable(fn plan.AggFn, t plan.Type, v plan.Value, bg *bag, buf *[]byte) (int, error) {
	if !usesBag(fn) || v.IsNull() {
		return a.add(fn, t, v, buf)
	}
	*buf = value.AppendValue((*buf)[:0], v)
	grown := bg.add(*buf)
	if fn == plan.AggCountDistinct {
		if grown > 0 {
			a.n++
		}
		return grown, nil
	}
	g, err := a.add(fn, t, v, buf)
	return grown + g, err
}

// retract takes v back from a retracting aggregation's accumulator. It
// returns the bytes the bag shrank by.
func (a *acc) retract(fn plan.AggFn, t plan.Type, v plan.Value, bg *bag, buf *[]byte) (int, error) {
	if fn == plan.AggCountStar {
		a.n--
		return 0, nil
	}
	if v.IsNull() {
		return 0, nil
	}
	switch fn {
	case plan.AggCount:
		a.n--
	case plan.AggSum:
		a.n--
		switch {
		case a.n == 0:
			a.i, a.f = 0, 0
		case t == plan.TypeDouble:
			a.f -= v.F()
		case v.I == math.MinInt64 || sumOverflows(a.i, -v.I):
			return 0, errOverflow
		default:
			a.i -= v.I
		}
	case plan.AggAvg:
		a.n--
		if a.n == 0 {
			a.f = 0
		} else {
			a.f -= funcs.ToFloat(v)
		}
	case plan.AggCountDistinct, plan.AggMin, plan.AggMax:
		*buf = value.AppendValue((*buf)[:0], v)
		shrunk, gone, err := bg.remove(*buf)
		if err != nil || !gone {
			return shrunk, err
		}
		if fn == plan.AggCountDistinct {
			a.n--
			return shrunk, nil
		}
		if value.Compare(v, a.v) == 0 {
			// The current extreme's last row left: the next one.
			nv := bg.extreme(fn == plan.AggMin)
			shrunk += len(a.v.S) - len(nv.S)
			a.v = nv
		}
		return shrunk, nil
	case plan.AggVarPop, plan.AggVarSamp, plan.AggStddevPop, plan.AggStddevSamp, plan.AggBitAnd, plan.AggBitOr, plan.AggBitXor:
		return a.retractMore(fn, v, bg, buf)
	}
	return 0, nil
}

// A bag's checkpoint records, keyed by
//
//	'b' uvarint(len(group)) group byte(aggregate) member
//
// where group is the group record's key (encodeWinKey), valued by
// varint(rows). A snapshot writes the members whose count changed since
// the last one (a delete for those gone); a full snapshot writes every
// member; a group's delete deletes its members' records.
const bagRecord = 'b'

func bagKey(buf, group []byte, agg int, member string) []byte {
	buf = append(buf, bagRecord)
	buf = binary.AppendUvarint(buf, uint64(len(group)))
	buf = append(buf, group...)
	buf = append(buf, byte(agg))
	return append(buf, member...)
}

// bagRef is a decoded bag record key.
type bagRef struct {
	group  winKey
	agg    int
	member string
}

func decodeBagKey(k []byte) (bagRef, error) {
	if len(k) == 0 || k[0] != bagRecord {
		return bagRef{}, fmt.Errorf("not a bag record")
	}
	l, w := binary.Uvarint(k[1:])
	rest := k[1+max(w, 0):]
	if w <= 0 || l >= uint64(len(rest)) {
		return bagRef{}, fmt.Errorf("bad group length")
	}
	wk, err := decodeWinKey(rest[:l])
	if err != nil {
		return bagRef{}, err
	}
	return bagRef{group: wk, agg: int(rest[l]), member: string(rest[l+1:])}, nil
}

// bagDrop is a removed group's bag records to delete: the members its
// bags held or changed since the last snapshot.
type bagDrop struct {
	group   winKey
	agg     int
	members []string
}

// dropBags forgets g's bags (it closed, or its last row was taken back)
// and, if a snapshot may have written them, queues their records'
// deletes.
func (a *hashAgg) dropBags(g *group) {
	bs, ok := a.bags[g]
	if !ok {
		return
	}
	delete(a.bags, g)
	wk := winKey{g.win.win.Start, g.win.win.End, g.kg.key}
	for j, bg := range bs {
		if bg == nil {
			continue
		}
		a.bytes -= int64(bg.size())
		if !g.is(gPersisted) && len(bg.changed) == 0 {
			continue
		}
		var ms []string
		for m := range bg.counts {
			ms = append(ms, m)
		}
		for m := range bg.changed {
			if _, ok := bg.counts[m]; !ok {
				ms = append(ms, m)
			}
		}
		if len(ms) > 0 {
			a.removedBags = append(a.removedBags, bagDrop{group: wk, agg: j, members: ms})
		}
	}
}

// writeBags writes what g's bags changed since the last snapshot (all:
// every member, a base).
func (a *hashAgg) writeBags(w StateWriter, g *group, all bool, kb, vb []byte) ([]byte, []byte) {
	bs := a.bags[g]
	if bs == nil {
		return kb, vb
	}
	gk := encodeWinKey(nil, winKey{g.win.win.Start, g.win.win.End, g.kg.key})
	for j, bg := range bs {
		if bg == nil {
			continue
		}
		put := func(m string, n int64) {
			kb = bagKey(kb[:0], gk, j, m)
			vb = binary.AppendVarint(vb[:0], n)
			w.Put(kb, vb)
		}
		if all {
			for m, n := range bg.counts {
				put(m, n)
			}
		} else {
			for m := range bg.changed {
				if n, ok := bg.counts[m]; ok {
					put(m, n)
				} else {
					w.Delete(bagKey(kb[:0], gk, j, m))
				}
			}
		}
		clear(bg.changed)
	}
	return kb, vb
}

// deleteBags writes the deletes of the removed groups' bag records.
func (a *hashAgg) deleteBags(w StateWriter, kb []byte) []byte {
	for _, d := range a.removedBags {
		gk := encodeWinKey(nil, d.group)
		for _, m := range d.members {
			kb = bagKey(kb[:0], gk, d.agg, m)
			w.Delete(kb)
		}
	}
	clear(a.removedBags)
	a.removedBags = a.removedBags[:0]
	return kb
}

// restoreBag puts a restored bag record into its group's bag.
func (a *hashAgg) restoreBag(ref bagRef, v []byte) error {
	kg := a.keys[ref.group.key]
	var g *group
	if kg != nil {
		g = kg.find(window.Window{Start: ref.group.start, End: ref.group.end})
	}
	if g == nil {
		return fmt.Errorf("a bag record of no group")
	}
	if !a.spec.Retract || ref.agg >= len(a.spec.Aggs) || !usesBag(a.spec.Aggs[ref.agg].Fn) {
		return fmt.Errorf("a bag record of aggregate %d, which keeps none", ref.agg)
	}
	n, k := binary.Varint(v)
	if k != len(v) || n <= 0 {
		return fmt.Errorf("bad row count")
	}
	if err := checkMember(&a.spec.Aggs[ref.agg], KeyBytes(ref.member)); err != nil {
		return err
	}
	bg := a.bagsOf(g)[ref.agg]
	if _, dup := bg.counts[ref.member]; dup {
		return fmt.Errorf("a bag member twice")
	}
	bg.counts[ref.member] = n
	a.bytes += int64(memberCost(len(ref.member)))
	return nil
}
