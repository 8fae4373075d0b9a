package op

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// The fuzz targets of this file feed the operators' state decoders
// (Restore) with real snapshots, which must round-trip, and with
// mutations of them, which must fail with an error: never a panic, an
// index out of range, or an allocation sized by a corrupt length. The
// runtime's decoders (rows, the state log's blocks, results, journals,
// source positions) have theirs in runtime/decode_fuzz_test.go.

// stateBlock encodes records (value nil: a delete) as a state log block.
func stateBlock(recs [][2][]byte) []byte {
	w := &LogWriter{all: true}
	for _, r := range recs {
		if r[1] == nil {
			w.Delete(r[0])
		} else {
			w.Put(r[0], r[1])
		}
	}
	return slices.Concat(w.Close()...)
}

// recordReader is the StateReader of records read back (parallelism 1:
// it owns every key), in key order.
type recordReader struct {
	keys []string
	vals map[string][]byte
}

func (r recordReader) Scan(fn func(k, v []byte) error) error {
	for _, k := range r.keys {
		if err := fn([]byte(k), r.vals[k]); err != nil {
			return err
		}
	}
	return nil
}

func (recordReader) Owns(string) bool { return true }

// blockReader reads the records of one block as a restored checkpoint
// (parallelism 1). Keys are collected in block order, not from the map:
// the fuzzer's coverage must not depend on map iteration order.
func blockReader(block []byte) (recordReader, error) {
	vals := map[string][]byte{}
	listed := map[string]bool{}
	var keys []string
	err := LogRecords(block, func(put bool, k, v []byte) error {
		if put && !listed[string(k)] {
			listed[string(k)] = true
			keys = append(keys, string(k))
		}
		if put {
			vals[string(k)] = v
		} else {
			delete(vals, string(k))
		}
		return nil
	})
	keys = slices.DeleteFunc(keys, func(k string) bool { _, ok := vals[k]; return !ok })
	slices.Sort(keys)
	return recordReader{keys: keys, vals: vals}, err
}

// snapshotBlock takes op's full snapshot as one block, and the records.
func snapshotBlock(t testing.TB, op Operator) ([]byte, map[string]string) {
	t.Helper()
	w := &LogWriter{all: true}
	if err := op.Snapshot(w); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	b := slices.Concat(w.Close()...)
	recs := map[string]string{}
	if err := LogRecords(b, func(put bool, k, v []byte) error { recs[string(k)] = string(v); return nil }); err != nil {
		t.Fatalf("own snapshot: %v", err)
	}
	return b, recs
}

type countEmitter struct {
	rows  int
	width int // rows must have it
	bad   string
}

func (e *countEmitter) Emit(b *Batch) error {
	for i, r := range b.Rows {
		if b.Meta[i].Op != Delete && len(r) != e.width && e.bad == "" {
			e.bad = fmt.Sprintf("row %v of %d columns, want %d", r, len(r), e.width)
		}
	}
	e.rows += b.Len()
	return nil
}

