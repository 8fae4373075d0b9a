package queries

import (
	"sort"
	"sync"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
)

// Metrics: a snapshot of every running query for GET /metrics, and the
// sampler that keeps the console's charts (GET /v1/queries/{name}/metrics):
// one goroutine of the engine (Open to Close) takes a sample of every
// query each SampleInterval and keeps the last MetricSamples per query.

// SampleInterval is how often the sampler records by default
// (Config.SampleInterval); MetricSamples is how many samples it keeps per
// query.
const (
	SampleInterval = time.Second
	MetricSamples  = 300
)

// QueryMetrics are one running query's metrics.
type QueryMetrics struct {
	Name    string
	Metrics runtime.JobMetrics
}

// Metrics returns the metrics of every running query, by name.
func (e *Engine) Metrics() []QueryMetrics {
	e.mu.RLock()
	var out []QueryMetrics
	jobs := map[string]*runtime.Job{}
	for n, v := range e.views {
		if v.Job != nil {
			jobs[n] = v.Job
			out = append(out, QueryMetrics{Name: n})
		}
	}
	e.mu.RUnlock()
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	for i := range out {
		out[i].Metrics = jobs[out[i].Name].Metrics()
	}
	return out
}

// MetricSample is one sample of a query for the console's charts. Rates
// are over the time since the previous sample of the same run (0 in the
// first sample after a start, resume or replacement).
type MetricSample struct {
	T            string  `json:"t"` // RFC 3339, ms
	RowsInPerS   float64 `json:"rows_in_per_s"`
	RowsOutPerS  float64 `json:"rows_out_per_s"`
	LateRowsPerS float64 `json:"late_rows_per_s"`
	// WatermarkLagS is now minus the query's watermark, in seconds (null:
	// processing time, no watermark yet, or the input ended).
	WatermarkLagS *float64 `json:"watermark_lag_s"`
	// LastCheckpointMS is the last completed checkpoint's duration (null:
	// none in this run yet).
	LastCheckpointMS *int64  `json:"checkpoint_ms"`
	QueueFillMax     float64 `json:"queue_fill"`
	StateRows        int64   `json:"state_rows"`
}

// MetricHistory is a query's recent samples, oldest first.
type MetricHistory struct {
	IntervalMS int64          `json:"interval_ms"`
	Samples    []MetricSample `json:"samples"`
}

// sampler keeps recent samples per query name.
type sampler struct {
	interval time.Duration
	mu       sync.Mutex
	series   map[string]*series
}

// series is one query's samples and the counters of its last sample.
type series struct {
	id   uint64 // the query id: a replaced query starts over
	run  any    // the job of the last sample: rates need the same run
	prev runtime.JobMetrics
	at   time.Time
	ring ring
}

// ring is a fixed-capacity buffer of samples: the newest overwrites the
// oldest.
type ring struct {
	buf  []MetricSample
	next int // where the next sample goes
	full bool
}

func newRing(n int) ring { return ring{buf: make([]MetricSample, n)} }

func (r *ring) add(s MetricSample) {
	r.buf[r.next] = s
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// list returns the samples, oldest first.
func (r *ring) list() []MetricSample {
	if !r.full {
		return append([]MetricSample{}, r.buf[:r.next]...)
	}
	return append(append(make([]MetricSample, 0, len(r.buf)), r.buf[r.next:]...), r.buf[:r.next]...)
}

// sampleOf is what the sampler sees of a query at one tick: its id, and
// its run and metrics (run nil: not running, nothing to sample).
type sampleOf struct {
	name string
	id   uint64
	run  any
	m    runtime.JobMetrics
}

func newSampler(interval time.Duration) *sampler {
	return &sampler{interval: interval, series: map[string]*series{}}
}

// record adds a sample at now of every running query in qs. Queries not in
// qs (dropped) lose their samples; a query with a new id starts over.
func (s *sampler) record(now time.Time, qs []sampleOf) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(qs))
	for _, q := range qs {
		seen[q.name] = true
		se := s.series[q.name]
		if se == nil || se.id != q.id {
			se = &series{id: q.id, ring: newRing(MetricSamples)}
			s.series[q.name] = se
		}
		if q.run == nil {
			se.run = nil
			continue
		}
		smp := MetricSample{T: plan.FormatTime(now.UnixMilli()), QueueFillMax: q.m.QueueFillMax(), StateRows: q.m.StateRows}
		if dt := now.Sub(se.at).Seconds(); se.run == q.run && dt > 0 {
			rate := func(cur, prev int64) float64 { return float64(max(cur-prev, 0)) / dt }
			smp.RowsInPerS = rate(q.m.RowsIn, se.prev.RowsIn)
			smp.RowsOutPerS = rate(q.m.RowsOut, se.prev.RowsOut)
			smp.LateRowsPerS = rate(q.m.LateRows, se.prev.LateRows)
		}
		if lag, ok := q.m.WatermarkLag(now); ok {
			sec := lag.Seconds()
			smp.WatermarkLagS = &sec
		}
		if c := q.m.Checkpoints; c.Completed > 0 {
			ms := c.Last.Milliseconds()
			smp.LastCheckpointMS = &ms
		}
		se.ring.add(smp)
		se.run, se.prev, se.at = q.run, q.m, now
	}
	for n := range s.series {
		if !seen[n] {
			delete(s.series, n)
		}
	}
}

// history returns a query's samples (none yet: an empty list).
func (s *sampler) history(name string) MetricHistory {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := MetricHistory{IntervalMS: s.interval.Milliseconds(), Samples: []MetricSample{}}
	if se := s.series[name]; se != nil {
		h.Samples = se.ring.list()
	}
	return h
}

// SampleMetrics takes one sample of every query at now: what the sampler's
// goroutine does every interval (tests call it with their own clock).
func (e *Engine) SampleMetrics(now time.Time) {
	e.mu.RLock()
	qs := make([]sampleOf, 0, len(e.views))
	for n, v := range e.views {
		q := sampleOf{name: n, id: v.Record.ID}
		if v.Job != nil {
			q.run = v.Job
		}
		qs = append(qs, q)
	}
	e.mu.RUnlock()
	for i := range qs {
		if j, ok := qs[i].run.(*runtime.Job); ok {
			qs[i].m = j.Metrics()
		}
	}
	e.samples.record(now, qs)
}

// QueryMetrics returns a query's recent samples, oldest first.
func (e *Engine) QueryMetrics(name string) (MetricHistory, error) {
	e.mu.RLock()
	_, ok := e.views[name]
	e.mu.RUnlock()
	if !ok {
		return MetricHistory{}, notFound("query", name)
	}
	return e.samples.history(name), nil
}

// startSampler runs the sampler until Close.
func (e *Engine) startSampler() {
	e.stopSampler = every(e.samples.interval, e.SampleMetrics)
}
