package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/window"
)

// BatchSize is the most rows a source reads into one batch.
const BatchSize = 1024

// sourceTask reads a source and drives its chain. Barriers come from the
// coordinator on inject; the task records its position and forwards them
// in-band. It owns the source's watermark: per row, the watermark before
// that row in log order.
type sourceTask struct {
	taskBase
	spec      *plan.Source
	vertex    int
	subtask   int
	reader    Reader
	inject    chan op.Barrier
	tracker   window.Tracker
	floor     int64 // the all-idle wall-clock advance
	wm        int64 // last watermark forwarded
	lastRow   int64 // wall ms of the last row read
	tick      time.Duration
	endSent   bool
	idleSent  bool // consumers were told this source is idle
	restoreAt uint64
	// hold (>= 0): an at_most_once sink's last run wrote what the input
	// up to this offset produced; the task reads up to it and no further
	// until it has passed a barrier there, so that a barrier's cut is
	// exactly the written one (atmostonce.go). -1: none.
	hold int64
	// moved counts what the source sent down its chain (rows, watermarks,
	// idleness, the end): while it stays, an emit barrier has nothing to
	// emit, and the coordinator sends none.
	moved atomic.Uint64
	// Published for Status (read by other goroutines).
	offset    atomic.Int64
	published atomic.Int64
	// positions are a partitioned reader's offsets ("table[p]"), problem
	// why a reader cannot read now ("" when it can).
	positions atomic.Pointer[map[string]int64]
	problem   atomic.Pointer[string]
	// lag is a reader's lag per partition ("table[p]").
	lag atomic.Pointer[map[string]int64]
}

func (s *sourceTask) run(ctx context.Context) error {
	// Operators chained to a source (calc, window assignment) are stateless
	// today; restore them all the same.
	if err := s.restore(s.restoreAt); err != nil {
		return err
	}
	s.job.taskRestored()
	s.hold = -1
	if s.job.cuts != nil {
		s.job.cuts.note(0, s.vertex, s.subtask, s.startOffsets())
		if !s.reader.caps().partitioned {
			if h, ok := s.job.cuts.hold(s.vertex, s.subtask, s.spec.Table); ok && h > s.reader.Offset() {
				s.hold = h
			}
		}
	}
	if err := s.resumeWatermark(); err != nil {
		return err
	}
	defer s.reader.Close()
	// A source polls on a ticker, unless its reader says when rows come
	// and nothing else moves its watermark (no idle timeout, event time):
	// a thousand views over a table then sleep until rows or barriers come.
	var tick <-chan time.Time
	if !s.reader.caps().wakes || s.spec.ProcTime || s.spec.IdleTimeout > 0 {
		ticker := time.NewTicker(s.tick)
		defer ticker.Stop()
		tick = ticker.C
	}
	s.lastRow = time.Now().UnixMilli()
	for {
		select {
		case <-ctx.Done():
			return nil
		case b := <-s.inject:
			if err := s.onBarrier(ctx, b); err != nil {
				return err
			}
			continue
		default:
		}
		// Taken before polling: rows that become readable after the poll
		// looked fire it.
		ready := s.reader.Ready()
		now := time.Now()
		s.live.begin(now)
		n, err := s.poll(now.UnixMilli())
		s.live.end()
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if s.reader.Done() && !s.endSent {
			s.endSent = true
			s.moved.Add(1)
			if err := s.chain.watermark(math.MaxInt64); err != nil {
				return err
			}
			if err := s.chain.term.End(); err != nil {
				if ctx.Err() != nil {
					return nil // an exchange fails only when the query stops
				}
				return err
			}
		}
		if err := s.idle(now.UnixMilli()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case b := <-s.inject:
			if err := s.onBarrier(ctx, b); err != nil {
				return err
			}
		case <-ready:
		case <-tick:
		}
	}
}

// resumeWatermark forwards the watermark restored with the source's
// position (its tracker's maximum event time, its idle floor) before any
// row: every operator downstream saw it before the checkpoint's barrier,
// so it closes nothing they had not closed, but without it the sinks
// (and the query's status) had no watermark until a row came.
func (s *sourceTask) resumeWatermark() error {
	if s.spec.ProcTime {
		return nil // idle() moves it with the clock
	}
	wm := s.currentWM(time.Now().UnixMilli())
	if wm <= s.wm {
		return nil
	}
	s.wm = wm
	s.published.Store(wm)
	s.moved.Add(1)
	if err := s.chain.watermark(wm); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.publish()
	return nil
}

