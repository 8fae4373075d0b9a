package queries

import (
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/value"
)

// BenchmarkDecodeNDJSON decodes and encodes requests of 1000 Nexmark bids
// as the ingest path does (EncodeRows).
func BenchmarkDecodeNDJSON(b *testing.B) {
	stmts, err := parser.Parse(IngestBenchTable)
	if err != nil {
		b.Fatal(err)
	}
	def, err := planner.Table(stmts[0].Stmt.(*parser.CreateTable), IngestBenchTable)
	if err != nil {
		b.Fatal(err)
	}
	const rows = 1000
	r := NewBidRenderer()
	var lines []byte
	for i := range int64(rows) {
		lines = append(lines, r.Line(i)...)
	}
	body := string(lines)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := value.EncodeRows(def, body, value.DefaultLimits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	b.ReportMetric(0, "ns/op")
}