// fuzzAggSpecs are the aggregations FuzzAggState restores: HOP over
// (ts, k VARCHAR, v BIGINT) closing on the watermark with every aggregate
// function, sessions of SUM(v), and a running aggregate with HAVING.
func fuzzAggSpecs() []*plan.Aggregate {
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	ts, k, v := plan.Column{Name: "ws", Type: plan.TypeTimestamp}, plan.Column{Name: "k", Type: plan.TypeVarchar}, plan.Column{Name: "n", Type: plan.TypeBigint}
	hop := &plan.Aggregate{Windowed: true, Window: plan.WindowSpec{Kind: plan.Hop, Slide: 10, Size: 30}, Keys: []int{1},
		Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggCountDistinct, Arg: 2, T: plan.TypeBigint},
			{Fn: plan.AggSum, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggAvg, Arg: 2, T: plan.TypeDouble},
			{Fn: plan.AggMin, Arg: 1, T: plan.TypeVarchar}, {Fn: plan.AggMax, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggCount, Arg: 2, T: plan.TypeBigint}},
		Output:   []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeVarchar), col(3, plan.TypeBigint), col(4, plan.TypeBigint), col(5, plan.TypeBigint), col(6, plan.TypeDouble), col(7, plan.TypeVarchar), col(8, plan.TypeBigint), col(9, plan.TypeBigint)},
		Out:      plan.Schema{ts, ts, k, v, v, v, v, k, v, v},
		EmitMode: plan.EmitOnWindowClose, AllowedLateness: 5}
	session := &plan.Aggregate{Windowed: true, Session: true, Window: plan.WindowSpec{Kind: plan.Session, Gap: 10}, Keys: []int{1},
		Aggs:   []plan.Agg{{Fn: plan.AggSum, Arg: 2, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeVarchar), col(3, plan.TypeBigint)},
		Out:    plan.Schema{ts, ts, k, v}, EmitMode: plan.EmitChanges}
	// Sessions of COUNT(*), COUNT(DISTINCT v), SUM(v): merges move sets
	// between windows and fold them together.
	distinct := &plan.Aggregate{Windowed: true, Session: true, Window: plan.WindowSpec{Kind: plan.Session, Gap: 30}, Keys: []int{1},
		Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggCountDistinct, Arg: 2, T: plan.TypeBigint},
			{Fn: plan.AggSum, Arg: 2, T: plan.TypeBigint}},
		Output:   []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeVarchar), col(3, plan.TypeBigint), col(4, plan.TypeBigint), col(5, plan.TypeBigint)},
		Out:      plan.Schema{ts, ts, k, v, v, v},
		EmitMode: plan.EmitChanges}
	running := &plan.Aggregate{Keys: []int{0, 1},
		Aggs:   []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggSum, Arg: 2, T: plan.TypeDouble}},
		Having: &plan.Call{Fn: ">", T: plan.TypeBoolean, Args: []plan.Expr{col(2, plan.TypeBigint), &plan.Const{V: plan.Int(1)}}},
		Output: []plan.Expr{col(0, plan.TypeVarchar), col(1, plan.TypeBigint), col(2, plan.TypeBigint), col(3, plan.TypeDouble)},
		Out:    plan.Schema{k, v, v, {Name: "d", Type: plan.TypeDouble}}, EmitMode: plan.EmitChanges}
	// A running aggregate over an updating input: MIN, MAX and
	// COUNT(DISTINCT) keep bags (retract.go), COUNT(*) counts the rows.
	retracting := &plan.Aggregate{Keys: []int{0, 1}, Retract: true, RowCount: 0,
		Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggMin, Arg: 2, T: plan.TypeDouble},
			{Fn: plan.AggMax, Arg: 2, T: plan.TypeDouble}, {Fn: plan.AggCountDistinct, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggSum, Arg: 2, T: plan.TypeDouble}},
		Output: []plan.Expr{col(0, plan.TypeVarchar), col(1, plan.TypeBigint), col(2, plan.TypeBigint), col(3, plan.TypeDouble), col(4, plan.TypeDouble), col(5, plan.TypeBigint), col(6, plan.TypeDouble)},
		Out:    plan.Schema{k, v, v, {Name: "lo", Type: plan.TypeDouble}, {Name: "hi", Type: plan.TypeDouble}, v, {Name: "s", Type: plan.TypeDouble}}, EmitMode: plan.EmitChanges}
	// The aggregates of aggs.go: windowed over (ts, k, v), with the
	// sketch and GROUP_CONCAT's entries in the group records; running over
	// an updating input, with their bags.
	D, B, S := plan.TypeDouble, plan.TypeBigint, plan.TypeVarchar
	more := &plan.Aggregate{Windowed: true, Window: plan.WindowSpec{Kind: plan.Tumble, Size: 30}, Keys: []int{1},
		Aggs: []plan.Agg{{Fn: plan.AggVarSamp, Arg: 2, T: D}, {Fn: plan.AggBitAnd, Arg: 2, T: B}, {Fn: plan.AggBitXor, Arg: 2, T: B},
			{Fn: plan.AggApproxCountDistinct, Arg: 2, T: B},
			{Fn: plan.AggGroupConcat, Arg: 1, T: S, Concat: &plan.Concat{Sep: ";", Order: []plan.AggOrder{{Arg: 2, Desc: true}}}},
			{Fn: plan.AggGroupConcat, Arg: 1, T: S, Concat: &plan.Concat{Sep: ",", Distinct: true}}},
		Output:   []plan.Expr{col(0, plan.TypeTimestamp), col(2, S), col(3, D), col(4, B), col(5, B), col(6, B), col(7, S), col(8, S)},
		Out:      plan.Schema{ts, k, {Name: "d", Type: D}, v, v, v, k, k},
		EmitMode: plan.EmitOnWindowClose}
	moreRetracting := &plan.Aggregate{Keys: []int{0, 1}, Retract: true, RowCount: 0,
		Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: B}, {Fn: plan.AggStddevPop, Arg: 2, T: D}, {Fn: plan.AggBitOr, Arg: 1, T: B},
			{Fn: plan.AggBitXor, Arg: 1, T: B}, {Fn: plan.AggGroupConcat, Arg: 0, T: S, Concat: &plan.Concat{Sep: "-", Order: []plan.AggOrder{{Arg: 2}}}}},
		Output: []plan.Expr{col(0, S), col(1, B), col(2, B), col(3, D), col(4, B), col(5, B), col(6, S)},
		Out:    plan.Schema{k, v, v, {Name: "d", Type: D}, v, v, k}, EmitMode: plan.EmitChanges}
	return []*plan.Aggregate{hop, session, running, distinct, retracting, more, moreRetracting}
}

