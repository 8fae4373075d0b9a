package op

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/axiomhq/hyperloglog"
	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// The aggregates beyond COUNT, SUM, AVG, MIN and MAX, in the fields acc
// has (no field more per group):
//
//   - VAR_POP, VAR_SAMP, STDDEV_POP, STDDEV_SAMP: Welford's running mean
//     and sum of squared deviations, n the count, f the mean, v the sum of
//     squares (a DOUBLE); sessions merge by Chan's formula. Retracting, a
//     bag of the values (retract.go) backs them: a row taken back marks
//     the accumulator stale (i = 1) and its next result recomputes n, mean
//     and sum of squares from the bag, over its values in ascending order
//     (so the same multiset gives the same bits): about 0.2 ms for a group
//     of 1000 distinct values (BenchmarkRetractingVariance), once per
//     group and barrier, not per row. Welford's removal formula is not
//     used: it cancels catastrophically (1, 2, 3, 4 and 1e15, the 1e15
//     taken back: it gives VAR_POP 0, the bag 1.25; TestVarianceRetraction),
//     and the
//     exact alternative for BIGINT inputs (integer sums of x and x² over
//     192 bits) would still need a bag for DOUBLE ones.
//   - BIT_AND, BIT_OR, BIT_XOR: v the bits (NULL before the first value:
//     the result is then MySQL's identity, all bits for BIT_AND, 0 for the
//     others). BIT_XOR retracts by XOR; BIT_AND and BIT_OR keep a bag and
//     a value whose last row leaves marks them stale (i = 1): the next
//     result folds the bag's values.
//   - APPROX_COUNT_DISTINCT: a HyperLogLog sketch (github.com/axiomhq/
//     hyperloglog, precision 14, sparse while small) in the accumulator's
//     set (distinctSet.sketch), fed the value's encoding (AppendValue, in
//     the reused buffer); n counts the values fed, for re-estimating the
//     sketch's memory now and then. It cannot take a row back: the planner
//     refuses it over an updating input. Checkpointed as its MarshalBinary
//     in the group record.
//   - GROUP_CONCAT: entries, each the encoding of the call's ORDER BY keys
//     and its value (a VARCHAR), in the set's arena (indexed when
//     DISTINCT, so an equal entry is added once); v the result, computed
//     when stale (i = 1) and kept until the next change. An append-only
//     aggregation prunes its entries when they grow past twice what the
//     last pruning kept plus four times plan.GroupConcatMaxLen: sorted, it
//     keeps those that start within the first GroupConcatMaxLen bytes of
//     the result (an entry pruned can never come back into it: entries
//     only arrive). Retracting, the entries are a bag, sorted when a
//     result is due. Checkpointed as its arena in the group record.

// stale marks a bag- or entry-derived accumulator whose v (or Welford
// state) no longer holds its result.
const stale = 1

// refreshes reports whether fn's accumulator may be stale (its result
// recomputed by refresh).
func refreshes(fn plan.AggFn) bool {
	switch fn {
	case plan.AggVarPop, plan.AggVarSamp, plan.AggStddevPop, plan.AggStddevSamp,
		plan.AggBitAnd, plan.AggBitOr, plan.AggGroupConcat:
		return true
	}
	return false
}

// hasAux reports whether fn's group record holds more than the common
// accumulator fields (aggstate.go): a sketch, or GROUP_CONCAT's entries.
func hasAux(fn plan.AggFn) bool {
	return fn == plan.AggApproxCountDistinct || fn == plan.AggGroupConcat
}

// addMore folds non-NULL v into the accumulator of one of the aggregates
// of this file (but GROUP_CONCAT, which takes the row: addConcat). It
// returns the bytes the state grew by.
func (a *acc) addMore(fn plan.AggFn, v plan.Value, buf *[]byte) (int, error) {
	switch fn {
	case plan.AggVarPop, plan.AggVarSamp, plan.AggStddevPop, plan.AggStddevSamp:
		a.welford(funcs.ToFloat(v))
	case plan.AggBitAnd, plan.AggBitOr, plan.AggBitXor:
		a.v = plan.Int(bitFold(fn, a.v, v.I))
	case plan.AggApproxCountDistinct:
		grown := 0
		if a.set == nil {
			a.set = &distinctSet{sketch: hyperloglog.New14()}
			grown = distinctSetCost
		}
		*buf = value.AppendValue((*buf)[:0], v)
		a.set.sketch.Insert(*buf)
		a.n++
		if a.n&(a.n-1) == 0 || a.n%4096 == 0 {
			grown += a.set.measureSketch(buf)
		}
		return grown, nil
	}
	return 0, nil
}

