package runtime

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/window"
)

// TestJobMetrics runs bidGraph at parallelism 2 to its end and checks the
// per-operator counts (summed over subtasks) against the input and the
// query's counters, and the checkpoint histogram.
func TestJobMetrics(t *testing.T) {
	const events = 5000
	job, _ := runToEnd(t, bidGraph(events, plan.WindowSpec{Kind: plan.Tumble, Size: 100, Slide: 100}, plan.EmitChanges, 2), 9)
	m := job.Metrics()
	n := int64(nexmark.Count(nexmark.Bid, events))
	if m.RowsIn != n || len(m.Stages) != 2 {
		t.Fatalf("rows in %d (want %d), %d stages", m.RowsIn, n, len(m.Stages))
	}
	names := func(s StageMetrics) []string {
		var out []string
		for _, o := range s.Operators {
			out = append(out, o.Name())
		}
		return out
	}
	s0, s1 := m.Stages[0], m.Stages[1]
	if got := names(s0); len(got) != 2 || got[0] != "0/Source" || got[1] != "1/Calc" || s0.HasQueue {
		t.Fatalf("stage 0: %v (queue %v)", got, s0.HasQueue)
	}
	if got := names(s1); len(got) != 2 || got[0] != "0/Aggregate" || got[1] != "1/Sink" || !s1.HasQueue || s1.Parallelism != 2 {
		t.Fatalf("stage 1: %v (queue %v, parallelism %d)", got, s1.HasQueue, s1.Parallelism)
	}
	for _, o := range append(s0.Operators, s1.Operators[0]) {
		if o.RowsIn != n {
			t.Errorf("%s: rows in %d, want %d", o.Name(), o.RowsIn, n)
		}
	}
	if src, calc := s0.Operators[0], s0.Operators[1]; src.RowsOut != n || calc.RowsOut != n {
		t.Errorf("stage 0 rows out: source %d, calc %d, want %d", src.RowsOut, calc.RowsOut, n)
	}
	agg, sink := s1.Operators[0], s1.Operators[1]
	if agg.RowsOut == 0 || agg.RowsOut != sink.RowsIn || sink.RowsOut != m.RowsOut {
		t.Errorf("aggregate out %d, sink in %d out %d, query rows out %d", agg.RowsOut, sink.RowsIn, sink.RowsOut, m.RowsOut)
	}
	if f := m.QueueFillMax(); f < 0 || f > 1 {
		t.Errorf("queue fill %v", f)
	}
	c := m.Checkpoints
	if c.Completed == 0 || len(c.Buckets) != len(CheckpointBuckets) || c.Buckets[len(c.Buckets)-1] > c.Completed || c.Bytes <= 0 || c.Last <= 0 {
		t.Errorf("checkpoints %+v", c)
	}
	for i := 1; i < len(c.Buckets); i++ {
		if c.Buckets[i] < c.Buckets[i-1] {
			t.Errorf("buckets not cumulative: %v", c.Buckets)
		}
	}
	// The input ended: the watermark is +inf, no lag to report.
	if _, ok := m.WatermarkLag(time.Now()); !m.EventTime || ok {
		t.Errorf("event time %v, lag reported at watermark %d", m.EventTime, m.Watermark)
	}
}

func TestWatermarkLag(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, c := range []struct {
		m    JobMetrics
		want time.Duration
		ok   bool
	}{
		{JobMetrics{EventTime: true, Watermark: 997_500}, 2500 * time.Millisecond, true},
		{JobMetrics{EventTime: true, Watermark: window.NoWatermark}, 0, false},
		{JobMetrics{EventTime: true, Watermark: math.MaxInt64}, 0, false},
		{JobMetrics{EventTime: false, Watermark: 997_500}, 0, false},
	} {
		if got, ok := c.m.WatermarkLag(now); got != c.want || ok != c.ok {
			t.Errorf("%+v: lag %v %v, want %v %v", c.m, got, ok, c.want, c.ok)
		}
	}
}

// TestSinkCommitLag: an exactly_once sink's lag is the age of the oldest
// completed checkpoint the external system does not have.
func TestSinkCommitLag(t *testing.T) {
	c := &committer{ext: &plan.ExternalSink{Table: "out", ExactlyOnce: true}, pending: map[uint64]int64{}, changed: make(chan struct{})}
	t0 := time.Unix(100, 0)
	c.noteMarker(5, t0)
	c.noteMarker(6, t0.Add(time.Second))
	for e, n := range map[uint64]int64{5: 10, 6: 20} {
		if err := c.reserve(context.Background(), e, n); err != nil {
			t.Fatal(err)
		}
	}
	m := c.metrics(t0.Add(3 * time.Second))
	if m.CommitLag != 3*time.Second || m.PendingEpochs != 2 || m.PendingBytes != 30 || m.Delivery != "exactly_once" {
		t.Fatalf("%+v", m)
	}
	c.setCommitted(5, nil)
	if m := c.metrics(t0.Add(3 * time.Second)); m.CommitLag != 2*time.Second || m.PendingEpochs != 1 {
		t.Fatalf("after epoch 5: %+v", m)
	}
	c.setThrough(6)
	c.noteMarker(6, t0) // late news of a covered checkpoint: ignored
	if m := c.metrics(t0.Add(3 * time.Second)); m.CommitLag != 0 {
		t.Fatalf("caught up: %+v", m)
	}
	// Past the bound the oldest stays exact.
	for i := range maxMarkerTimes + 10 {
		c.noteMarker(uint64(10+i), t0.Add(time.Duration(i)*time.Second))
	}
	if len(c.markers) > maxMarkerTimes || c.markers[0].id != 10 {
		t.Fatalf("%d markers, oldest %d", len(c.markers), c.markers[0].id)
	}
	if m := c.metrics(t0.Add(time.Hour)); m.CommitLag != time.Hour {
		t.Fatalf("lag %v", m.CommitLag)
	}
}