// fuzzAggRow is an input row of spec for group key vals at time ts.
func fuzzAggRow(spec *plan.Aggregate, vals plan.Row, ts int64) plan.Row {
	if spec.Windowed {
		return append(plan.Row{plan.Time(ts)}, append(vals, plan.Int(ts%7))...)
	}
	return append(slices.Clone(vals), plan.Float(float64(ts%7)))
}

// aggSeed is a block of aggregation records and the spec (its index in
// fuzzAggSpecs) that wrote it.
type aggSeed struct {
	which uint8
	block []byte
}

// aggSeeds runs rows through each spec and returns its full snapshot, and
// that snapshot followed by the delta of more rows (later windows, session
// merges, closed windows, sets that gained members).
func aggSeeds(f testing.TB) []aggSeed {
	var out []aggSeed
	for which, spec := range fuzzAggSpecs() {
		a, err := newHashAgg(spec, &Env{}, &Counters{})
		if err != nil {
			f.Fatal(err)
		}
		var prev plan.Row
		var prevMeta RowMeta
		feed := func(from, to int) {
			for i := from; i < to; i++ {
				if spec.Retract && i%3 == 2 && prev != nil {
					// Take the row before back.
					b := &Batch{}
					m := prevMeta
					m.Op = Delete
					b.Append(prev, m)
					if err := a.Process(b, &countEmitter{width: len(spec.Out)}); err != nil {
						f.Fatal(err)
					}
					prev = nil
					continue
				}
				vals := plan.Row{plan.Str(fmt.Sprint("k", i%3))}
				if !spec.Windowed {
					vals = plan.Row{plan.Str(fmt.Sprint("k", i%3)), plan.Int(int64(i % 2))}
				}
				if i%5 == 0 {
					vals[0] = plan.Null
				}
				r := fuzzAggRow(spec, vals, int64(i*4))
				b := &Batch{}
				keys := make([]int, len(vals))
				for j := range keys {
					keys[j] = spec.Keys[j]
				}
				m := RowMeta{Key: string(value.EncodeKey(nil, r, keys)), WM: int64(i*4 - 20)}
				b.Append(r, m)
				prev, prevMeta = r, m
				if err := a.Process(b, &countEmitter{width: len(spec.Out)}); err != nil {
					f.Fatal(err)
				}
			}
		}
		feed(0, 12)
		if err := a.Barrier(Barrier{Epoch: 1, CheckpointID: 1}, &countEmitter{width: len(spec.Out)}); err != nil {
			f.Fatal(err)
		}
		base, _ := snapshotBlock(f, a)
		feed(12, 24)
		if err := a.Barrier(Barrier{Epoch: 2, CheckpointID: 2}, &countEmitter{width: len(spec.Out)}); err != nil {
			f.Fatal(err)
		}
		w := &LogWriter{}
		if err := a.Snapshot(w); err != nil {
			f.Fatal(err)
		}
		delta := slices.Concat(w.Close()...)
		out = append(out, aggSeed{uint8(which), base}, aggSeed{uint8(which), slices.Concat(base, delta)})
	}
	return out
}

