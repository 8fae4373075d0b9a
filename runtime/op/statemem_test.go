package op

import (
	"fmt"
	goruntime "runtime"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// TestStateBytes: every stateful operator's StateBytes, an estimate kept
// by integer adds, tells the truth about a large state: it is within 0.5x
// to 2x of the heap the state takes (runtime.MemStats, after collecting
// garbage, before the operator is built and once its state is in), for
// many small groups, one large COUNT(DISTINCT) set, many small sets,
// VARCHAR keys and MIN/MAX strings, held join rows and table versions; and
// it returns to zero (aggregations) once everything closed or expired.
func TestStateBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds states of tens of MB")
	}
	key := func(v plan.Value) string { return string(value.AppendValue(nil, v)) }
	check := func(t *testing.T, build func() (Stateful, func())) {
		var before, after goruntime.MemStats
		readHeap(&before)
		op, finish := build()
		readHeap(&after)
		grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		est := op.StateBytes()
		ratio := float64(est) / float64(grown)
		t.Logf("%d rows of state: estimate %d bytes, heap grew %d bytes (%.2fx)", op.StateRows(), est, grown, ratio)
		if ratio < 0.5 || ratio > 2 {
			t.Errorf("StateBytes %d is %.2fx the heap the state took (%d bytes), want 0.5x to 2x", est, ratio, grown)
		}
		finish()
		goruntime.KeepAlive(op)
	}
	agg := func(t *testing.T, spec *plan.Aggregate) *hashAgg {
		a, err := newHashAgg(spec, &Env{}, &Counters{})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	closeAll := func(t *testing.T, a *hashAgg) func() {
		return func() {
			if _, err := a.Watermark(1<<62, nopEmitter{}); err != nil {
				t.Fatal(err)
			}
			if a.spec.Windowed && (a.bytes != 0 || a.StateRows() != 0) {
				t.Errorf("every window closed: %d groups, StateBytes %d", a.StateRows(), a.bytes)
			}
		}
	}

	t.Run("hop groups", func(t *testing.T) {
		// q5-core: COUNT(*) per auction in 5 HOP windows, 100,000 auctions.
		check(t, func() (Stateful, func()) {
			a := q5CoreAgg(t)
			for i := 0; i < 100_000; i += 1000 {
				if err := a.Process(q5CoreBatch(i, 1000, 10_000), nopEmitter{}); err != nil {
					t.Fatal(err)
				}
			}
			return a, closeAll(t, a)
		})
	})
	t.Run("long session set", func(t *testing.T) {
		check(t, func() (Stateful, func()) {
			a := agg(t, sessionDistinctSpec(3_600_000, plan.EmitChanges))
			for i := 0; i < 300_000; i += 1000 {
				longSession(t, a, longSessionRows(1000, i))
			}
			return a, closeAll(t, a)
		})
	})
	t.Run("small sets, varchar keys and strings", func(t *testing.T) {
		// TUMBLE(ts, 1h) GROUP BY k (VARCHAR) with COUNT(DISTINCT
		// v), MIN(s), MAX(s) over 20,000 keys of 20 values each.
		col := func(i int, tp plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: tp} }
		ts, k := plan.Column{Name: "ts", Type: plan.TypeTimestamp}, plan.Column{Name: "k", Type: plan.TypeVarchar}
		n := plan.Column{Name: "n", Type: plan.TypeBigint}
		spec := &plan.Aggregate{Windowed: true, Window: plan.WindowSpec{Kind: plan.Tumble, Size: 3_600_000}, Keys: []int{1},
			Aggs:   []plan.Agg{{Fn: plan.AggCountDistinct, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggMin, Arg: 3, T: plan.TypeVarchar}, {Fn: plan.AggMax, Arg: 3, T: plan.TypeVarchar}},
			Output: []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeVarchar), col(3, plan.TypeBigint), col(4, plan.TypeVarchar), col(5, plan.TypeVarchar)},
			Out:    plan.Schema{ts, ts, k, n, k, k}, EmitMode: plan.EmitOnWindowClose}
		check(t, func() (Stateful, func()) {
			a := agg(t, spec)
			for v := range 20 {
				b := &Batch{}
				for i := range 20_000 {
					kv := plan.Str(fmt.Sprintf("customer-%08d", i))
					b.Append(plan.Row{plan.Time(int64(v)), kv, plan.Int(int64(v * i)), plan.Str(fmt.Sprintf("item %d of customer %d", v, i))},
						RowMeta{Key: key(kv), WM: window.NoWatermark})
				}
				if err := a.Process(b, nopEmitter{}); err != nil {
					t.Fatal(err)
				}
			}
			return a, closeAll(t, a)
		})
	})
	t.Run("sketches and concat entries", func(t *testing.T) {
		// TUMBLE(ts, 1h) GROUP BY k (VARCHAR) with APPROX_COUNT_DISTINCT(v)
		// and GROUP_CONCAT(s): sparse sketches (2,000 keys of 150 values)
		// and dense ones (40 keys of 10,000), GROUP_CONCAT's entries pruned
		// to about 1 KiB of result each.
		col := func(i int, tp plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: tp} }
		ts, k := plan.Column{Name: "ts", Type: plan.TypeTimestamp}, plan.Column{Name: "k", Type: plan.TypeVarchar}
		n := plan.Column{Name: "n", Type: plan.TypeBigint}
		spec := &plan.Aggregate{Windowed: true, Window: plan.WindowSpec{Kind: plan.Tumble, Size: 3_600_000}, Keys: []int{1},
			Aggs: []plan.Agg{{Fn: plan.AggApproxCountDistinct, Arg: 2, T: plan.TypeBigint},
				{Fn: plan.AggGroupConcat, Arg: 3, T: plan.TypeVarchar, Concat: &plan.Concat{Sep: ","}}},
			Output: []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeVarchar), col(3, plan.TypeBigint), col(4, plan.TypeVarchar)},
			Out:    plan.Schema{ts, ts, k, n, k}, EmitMode: plan.EmitOnWindowClose}
		for _, c := range []struct{ keys, vals int }{{2000, 150}, {40, 10_000}} {
			t.Run(fmt.Sprintf("%dx%d", c.keys, c.vals), func(t *testing.T) {
				check(t, func() (Stateful, func()) {
					a := agg(t, spec)
					for v := range c.vals {
						b := &Batch{}
						for i := range c.keys {
							kv := plan.Str(fmt.Sprintf("customer-%08d", i))
							b.Append(plan.Row{plan.Time(int64(v)), kv, plan.Int(int64(v*c.keys + i)), plan.Str(fmt.Sprintf("item %d of customer %d", v, i))},
								RowMeta{Key: key(kv), WM: window.NoWatermark})
						}
						if err := a.Process(b, nopEmitter{}); err != nil {
							t.Fatal(err)
						}
					}
					return a, closeAll(t, a)
				})
			})
		}
	})
	t.Run("retracting bags", func(t *testing.T) {
		// A running aggregate over an updating input, GROUP BY k (VARCHAR)
		// with COUNT(*), COUNT(DISTINCT v), MIN(s), MAX(s): bags of 20
		// values for 20,000 keys. Taking every row back leaves nothing.
		col := func(i int, tp plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: tp} }
		k, n := plan.Column{Name: "k", Type: plan.TypeVarchar}, plan.Column{Name: "n", Type: plan.TypeBigint}
		spec := &plan.Aggregate{Keys: []int{0}, Retract: true, RowCount: 0,
			Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggCountDistinct, Arg: 1, T: plan.TypeBigint},
				{Fn: plan.AggMin, Arg: 2, T: plan.TypeVarchar}, {Fn: plan.AggMax, Arg: 2, T: plan.TypeVarchar}},
			Output: []plan.Expr{col(0, plan.TypeVarchar), col(1, plan.TypeBigint), col(2, plan.TypeBigint), col(3, plan.TypeVarchar), col(4, plan.TypeVarchar)},
			Out:    plan.Schema{k, n, n, k, k}, EmitMode: plan.EmitChanges}
		rows := func(v int, op Op) *Batch {
			b := &Batch{}
			for i := range 20_000 {
				kv := plan.Str(fmt.Sprintf("customer-%08d", i))
				b.Append(plan.Row{kv, plan.Int(int64(v * i)), plan.Str(fmt.Sprintf("item %d of customer %d", v, i))}, RowMeta{Key: key(kv), Op: op})
			}
			return b
		}
		check(t, func() (Stateful, func()) {
			a := agg(t, spec)
			for v := range 20 {
				if err := a.Process(rows(v, Insert), nopEmitter{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Barrier(Barrier{Epoch: 1}, nopEmitter{}); err != nil {
				t.Fatal(err)
			}
			return a, func() {
				for v := range 20 {
					if err := a.Process(rows(v, Delete), nopEmitter{}); err != nil {
						t.Fatal(err)
					}
				}
				if err := a.Barrier(Barrier{Epoch: 2}, nopEmitter{}); err != nil {
					t.Fatal(err)
				}
				if a.bytes != 0 || a.StateRows() != 0 || len(a.bags) != 0 {
					t.Errorf("every row taken back: %d groups, %d with bags, StateBytes %d", a.StateRows(), len(a.bags), a.bytes)
				}
			}
		})
	})
	t.Run("normalized rows", func(t *testing.T) {
		// A PRIMARY KEY table's 200,000 latest rows; deleting them all
		// leaves nothing.
		sc := plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "name", Type: plan.TypeVarchar}, {Name: "ts", Type: plan.TypeTimestamp}}
		rows := func(op Op) *Batch {
			b := &Batch{}
			for i := range 200_000 {
				r := plan.Row{plan.Int(int64(i)), plan.Str(fmt.Sprintf("person %d", i)), plan.Time(int64(i))}
				b.Append(r, RowMeta{Key: key(r[0]), Op: op})
			}
			return b
		}
		check(t, func() (Stateful, func()) {
			n := newNormalize(&plan.Normalize{Table: "p", Key: []int{0}, Out: sc})
			if err := n.Process(rows(Upsert), nopEmitter{}); err != nil {
				t.Fatal(err)
			}
			return n, func() {
				if err := n.Process(rows(Delete), nopEmitter{}); err != nil {
					t.Fatal(err)
				}
				if n.bytes != 0 || n.StateRows() != 0 {
					t.Errorf("every row deleted: %d rows, StateBytes %d", n.StateRows(), n.bytes)
				}
			}
		})
	})
	t.Run("interval join rows", func(t *testing.T) {
		check(t, func() (Stateful, func()) {
			j, err := newIntervalJoin(joinSpec(plan.InnerJoin, -1_000_000, 1_000_000, nil), &Env{}, &Counters{})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 200_000; i += 1000 {
				for side := range 2 {
					b := &Batch{}
					for k := i; k < i+1000; k++ {
						r := jr(int64(k%50_000), int64(k), int64(k))
						b.Append(r, RowMeta{Key: key(r[0]), Offset: int64(k)})
					}
					if err := j.ProcessSide(side, b, nopEmitter{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			return j, func() {
				if _, err := j.Watermark(1<<62, nopEmitter{}); err != nil {
					t.Fatal(err)
				}
				if j.bytes != 0 || j.StateRows() != 0 {
					t.Errorf("every row expired: %d rows, StateBytes %d", j.StateRows(), j.bytes)
				}
			}
		})
	})
	t.Run("temporal join versions", func(t *testing.T) {
		check(t, func() (Stateful, func()) {
			j, err := newTemporalJoin(temporalSpec(plan.InnerJoin, false, nil), &Env{}, &Counters{})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 300_000; i += 1000 {
				b := &Batch{}
				for k := i; k < i+1000; k++ {
					r := jr(int64(k%100_000), int64(k), int64(k))
					b.Append(r, RowMeta{Key: key(r[0]), Offset: int64(k), Op: Upsert})
				}
				if err := j.ProcessSide(sideRight, b, nopEmitter{}); err != nil {
					t.Fatal(err)
				}
			}
			return j, func() {}
		})
	})
}
