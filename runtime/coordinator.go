package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/runtime/ckpt"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/window"
)

// CheckpointTimeout bounds how long a checkpoint may take before it is
// recorded as failed and the next one goes on (at least this, or ten
// checkpoint intervals).
const CheckpointTimeout = 30 * time.Second

// coordinate drives the query's checkpoint protocol (ckpt.Coordinator, a
// pure state machine: runtime/ckpt) on the coordinator goroutine: it feeds
// it the emit interval's ticks, the tasks' acks and the checkpoint
// requests, with the time, and performs what it answers: injecting a
// barrier at every source, committing a marker, recording the history,
// answering requests. It also adds up every checkpoint ack's counter
// deltas (also of failed or timed-out checkpoints) for the marker, and
// checks at every tick that every task answers (liveness.go).
func (j *Job) coordinate() {
	opts := j.Graph.Options
	emit := time.Duration(opts.EmitInterval) * time.Millisecond
	if emit <= 0 {
		emit = 200 * time.Millisecond
	}
	ckptEvery := time.Duration(opts.CheckpointInterval) * time.Millisecond
	ticker := time.NewTicker(emit)
	defer ticker.Stop()
	c := ckpt.New(ckpt.Config{Emit: emit, Every: ckptEvery, Timeout: max(CheckpointTimeout, 10*ckptEvery),
		Tasks: j.ntasks, NextID: j.store.NextID}, time.Now())
	var (
		reqs    = map[int]chan checkpointResult{}
		nextReq int
		early   []ack  // acks read while injecting
		moved   uint64 // the sources' moved counts at the last barrier
		totals  = counts{j.marker.RowsIn, j.marker.RowsOut, j.marker.Late, j.marker.Bad, j.marker.OutOfRange}
		// The last late rows and bad records the totals counted.
		recentLate, recentBad = j.marker.RecentLate, j.marker.RecentBad
	)
	var perform func(outs []ckpt.Output) bool
	// onAck feeds a task's ack to the protocol.
	onAck := func(a ack) bool {
		if a.ckpt != 0 {
			// Every checkpoint's counts add up, even one that failed or
			// timed out: its state writes are in the store, and a later
			// marker covers them.
			totals.add(a.deltas)
			recentLate = keepLast(slices.Clip(recentLate), a.late, op.MaxLateSamples)
			recentBad = keepLast(slices.Clip(recentBad), a.bad, MaxBadSamples)
		}
		return perform(c.Ack(time.Now(), ckpt.Ack{Epoch: a.epoch, Err: a.err, Bytes: int64(a.bytes), Align: a.align, Offsets: a.offsets}))
	}
	// perform does what the protocol asks, in order; false when the job
	// stopped meanwhile.
	perform = func(outs []ckpt.Output) bool {
		// outs is the coordinator's buffer until its next call.
		for i := 0; i < len(outs); i++ {
			o := outs[i]
			switch o.Kind {
			case ckpt.Inject:
				b := op.Barrier{Epoch: o.Barrier.Epoch, CheckpointID: o.Barrier.ID, Flush: o.Barrier.Flush}
				if b.CheckpointID != 0 {
					j.recordStart(b.CheckpointID)
				}
				moved = j.sourcesMoved()
				for _, s := range j.sources {
					// A source may be slow to take the barrier (one that
					// timed out is still in its way): the acks that come
					// meanwhile are kept for the loop, so no task waits on
					// a full ack queue while the source waits on that task.
					for sent := false; !sent; {
						select {
						case s.inject <- b:
							sent = true
						case a := <-j.acks:
							early = append(early, a)
						case <-j.ctx.Done():
							return false
						}
					}
				}
			case ckpt.Commit:
				err := j.commitMarker(o.ID, totals, o.Offsets, recentLate, recentBad)
				rest := slices.Clone(outs[i+1:])
				if !perform(c.Committed(time.Now(), err)) {
					return false
				}
				outs = rest
				i = -1
			case ckpt.Completed:
				j.recordEnd(o.ID, "completed", nil, o.Bytes, o.Align, o.Offsets, o.Took)
			case ckpt.Failed:
				j.recordEnd(o.ID, "failed", o.Err, o.Bytes, o.Align, o.Offsets, o.Took)
			case ckpt.Answer:
				res := checkpointResult{id: o.ID, err: o.Err}
				if o.Stopped {
					res.err = j.stoppedErr()
				}
				for _, r := range o.Requests {
					reqs[r] <- res
					delete(reqs, r)
				}
			}
		}
		return true
	}
	for {
		for len(early) > 0 {
			a := early[0]
			early = early[1:]
			if !onAck(a) {
				break
			}
		}
		select {
		case <-j.ctx.Done():
			perform(c.Stop())
			return
		case <-ticker.C:
			now := time.Now()
			j.checkStall(now)
			perform(c.Tick(now, j.sourcesMoved() != moved))
		case w := <-j.force:
			nextReq++
			reqs[nextReq] = w
			perform(c.Request(time.Now(), nextReq))
		case a := <-j.acks:
			onAck(a)
		}
	}
}