// currentWM is the source's watermark now.
func (s *sourceTask) currentWM(now int64) int64 {
	if s.spec.ProcTime {
		return now
	}
	return max(s.eventWM(now), s.floor)
}

// eventWM is the watermark of the rows read: the source's tracker, or a
// reader's own (per partition).
func (s *sourceTask) eventWM(now int64) int64 {
	if s.reader.caps().stamps {
		return s.reader.Watermark(now)
	}
	return s.tracker.Watermark()
}

// afterPoll publishes what a reader reports besides rows: records it
// could not decode, why it cannot read, its partitions' positions.
func (s *sourceTask) afterPoll() {
	rd := s.reader
	caps := rd.caps()
	if caps.reports {
		if n, samples := rd.TakeBad(); n > 0 {
			s.job.addBad(n, samples)
			s.sinceCkpt.bad += n
			s.badSince = keepLast(s.badSince, samples, MaxBadSamples)
		}
		msg := ""
		if err := rd.Problem(); err != nil {
			msg = err.Error()
		}
		if old := s.problem.Load(); old == nil || *old != msg {
			s.problem.Store(&msg)
		}
	}
	if caps.partitioned {
		offs := map[string]int64{}
		for p, pos := range rd.Positions() {
			offs[PartitionKey(s.spec.Table, p)] = pos.Offset
		}
		s.positions.Store(&offs)
	}
	if caps.reports {
		if l := rd.Lag(); l != nil {
			lag := make(map[string]int64, len(l))
			for p, n := range l {
				lag[PartitionKey(s.spec.Table, p)] = n
			}
			s.lag.Store(&lag)
		}
	}
}

