package httpapi

import (
	"context"
	"testing"
	"time"
)

// TestLatencyBench runs a tiny latency bench (one interval, every reader)
// and checks the report's structure: every reader present, every
// acknowledged row seen, latencies positive and ordered. No timed
// assertions: the figures are measured, not judged.
func TestLatencyBench(t *testing.T) {
	res, err := LatencyBench(context.Background(), LatencyBenchConfig{
		Intervals: []time.Duration{200 * time.Millisecond}, Duration: time.Second, Rate: 2000, Batch: 100,
		Outputs: []string{"builtin", "changes"}, Dir: t.TempDir(), StateKeys: 500,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"results-latest", "results-committed", "results-at_most_once", "changes-latest", "changes-committed"}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(want), res)
	}
	for i, r := range res {
		if r.Reader != want[i] || r.Unsupported != "" || r.Rows <= 0 || r.Rows != int64(r.Requests)*100 || r.CPUSecPerMillion <= 0 {
			t.Errorf("result %d: %+v", i, r)
		}
		if !(0 < r.LatencyP50Ms && r.LatencyP50Ms <= r.LatencyP99Ms && r.LatencyP99Ms <= r.LatencyMaxMs) {
			t.Errorf("%s: latencies p50 %v p99 %v max %v", r.Reader, r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs)
		}
		if r.Checkpoints == 0 || r.CheckpointP50Bytes <= 0 || r.CheckpointsOf != "lat_state" || r.StateKeys != 500 {
			t.Errorf("%s: checkpoints %+v", r.Reader, r)
		}
	}
}

// TestLatencyBenchGenerator: the same from a Nexmark generator: rows
// counted from the query, latencies from generation positive and
// ordered.
func TestLatencyBenchGenerator(t *testing.T) {
	res, err := LatencyBench(context.Background(), LatencyBenchConfig{
		Intervals: []time.Duration{200 * time.Millisecond}, Duration: time.Second, Rate: 2000,
		Outputs: []string{"builtin"}, Dir: t.TempDir(), StateKeys: 50, Input: "generator",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("%d results, want 3: %+v", len(res), res)
	}
	for _, r := range res {
		// About 1,840 bids (46 of every 50 events) in the second.
		if r.Input != "generator" || r.Rows < 500 || r.Rows > 4000 || r.Requests != 0 || r.CPUSecPerMillion <= 0 {
			t.Errorf("%s: %+v", r.Reader, r)
		}
		if !(0 < r.LatencyP50Ms && r.LatencyP50Ms <= r.LatencyP99Ms && r.LatencyP99Ms <= r.LatencyMaxMs) {
			t.Errorf("%s: latencies p50 %v p99 %v max %v", r.Reader, r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs)
		}
	}
	if _, err := LatencyBench(context.Background(), LatencyBenchConfig{Intervals: []time.Duration{time.Second}, Duration: time.Second, Rate: 1, Input: "kafka"}); err == nil {
		t.Error("input kafka: no error")
	}
}
