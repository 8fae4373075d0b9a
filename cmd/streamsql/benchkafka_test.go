package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
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
	for _, f := range []string{"json", "avro", "upsert_json", "upsert_avro", "debezium_json", "debezium_avro"} {
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
