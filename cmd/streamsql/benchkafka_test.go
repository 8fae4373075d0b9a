package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/value"
)

// TestBenchKafka: `streamsql bench --kafka-format F` reads every record
// it produced, none bad, in every format, and the q5-core result has the
// (window, auction) groups the test computes from the generator's bids.
func TestBenchKafka(t *testing.T) {
	const n = 3000
	// The oracle: each bid is in the five 10 s windows sliding every 2 s
	// that contain its time.
	g := nexmark.New(nexmark.Config{})
	groups := map[[2]int64]bool{}
	var row plan.Row
	for i := uint64(0); i < n; i++ {
		row = g.Fill(nexmark.Bid, i, nil, row)
		ts := row[5].I
		for ws := ts - ts%2000 - 8000; ws <= ts; ws += 2000 {
			groups[[2]int64{ws, row[0].I}] = true
		}
	}
	for _, f := range []string{"json", "avro", "protobuf", "upsert_json", "upsert_avro", "debezium_json", "debezium_avro"} {
		var out bytes.Buffer
		if err := benchKafka(&out, f, n, time.Second, true, nil); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var res struct {
			Format     string  `json:"format"`
			Events     int64   `json:"events"`
			ResultRows int     `json:"result_rows"`
			PerCPU     float64 `json:"events_per_cpu_second"`
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%s: %v in %s", f, err, out.Bytes())
		}
		if res.Format != f || res.Events != n || res.ResultRows != len(groups) || res.PerCPU <= 0 {
			t.Errorf("%s: %+v, want %d records read, %d result rows", f, res, n, len(groups))
		}
	}
	if err := benchKafka(&bytes.Buffer{}, "csv", 1, 0, false, nil); err == nil {
		t.Error("format csv: no error")
	}
}

// BenchmarkKafkaDecode: one record's decode in each format, the decoder
// alone (no broker, no query), over 1024 of bench's bids: what the
// formats' rows of BENCHMARKS.md differ by.
func BenchmarkKafkaDecode(b *testing.B) {
	for _, f := range []string{"json", "avro", "protobuf", "upsert_json", "upsert_avro", "debezium_json", "debezium_avro"} {
		b.Run(f, func(b *testing.B) {
			fake := srfake.New()
			defer fake.Close()
			reg, err := sr.NewClient(sr.URLs(fake.URL()))
			if err != nil {
				b.Fatal(err)
			}
			enc, err := kafkaBenchFormats[f].setup(reg, fake.URL())
			if err != nil {
				b.Fatal(err)
			}
			const n = 1024
			var keys, vals [][]byte
			g := nexmark.New(nexmark.Config{})
			var row plan.Row
			for i := range int64(n) {
				row = g.Fill(nexmark.Bid, uint64(i), nil, row)
				k, v, err := enc(i, row)
				if err != nil {
					b.Fatal(err)
				}
				keys, vals = append(keys, k), append(vals, v)
			}
			src := &plan.Source{Table: "bid", Engine: "kafka", Schema: nexmark.Columns(nexmark.Bid), EventTime: 5,
				Attrs: map[string]string{"topic": benchTopic, "format": f, "schema_registry": fake.URL()}}
			var decode func(k, v []byte) (plan.Row, error)
			switch {
			case value.IsChangeFormat(f):
				src.Schema = append(plan.Schema{{Name: "id", Type: plan.TypeBigint}}, src.Schema...)
				src.EventTime, src.Upsert, src.Key = 6, true, []string{"id"}
				var d interface {
					Decode(key, val []byte, ts int64) (plan.Row, error)
				}
				if format.UsesChanges(src.Attrs) {
					d, err = format.NewChangeDecoder(format.SourceTable(src))
				} else {
					d, err = value.NewChangeDecoder(src)
				}
				if err != nil {
					b.Fatal(err)
				}
				decode = func(k, v []byte) (plan.Row, error) { return d.Decode(k, v, 0) }
			case format.Uses(src.Attrs):
				d, err := format.NewDecoder(format.SourceTable(src))
				if err != nil {
					b.Fatal(err)
				}
				decode = func(_, v []byte) (plan.Row, error) { return d.Decode(v) }
			default:
				d, err := value.RecordDecoder(src)
				if err != nil {
					b.Fatal(err)
				}
				decode = func(_, v []byte) (plan.Row, error) { return d(v) }
			}
			var bytes int
			for i := range n {
				if _, err := decode(keys[i], vals[i]); err != nil { // and the schemas fetched
					b.Fatal(err)
				}
				bytes += len(keys[i]) + len(vals[i])
			}
			b.SetBytes(int64(bytes / n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := decode(keys[i%n], vals[i%n]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
