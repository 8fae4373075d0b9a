package op

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/axiomhq/hyperloglog"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// newAggsSpec is a running aggregation by k over rows [k, x BIGINT, d
// DOUBLE, s VARCHAR, o BIGINT] of every aggregate of aggs.go: COUNT(*),
// VAR_POP(x), VAR_SAMP(d), STDDEV_POP(d), STDDEV_SAMP(x), BIT_AND(x),
// BIT_OR(x), BIT_XOR(x), GROUP_CONCAT(s ORDER BY o DESC SEPARATOR '-'),
// GROUP_CONCAT(DISTINCT s), and, append-only, APPROX_COUNT_DISTINCT(s).
// Its output is [k, the aggregates...].
func newAggsSpec(retract bool) *plan.Aggregate {
	B, D, S := plan.TypeBigint, plan.TypeDouble, plan.TypeVarchar
	aggs := []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: B},
		{Fn: plan.AggVarPop, Arg: 1, T: D}, {Fn: plan.AggVarSamp, Arg: 2, T: D},
		{Fn: plan.AggStddevPop, Arg: 2, T: D}, {Fn: plan.AggStddevSamp, Arg: 1, T: D},
		{Fn: plan.AggBitAnd, Arg: 1, T: B}, {Fn: plan.AggBitOr, Arg: 1, T: B}, {Fn: plan.AggBitXor, Arg: 1, T: B},
		{Fn: plan.AggGroupConcat, Arg: 3, T: S, Concat: &plan.Concat{Sep: "-", Order: []plan.AggOrder{{Arg: 4, Desc: true}}}},
		{Fn: plan.AggGroupConcat, Arg: 3, T: S, Concat: &plan.Concat{Sep: ",", Distinct: true}}}
	if !retract {
		aggs = append(aggs, plan.Agg{Fn: plan.AggApproxCountDistinct, Arg: 3, T: B})
	}
	spec := &plan.Aggregate{Keys: []int{0}, Aggs: aggs, EmitMode: plan.EmitChanges, Retract: retract}
	spec.Out = plan.Schema{{Name: "k", Type: B}}
	spec.Output = []plan.Expr{&plan.ColRef{Index: 0, T: B}}
	for i, a := range aggs {
		spec.Output = append(spec.Output, &plan.ColRef{Index: 1 + i, T: a.T})
		spec.Out = append(spec.Out, plan.Column{Name: a.String(), Type: a.T})
	}
	return spec
}

// aggsOracle computes newAggsSpec's row for the rows of one key, from the
// multiset itself.
func aggsOracle(k int64, rows []plan.Row, retract bool) plan.Row {
	var xs, ds []float64
	and, or, xor := int64(-1), int64(0), int64(0)
	type ent struct {
		o plan.Value
		s string
	}
	var ents []ent
	distinct := map[string]bool{}
	for _, r := range rows {
		if !r[1].IsNull() {
			xs = append(xs, float64(r[1].I))
			and, or, xor = and&r[1].I, or|r[1].I, xor^r[1].I
		}
		if !r[2].IsNull() {
			ds = append(ds, r[2].F())
		}
		if !r[3].IsNull() {
			ents = append(ents, ent{r[4], r[3].S})
			distinct[r[3].S] = true
		}
	}
	// Two passes: the mean, then the squared deviations.
	moments := func(vs []float64, samp, sqrt bool) plan.Value {
		n := float64(len(vs))
		if samp {
			n--
		}
		if n <= 0 {
			return plan.Null
		}
		mean := 0.0
		for _, v := range vs {
			mean += v
		}
		mean /= float64(len(vs))
		m2 := 0.0
		for _, v := range vs {
			m2 += (v - mean) * (v - mean)
		}
		r := m2 / n
		if sqrt {
			r = math.Sqrt(r)
		}
		return plan.Float(r)
	}
	slices.SortFunc(ents, func(x, y ent) int {
		// o DESC: NULLs last.
		switch {
		case x.o.IsNull() != y.o.IsNull():
			if x.o.IsNull() {
				return 1
			}
			return -1
		case !x.o.IsNull() && x.o.I != y.o.I:
			return cmp.Compare(y.o.I, x.o.I)
		}
		return strings.Compare(x.s, y.s)
	})
	concat := plan.Null
	if len(ents) > 0 {
		var parts []string
		for _, e := range ents {
			parts = append(parts, e.s)
		}
		concat = plan.Str(cutUTF8(strings.Join(parts, "-"), plan.GroupConcatMaxLen))
	}
	dist := plan.Null
	if len(distinct) > 0 {
		dist = plan.Str(strings.Join(slices.Sorted(maps.Keys(distinct)), ","))
	}
	row := plan.Row{plan.Int(k), plan.Int(int64(len(rows))),
		moments(xs, false, false), moments(ds, true, false), moments(ds, false, true), moments(xs, true, true),
		plan.Int(and), plan.Int(or), plan.Int(xor), concat, dist}
	if !retract {
		row = append(row, plan.Int(int64(len(distinct))))
	}
	return row
}