// welford adds x to the running mean (f) and sum of squared deviations
// (v) of n values.
func (a *acc) welford(x float64) {
	a.n++
	d := x - a.f
	a.f += d / float64(a.n)
	a.v = plan.Float(a.v.F() + d*(x-a.f))
}

// mergeMoments folds n values of mean m and sum of squared deviations m2
// into a (Chan et al.'s pairwise update).
func (a *acc) mergeMoments(n int64, m, m2 float64) {
	if n == 0 {
		return
	}
	if a.n == 0 {
		a.n, a.f, a.v = n, m, plan.Float(m2)
		return
	}
	tot := a.n + n
	d := m - a.f
	a.f += d * float64(n) / float64(tot)
	a.v = plan.Float(a.v.F() + m2 + d*d*float64(a.n)*float64(n)/float64(tot))
	a.n = tot
}

func bitFold(fn plan.AggFn, cur plan.Value, x int64) int64 {
	if cur.IsNull() {
		return x
	}
	switch fn {
	case plan.AggBitAnd:
		return cur.I & x
	case plan.AggBitOr:
		return cur.I | x
	}
	return cur.I ^ x
}

// mergeMore folds o into a (session merges).
func (a *acc) mergeMore(fn plan.AggFn, ag *plan.Agg, o *acc) (int, error) {
	switch fn {
	case plan.AggVarPop, plan.AggVarSamp, plan.AggStddevPop, plan.AggStddevSamp:
		a.mergeMoments(o.n, o.f, o.v.F())
	case plan.AggBitAnd, plan.AggBitOr, plan.AggBitXor:
		if !o.v.IsNull() {
			a.v = plan.Int(bitFold(fn, a.v, o.v.I))
		}
	case plan.AggApproxCountDistinct:
		if o.set == nil {
			return 0, nil
		}
		if a.set == nil {
			// Moved: its bytes, counted with o's group, are now a's.
			a.set, o.set = o.set, nil
			a.n, o.n = o.n, 0
			return 0, nil
		}
		if err := a.set.sketch.Merge(o.set.sketch); err != nil {
			return 0, err
		}
		a.n += o.n
		var buf []byte
		return a.set.measureSketch(&buf), nil
	case plan.AggGroupConcat:
		if o.set == nil {
			return 0, nil
		}
		before := a.set.size()
		if a.set == nil {
			a.set = &distinctSet{}
		}
		for off := 0; off < len(o.set.arena); {
			var e []byte
			e, off = o.set.member(off)
			if err := a.set.addEntry(e, ag.Concat.Distinct); err != nil {
				return 0, err
			}
		}
		a.i = stale
		return a.set.size() - before + a.pruneConcat(ag), nil
	}
	return 0, nil
}

// resultMore is the result of one of the aggregates of this file (a
// stale one refreshed before: hashAgg.result).
func (a *acc) resultMore(fn plan.AggFn) plan.Value {
	switch fn {
	case plan.AggVarPop, plan.AggStddevPop, plan.AggVarSamp, plan.AggStddevSamp:
		d := float64(a.n)
		if fn == plan.AggVarSamp || fn == plan.AggStddevSamp {
			d--
		}
		if d <= 0 {
			return plan.Null
		}
		r := max(a.v.F(), 0) / d
		if fn == plan.AggStddevPop || fn == plan.AggStddevSamp {
			r = math.Sqrt(r)
		}
		return plan.Float(r)
	case plan.AggBitAnd:
		if a.v.IsNull() {
			return plan.Int(-1)
		}
		return a.v
	case plan.AggBitOr, plan.AggBitXor:
		return plan.Int(a.v.I)
	case plan.AggApproxCountDistinct:
		if a.set == nil || a.set.sketch == nil {
			return plan.Int(0)
		}
		return plan.Int(int64(a.set.sketch.Estimate()))
	case plan.AggGroupConcat:
		return a.v
	}
	return plan.Null
}