// commitMarker completes checkpoint id: its marker (the counters' totals,
// the offsets a restart resumes from) is committed and synced, then the
// results, the external sink's committer and Status learn of it.
func (j *Job) commitMarker(id uint64, totals counts, offsets map[string]int64, recentLate []op.LateRow, recentBad []BadRecord) error {
	fault.Point("checkpoint.before_marker")
	m := markerValue{ID: id, Time: time.Now().UnixMilli(), RowsIn: totals.rowsIn, RowsOut: totals.rowsOut, Late: totals.late, Bad: totals.bad,
		OutOfRange: totals.outOfRange, Offsets: offsets, RecentLate: recentLate, RecentBad: recentBad}
	val, _ := json.Marshal(m)
	if err := j.store.CommitMarker(markerKey(j.ID), id, val); err != nil {
		return err
	}
	fault.Point("checkpoint.after_marker")
	if j.results != nil {
		j.results.setCommitted(id)
	}
	if j.committer != nil {
		j.committer.markerCommitted(id)
	}
	j.mu.Lock()
	j.marker = m
	j.mu.Unlock()
	j.lastCheckpoint.Store(id)
	return nil
}

// sourcesMoved sums what the sources sent down their chains so far.
func (j *Job) sourcesMoved() uint64 {
	var n uint64
	for _, s := range j.sources {
		n += s.moved.Load()
	}
	return n
}

func (j *Job) recordStart(id uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.history = append(j.history, CheckpointStat{ID: id, Status: "in_progress", Started: time.Now().UTC()})
	if len(j.history) > MaxHistory {
		j.history = append(j.history[:0:0], j.history[len(j.history)-MaxHistory:]...)
	}
}

// recordEnd records how checkpoint id ended: its status, error, bytes,
// alignment time (the longest any task held its barrier up) and offsets.
func (j *Job) recordEnd(id uint64, status string, err error, bytes int64, align time.Duration, offsets map[string]int64, d time.Duration) {
	if err != nil {
		j.logger.Warn("checkpoint failed", "query", j.Name, "id", id, "err", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if status == "completed" {
		j.ckpt.observe(d, bytes, align)
		j.diskErr = nil
	} else {
		j.ckpt.failed++
		if state.IsDiskFull(err) {
			// The query goes on (its state writes are kept and retried
			// with the next checkpoint) and reports retrying until one
			// completes.
			j.diskErr = fmt.Errorf("checkpoint %d failed: %w", id, err)
		}
	}
	for i := len(j.history) - 1; i >= 0; i-- {
		if h := &j.history[i]; h.ID == id {
			h.Status, h.Bytes, h.Offsets = status, bytes, offsets
			h.Duration = d.Milliseconds()
			h.Alignment = durationMs(align)
			if err != nil {
				h.Error = err.Error()
			}
			return
		}
	}
}

// History returns the recent checkpoints, oldest first.
func (j *Job) History() []CheckpointStat {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]CheckpointStat(nil), j.history...)
}

