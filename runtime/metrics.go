package runtime

import (
	"fmt"
	"math"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/window"
)

// Metrics of a running job (GET /metrics, the console's charts). Nothing
// here costs anything per row: the chain adds each batch's length to an
// atomic counter of the task as it enters an operator or the terminal
// (chain.rows), queue fill is read from the mailboxes' channel lengths,
// and checkpoint and sink figures are kept where the coordinator and the
// committer already take their locks. Snapshots are taken by Metrics.

// CheckpointBuckets are the upper bounds, in seconds, of the checkpoint
// duration and alignment histograms.
var CheckpointBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// JobMetrics is a snapshot of a job's metrics. Counters of operators,
// checkpoints and sinks start at zero with each run of the job (a restart,
// a resume); RowsIn, RowsOut, LateRows, BadRecords and OutOfRange continue from the
// restored checkpoint, as in Status.
type JobMetrics struct {
	State                                             string
	RowsIn, RowsOut, LateRows, BadRecords, OutOfRange int64
	StateRows                                         int64
	// Watermark is the query's watermark (the minimum over its sinks), ms;
	// window.NoWatermark before any, math.MaxInt64 once bounded input ended.
	Watermark int64
	// EventTime: some source has an event-time column (its watermark is
	// event time, not the wall clock).
	EventTime      bool
	LastCheckpoint uint64
	Stages         []StageMetrics
	Checkpoints    CheckpointMetrics
	Sinks          []SinkMetrics
}

// WatermarkLag is now minus the query's watermark, for an event-time query
// whose watermark is set (ok false otherwise: no row yet, or input ended).
func (m JobMetrics) WatermarkLag(now time.Time) (time.Duration, bool) {
	if !m.EventTime || m.Watermark == window.NoWatermark || m.Watermark == math.MaxInt64 {
		return 0, false
	}
	return time.Duration(now.UnixMilli()-m.Watermark) * time.Millisecond, true
}

// QueueFillMax is the fullest input queue of any stage (0..1).
func (m JobMetrics) QueueFillMax() float64 {
	f := 0.0
	for _, s := range m.Stages {
		f = max(f, s.QueueFill)
	}
	return f
}

// StageMetrics are one stage's (vertex's) figures, summed over its subtasks.
type StageMetrics struct {
	Stage       int
	Parallelism int
	// HasQueue: the stage reads from other stages (not a source); then
	// QueueFill is the fill (length / capacity) of the fullest input queue
	// of any of its tasks: 1 means a producer is blocked (backpressure).
	HasQueue  bool
	QueueFill float64
	StateRows int64
	Operators []OperatorMetrics
}

// bytesHeld is the estimate of the heap the task's operators' state takes.
func (t *taskBase) bytesHeld() int64 {
	n := int64(0)
	for i := range t.stateBytes {
		n += t.stateBytes[i].Load()
	}
	return n
}

// OperatorMetrics are the rows into and out of one operator of a stage,
// summed over the stage's subtasks. Name is "<index>/<operator>", the
// index being the operator's line under its stage in EXPLAIN. A Source's
// rows in and out are the rows it read; a Sink's are the changes it took.
// Stateful operators (aggregations, joins) report StateBytes, an estimate
// of the heap their state takes (groups, keys, windows, COUNT(DISTINCT)
// members, held rows), summed over the subtasks.
type OperatorMetrics struct {
	Index           int
	Op              string
	RowsIn, RowsOut int64
	Stateful        bool
	StateBytes      int64
}

// Name is the operator's label: "<index>/<operator>".
func (o OperatorMetrics) Name() string { return fmt.Sprintf("%d/%s", o.Index, o.Op) }

// CheckpointMetrics are the checkpoints of this run of the job.
type CheckpointMetrics struct {
	Completed, Failed uint64
	// DurationSum is the total duration of completed checkpoints, in
	// seconds; Buckets[i] counts those that took at most Bounds[i] seconds
	// (cumulative, as Prometheus has it; Bounds is CheckpointBuckets).
	DurationSum float64
	Bounds      []float64
	Buckets     []uint64
	// Bytes is what completed checkpoints wrote.
	Bytes int64
	// Last is the last completed checkpoint's duration (0: none yet).
	Last      time.Duration
	LastBytes int64
	// AlignmentSum and AlignmentBuckets are the alignment times of
	// completed checkpoints (how long the slowest task held the barrier
	// up: aligning its inputs, or a sink waiting for room), as DurationSum
	// and Buckets are their durations; LastAlignment the last one's.
	AlignmentSum     float64
	AlignmentBuckets []uint64
	LastAlignment    time.Duration
}