// FuzzAggState restores a windowed or running aggregation from any block
// of records. A state that restores snapshots to records that restore to
// the same records; the operator then runs over it (rows for every group,
// every window closed, a checkpoint) without panicking.
func FuzzAggState(f *testing.F) {
	for _, sd := range aggSeeds(f) {
		f.Add(sd.which, sd.block)
	}
	f.Fuzz(func(t *testing.T, which uint8, block []byte) {
		t0 := time.Now()
		checkAggState(t, which, block)
		if d := time.Since(t0); d > 500*time.Millisecond {
			t.Fatalf("SLOW %v: %d %x", d, which, block)
		}
	})
}

// checkAggState is FuzzAggState's check of one input.
func checkAggState(t *testing.T, which uint8, block []byte) {
	{
		specs := fuzzAggSpecs()
		spec := specs[int(which)%len(specs)]
		r, err := blockReader(block)
		if err != nil {
			return
		}
		a, err := newHashAgg(spec, &Env{}, &Counters{})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Restore(r); err != nil {
			if !strings.HasPrefix(err.Error(), "aggregation state") {
				t.Fatalf("error does not name the state: %v", err)
			}
			return
		}
		b1, recs1 := snapshotBlock(t, a)
		r1, _ := blockReader(b1)
		a2, _ := newHashAgg(spec, &Env{}, &Counters{})
		if err := a2.Restore(r1); err != nil {
			t.Fatalf("restoring its own snapshot: %v", err)
		}
		if _, recs2 := snapshotBlock(t, a2); !maps.Equal(recs1, recs2) {
			t.Fatalf("snapshot of the restored snapshot differs:\n%q\n%q", recs1, recs2)
		}

		out := &countEmitter{width: len(spec.Out)}
		b := &Batch{}
		for _, k := range r.keys {
			if k[0] == chunkRecord || k[0] == bagRecord {
				continue
			}
			wk, _ := decodeWinKey([]byte(k))
			vals := plan.Row{}
			kb := []byte(wk.key)
			for range len(spec.Keys) {
				var v plan.Value
				v, kb, _ = value.DecodeValue(kb)
				vals = append(vals, v)
			}
			b.Append(fuzzAggRow(spec, vals, wk.start), RowMeta{Key: wk.key, WM: window.NoWatermark})
		}
		if err := a.Process(b, out); err != nil {
			return // a SUM overflows
		}
		if err := a.Barrier(Barrier{Epoch: 2}, out); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Watermark(math.MaxInt64, out); err != nil {
			t.Fatal(err)
		}
		if err := a.Barrier(Barrier{Epoch: 3, CheckpointID: 3}, out); err != nil {
			t.Fatal(err)
		}
		w := &LogWriter{}
		if err := a.Snapshot(w); err != nil {
			t.Fatal(err)
		}
		if out.bad != "" {
			t.Fatal(out.bad)
		}
	}
}

// joinSeeds runs rows through an interval LEFT join and an AS OF temporal
// join and returns their full snapshots.
func joinSeeds(f testing.TB) [][]byte {
	var out [][]byte
	for _, op := range fuzzJoins(f) {
		e := &countEmitter{width: 6}
		_, changelog := op.(*changelogJoin)
		held := map[string]plan.Row{} // the changelog join's updating side, by id
		for i := range 12 {
			side := i % 2
			r := jr(int64(i%4), int64(100+i*3), int64(i))
			if i%7 == 0 {
				r[2] = plan.Null
			}
			b := &Batch{}
			m := RowMeta{Offset: int64(i), Key: string(value.EncodeKey(nil, r, []int{0})), Op: Insert}
			if side == sideRight {
				m.Op = Upsert
				if i%9 == 0 {
					m.Op = Delete
				}
			}
			if changelog && side == sideRight {
				// An updating input: a row's id is its key; an update takes
				// the old row back first.
				m.ID = m.Key
				if old, ok := held[m.ID]; ok {
					bm := m
					bm.Op = Before
					if m.Op == Delete {
						bm.Op = Delete
					}
					b.Append(old, bm)
					delete(held, m.ID)
				}
				if m.Op == Delete {
					if err := op.ProcessSide(side, b, e); err != nil {
						f.Fatal(err)
					}
					continue
				}
				held[m.ID] = r
			}
			b.Append(r, m)
			if err := op.ProcessSide(side, b, e); err != nil {
				f.Fatal(err)
			}
			if _, err := op.WatermarkSide(side, int64(80+i*3), e); err != nil {
				f.Fatal(err)
			}
		}
		b, _ := snapshotBlock(f, op)
		out = append(out, b)
	}
	return out
}

