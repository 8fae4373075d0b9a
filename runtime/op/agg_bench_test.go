package op

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// q5CoreAgg is the aggregation of Nexmark q5-core: COUNT(*) per auction
// over HOP(date_time, 2s, 10s), changes mode. Input rows: [time, auction].
func q5CoreAgg(tb testing.TB) *hashAgg {
	ws, we := plan.Column{Name: "window_start", Type: plan.TypeTimestamp}, plan.Column{Name: "window_end", Type: plan.TypeTimestamp}
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	spec := &plan.Aggregate{Windowed: true, Window: plan.WindowSpec{Kind: plan.Hop, Slide: 2000, Size: 10000}, Keys: []int{1},
		Aggs:   []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}},
		Output: []plan.Expr{col(2, plan.TypeBigint), col(3, plan.TypeBigint), col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp)},
		Out:    plan.Schema{{Name: "auction", Type: plan.TypeBigint}, {Name: "num", Type: plan.TypeBigint}, ws, we}, EmitMode: plan.EmitChanges}
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

type nopEmitter struct{}

func (nopEmitter) Emit(*Batch) error { return nil }

// q5CoreBatch is n rows of distinct auctions at time ts, keyed as the
// exchange keys them.
func q5CoreBatch(first, n int, ts int64) *Batch {
	b := &Batch{Rows: make([]plan.Row, n), Meta: make([]RowMeta, n)}
	for i := range n {
		r := plan.Row{plan.Time(ts), plan.Int(int64(first + i))}
		b.Rows[i] = r
		b.Meta[i] = RowMeta{Key: string(value.EncodeKey(nil, r, []int{1})), WM: window.NoWatermark}
	}
	return b
}

// BenchmarkAggEntryMemory reports the heap bytes per live (window, key)
// group of q5-core's aggregation (metric bytes/entry): 100,000 auctions,
// each in the 5 windows of one HOP row. Run with
// `go test -run X -bench AggEntryMemory ./runtime/op`.
func BenchmarkAggEntryMemory(b *testing.B) {
	const auctions = 100_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a := q5CoreAgg(b)
		for i := 0; i < auctions; i += 1000 {
			if err := a.Process(q5CoreBatch(i, 1000, 10_000), nopEmitter{}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if a.StateRows() != 5*auctions {
			b.Fatalf("%d groups, want %d", a.StateRows(), 5*auctions)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(a.StateRows()), "bytes/entry")
		runtime.KeepAlive(a)
	}
}

// BenchmarkAggHop measures q5-core's aggregation alone: ns per input row
// (5 window updates each), rows over a sliding range of auctions and time.
func BenchmarkAggHop(b *testing.B) {
	a := q5CoreAgg(b)
	batches := make([]*Batch, 100)
	for i := range batches {
		batches[i] = q5CoreBatch(i*50%5000, 1000, int64(i)*100)
	}
	benchBatches(b, a, batches)
}

// sessionDistinctSpec: SESSION_WINDOW(ts, gap) GROUP BY k (BIGINT) with
// COUNT(*), COUNT(DISTINCT v), SUM(v), MIN(v), MAX(v). Input rows are
// [ts, k, v]; output rows [window_start, window_end, k, aggregates...].
func sessionDistinctSpec(gap int64, mode plan.EmitMode) *plan.Aggregate {
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	ts, v := plan.Column{Name: "ts", Type: plan.TypeTimestamp}, plan.Column{Name: "v", Type: plan.TypeBigint}
	return &plan.Aggregate{Windowed: true, Session: true, Window: plan.WindowSpec{Kind: plan.Session, Gap: gap}, Keys: []int{1},
		Aggs: []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: plan.TypeBigint}, {Fn: plan.AggCountDistinct, Arg: 2, T: plan.TypeBigint},
			{Fn: plan.AggSum, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggMin, Arg: 2, T: plan.TypeBigint}, {Fn: plan.AggMax, Arg: 2, T: plan.TypeBigint}},
		Output: []plan.Expr{col(0, plan.TypeTimestamp), col(1, plan.TypeTimestamp), col(2, plan.TypeBigint), col(3, plan.TypeBigint),
			col(4, plan.TypeBigint), col(5, plan.TypeBigint), col(6, plan.TypeBigint), col(7, plan.TypeBigint)},
		Out:      plan.Schema{ts, ts, v, v, v, v, v, v},
		EmitMode: mode}
}

// longSession feeds n rows of one key to a session aggregation with a gap
// of an hour: time rising by 1 ms, a new distinct value in each row (the
// issue's workload: SESSION_WINDOW(ts, '1h'), COUNT(DISTINCT u),
// COUNT(*)), in batches of 100 with the watermark of the row before.
func longSession(tb testing.TB, a *hashAgg, batches []*Batch) {
	tb.Helper()
	for _, b := range batches {
		if err := a.Process(b, nopEmitter{}); err != nil {
			tb.Fatal(err)
		}
	}
}