// SinkMetrics are an external sink's figures.
type SinkMetrics struct {
	Table, Engine, Delivery string
	// PendingEpochs: exactly_once, epochs journaled and not yet committed
	// to the external system; at_least_once, batches (one per sink subtask
	// and barrier) handed to the committer and not yet applied.
	PendingEpochs int
	PendingBytes  int64 // exactly_once: the pending epochs' journal bytes
	// CommitLag is how long the external system has been behind:
	// exactly_once, the age of the oldest completed checkpoint whose
	// changes it does not have yet (since its marker was committed);
	// at_least_once, the age of the batch being applied. 0 when caught up.
	CommitLag time.Duration
}

// stageTasks are one stage's tasks (build), for Metrics.
type stageTasks struct {
	vertex *plan.Vertex
	tasks  []*taskBase
	boxes  []*mailbox // non-source stages: each task's mailbox
}

// checkpointTotals accumulate completed checkpoints (Job.mu).
type checkpointTotals struct {
	completed, failed uint64
	sum               float64
	buckets           []uint64
	bytes             int64
	last              time.Duration
	lastBytes         int64
	alignSum          float64
	alignBuckets      []uint64
	lastAlign         time.Duration
}

func (c *checkpointTotals) observe(d time.Duration, bytes int64, align time.Duration) {
	if c.buckets == nil {
		c.buckets = make([]uint64, len(CheckpointBuckets))
		c.alignBuckets = make([]uint64, len(CheckpointBuckets))
	}
	c.completed++
	c.sum += d.Seconds()
	c.alignSum += align.Seconds()
	for i, b := range CheckpointBuckets {
		if d.Seconds() <= b {
			c.buckets[i]++
		}
		if align.Seconds() <= b {
			c.alignBuckets[i]++
		}
	}
	c.bytes += bytes
	c.last, c.lastBytes, c.lastAlign = d, bytes, align
}

// Metrics returns a snapshot of the job's metrics.
func (j *Job) Metrics() JobMetrics {
	st := j.Status()
	m := JobMetrics{State: st.State, RowsIn: st.RowsIn, RowsOut: st.RowsOut, LateRows: st.LateRows, BadRecords: st.BadRecords, OutOfRange: st.OutOfRange,
		StateRows: st.StateRows, Watermark: st.Watermark, LastCheckpoint: st.LastCheckpoint}
	for _, s := range j.sources {
		if !s.spec.ProcTime && s.spec.EventTime >= 0 {
			m.EventTime = true
		}
	}
	m.Checkpoints = j.CheckpointMetrics()
	for _, s := range j.stages {
		m.Stages = append(m.Stages, s.metrics())
	}
	if j.committer != nil {
		m.Sinks = append(m.Sinks, j.committer.metrics(time.Now()))
	}
	return m
}

// CheckpointMetrics returns the figures of this run's checkpoints.
func (j *Job) CheckpointMetrics() CheckpointMetrics {
	j.mu.Lock()
	c := j.ckpt
	m := CheckpointMetrics{Completed: c.completed, Failed: c.failed, DurationSum: c.sum, Bounds: CheckpointBuckets,
		Buckets: append([]uint64(nil), c.buckets...), Bytes: c.bytes, Last: c.last, LastBytes: c.lastBytes,
		AlignmentSum: c.alignSum, AlignmentBuckets: append([]uint64(nil), c.alignBuckets...), LastAlignment: c.lastAlign}
	j.mu.Unlock()
	if m.Buckets == nil {
		m.Buckets = make([]uint64, len(CheckpointBuckets))
		m.AlignmentBuckets = make([]uint64, len(CheckpointBuckets))
	}
	return m
}

