package queries

import (
	"testing"
	"time"

	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/window"
)

func TestRing(t *testing.T) {
	r := newRing(3)
	if got := r.list(); len(got) != 0 || got == nil {
		t.Fatalf("empty ring: %#v", got)
	}
	for i := range 5 {
		r.add(MetricSample{StateRows: int64(i)})
		got := r.list()
		if want := min(i+1, 3); len(got) != want {
			t.Fatalf("after %d adds: %d samples, want %d", i+1, len(got), want)
		}
		for k, s := range got { // oldest first, the newest last
			if want := int64(i + 1 - len(got) + k); s.StateRows != want {
				t.Fatalf("after %d adds: %v", i+1, got)
			}
		}
	}
}

// TestSamplerRates: rates come from counter deltas over the time between
// samples of the same run; a new run (restart, resume) has no rate in its
// first sample, a replaced query (new id) starts over, a dropped one
// loses its samples, and only the last MetricSamples are kept.
func TestSamplerRates(t *testing.T) {
	s := newSampler(time.Second)
	t0 := time.UnixMilli(1_700_000_000_000)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	run1, run2 := new(int), new(int)
	q := func(id uint64, run any, in, out, late int64) sampleOf {
		return sampleOf{name: "q", id: id, run: run, m: runtime.JobMetrics{RowsIn: in, RowsOut: out, LateRows: late,
			EventTime: true, Watermark: t0.UnixMilli() - 1500, StateRows: in / 10,
			Checkpoints: runtime.CheckpointMetrics{Completed: 1, Last: 42 * time.Millisecond}}}
	}
	s.record(at(0), []sampleOf{q(1, run1, 100, 10, 0)})
	s.record(at(1), []sampleOf{q(1, run1, 300, 15, 1)})
	s.record(at(3), []sampleOf{q(1, run1, 700, 15, 1)})
	s.record(at(4), []sampleOf{q(1, nil, 0, 0, 0)})     // stopped: no sample
	s.record(at(5), []sampleOf{q(1, run2, 700, 15, 1)}) // resumed: a new run
	s.record(at(6), []sampleOf{q(1, run2, 1700, 25, 1)})
	h := s.history("q")
	if h.IntervalMS != 1000 || len(h.Samples) != 5 {
		t.Fatalf("%+v", h)
	}
	want := []struct {
		t             time.Time
		in, out, late float64
	}{{at(0), 0, 0, 0}, {at(1), 200, 5, 1}, {at(3), 200, 0, 0}, {at(5), 0, 0, 0}, {at(6), 1000, 10, 0}}
	for i, w := range want {
		g := h.Samples[i]
		if g.T != w.t.UTC().Format("2006-01-02T15:04:05.000Z") || g.RowsInPerS != w.in || g.RowsOutPerS != w.out || g.LateRowsPerS != w.late {
			t.Errorf("sample %d: %+v, want %+v", i, g, w)
		}
		if g.WatermarkLagS == nil || g.LastCheckpointMS == nil || *g.LastCheckpointMS != 42 {
			t.Errorf("sample %d: lag %v, checkpoint %v", i, g.WatermarkLagS, g.LastCheckpointMS)
		}
	}
	if lag := *h.Samples[1].WatermarkLagS; lag != 2.5 {
		t.Errorf("watermark lag %v, want 2.5", lag)
	}
	// No watermark: null lag; no checkpoint: null duration.
	s.record(at(7), []sampleOf{{name: "q", id: 1, run: run2, m: runtime.JobMetrics{Watermark: window.NoWatermark, EventTime: true}}})
	if g := s.history("q").Samples[5]; g.WatermarkLagS != nil || g.LastCheckpointMS != nil {
		t.Errorf("%+v", g)
	}
	// Replaced (new id): starts over.
	s.record(at(8), []sampleOf{q(2, run1, 5, 0, 0)})
	if h := s.history("q"); len(h.Samples) != 1 || h.Samples[0].RowsInPerS != 0 {
		t.Fatalf("after replace: %+v", h.Samples)
	}
	// Capacity: the last MetricSamples, in order.
	for i := range MetricSamples + 7 {
		s.record(at(float64(10+i)), []sampleOf{q(2, run1, int64(10*i), 0, 0)})
	}
	h = s.history("q")
	if len(h.Samples) != MetricSamples || h.Samples[0].T != at(17).UTC().Format("2006-01-02T15:04:05.000Z") ||
		h.Samples[MetricSamples-1].T != at(float64(10+MetricSamples+6)).UTC().Format("2006-01-02T15:04:05.000Z") || h.Samples[MetricSamples-1].RowsInPerS != 10 {
		t.Fatalf("%d samples, first %+v, last %+v", len(h.Samples), h.Samples[0], h.Samples[len(h.Samples)-1])
	}
	// Dropped: gone.
	s.record(at(1000), nil)
	if h := s.history("q"); len(h.Samples) != 0 || h.Samples == nil {
		t.Fatalf("after drop: %+v", h)
	}
}