// longSessionRows is longSession's input: n rows from row first on, in
// batches of 100.
func longSessionRows(n, first int) []*Batch {
	key := string(value.AppendValue(nil, plan.Int(1)))
	var out []*Batch
	for i := first; i < first+n; {
		b := &Batch{Rows: make([]plan.Row, 0, 100), Meta: make([]RowMeta, 0, 100)}
		for ; i < first+n && b.Len() < 100; i++ {
			b.Append(plan.Row{plan.Time(int64(i)), plan.Int(1), plan.Int(int64(i))}, RowMeta{Key: key, WM: int64(i - 1)})
		}
		out = append(out, b)
	}
	return out
}

// BenchmarkLongSessionDistinct: one session of n rows (one key, time
// rising by 1 ms, a gap of an hour, a new distinct value per row) through
// SESSION_WINDOW with COUNT(*), COUNT(DISTINCT), SUM, MIN and MAX; an op
// is the whole session. heap-B is the heap in use at its end (after a
// collection), heap-B/row that per row. Run with
// `go test -run X -bench LongSessionDistinct ./runtime/op`.
func BenchmarkLongSessionDistinct(b *testing.B) {
	for _, n := range []int{1000, 4000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			rows := longSessionRows(n, 0)
			b.ReportAllocs()
			var heap int64
			for b.Loop() {
				var before, after runtime.MemStats
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				a, err := newHashAgg(sessionDistinctSpec(3_600_000, plan.EmitChanges), &Env{}, &Counters{})
				if err != nil {
					b.Fatal(err)
				}
				longSession(b, a, rows)
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap = int64(after.HeapAlloc) - int64(before.HeapAlloc)
				runtime.KeepAlive(a)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap), "heap-B")
			b.ReportMetric(float64(heap)/float64(n), "heap-B/row")
		})
	}
}

// BenchmarkAggTumbleMany measures q17's aggregation alone (TUMBLE per
// auction with COUNT(*), three SUMs, MIN, MAX, AVG and SUM): ns per input
// row, over 1000-row batches of a sliding range of auctions.
func BenchmarkAggTumbleMany(b *testing.B) {
	col := func(i int, t plan.Type) plan.Expr { return &plan.ColRef{Index: i, T: t} }
	bi := plan.TypeBigint
	aggs := []plan.Agg{{Fn: plan.AggCountStar, Arg: -1, T: bi}, {Fn: plan.AggSum, Arg: 2, T: bi}, {Fn: plan.AggSum, Arg: 3, T: bi},
		{Fn: plan.AggSum, Arg: 4, T: bi}, {Fn: plan.AggMin, Arg: 5, T: bi}, {Fn: plan.AggMax, Arg: 5, T: bi},
		{Fn: plan.AggAvg, Arg: 5, T: plan.TypeDouble}, {Fn: plan.AggSum, Arg: 5, T: bi}}
	out := []plan.Expr{col(0, plan.TypeTimestamp), col(2, bi)}
	sc := plan.Schema{{Name: "ws", Type: plan.TypeTimestamp}, {Name: "a", Type: bi}}
	for i := range aggs {
		out = append(out, col(3+i, aggs[i].T))
		sc = append(sc, plan.Column{Name: fmt.Sprint("x", i), Type: aggs[i].T})
	}
	spec := &plan.Aggregate{Windowed: true, Window: plan.WindowSpec{Kind: plan.Tumble, Size: 10_000, Slide: 10_000}, Keys: []int{1},
		Aggs: aggs, Output: out, Out: sc, EmitMode: plan.EmitOnWindowClose}
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		b.Fatal(err)
	}
	batches := make([]*Batch, 100)
	for i := range batches {
		bt := &Batch{}
		for k := range 1000 {
			auction := int64((i*50 + k%500) % 5000)
			price := int64(k * 997 % 2_000_000)
			r := plan.Row{plan.Time(int64(i) * 100), plan.Int(auction), plan.Int(1), plan.Int(price % 2), plan.Int(price % 3), plan.Int(price)}
			bt.Append(r, RowMeta{Key: string(value.AppendValue(nil, r[1])), WM: int64(i)*100 - 1})
		}
		batches[i] = bt
	}
	benchBatches(b, a, batches)
}

// benchBatches feeds a copy of batches[i % len] (1000 rows each) to a
// per iteration and reports ns per row.
func benchBatches(b *testing.B, a *hashAgg, batches []*Batch) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		src := batches[n%len(batches)]
		bt := &Batch{Rows: append([]plan.Row(nil), src.Rows...), Meta: append([]RowMeta(nil), src.Meta...)}
		if err := a.Process(bt, nopEmitter{}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*1000), "ns/row")
}