// metrics sums the stage's tasks' counters. Positions of a task's chain
// (chain.rows) map to the stage's operators as EXPLAIN lists them: a
// Source first (not an operator of the chain), then the chain's operators,
// then a Sink (the terminal).
func (s *stageTasks) metrics() StageMetrics {
	v := s.vertex
	sm := StageMetrics{Stage: v.ID, Parallelism: v.Parallelism, HasQueue: len(s.boxes) > 0}
	for _, mb := range s.boxes {
		sm.QueueFill = max(sm.QueueFill, mb.fill())
	}
	// rows[k] summed: rows into chain position k.
	var rows []int64
	for _, t := range s.tasks {
		sm.StateRows += t.stateRows.Load()
		if rows == nil {
			rows = make([]int64, len(t.chain.rows))
		}
		for k := range t.chain.rows {
			rows[k] += t.chain.rows[k].Load()
		}
	}
	first := 0 // chain position of v.Ops[0]
	if _, ok := v.Ops[0].(*plan.Source); ok {
		first = -1
	}
	for i, spec := range v.Ops {
		om := OperatorMetrics{Index: i, Op: spec.OpName()}
		k := i + first
		switch spec.(type) {
		case *plan.Source, *plan.Sink:
			// Rows read go into position 0; a sink is the terminal, the
			// last position. Both pass on what they take.
			k = max(k, 0)
			if k < len(rows) {
				om.RowsIn, om.RowsOut = rows[k], rows[k]
			}
		default:
			if k+1 < len(rows) {
				om.RowsIn, om.RowsOut = rows[k], rows[k+1]
			}
			for _, t := range s.tasks {
				if k < len(t.chain.ops) {
					if _, ok := t.chain.ops[k].(op.Stateful); ok {
						om.Stateful = true
						om.StateBytes += t.stateBytes[k].Load()
					}
				}
			}
		}
		sm.Operators = append(sm.Operators, om)
	}
	return sm
}

// fill is how full the fullest input queue is (0..1; at 1 its producer
// blocks).
func (m *mailbox) fill() float64 {
	f := 0.0
	for _, q := range m.queues {
		f = max(f, float64(len(q))/float64(cap(q)))
	}
	return f
}

// maxMarkerTimes bounds committer.markers; past it, every other entry but
// the oldest is dropped (the lag stays exact while the oldest is pending).
const maxMarkerTimes = 1024

// markerTime is when a checkpoint's marker was committed.
type markerTime struct {
	id uint64
	at time.Time
}

// noteMarker records that checkpoint id completed at t (exactly_once:
// from then on its changes are due in the external system).
func (c *committer) noteMarker(id uint64, t time.Time) {
	if !c.ext.ExactlyOnce || id == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruneMarkers()
	if id <= max(c.committed, c.through) {
		return
	}
	if len(c.markers) >= maxMarkerTimes {
		kept := c.markers[:1]
		for i := 2; i < len(c.markers); i += 2 {
			kept = append(kept, c.markers[i])
		}
		c.markers = kept
	}
	c.markers = append(c.markers, markerTime{id, t})
}

// pruneMarkers drops the markers the external system has (c.mu held).
func (c *committer) pruneMarkers() {
	covered := max(c.committed, c.through)
	n := 0
	for n < len(c.markers) && c.markers[n].id <= covered {
		n++
	}
	if n > 0 {
		c.markers = append(c.markers[:0], c.markers[n:]...)
	}
}

// metrics reports the sink's pending work and commit lag at now.
func (c *committer) metrics(now time.Time) SinkMetrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := SinkMetrics{Table: c.ext.Table, Engine: c.ext.Engine, Delivery: c.ext.Delivery()}
	if c.ext.ExactlyOnce {
		c.pruneMarkers()
		m.PendingEpochs = len(c.pending)
		for _, n := range c.pending {
			m.PendingBytes += n
		}
		if len(c.markers) > 0 {
			m.CommitLag = max(now.Sub(c.markers[0].at), 0)
		}
		return m
	}
	m.PendingEpochs = len(c.batches)
	if at := c.applying.Load(); at != 0 {
		m.PendingEpochs++
		m.CommitLag = max(now.Sub(time.Unix(0, at)), 0)
	}
	return m
}
