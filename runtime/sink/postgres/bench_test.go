package postgres

import (
	"fmt"
	"testing"

	"github.com/streamsql/streamsql/runtime/sink"
)

// epochChanges is epoch e's changes for the benchmarks: n upserts, of
// keys [(e-1)*n/2, (e+1)*n/2): the first half written by epoch e-1 (an
// update), the second half new.
func epochChanges(e, n int) []sink.Change {
	ch := make([]sink.Change, n)
	first := (e - 1) * n / 2
	for i := range ch {
		k := int64(first + i)
		ch[i] = upsert(row(k, fmt.Sprint("name-", k, "-", e), float64(k)/3, 1_700_000_000_000+k*17, k%2 == 0, int64(e)))
	}
	return ch
}

func benchCommit(b *testing.B, n, stageAt int) {
	spec := testSpec(newSchema(b), "out", true)
	p := open(b, spec)
	p.stageAt = stageAt
	c := ctx(b)
	// Epoch 1 (not timed) writes the keys epoch 2 updates.
	if err := p.CommitEpoch(c, 1, epochChanges(1, n)[n/2:]); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ch := epochChanges(i+2, n)
		b.StartTimer()
		if err := p.CommitEpoch(c, uint64(i+2), ch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkCommitEpoch: epochs of 10,000 upserts, half of them updates of
// rows the epoch before wrote, with the default write path.
func BenchmarkCommitEpoch(b *testing.B) { benchCommit(b, 10_000, stageThreshold) }

// BenchmarkWritePath compares the array and the staged (COPY) writes by
// epoch size, to set stageThreshold.
func BenchmarkWritePath(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 2000, 3000, 5000, 20000} {
		b.Run(fmt.Sprintf("rows=%d/arrays", n), func(b *testing.B) { benchCommit(b, n, 1<<30) })
		b.Run(fmt.Sprintf("rows=%d/staged", n), func(b *testing.B) { benchCommit(b, n, 1) })
	}
}