// retractMore takes v back from a retracting aggregation's accumulator of
// one of this file's aggregates; bg is its bag (nil for BIT_XOR). It
// returns the bytes the bag shrank by.
func (a *acc) retractMore(fn plan.AggFn, v plan.Value, bg *bag, buf *[]byte) (int, error) {
	if fn == plan.AggBitXor {
		a.v = plan.Int(a.v.I ^ v.I)
		return 0, nil
	}
	*buf = value.AppendValue((*buf)[:0], v)
	shrunk, gone, err := bg.remove(*buf)
	if err != nil {
		return 0, err
	}
	switch fn {
	case plan.AggBitAnd, plan.AggBitOr:
		if gone {
			a.i = stale
		}
	default: // the moments
		a.n--
		if a.n == 0 {
			a.n, a.f, a.v, a.i = 0, 0, plan.Null, 0
		} else {
			a.i = stale
		}
	}
	return shrunk, nil
}

// refresh recomputes a stale accumulator's result from its bag
// (retracting) or entries (GROUP_CONCAT, append-only). It returns the
// bytes the state grew by (GROUP_CONCAT's result).
func (a *acc) refresh(ag *plan.Agg, bg *bag) int {
	a.i = 0
	switch ag.Fn {
	case plan.AggBitAnd, plan.AggBitOr:
		a.v = plan.Null
		for m := range bg.counts {
			a.v = plan.Int(bitFold(ag.Fn, a.v, decodeMember(m).I))
		}
	case plan.AggGroupConcat:
		before := len(a.v.S)
		a.v = concatResult(ag.Concat, a.set, bg)
		return len(a.v.S) - before
	default: // the moments, over the values in ascending order
		type xc struct {
			x float64
			c int64
		}
		xs := make([]xc, 0, len(bg.counts))
		for m, c := range bg.counts {
			xs = append(xs, xc{funcs.ToFloat(decodeMember(m)), c})
		}
		slices.SortFunc(xs, func(p, q xc) int { return cmp.Compare(p.x, q.x) })
		a.n, a.f, a.v = 0, 0, plan.Null
		for _, e := range xs {
			a.mergeMoments(e.c, e.x, 0)
		}
	}
	return 0
}

func decodeMember(m string) plan.Value {
	v, _, err := value.DecodeValue(KeyBytes(m))
	if err != nil {
		panic("runtime: a bag member does not decode: " + err.Error())
	}
	return v
}

// HyperLogLog.

// measureSketch re-estimates the sketch's heap bytes from the length of
// its encoding (marshalled into buf) and returns the change. A dense
// sketch's size is fixed: it is measured no more.
func (s *distinctSet) measureSketch(buf *[]byte) int {
	if s.sketchBytes == denseSketchBytes {
		return 0
	}
	var err error
	if *buf, err = s.sketch.AppendBinary((*buf)[:0]); err != nil || len(*buf) < 8 {
		return 0
	}
	n := 2*len(*buf) + 128 // sparse: its hash set's slack and the list
	if (*buf)[3] == 0 {
		n = denseSketchBytes
	}
	grown := n - s.sketchBytes
	s.sketchBytes = n
	return grown
}

// denseSketchBytes is a dense precision-14 sketch's heap: its registers and
// its struct.
const denseSketchBytes = 1<<14 + 96

// sketchPrecision is the precision of every sketch (hyperloglog.New14).
const sketchPrecision = 14