// rowsEmitter applies a changelog to the latest row of each upsert key.
type rowsEmitter map[string]plan.Row

func (e rowsEmitter) Emit(b *Batch) error {
	for i, m := range b.Meta {
		switch m.Op {
		case Delete:
			delete(e, m.Key)
		case Before:
		default:
			e[m.Key] = slices.Clone(b.Rows[i])
		}
	}
	return nil
}

// sameAggsRow compares a result with the oracle's: DOUBLEs to 1e-9 of
// their magnitude (the oracle sums in another order), the HyperLogLog
// estimate to 2% (it is exact while small), the rest exactly.
func sameAggsRow(got, want plan.Row, scale float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		switch {
		case g.K != w.K:
			return false
		case g.K == plan.TypeDouble:
			if math.Abs(g.F()-w.F()) > 1e-9*(math.Abs(w.F())+scale) {
				return false
			}
		case i == 11:
			if math.Abs(float64(g.I-w.I)) > 0.02*float64(w.I) {
				return false
			}
		case g != w:
			return false
		}
	}
	return true
}

// TestNewAggregatesOracle feeds random rows of a few keys to newAggsSpec,
// append-only and, retracting, with rows taken back (a delete, or an
// update's old row), taken back again after being re-added, and every row
// of a key taken back (its group is deleted); barriers, checkpoints
// (bases and deltas) and restores from them (the rows since fed again) in
// between. After every barrier each key's result must be the oracle's
// over the key's rows: the variance recomputed from its bag after a
// retraction (no drift, even when a 1e15 among small values leaves),
// BIT_AND and BIT_OR from theirs, GROUP_CONCAT from its entries.
func TestNewAggregatesOracle(t *testing.T) {
	for _, retract := range []bool{false, true} {
		for seed := range uint64(8) {
			t.Run(fmt.Sprintf("retract=%t/seed%d", retract, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 19))
				spec := newAggsSpec(retract)
				a, err := newHashAgg(spec, &Env{}, &Counters{})
				if err != nil {
					t.Fatal(err)
				}
				type op struct {
					r    plan.Row
					back bool
				}
				held := map[int64][]plan.Row{}
				randRow := func() plan.Row {
					k := rng.Int64N(4)
					r := plan.Row{plan.Int(k), plan.Int(rng.Int64N(64) - 8), plan.Float(rng.NormFloat64() * 10), plan.Str(fmt.Sprint("s", rng.IntN(30))), plan.Int(rng.Int64N(5))}
					switch rng.IntN(12) {
					case 0:
						r[1] = plan.Null
					case 1:
						r[2] = plan.Null
					case 2:
						r[3] = plan.Null
					case 3:
						r[4] = plan.Null
					case 4:
						r[2] = plan.Float(1e15) // then taken back: no drift
					case 5:
						r[3] = plan.Str(strings.Repeat("é", 100)) // GROUP_CONCAT is cut at 1024 bytes, in a character
					}
					return r
				}
				var ops []op
				for range 1500 {
					k := rng.Int64N(4)
					switch {
					case retract && len(held[k]) > 0 && rng.IntN(50) == 0:
						for _, r := range held[k] { // the key empties
							ops = append(ops, op{r, true})
						}
						held[k] = nil
					case retract && len(held[k]) > 0 && rng.IntN(3) == 0:
						i := rng.IntN(len(held[k]))
						r := held[k][i]
						ops = append(ops, op{r, true})
						held[k] = slices.Delete(held[k], i, i+1)
						if rng.IntN(2) == 0 { // re-inserted
							ops = append(ops, op{r, false})
							held[k] = append(held[k], r)
						}
					default:
						r := randRow()
						ops = append(ops, op{r, false})
						held[r[0].I] = append(held[r[0].I], r)
					}
				}
				got := rowsEmitter{}
				var log []byte
				logAt, gotAt := 0, rowsEmitter{}
				multiset := func(upTo int) map[int64][]plan.Row {
					m := map[int64][]plan.Row{}
					for _, o := range ops[:upTo] {
						k := o.r[0].I
						if !o.back {
							m[k] = append(m[k], o.r)
							continue
						}
						i := slices.IndexFunc(m[k], func(r plan.Row) bool { return slices.Equal(r, o.r) })
						m[k] = slices.Delete(m[k], i, i+1)
					}
					return m
				}
				check := func(at int) {
					t.Helper()
					want := multiset(at)
					n := 0
					for k, rows := range want {
						if len(rows) == 0 {
							continue
						}
						n++
						key := string(value.AppendValue(nil, plan.Int(k)))
						w := aggsOracle(k, rows, retract)
						if g := got[key]; !sameAggsRow(g, w, 1) {
							t.Fatalf("after op %d, key %d:\n got %v\nwant %v", at, k, g, w)
						}
					}
					if len(got) != n {
						t.Fatalf("after op %d: %d groups, want %d", at, len(got), n)
					}
				}
				for i := 0; i < len(ops); {
					b := &Batch{}
					for range 1 + rng.IntN(10) {
						if i == len(ops) {
							break
						}
						m := RowMeta{Key: string(value.AppendValue(nil, ops[i].r[0]))}
						if ops[i].back {
							m.Op = Delete
							if rng.IntN(2) == 0 {
								m.Op = Before
							}
						}
						b.Append(slices.Clone(ops[i].r), m)
						i++
					}
					if err := a.Process(b, got); err != nil {
						t.Fatal(err)
					}
					if rng.IntN(3) > 0 {
						continue
					}
					if err := a.Barrier(Barrier{CheckpointID: 1}, got); err != nil {
						t.Fatal(err)
					}
					check(i)
					if rng.IntN(2) > 0 {
						continue
					}
					w := &LogWriter{all: rng.IntN(4) == 0 || log == nil}
					if err := a.Snapshot(w); err != nil {
						t.Fatal(err)
					}
					if w.all {
						log = nil
					}
					log = append(log, slices.Concat(w.Close()...)...)
					logAt, gotAt = i, maps.Clone(got)
					if rng.IntN(2) > 0 {
						continue
					}
					r, err := blockReader(log)
					if err != nil {
						t.Fatal(err)
					}
					if a, err = newHashAgg(spec, &Env{}, &Counters{}); err != nil {
						t.Fatal(err)
					}
					if err := a.Restore(r); err != nil {
						t.Fatalf("restore after op %d: %v", i, err)
					}
					got, i = maps.Clone(gotAt), logAt
				}
				if err := a.Barrier(Barrier{}, got); err != nil {
					t.Fatal(err)
				}
				check(len(ops))
				if !retract {
					return
				}
				// Every row taken back: no group, no window, no bag, no
				// byte left.
				b := &Batch{}
				for _, rows := range multiset(len(ops)) {
					for _, r := range rows {
						b.Append(slices.Clone(r), RowMeta{Key: string(value.AppendValue(nil, r[0])), Op: Delete})
					}
				}
				if err := a.Process(b, got); err != nil {
					t.Fatal(err)
				}
				if err := a.Barrier(Barrier{}, got); err != nil {
					t.Fatal(err)
				}
				if len(got) != 0 || a.StateRows() != 0 || len(a.wins) != 0 || len(a.keys) != 0 || len(a.bags) != 0 || a.bytes != 0 {
					t.Fatalf("every row taken back: %d results, %d groups, %d windows, %d keys, %d bags, %d bytes", len(got), a.StateRows(), len(a.wins), len(a.keys), len(a.bags), a.bytes)
				}
			})
		}
	}
}