// fuzzJoins are an interval LEFT join (-10..10 with a residual) and an
// AS OF LEFT temporal join, over join_test.go's schemas.
func fuzzJoins(tb testing.TB) []TwoInput {
	ij, err := newIntervalJoin(joinSpec(plan.LeftJoin, -10, 10, residualVLessW()), &Env{}, &Counters{})
	if err != nil {
		tb.Fatal(err)
	}
	tj, err := newTemporalJoin(temporalSpec(plan.LeftJoin, true, residualVLessW()), &Env{}, &Counters{})
	if err != nil {
		tb.Fatal(err)
	}
	// A LEFT join of an append-only stream (its rows held for 50 past the
	// join's watermark) with an updating input.
	cj, err := newChangelogJoin(&plan.ChangelogJoin{Kind: plan.LeftJoin, LeftKeys: []int{0}, RightKeys: []int{0}, Residual: residualVLessW(),
		Updating: [2]bool{false, true}, Time: [2]int{1, -1}, TTL: 50, Left: joinLeftSchema, Right: joinRightSchema,
		Out: append(append(plan.Schema{}, joinLeftSchema...), joinRightSchema...)}, &Env{}, &Counters{})
	if err != nil {
		tb.Fatal(err)
	}
	return []TwoInput{ij, tj, cj}
}

// FuzzJoinState restores an interval join or a temporal join from any
// block of records: a state that restores snapshots to records that
// restore to the same records, and the join then runs over it (rows on
// both sides for every key held, both watermarks to the end, the table
// side idle) without panicking.
func FuzzJoinState(f *testing.F) {
	for i, b := range joinSeeds(f) {
		f.Add(uint8(i), b)
	}
	f.Fuzz(checkJoinState)
}

// checkJoinState is FuzzJoinState's check of one input.
func checkJoinState(t *testing.T, which uint8, block []byte) {
	{
		r, err := blockReader(block)
		if err != nil {
			return
		}
		i := int(which) % len(fuzzJoins(t))
		op := fuzzJoins(t)[i]
		if err := op.Restore(r); err != nil {
			if !strings.Contains(err.Error(), "join state record") && !strings.Contains(err.Error(), "join watermark record") {
				t.Fatalf("error does not name the record: %v", err)
			}
			return
		}
		b1, recs1 := snapshotBlock(t, op)
		r1, _ := blockReader(b1)
		op2 := fuzzJoins(t)[i]
		if err := op2.Restore(r1); err != nil {
			t.Fatalf("restoring its own snapshot: %v", err)
		}
		if _, recs2 := snapshotBlock(t, op2); !maps.Equal(recs1, recs2) {
			t.Fatalf("snapshot of the restored snapshot differs:\n%q\n%q", recs1, recs2)
		}

		out := &countEmitter{width: 6}
		for _, k := range r.keys {
			if k[0] == wmRecord {
				continue // a watermark record (a suffix is allowed)
			}
			_, jrow, _ := decodeRowRecord([]byte(k), r.vals[k])
			for side := range 2 {
				row := jr(0, jrow.time, 1)
				b := &Batch{}
				m := RowMeta{Key: jrow.key, Op: Insert}
				if side == sideRight {
					m.Op = Upsert
				}
				b.Append(row, m)
				if err := op.ProcessSide(side, b, out); err != nil {
					t.Fatal(err)
				}
			}
		}
		if tj, ok := op.(Idler); ok {
			if _, err := tj.SideIdle(sideRight, true, out); err != nil {
				t.Fatal(err)
			}
		}
		for side := range 2 {
			if _, err := op.WatermarkSide(side, math.MaxInt64, out); err != nil {
				t.Fatal(err)
			}
		}
		w := &LogWriter{}
		if err := op.Snapshot(w); err != nil {
			t.Fatal(err)
		}
		if out.bad != "" {
			t.Fatal(out.bad)
		}
	}
}