// Checkpoint takes a checkpoint now: every source first reads every row
// available (acknowledged) when the barrier reaches it. It returns the
// completed checkpoint's id (0 when checkpoints are off: the barrier still
// publishes the latest results).
func (j *Job) Checkpoint(ctx context.Context) (uint64, error) {
	w := make(chan checkpointResult, 1)
	select {
	case j.force <- w:
	case <-j.ctx.Done():
		return 0, j.stoppedErr()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case r := <-w:
		return r.id, r.err
	case <-j.ctx.Done():
		// The request may sit in the buffer of a coordinator that is gone.
		return 0, j.stoppedErr()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (j *Job) stoppedErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	return errors.New("query stopped")
}

// Stop stops every task, without a checkpoint, and waits for them up to
// StopTimeout: a task busy in one message cannot be interrupted, so a job
// that does not stop in time is left to end on its own (its context is
// cancelled: it writes nothing more once it looks) and the error names
// the tasks still working.
func (j *Job) Stop() error { return j.StopWithin(StopTimeout) }

// StopWithin is Stop waiting up to d.
func (j *Job) StopWithin(d time.Duration) error {
	j.setState(StateStopped, nil)
	j.cancel()
	return j.wait(d)
}

// StopWithCheckpoint takes a final checkpoint, then stops: a restart
// resumes from it without replaying anything.
func (j *Job) StopWithCheckpoint(ctx context.Context) error {
	var err error
	if j.Graph.Options.CheckpointInterval > 0 {
		_, err = j.Checkpoint(ctx)
	}
	j.Stop()
	return err
}

// Done is closed once every sink has seen the end of its input (bounded
// sources only), or the job stops.
func (j *Job) Done() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for _, s := range j.sinks {
			select {
			case <-s.ended:
			case <-j.ctx.Done():
			}
		}
		close(done)
	}()
	return done
}

// WaitSinks waits until the external sink has committed checkpoint id (an
// exactly_once sink commits after the marker), or ctx ends, and reports
// its progress; ok is false when it is still pending (or the job
// stopped first).
func (j *Job) WaitSinks(ctx context.Context, id uint64) (sinks []SinkStatus, ok bool) {
	if j.committer == nil {
		return nil, true
	}
	// Nor past the job: a query that fails (its sink's target refused the
	// epoch for good) commits nothing more.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(j.ctx, cancel)()
	ok = j.committer.waitCommitted(ctx, id)
	return []SinkStatus{j.committer.status()}, ok
}

// Status is a snapshot of a job for the API.
type Status struct {
	State          string
	Err            error
	RowsIn         int64
	RowsOut        int64
	LateRows       int64
	RecentLate     []op.LateRow
	LastCheckpoint uint64
	// Watermark is the watermark that reached the query's sinks (the
	// minimum over them): no result row it emits later is older.
	Watermark int64
	// SourceWatermarks is each source table's watermark.
	SourceWatermarks map[string]int64
	Offsets          map[string]int64
	// StateRows is how many groups and held join rows the operators keep;
	// StateBytes an estimate of the heap they take.
	StateRows, StateBytes int64
	// Sinks are the external sinks' progress.
	Sinks []SinkStatus
	// ResultsSkipped (built-in results, delivery=at_most_once): replayed
	// changes not published since the start, because the last run may
	// have published them.
	ResultsSkipped int64
	// BadRecords counts source records that could not be decoded;
	// RecentBad are the last few.
	BadRecords int64
	RecentBad  []BadRecord
	// OutOfRange counts arithmetic results beyond their type's range,
	// which are NULL in the rows (BIGINT overflow, TIMESTAMP arithmetic
	// past 0001-9999).
	OutOfRange int64
	// Lag is, for partitioned sources (Kafka), each partition's last
	// stable offset as last looked up minus the query's position (nil:
	// none).
	Lag map[string]int64
}

