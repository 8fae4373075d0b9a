package op

import (
	"math/rand/v2"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// topNBench drives a Top-N of spec over rows (k, t, v, 0) of 1000
// partitions: v random (Nexmark q19's Top-10 by price), or t increasing
// (q18's last row per key), a barrier every 1000 rows, a new operator
// every 64,000. It reports
// allocations per row. Run with
// `go test -run X -bench TopN -benchmem ./runtime/op`.
func topNBench(b *testing.B, spec *plan.TopN) {
	op, err := newTopN(spec, &Counters{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 1000
	batches := make([]*Batch, 64)
	for i := range batches {
		bt := &Batch{}
		for j := range batch {
			r := plan.Row{plan.Int(rng.Int64N(1000)), plan.Time(int64(i*batch + j)), plan.Int(rng.Int64N(1_000_000)), plan.Int(0)}
			bt.Append(r, RowMeta{Offset: int64(i*batch + j), Key: string(value.EncodeKey(nil, r, spec.Partition))})
		}
		batches[i] = bt
	}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if n%len(batches) == 0 {
			// A fresh operator every 64 batches: each run of the loop sees
			// the same mix of rows entering the top and not.
			op, _ = newTopN(spec, &Counters{})
		}
		bt := batches[n%len(batches)]
		// Fresh times and offsets, so rows keep entering.
		for j := range bt.Rows {
			bt.Rows[j][1] = plan.Time(int64(n*batch + j))
			bt.Meta[j].Offset = int64(n*batch + j)
		}
		if err := op.Process(bt, nopEmitter{}); err != nil {
			b.Fatal(err)
		}
		if err := op.Barrier(Barrier{Epoch: uint64(n)}, nopEmitter{}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*batch), "ns/row")
}

func BenchmarkTopNTop10(b *testing.B) {
	topNBench(b, &plan.TopN{Fn: plan.RowNumber, Partition: []int{0}, Order: []plan.OrderCol{{Col: 2, Desc: true}}, Limit: 10,
		Keep: []int{0, 1, 2, 3}, RankAt: 3, Out: make(plan.Schema, 4), TimeCol: -1})
}

func BenchmarkTopNLast(b *testing.B) {
	topNBench(b, &plan.TopN{Fn: plan.RowNumber, Partition: []int{0}, Order: []plan.OrderCol{{Col: 1, Desc: true}}, Limit: 1,
		Keep: []int{0, 1, 2, 3}, RankAt: 3, Out: make(plan.Schema, 4), TimeCol: -1})
}