// fuzzTopNs are Top-N specs of each mode over rows (k, t, v): partition
// k, order v DESC (dedup: t), window end t.
func fuzzTopNs() []*plan.TopN {
	out := plan.Schema{{Name: "k", Type: plan.TypeBigint}, {Name: "t", Type: plan.TypeTimestamp}, {Name: "v", Type: plan.TypeBigint}, {Name: "rn", Type: plan.TypeBigint}}
	keep := []int{0, 1, 2, 3}
	return []*plan.TopN{
		{Fn: plan.RowNumber, Partition: []int{0}, Order: []plan.OrderCol{{Col: 2, Desc: true}}, Limit: 2, Keep: keep, RankAt: 3, Out: out, TimeCol: -1},
		{Fn: plan.Rank, Partition: []int{0}, Order: []plan.OrderCol{{Col: 2}}, Limit: 3, Retract: true, Keep: keep, RankAt: 3, Out: out, TimeCol: -1},
		{Fn: plan.RowNumber, Partition: []int{0}, Order: []plan.OrderCol{{Col: 1}}, Limit: 1, Mode: plan.TopNDedup, TimeCol: 1, TTL: 50, Keep: keep, RankAt: 3, Out: out},
		{Fn: plan.DenseRank, Partition: []int{0, 1}, Order: []plan.OrderCol{{Col: 2, Desc: true}}, Limit: 2, Mode: plan.TopNWindow, TimeCol: 1, Keep: keep, RankAt: 3, Out: out},
	}
}

func topNSeeds(f testing.TB) [][]byte {
	var out [][]byte
	for _, spec := range fuzzTopNs() {
		op, err := newTopN(spec, &Counters{})
		if err != nil {
			f.Fatal(err)
		}
		e := &countEmitter{width: 4}
		for i := range 12 {
			r := plan.Row{plan.Int(int64(i % 3)), plan.Time(int64(100 + i*7%40)), plan.Int(int64(i * 5 % 11)), plan.Int(0)}
			b := &Batch{}
			b.Append(r, RowMeta{Offset: int64(i), Key: string(value.EncodeKey(nil, r, spec.Partition)), WM: 90})
			if err := op.Process(b, e); err != nil {
				f.Fatal(err)
			}
		}
		if err := op.Barrier(Barrier{Epoch: 1, CheckpointID: 1}, e); err != nil {
			f.Fatal(err)
		}
		b, _ := snapshotBlock(f, op)
		out = append(out, b)
	}
	return out
}

// FuzzTopNState restores Top-N state from arbitrary records: a record
// that does not decode is an error naming the Top-N's state, never a
// panic; a restored state snapshots to the same records, and takes rows,
// watermarks and barriers.
func FuzzTopNState(f *testing.F) {
	for i, b := range topNSeeds(f) {
		f.Add(uint8(i), b)
	}
	f.Fuzz(func(t *testing.T, which uint8, block []byte) {
		r, err := blockReader(block)
		if err != nil {
			return
		}
		specs := fuzzTopNs()
		spec := specs[int(which)%len(specs)]
		op, err := newTopN(spec, &Counters{})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Restore(r); err != nil {
			if !strings.Contains(err.Error(), "topn state") {
				t.Fatalf("error does not name the state: %v", err)
			}
			return
		}
		b1, recs1 := snapshotBlock(t, op)
		r1, _ := blockReader(b1)
		op2, _ := newTopN(spec, &Counters{})
		if err := op2.Restore(r1); err != nil {
			t.Fatalf("restoring its own snapshot: %v", err)
		}
		if _, recs2 := snapshotBlock(t, op2); !maps.Equal(recs1, recs2) {
			t.Fatalf("snapshot of the restored snapshot differs:\n%q\n%q", recs1, recs2)
		}
		e := &countEmitter{width: 4}
		for _, k := range r.keys {
			row := plan.Row{plan.Int(1), plan.Time(120), plan.Int(3), plan.Int(0)}
			b := &Batch{}
			b.Append(row, RowMeta{Key: k, Op: Insert, WM: 100})
			if spec.Retract {
				b.Append(row, RowMeta{Key: k, Op: Delete, WM: 100})
			}
			if err := op.Process(b, e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := op.Watermark(math.MaxInt64-1, e); err != nil {
			t.Fatal(err)
		}
		if err := op.Barrier(Barrier{Epoch: 2}, e); err != nil {
			t.Fatal(err)
		}
		if err := op.Snapshot(&LogWriter{}); err != nil {
			t.Fatal(err)
		}
		if e.bad != "" {
			t.Fatal(e.bad)
		}
	})
}