// poll reads one batch and sends it down the chain.
func (s *sourceTask) poll(now int64) (int, error) {
	b := &op.Batch{}
	limit := BatchSize
	if s.hold >= 0 {
		if limit = int(min(int64(limit), s.hold-s.reader.Offset())); limit <= 0 {
			return 0, nil
		}
	}
	n, err := s.reader.Poll(now, limit, b)
	if err != nil {
		return 0, fmt.Errorf("%s: read table %s: %w", s.name, s.spec.Table, err)
	}
	s.afterPoll()
	if n == 0 {
		return 0, nil
	}
	s.lastRow = now
	s.env.ProcTime = now
	s.moved.Add(1)
	if s.idleSent {
		s.idleSent = false
		if err := s.chain.term.Idle(false); err != nil {
			return 0, nil
		}
	}
	et := s.spec.EventTime
	stamped := s.reader.caps().stamps
	for i := range b.Rows {
		if stamped {
			// The reader stamped the row (per-partition watermarks).
			b.Meta[i].WM = max(b.Meta[i].WM, s.floor)
			continue
		}
		b.Meta[i].WM = s.currentWM(now)
		if et >= 0 && !s.spec.ProcTime {
			if ts := b.Rows[i][et]; !ts.IsNull() {
				s.tracker.Observe(ts.I)
			}
		}
	}
	s.job.rowsIn.Add(int64(n))
	s.sinceCkpt.rowsIn += int64(n)
	s.offset.Store(s.reader.Offset())
	if err := s.chain.process(b); err != nil {
		return 0, fmt.Errorf("%s: %w", s.name, err)
	}
	s.publish()
	if wm := s.currentWM(now); wm > s.wm {
		s.wm = wm
		s.published.Store(wm)
		if err := s.chain.watermark(wm); err != nil {
			return 0, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return n, nil
}

// idle advances the watermark with the wall clock when the source has been
// idle past its idle_timeout (it is the query's only input, so all inputs
// are idle), and keeps a processing-time watermark moving.
func (s *sourceTask) idle(now int64) error {
	wm := s.wm
	switch {
	case s.spec.ProcTime:
		wm = now
	case s.reader.Holding():
		// Rows read but held (a schema registry that cannot be asked)
		// are still to come: not idle, and the timeout starts again
		// once they are out.
		s.lastRow = now
	case s.spec.IdleTimeout > 0 && window.Idle(s.lastRow, now, s.spec.IdleTimeout):
		if !s.idleSent {
			// Consumers that wait on this input (an AS OF join's table
			// side) stop waiting.
			s.idleSent = true
			s.moved.Add(1)
			if err := s.chain.term.Idle(true); err != nil {
				return nil
			}
		}
		from := s.eventWM(now)
		if from == window.NoWatermark {
			return nil
		}
		s.floor = max(s.floor, window.IdleAdvance(from, s.lastRow+s.spec.IdleTimeout, now))
		wm = s.floor
	}
	if wm > s.wm {
		s.wm = wm
		s.published.Store(wm)
		s.env.ProcTime = now
		s.moved.Add(1)
		if err := s.chain.watermark(wm); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		s.publish()
	}
	return nil
}

// barrier handles barrier b from the coordinator: Flush first reads every
// row available now; then the position is recorded for a checkpoint and the
// barrier goes down the chain.
func (s *sourceTask) onBarrier(ctx context.Context, b op.Barrier) error {
	s.live.begin(time.Now())
	defer s.live.end()
	if s.reader.caps().async && b.Flush {
		// Rows arrive asynchronously: wait for them, up to a deadline.
		done := s.reader.FlushTarget(time.Now().UnixMilli())
		deadline := time.Now().Add(flushWait)
		for !done() && time.Now().Before(deadline) {
			n, err := s.poll(time.Now().UnixMilli())
			if err != nil {
				return err
			}
			if n == 0 {
				select {
				case <-s.reader.Ready():
				case <-time.After(10 * time.Millisecond):
				case <-ctx.Done():
					return nil
				}
			}
		}
	} else if b.Flush {
		now := time.Now().UnixMilli()
		end := s.reader.Available(now)
		for s.reader.Offset() < end {
			n, err := s.poll(now)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
		}
	}
	var pos []state.KV
	var offsets map[string]int64
	if b.CheckpointID != 0 {
		s.reader.Sync()
	}
	if b.CheckpointID != 0 || s.job.cuts != nil {
		p := sourcePos{Offset: s.reader.Offset(), MaxEventTime: s.tracker.MaxEventTime(), Floor: s.floor}
		offsets = s.startOffsets()
		if s.reader.caps().partitioned {
			p.Partitions = s.reader.Positions()
		}
		if s.job.cuts != nil {
			// An at_most_once sink records the cut before it writes
			// what the input up to it produced (atmostonce.go).
			s.job.cuts.note(b.Epoch, s.vertex, s.subtask, offsets)
		}
		if b.CheckpointID != 0 {
			val, _ := json.Marshal(p)
			pos = []state.KV{{Key: sourceKey(s.job.ID, s.vertex, s.subtask), Value: val}}
		} else {
			offsets = nil
		}
	}
	if s.hold >= 0 && s.reader.Offset() >= s.hold {
		s.hold = -1 // this barrier's cut is the written one
	}
	return s.barrier(ctx, b, 0, pos, offsets)
}

// startOffsets are the task's positions before it reads (for the cut at
// the start, atmostonce.go), keyed as a checkpoint's offsets are.
func (s *sourceTask) startOffsets() map[string]int64 {
	if !s.reader.caps().partitioned {
		return map[string]int64{s.spec.Table: s.reader.Offset()}
	}
	out := map[string]int64{}
	for part, pos := range s.reader.Positions() {
		out[PartitionKey(s.spec.Table, part)] = pos.Offset
	}
	return out
}

// sourcePos is a source task's checkpointed position.
type sourcePos struct {
	Offset       int64 `json:"offset"`
	MaxEventTime int64 `json:"max_event_time"`
	Floor        int64 `json:"floor"`
	// Partitions: a Kafka source's position per partition.
	Partitions map[int32]kafkaPartPos `json:"partitions,omitempty"`
}

// decodeSourcePos reads a checkpointed position over def (fields it does
// not hold keep def's values). Offsets are never negative.
func decodeSourcePos(raw []byte, def sourcePos) (sourcePos, error) {
	p := def
	if err := json.Unmarshal(raw, &p); err != nil {
		return def, err
	}
	if p.Offset < 0 {
		return def, fmt.Errorf("negative offset %d", p.Offset)
	}
	for part, pp := range p.Partitions {
		if part < 0 || pp.Offset < 0 {
			return def, fmt.Errorf("partition %d: offset %d", part, pp.Offset)
		}
	}
	return p, nil
}

// flushWait bounds how long a flush waits for rows that arrive
// asynchronously (Kafka).
const flushWait = 10 * time.Second