// checkSketch rejects an encoded sketch that UnmarshalBinary would take
// and then panic on (the library checks little): it must be version 2 of
// precision 14, dense with exactly 2^14 registers, or sparse with its
// temporary set and its list's bytes exactly filling it and the list's
// varints all ending inside it, as many as its count says.
func checkSketch(b []byte) error {
	if len(b) < 8 || b[0] != 2 || b[1] != sketchPrecision || b[2] != 0 || b[3] > 1 {
		return fmt.Errorf("not a HyperLogLog sketch of version 2, precision %d", sketchPrecision)
	}
	if b[3] == 0 {
		if binary.BigEndian.Uint32(b[4:8]) != 1<<sketchPrecision || len(b) != 8+1<<sketchPrecision {
			return fmt.Errorf("a dense sketch of %d bytes", len(b))
		}
		return nil
	}
	tmp := uint64(binary.BigEndian.Uint32(b[4:8]))
	rest := b[8:]
	if 4*tmp+12 > uint64(len(rest)) {
		return fmt.Errorf("a sparse sketch's set of %d is longer than its %d bytes", tmp, len(rest))
	}
	rest = rest[4*tmp:]
	count := binary.BigEndian.Uint32(rest[:4])
	list := rest[12:]
	if uint64(binary.BigEndian.Uint32(rest[8:12])) != uint64(len(list)) {
		return fmt.Errorf("a sparse sketch's list does not fill it")
	}
	if len(list) > 0 && list[len(list)-1]&0x80 != 0 {
		return fmt.Errorf("a sparse sketch's list ends inside a number")
	}
	n := uint32(0)
	for _, c := range list {
		if c&0x80 == 0 {
			n++
		}
	}
	if n != count {
		return fmt.Errorf("a sparse sketch's list holds %d numbers, its count says %d", n, count)
	}
	return nil
}

// GROUP_CONCAT.

// appendEntry appends GROUP_CONCAT's entry for row r (its ORDER BY keys,
// then its value) to buf.
func appendEntry(buf []byte, ag *plan.Agg, r plan.Row) []byte {
	buf = buf[:0]
	for _, o := range ag.Concat.Order {
		buf = value.AppendValue(buf, r[o.Arg])
	}
	return value.AppendValue(buf, r[ag.Arg])
}

// addEntry adds entry e: once when distinct (the set's index), else
// always.
func (s *distinctSet) addEntry(e []byte, distinct bool) error {
	if distinct {
		_, err := s.add(e)
		return err
	}
	if len(s.arena)+binary.MaxVarintLen64+len(e) > maxSetArena {
		return fmt.Errorf("a GROUP_CONCAT of %d values outgrew the 4 GiB one group may hold", s.n)
	}
	s.arena = binary.AppendUvarint(s.arena, uint64(len(e)))
	s.arena = append(s.arena, e...)
	s.n++
	return nil
}

// addConcat folds row r into an append-only GROUP_CONCAT and returns the
// bytes the state grew by.
func (a *acc) addConcat(ag *plan.Agg, r plan.Row, buf *[]byte) (int, error) {
	if r[ag.Arg].IsNull() {
		return 0, nil
	}
	before := a.set.size()
	if a.set == nil {
		a.set = &distinctSet{}
	}
	*buf = appendEntry(*buf, ag, r)
	if err := a.set.addEntry(*buf, ag.Concat.Distinct); err != nil {
		return 0, err
	}
	a.i = stale
	return a.set.size() - before + a.pruneConcat(ag), nil
}

// addConcatRetractable adds row r's entry to a retracting GROUP_CONCAT's
// bag.
func (a *acc) addConcatRetractable(ag *plan.Agg, r plan.Row, bg *bag, buf *[]byte) int {
	if r[ag.Arg].IsNull() {
		return 0
	}
	*buf = appendEntry(*buf, ag, r)
	a.i = stale
	return bg.add(*buf)
}

// retractConcat takes row r's entry back from a retracting GROUP_CONCAT's
// bag and returns the bytes it shrank by.
func (a *acc) retractConcat(ag *plan.Agg, r plan.Row, bg *bag, buf *[]byte) (int, error) {
	if r[ag.Arg].IsNull() {
		return 0, nil
	}
	*buf = appendEntry(*buf, ag, r)
	shrunk, _, err := bg.remove(*buf)
	a.i = stale
	return shrunk, err
}