// TestApproxCountDistinctAccuracy: past its sparse form, the sketch's
// estimate of a million distinct values is within 2% (precision 14's
// standard error is 0.8%), and a snapshot restores the same estimate.
func TestApproxCountDistinctAccuracy(t *testing.T) {
	var a acc
	var buf []byte
	const n = 1_000_000
	for i := range n {
		if _, err := a.add(plan.AggApproxCountDistinct, plan.TypeBigint, plan.Int(int64(i)), &buf); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 { // repeats change nothing
			if _, err := a.add(plan.AggApproxCountDistinct, plan.TypeBigint, plan.Int(int64(i/2)), &buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	est := a.result(plan.AggApproxCountDistinct, plan.TypeBigint).I
	if math.Abs(float64(est-n)) > 0.02*n {
		t.Fatalf("estimate %d of %d distinct values", est, n)
	}
	if a.set.sketchBytes != denseSketchBytes {
		t.Errorf("a dense sketch estimated at %d bytes, want %d", a.set.sketchBytes, denseSketchBytes)
	}
	ag := &plan.Agg{Fn: plan.AggApproxCountDistinct}
	enc := appendAux(nil, ag.Fn, &a)
	var b acc
	if rest, err := decodeAux(enc, ag, &b); err != nil || len(rest) != 0 {
		t.Fatalf("decode: %v, %d bytes left", err, len(rest))
	}
	if got := b.result(plan.AggApproxCountDistinct, plan.TypeBigint).I; got != est {
		t.Fatalf("restored estimate %d, want %d", got, est)
	}
}

// TestNewAggregatesAllocs: the per-row work of the new aggregates
// allocates nothing once their state has its size (HyperLogLog hashes the
// value's encoding in the reused buffer; a dense sketch is a fixed array).
func TestNewAggregatesAllocs(t *testing.T) {
	spec := newAggsSpec(false)
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	b := &Batch{}
	key := string(value.AppendValue(nil, plan.Int(1)))
	for i := range 64 {
		b.Append(plan.Row{plan.Int(1), plan.Int(int64(i)), plan.Float(float64(i)), plan.Str("zz"), plan.Int(1)}, RowMeta{Key: key})
	}
	// Fill the sketch past its sparse form, and GROUP_CONCAT's entries to
	// their pruned steady state.
	warm := &Batch{}
	for i := range 100_000 {
		warm.Append(plan.Row{plan.Int(1), plan.Int(1), plan.Float(1), plan.Str(fmt.Sprint("v", i)), plan.Int(1)}, RowMeta{Key: key})
	}
	if err := a.Process(warm, rowsEmitter{}); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := a.Process(b, rowsEmitter{}); err != nil {
			t.Fatal(err)
		}
	})
	// Process allocates its output batch (one) and nothing per row.
	if allocs > 2 {
		t.Fatalf("%v allocations per batch of 64 rows", allocs)
	}
}

// TestMergeMatchesAdd: a session merge folds one accumulator into another
// (acc.merge); for every aggregate of aggs.go the result is the one of
// adding all the values to one accumulator (the variance to 1e-12; a
// merged sketch estimates as the sketch of all the values; GROUP_CONCAT's
// entries pruned alike).
func TestMergeMatchesAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ag := range newAggsSpec(false).Aggs[1:] {
		for _, n := range []int{0, 1, 2, 7, 300, 5000} {
			var all, x, y acc
			var buf []byte
			for i := range n {
				r := plan.Row{plan.Int(0), plan.Int(rng.Int64N(1000) - 500), plan.Float(rng.NormFloat64() * 1e6), plan.Str(fmt.Sprint("v", rng.IntN(2*n+1))), plan.Int(rng.Int64N(9))}
				if rng.IntN(10) == 0 {
					r[ag.Arg] = plan.Null
				}
				into := &x
				if i%3 == 0 {
					into = &y
				}
				for _, c := range []*acc{&all, into} {
					var err error
					if ag.Concat != nil {
						_, err = c.addConcat(&ag, r, &buf)
					} else {
						_, err = c.add(ag.Fn, ag.T, r[ag.Arg], &buf)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := x.merge(ag.Fn, ag.T, &ag, &y); err != nil {
				t.Fatal(err)
			}
			res := func(c *acc) plan.Value {
				if c.i == stale && refreshes(ag.Fn) {
					c.refresh(&ag, nil)
				}
				return c.result(ag.Fn, ag.T)
			}
			got, want := res(&x), res(&all)
			ok := got == want
			if got.K == plan.TypeDouble && want.K == plan.TypeDouble {
				ok = math.Abs(got.F()-want.F()) <= 1e-12*math.Abs(want.F())
			}
			if !ok {
				t.Errorf("%s over %d values: merged %v, all in one %v", ag, n, got, want)
			}
		}
	}
}

// BenchmarkRetractingVariance: one group of a retracting VAR_POP over
// 1000 values, each operation an update (the old value taken back, a new
// one added); a barrier every `updates` operations recomputes the
// variance from the bag (sorted). What a retraction costs is the bag's
// count change per row and one sort of the group's distinct values per
// emission.
func BenchmarkRetractingVariance(b *testing.B) {
	for _, updates := range []int{1, 100} {
		b.Run(fmt.Sprintf("barrier-every-%d", updates), func(b *testing.B) {
			spec := &plan.Aggregate{Keys: []int{0}, Retract: true, RowCount: 0, EmitMode: plan.EmitChanges,
				Aggs:   []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggVarPop, Arg: 1, T: plan.TypeDouble}},
				Output: []plan.Expr{&plan.ColRef{Index: 2, T: plan.TypeDouble}}, Out: plan.Schema{{Name: "v", Type: plan.TypeDouble}}}
			a, err := newHashAgg(spec, &Env{}, &Counters{})
			if err != nil {
				b.Fatal(err)
			}
			key := string(value.AppendValue(nil, plan.Int(1)))
			vals := make([]float64, 1000)
			in := &Batch{}
			for i := range vals {
				vals[i] = float64(i) * 1.5
				in.Append(plan.Row{plan.Int(1), plan.Float(vals[i])}, RowMeta{Key: key})
			}
			out := rowsEmitter{}
			if err := a.Process(in, out); err != nil {
				b.Fatal(err)
			}
			old, upd := &Batch{}, &Batch{}
			old.Append(plan.Row{plan.Int(1), plan.Float(0)}, RowMeta{Key: key, Op: Before})
			upd.Append(plan.Row{plan.Int(1), plan.Float(0)}, RowMeta{Key: key})
			b.ResetTimer()
			for i := range b.N {
				j := i % len(vals)
				old.Rows[0][1] = plan.Float(vals[j])
				vals[j] += 1
				upd.Rows[0][1] = plan.Float(vals[j])
				if err := a.Process(old, out); err != nil {
					b.Fatal(err)
				}
				if err := a.Process(upd, out); err != nil {
					b.Fatal(err)
				}
				if i%updates == 0 {
					if err := a.Barrier(Barrier{}, out); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestNewAggregatesSessions runs the append-only aggregates of
// newAggsSpec in session windows (gap 40) over random, mostly ordered
// rows of a few keys, with checkpoints and restores: sessions that bridge
// each other fold their accumulators together (acc.merge: Welford's
// moments by Chan's formula, bits, sketches merged, GROUP_CONCAT's
// entries added and pruned). Every session's final row must be the
// oracle's over its rows, and once every session closed nothing is held.
func TestNewAggregatesSessions(t *testing.T) {
	const gap = 40
	base := newAggsSpec(false)
	spec := &plan.Aggregate{Windowed: true, Session: true, Window: plan.WindowSpec{Kind: plan.Session, Gap: gap}, Keys: []int{1},
		EmitMode: plan.EmitOnWindowClose}
	spec.Out = plan.Schema{{Name: "ws", Type: plan.TypeTimestamp}, {Name: "we", Type: plan.TypeTimestamp}}
	for i, c := range base.Out {
		spec.Output = append(spec.Output, &plan.ColRef{Index: 2 + i, T: c.Type})
		spec.Out = append(spec.Out, c)
	}
	spec.Output = append([]plan.Expr{&plan.ColRef{Index: 0, T: plan.TypeTimestamp}, &plan.ColRef{Index: 1, T: plan.TypeTimestamp}}, spec.Output...)
	for _, ag := range base.Aggs { // the row gains the time in front
		if ag.Arg >= 0 {
			ag.Arg++
		}
		if ag.Concat != nil {
			c := *ag.Concat
			c.Order = slices.Clone(c.Order)
			for i := range c.Order {
				c.Order[i].Arg++
			}
			ag.Concat = &c
		}
		spec.Aggs = append(spec.Aggs, ag)
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 40))
			var rows []plan.Row // [ts, k, x, d, s, o]
			ts := int64(1000)
			for range 2000 {
				ts += rng.Int64N(12)
				r := plan.Row{plan.Time(ts - rng.Int64N(30)), plan.Int(rng.Int64N(3)), plan.Int(rng.Int64N(64) - 8), plan.Float(rng.NormFloat64()),
					plan.Str(fmt.Sprint("s", rng.IntN(400))), plan.Int(rng.Int64N(5))}
				if rng.IntN(8) == 0 {
					r[2+rng.IntN(4)] = plan.Null
				}
				rows = append(rows, r)
			}
			a, err := newHashAgg(spec, &Env{}, &Counters{})
			if err != nil {
				t.Fatal(err)
			}
			got := rowsEmitter{}
			var log []byte
			logAt, gotAt := 0, rowsEmitter{}
			maxTS := int64(math.MinInt64)
			for i := 0; i < len(rows); {
				b := &Batch{}
				for range 1 + rng.IntN(20) {
					if i == len(rows) {
						break
					}
					maxTS = max(maxTS, rows[i][0].I)
					b.Append(slices.Clone(rows[i]), RowMeta{Key: string(value.AppendValue(nil, rows[i][1])), WM: maxTS - 200})
					i++
				}
				if err := a.Process(b, got); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(4) > 0 {
					continue
				}
				w := &LogWriter{all: rng.IntN(4) == 0 || log == nil}
				if err := a.Snapshot(w); err != nil {
					t.Fatal(err)
				}
				if w.all {
					log = nil
				}
				log = append(log, slices.Concat(w.Close()...)...)
				logAt, gotAt = i, maps.Clone(got)
				if rng.IntN(2) > 0 {
					continue
				}
				r, err := blockReader(log)
				if err != nil {
					t.Fatal(err)
				}
				if a, err = newHashAgg(spec, &Env{}, &Counters{}); err != nil {
					t.Fatal(err)
				}
				if err := a.Restore(r); err != nil {
					t.Fatalf("restore after row %d: %v", i, err)
				}
				got, i, maxTS = maps.Clone(gotAt), logAt, int64(math.MinInt64)
				for _, r := range rows[:i] {
					maxTS = max(maxTS, r[0].I)
				}
			}
			if _, err := a.Watermark(math.MaxInt64, got); err != nil {
				t.Fatal(err)
			}
			// The oracle: per key, rows by time; a row at or past the
			// session's end (last + gap) starts the next one.
			want := map[string]plan.Row{}
			byK := map[int64][]plan.Row{}
			for _, r := range rows {
				byK[r[1].I] = append(byK[r[1].I], r)
			}
			for k, rs := range byK {
				slices.SortStableFunc(rs, func(x, y plan.Row) int { return cmp.Compare(x[0].I, y[0].I) })
				for i := 0; i < len(rs); {
					start, end := rs[i][0].I, rs[i][0].I+gap
					var in []plan.Row
					for ; i < len(rs) && rs[i][0].I < end; i++ {
						in = append(in, rs[i][1:])
						end = max(end, rs[i][0].I+gap)
					}
					key := string(value.AppendValue(value.AppendValue(value.AppendValue(nil, plan.Time(start)), plan.Time(end)), plan.Int(k)))
					want[key] = append(plan.Row{plan.Time(start), plan.Time(end)}, aggsOracle(k, in, false)...)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d sessions, want %d", len(got), len(want))
			}
			t.Logf("%d sessions of %d rows", len(want), len(rows))
			for key, w := range want {
				if g := got[key]; len(g) < 2 || g[0] != w[0] || g[1] != w[1] || !sameAggsRow(g[2:], w[2:], 1) {
					t.Fatalf("session %x:\n got %v\nwant %v", key, g, w)
				}
			}
			if a.StateRows() != 0 || len(a.wins) != 0 || len(a.keys) != 0 || a.bytes != 0 {
				t.Fatalf("every session closed: %d groups, %d windows, %d keys, %d bytes", a.StateRows(), len(a.wins), len(a.keys), a.bytes)
			}
		})
	}
}

// TestVarianceRetraction: 1, 2, 3, 4 and 1e15, the 1e15 taken back, then
// 5 added: VAR_POP is 1.25, then 2 (recomputed from the bag;
// Welford's removal formula gives 0 after the retraction), and the 1e15
// re-added and taken back again changes nothing.
func TestVarianceRetraction(t *testing.T) {
	spec := &plan.Aggregate{Keys: []int{0}, Retract: true, RowCount: 0, EmitMode: plan.EmitChanges,
		Aggs:   []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggVarPop, Arg: 1, T: plan.TypeDouble}},
		Output: []plan.Expr{&plan.ColRef{Index: 2, T: plan.TypeDouble}}, Out: plan.Schema{{Name: "v", Type: plan.TypeDouble}}}
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		t.Fatal(err)
	}
	key := string(value.AppendValue(nil, plan.Int(1)))
	out := rowsEmitter{}
	step := func(want float64, rows ...any) {
		t.Helper()
		b := &Batch{}
		for i := 0; i < len(rows); i += 2 {
			b.Append(plan.Row{plan.Int(1), plan.Float(rows[i+1].(float64))}, RowMeta{Key: key, Op: rows[i].(Op)})
		}
		if err := a.Process(b, out); err != nil {
			t.Fatal(err)
		}
		if err := a.Barrier(Barrier{}, out); err != nil {
			t.Fatal(err)
		}
		if got := out[key][0].F(); math.Abs(got-want) > 1e-12*want {
			t.Fatalf("VAR_POP %v, want %v", got, want)
		}
	}
	step(1.6e29, Insert, 1.0, Insert, 2.0, Insert, 3.0, Insert, 4.0, Insert, 1e15)
	step(1.25, Delete, 1e15)
	step(2, Insert, 5.0)
	step(2, Insert, 1e15, Before, 1e15)
}

// TestGroupConcatStateBounded: an append-only GROUP_CONCAT keeps a few
// KiB however many rows come, with or without ORDER BY, also when its
// values and separator are empty (each row adds nothing to "").
func TestGroupConcatStateBounded(t *testing.T) {
	for _, c := range []struct {
		sep   string
		order []plan.AggOrder
		val   func(i int) string
		want  func(string) bool
	}{
		{",", nil, func(i int) string { return fmt.Sprintf("%07d", 1_000_000-i) }, func(s string) bool { return strings.HasPrefix(s, "0800001,0800002,") }},
		{"", []plan.AggOrder{{Arg: 1, Desc: true}}, func(i int) string { return "ab" }, func(s string) bool { return s == strings.Repeat("ab", 512) }},
		{"", nil, func(int) string { return "" }, func(s string) bool { return s == "" }},
	} {
		ag := &plan.Agg{Fn: plan.AggGroupConcat, Arg: 0, T: plan.TypeVarchar, Concat: &plan.Concat{Sep: c.sep, Order: c.order}}
		var a acc
		var buf []byte
		peak := 0
		for i := range 200_000 {
			if _, err := a.addConcat(ag, plan.Row{plan.Str(c.val(i)), plan.Int(int64(i))}, &buf); err != nil {
				t.Fatal(err)
			}
			peak = max(peak, a.set.size())
		}
		a.refresh(ag, nil)
		if got := a.result(ag.Fn, ag.T); got.K != plan.TypeVarchar || !c.want(got.S) || len(got.S) > plan.GroupConcatMaxLen {
			t.Errorf("%s: result %.40q... (%d bytes)", ag, got.S, len(got.S))
		}
		if peak > 64<<10 {
			t.Errorf("%s: its entries took %d bytes at their peak", ag, peak)
		}
	}
}

// TestCheckSketch: the encodings of real sketches, sparse and dense, pass
// checkSketch; every truncation, extension and single-byte change of them
// either fails it or gives a sketch that estimates, takes values, merges
// and encodes again without panicking (the library checks little of what
// it decodes: a sparse list's varint running off its end, a dense
// sketch's registers fewer than its precision's, a length it allocates
// before checking).
func TestCheckSketch(t *testing.T) {
	for _, n := range []int{1, 100, 5000, 100_000} {
		var a acc
		var buf []byte
		for i := range n {
			if _, err := a.add(plan.AggApproxCountDistinct, plan.TypeBigint, plan.Int(int64(i)), &buf); err != nil {
				t.Fatal(err)
			}
		}
		enc := appendAux(nil, plan.AggApproxCountDistinct, &a)
		_, k := binary.Uvarint(enc)
		good := enc[k:]
		if err := checkSketch(good); err != nil {
			t.Fatalf("%d values: %v", n, err)
		}
		try := func(what string, b []byte) {
			if checkSketch(b) != nil {
				return
			}
			sk := hyperloglog.New14()
			if err := sk.UnmarshalBinary(slices.Clone(b)); err != nil {
				return
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%d values, %s: passed checkSketch, then panicked: %v", n, what, r)
					}
				}()
				sk.Estimate()
				sk.Insert([]byte("x"))
				other := hyperloglog.New14()
				other.Insert([]byte("y"))
				_ = sk.Merge(other)
				_ = other.Merge(sk)
				sk.Estimate()
				if _, err := sk.MarshalBinary(); err != nil {
					t.Fatal(err)
				}
			}()
		}
		for l := range len(good) {
			try(fmt.Sprintf("cut at %d", l), good[:l])
		}
		try("extended", append(slices.Clone(good), 0, 1))
		step := max(1, len(good)/150)
		for i := 0; i < len(good); i += step {
			for _, x := range []byte{0, 1, 0x7f, 0x80, 0xff} {
				b := slices.Clone(good)
				b[i] = x
				try(fmt.Sprintf("byte %d = %#x", i, x), b)
			}
		}
	}
}