// Status reports the job's state and counters.
func (j *Job) Status() Status {
	j.mu.Lock()
	s := Status{State: j.state, Err: j.err, RecentLate: append([]op.LateRow(nil), j.lateKeep...), RecentBad: append([]BadRecord(nil), j.badKeep...)}
	j.mu.Unlock()
	s.BadRecords = j.badRecords.Load()
	s.OutOfRange = j.outOfRange.Load()
	if s.State == StateRunning || s.State == StateRestoring {
		j.mu.Lock()
		if j.diskErr != nil {
			s.State, s.Err = StateRetrying, j.diskErr
		}
		j.mu.Unlock()
	}
	if j.committer != nil {
		cs := j.committer.status()
		s.Sinks = append(s.Sinks, cs)
		if cs.Error != "" && (s.State == StateRunning || s.State == StateRestoring) {
			// An external system is unavailable: the query goes on (up to
			// the journal's bound) and the committer retries.
			s.State, s.Err = StateRetrying, errors.New(cs.Error)
		}
	}
	if j.amo != nil && j.committer == nil {
		s.ResultsSkipped = j.amo.skipped.Load()
	}
	s.RowsIn, s.RowsOut, s.LateRows = j.rowsIn.Load(), j.rowsOut.Load(), j.lateRows.Load()
	s.LastCheckpoint = j.lastCheckpoint.Load()
	s.Watermark = window.NoWatermark
	for i, k := range j.sinks {
		if w := k.wm.Load(); i == 0 || w < s.Watermark {
			s.Watermark = w
		}
	}
	s.SourceWatermarks = map[string]int64{}
	s.Offsets = map[string]int64{}
	for _, t := range j.tasks {
		s.StateRows += t.stateRows.Load()
		s.StateBytes += t.bytesHeld()
	}
	for _, src := range j.sources {
		s.StateRows += src.stateRows.Load()
		s.StateBytes += src.bytesHeld()
		t := src.spec.Table
		if pos := src.positions.Load(); pos != nil {
			for k, off := range *pos {
				s.Offsets[k] = off
			}
		} else if off, seen := s.Offsets[t]; !seen || src.offset.Load() < off {
			s.Offsets[t] = src.offset.Load()
		}
		if p := src.problem.Load(); p != nil && *p != "" && (s.State == StateRunning || s.State == StateRestoring) {
			// A source cannot read (no broker, no topic): the query waits
			// and retries.
			s.State, s.Err = StateRetrying, fmt.Errorf("source %s: %s", t, *p)
		}
		if l := src.lag.Load(); l != nil {
			if s.Lag == nil {
				s.Lag = map[string]int64{}
			}
			for k, n := range *l {
				s.Lag[k] = n
			}
		}
		if w, seen := s.SourceWatermarks[t]; !seen || src.published.Load() < w {
			s.SourceWatermarks[t] = src.published.Load()
		}
	}
	return s
}

// Checkpointed is what query qid's last completed checkpoint recorded:
// its id, counters, and the source offsets a restart resumes reading from.
type Checkpointed struct {
	ID                                     uint64
	RowsIn, RowsOut, Late, Bad, OutOfRange int64
	Offsets                                map[string]int64
	RecentLate                             []op.LateRow
	RecentBad                              []BadRecord
}

// LastCheckpointOf reads query qid's last completed checkpoint (ok false
// when it has none).
func LastCheckpointOf(store state.Versioned, qid uint64) (Checkpointed, bool) {
	id, val, ok, err := store.LastMarker(markerKey(qid))
	if err != nil || !ok {
		return Checkpointed{}, false
	}
	var m markerValue
	if json.Unmarshal(val, &m) != nil {
		return Checkpointed{}, false
	}
	return Checkpointed{ID: id, RowsIn: m.RowsIn, RowsOut: m.RowsOut, Late: m.Late, Bad: m.Bad, OutOfRange: m.OutOfRange,
		Offsets: m.Offsets, RecentLate: m.RecentLate, RecentBad: m.RecentBad}, true
}