// pruneConcat drops the entries that can no longer appear in the result,
// once they are many (see the top of the file), and returns the bytes the
// state grew by (negative).
func (a *acc) pruneConcat(ag *plan.Agg) int {
	s := a.set
	if int64(len(s.arena)) <= 2*a.n+4*plan.GroupConcatMaxLen {
		return 0
	}
	before := s.size()
	es := decodeEntries(ag.Concat, s, nil)
	sortEntries(ag.Concat, es)
	// The entries kept, and their bytes: the new arena has room for what
	// comes before the next pruning, so it is not regrown meanwhile.
	// An entry that adds no byte (an empty value after an empty
	// separator) is kept once: the result is "", not NULL.
	keep, l, nb := es[:0], 0, 0
	for _, e := range es {
		if l >= plan.GroupConcatMaxLen {
			break
		}
		add := len(e.vals[len(e.vals)-1].S)
		if len(keep) > 0 {
			add += len(ag.Concat.Sep)
			if add == 0 {
				continue
			}
		}
		l += add
		nb += binary.MaxVarintLen32 + len(e.enc)
		keep = append(keep, e)
	}
	kept := &distinctSet{arena: make([]byte, 0, 3*nb+4*plan.GroupConcatMaxLen+64)}
	for _, e := range keep {
		_ = kept.addEntry(e.enc, ag.Concat.Distinct) // fewer bytes than the set held
	}
	*s = distinctSet{arena: kept.arena, slots: kept.slots, n: kept.n}
	a.n = int64(len(s.arena))
	return s.size() - before
}

// entry is a decoded GROUP_CONCAT entry: its ORDER BY keys, then its
// value; rows is how many rows hold it (a bag's count, else 1).
type entry struct {
	enc  []byte
	vals []plan.Value
	rows int64
}

// decodeEntries decodes the entries of set s (append-only) or of bag bg
// (retracting).
//
// The entries' strings share the bytes of the set's arena or the bag's
// members, and all their values are one allocation: they are valid while
// the set or bag is unchanged (a pruning's or a result's time).
func decodeEntries(c *plan.Concat, s *distinctSet, bg *bag) []entry {
	w := len(c.Order) + 1
	n := 0
	switch {
	case bg != nil:
		n = len(bg.counts)
	case s != nil:
		n = s.n
	}
	es := make([]entry, 0, n)
	slab := make([]plan.Value, 0, n*w)
	dec := func(e []byte, rows int64) {
		rest := e
		for range w {
			var v plan.Value
			var err error
			if v, rest, err = decodeShared(rest); err != nil {
				panic("runtime: a GROUP_CONCAT entry does not decode: " + err.Error())
			}
			slab = append(slab, v)
		}
		es = append(es, entry{enc: e, vals: slab[len(slab)-w : len(slab) : len(slab)], rows: rows})
	}
	if bg != nil {
		for m, n := range bg.counts {
			dec(KeyBytes(m), n)
		}
		return es
	}
	if s != nil {
		for off := 0; off < len(s.arena); {
			var e []byte
			e, off = s.member(off)
			dec(e, 1)
		}
	}
	return es
}

