package kafka

import (
	"fmt"
	"testing"

	"github.com/streamsql/streamsql/runtime/sink"
)

// BenchmarkCommitEpoch commits epochs of 10,000 changes (6 columns, one
// in ten a delete) to an in-process kfake broker (1 broker, its default
// 10 partitions): encoding, producing in one transaction with the
// progress record, committing. Reports records/s.
//
//	go test -run '^$' -bench BenchmarkCommitEpoch -benchtime 20x ./runtime/sink/kafka/
func BenchmarkCommitEpoch(b *testing.B) {
	const perEpoch = 10000
	_, addr := newCluster(b)
	p := open(b, testSpec(addr, "bench", true))
	if _, err := p.Committed(ctx(b)); err != nil {
		b.Fatal(err)
	}
	changes := make([]sink.Change, perEpoch)
	for i := range changes {
		id := int64(i)
		if i%10 == 9 {
			changes[i] = del(id)
		} else {
			changes[i] = upsert(row(id, fmt.Sprintf("name-%d", i), float64(i)/3, 1704067200000+id, i%2 == 0, id*7))
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.CommitEpoch(ctx(b), uint64(i+1), changes); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*perEpoch)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkRecords encodes batches of 10,000 changes (the columns of
// BenchmarkCommitEpoch, one in ten a delete, NULLs in one row of seven)
// into records, in each format, with no broker: the schemas are
// registered in an in-process registry first. Reports ns/record and
// allocs/record (a batch's buffers are allocated once per call).
//
//	go test -run '^$' -bench BenchmarkRecords -benchmem ./runtime/sink/kafka/
func BenchmarkRecords(b *testing.B) {
	const perBatch = 10000
	changes := formatChanges(0, perBatch, true)
	for i := range changes {
		if i%10 == 9 {
			changes[i] = del(int64(i))
		}
	}
	for _, f := range []string{"json", "avro", "protobuf", "json_schema"} {
		b.Run(f, func(b *testing.B) {
			reg := newRegistry(b)
			p, err := New(testSpec("127.0.0.1:1", "bench", true, "format", f, "schema_registry", reg.URL()))
			if f == "json" {
				p, err = New(testSpec("127.0.0.1:1", "bench", true))
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := p.openFormat(ctx(b)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := p.records(changes); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBatch), "ns/record")
		})
	}
}