// decodeShared is value.DecodeValue but for a VARCHAR's string, which
// shares b's bytes.
func decodeShared(b []byte) (plan.Value, []byte, error) {
	if len(b) == 0 || plan.Type(b[0]) != plan.TypeVarchar {
		return value.DecodeValue(b)
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || uint64(len(b)-1-k) < n {
		return plan.Null, nil, fmt.Errorf("decode string: bad length")
	}
	p := b[1+k : 1+k+int(n)]
	return plan.Str(unsafe.String(unsafe.SliceData(p), len(p))), b[1+k+int(n):], nil
}

// sortEntries orders entries by the ORDER BY keys (NULLs first ascending,
// last descending, as ORDER BY sorts), then by value ascending.
func sortEntries(c *plan.Concat, es []entry) {
	slices.SortFunc(es, func(x, y entry) int {
		for i, o := range c.Order {
			r := value.CompareNullsFirst(x.vals[i], y.vals[i])
			if o.Desc {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		n := len(c.Order)
		return strings.Compare(x.vals[n].S, y.vals[n].S)
	})
}

// concatResult joins the entries of s or bg, sorted, cut at
// plan.GroupConcatMaxLen bytes; NULL when there are none.
func concatResult(c *plan.Concat, s *distinctSet, bg *bag) plan.Value {
	es := decodeEntries(c, s, bg)
	if len(es) == 0 {
		return plan.Null
	}
	sortEntries(c, es)
	var b strings.Builder
	first := true
	for _, e := range es {
		n := e.rows
		if c.Distinct {
			n = 1
		}
		for range n {
			if b.Len() >= plan.GroupConcatMaxLen {
				break
			}
			if !first {
				b.WriteString(c.Sep)
			}
			first = false
			b.WriteString(e.vals[len(e.vals)-1].S)
		}
	}
	return plan.Str(cutUTF8(b.String(), plan.GroupConcatMaxLen))
}

// cutUTF8 cuts s to at most n bytes, at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// The group record's part of a sketch or GROUP_CONCAT entries
// (aggstate.go): uvarint(length) bytes, the sketch's MarshalBinary or the
// entries' arena; length 0 without either.

func appendAux(buf []byte, fn plan.AggFn, c *acc) []byte {
	if c.set == nil {
		return binary.AppendUvarint(buf, 0)
	}
	if fn == plan.AggApproxCountDistinct {
		m, err := c.set.sketch.MarshalBinary()
		if err == nil && len(m) >= 8 && m[3] == 1 && binary.BigEndian.Uint32(m[4:8]) > 0 {
			// A sparse sketch's temporary set is written in its hash
			// order, which depends on its history: merged into the sorted
			// list first (by Estimate), the same sketch writes the same
			// bytes, restored or not.
			c.set.sketch.Estimate()
			m, err = c.set.sketch.MarshalBinary()
		}
		if err != nil {
			panic("runtime: a sketch does not marshal: " + err.Error())
		}
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		return append(buf, m...)
	}
	buf = binary.AppendUvarint(buf, uint64(len(c.set.arena)))
	return append(buf, c.set.arena...)
}

// decodeAux restores a sketch or GROUP_CONCAT's entries from b and returns
// the rest.
func decodeAux(b []byte, ag *plan.Agg, c *acc) ([]byte, error) {
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return b, fmt.Errorf("bad %s state length", ag.Fn)
	}
	if ag.Fn == plan.AggGroupConcat {
		c.v, c.i = plan.Null, stale // its result is not in the record
	}
	p := b[k : k+int(l)]
	b = b[k+int(l):]
	if l == 0 {
		return b, nil
	}
	if ag.Fn == plan.AggApproxCountDistinct {
		if err := checkSketch(p); err != nil {
			return b, err
		}
		sk := hyperloglog.New14()
		if err := sk.UnmarshalBinary(slices.Clone(p)); err != nil {
			return b, err
		}
		c.set = &distinctSet{sketch: sk}
		var buf []byte
		c.set.measureSketch(&buf)
		return b, nil
	}
	if ag.Concat == nil {
		return b, fmt.Errorf("GROUP_CONCAT without its ordering")
	}
	c.set = &distinctSet{}
	for len(p) > 0 {
		el, k := binary.Uvarint(p)
		if k <= 0 || el > uint64(len(p)-k) {
			return b, fmt.Errorf("bad GROUP_CONCAT entry")
		}
		e := p[k : k+int(el)]
		p = p[k+int(el):]
		if err := checkMember(ag, e); err != nil {
			return b, err
		}
		if err := c.set.addEntry(e, ag.Concat.Distinct); err != nil {
			return b, err
		}
	}
	return b, nil
}

// checkMember rejects a restored bag member or GROUP_CONCAT entry that
// is not what aggregate ag keeps: one value, or GROUP_CONCAT's ORDER BY
// keys and its VARCHAR value.
func checkMember(ag *plan.Agg, m []byte) error {
	n := 1
	if ag.Concat != nil {
		n += len(ag.Concat.Order)
	}
	rest := m
	for i := range n {
		var v plan.Value
		var err error
		if v, rest, err = value.DecodeValue(rest); err != nil {
			return fmt.Errorf("%s member: %w", ag.Fn, err)
		}
		if i == n-1 && ag.Concat != nil && v.K != plan.TypeVarchar {
			return fmt.Errorf("GROUP_CONCAT entry of a %s value", v.K)
		}
	}
	if len(rest) > 0 {
		return fmt.Errorf("%s member with %d bytes after its value", ag.Fn, len(rest))
	}
	return nil
}
