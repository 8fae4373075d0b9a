package runtime

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/window"
)

// BatchSize is the most rows a source reads into one batch.
const BatchSize = 1024

// terminal is where a chain ends: an exchange to the next tasks or a sink.
type terminal interface {
	Emitter
	Watermark(wm int64) error
	Barrier(b Barrier) error
	End() error
}

// chain runs a task's operators in order; what operator i emits goes
// straight into operator i+1, and what the last emits into the terminal.
type chain struct {
	ops   []Operator
	links []Emitter
	term  terminal
}

type link struct {
	next Operator
	out  Emitter
}

func (l link) Emit(b *Batch) error { return l.next.Process(b, l.out) }

func newChain(ops []Operator, term terminal) *chain {
	c := &chain{ops: ops, links: make([]Emitter, len(ops)), term: term}
	var out Emitter = term
	for i := len(ops) - 1; i >= 0; i-- {
		c.links[i] = out
		out = link{next: ops[i], out: out}
	}
	return c
}

func (c *chain) process(b *Batch) error {
	if len(c.ops) == 0 {
		return c.term.Emit(b)
	}
	return c.ops[0].Process(b, c.links[0])
}

func (c *chain) watermark(wm int64) error {
	for i, op := range c.ops {
		if err := op.Watermark(wm, c.links[i]); err != nil {
			return err
		}
	}
	return c.term.Watermark(wm)
}

func (c *chain) barrier(b Barrier) error {
	for i, op := range c.ops {
		if err := op.Barrier(b, c.links[i]); err != nil {
			return err
		}
	}
	return c.term.Barrier(b)
}

// output is the exchange at the end of a chain: it routes rows to the
// consumer tasks (by hash of the encoded key, or forward) and broadcasts
// watermarks, barriers and the end of input.
type output struct {
	ctx       context.Context
	targets   []inbox
	partition plan.Partition
	keyCols   []int
	keyBuf    []byte
}

var _ terminal = (*output)(nil)

func (o *output) Emit(b *Batch) error {
	if o.partition != plan.Hash {
		return o.targets[0].Send(o.ctx, Message{Kind: MsgData, Batch: b})
	}
	n := len(o.targets)
	parts := make([]*Batch, n)
	for i, r := range b.Rows {
		// The group key is encoded once, here, and travels with the row.
		o.keyBuf = EncodeKey(o.keyBuf[:0], r, o.keyCols)
		m := b.Meta[i]
		m.Key = string(o.keyBuf)
		t := 0
		if n > 1 {
			t = int(HashKey(m.Key) % uint64(n))
		}
		if parts[t] == nil {
			parts[t] = &Batch{Rows: make([]plan.Row, 0, len(b.Rows)/n+1), Meta: make([]RowMeta, 0, len(b.Rows)/n+1)}
		}
		parts[t].Append(r, m)
	}
	for t, p := range parts {
		if p != nil {
			if err := o.targets[t].Send(o.ctx, Message{Kind: MsgData, Batch: p}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *output) broadcast(m Message) error {
	for _, t := range o.targets {
		if err := t.Send(o.ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (o *output) Watermark(wm int64) error {
	return o.broadcast(Message{Kind: MsgWatermark, Watermark: wm})
}
func (o *output) Barrier(b Barrier) error { return o.broadcast(Message{Kind: MsgBarrier, Barrier: b}) }
func (o *output) End() error              { return o.broadcast(Message{Kind: MsgEnd}) }

// sinkTerminal ends a chain in a sink.
type sinkTerminal struct {
	sink
	ended chan struct{}
}

func (s *sinkTerminal) Watermark(wm int64) error {
	if w, ok := s.sink.(interface{ watermark(int64) }); ok {
		w.watermark(wm)
	}
	return nil
}
func (s *sinkTerminal) End() error {
	close(s.ended)
	return nil
}

// ack is a task's report that it has handled a barrier.
type ack struct {
	epoch     uint64
	restoring bool
	err       error
}

// taskBase is what source and non-source tasks share.
type taskBase struct {
	job      *Job
	name     string
	chain    *chain
	counters *Counters
	env      *Env
}

// afterBarrier reports the barrier to the coordinator.
func (t *taskBase) ack(ctx context.Context, b Barrier, err error) error {
	select {
	case t.job.acks <- ack{epoch: b.Epoch, restoring: b.Restoring, err: err}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// publish moves the operators' counters to the job.
func (t *taskBase) publish() {
	c := t.counters
	if c.LateRows != 0 || len(c.Late) > 0 {
		t.job.addLate(c.LateRows, c.Late)
		c.LateRows, c.Late = 0, c.Late[:0]
	}
}

// task runs a non-source vertex subtask: it reads its mailbox, aligns
// barriers across its inputs and drives its chain.
type task struct {
	taskBase
	mb      *mailbox
	align   *aligner
	inWM    []int64
	ended   []bool
	wm      int64
	endSent bool
}

func (t *task) run(ctx context.Context) error {
	for {
		msg, in, err := t.mb.Next(ctx, t.align.Blocked)
		if err != nil {
			return nil // stopped
		}
		t.env.ProcTime = time.Now().UnixMilli()
		switch msg.Kind {
		case MsgData:
			err = t.chain.process(msg.Batch)
		case MsgWatermark:
			if msg.Watermark > t.inWM[in] {
				t.inWM[in] = msg.Watermark
			}
			wm := int64(math.MaxInt64)
			for _, w := range t.inWM {
				wm = min(wm, w)
			}
			if wm > t.wm {
				t.wm = wm
				err = t.chain.watermark(wm)
			}
		case MsgBarrier:
			b, done, aerr := t.align.Arrive(in, msg.Barrier)
			if aerr != nil {
				return fmt.Errorf("%s: %w", t.name, aerr)
			}
			if done {
				berr := t.chain.barrier(b)
				if aerr := t.ack(ctx, b, berr); aerr != nil {
					return nil
				}
				err = berr
			}
		case MsgEnd:
			t.ended[in] = true
			all := true
			for _, e := range t.ended {
				all = all && e
			}
			if all && !t.endSent {
				t.endSent = true
				if err = t.chain.watermark(math.MaxInt64); err == nil {
					err = t.chain.term.End()
				}
			}
		}
		t.publish()
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
}

// sourceTask reads a source and drives its chain. Barriers come from the
// coordinator on inject; the task records its position and forwards them
// in-band. It owns the source's watermark: per row, the watermark before
// that row in log order.
type sourceTask struct {
	taskBase
	spec     *plan.Source
	vertex   int
	subtask  int
	reader   reader
	inject   chan Barrier
	tracker  window.Tracker
	floor    int64 // the all-idle wall-clock advance
	wm       int64 // last watermark forwarded
	lastRow  int64 // wall ms of the last row read
	replayTo int64 // rows below this offset are a replay (restoring)
	tick     time.Duration
	endSent  bool
	// Published for Status (read by other goroutines).
	offset    atomic.Int64
	published atomic.Int64
}

func (s *sourceTask) run(ctx context.Context) error {
	ticker := time.NewTicker(s.tick)
	defer ticker.Stop()
	s.lastRow = time.Now().UnixMilli()
	for {
		select {
		case <-ctx.Done():
			return nil
		case b := <-s.inject:
			if err := s.barrier(ctx, b); err != nil {
				return err
			}
			continue
		default:
		}
		now := time.Now().UnixMilli()
		n, err := s.poll(now)
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if s.reader.Done() && !s.endSent {
			s.endSent = true
			if err := s.chain.watermark(math.MaxInt64); err != nil {
				return err
			}
			if err := s.chain.term.End(); err != nil {
				return nil
			}
		}
		if err := s.idle(now); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case b := <-s.inject:
			if err := s.barrier(ctx, b); err != nil {
				return err
			}
		case <-s.reader.Ready():
		case <-ticker.C:
		}
	}
}

// currentWM is the source's watermark now.
func (s *sourceTask) currentWM(now int64) int64 {
	if s.spec.ProcTime {
		return now
	}
	return max(s.tracker.Watermark(), s.floor)
}

// poll reads one batch and sends it down the chain.
func (s *sourceTask) poll(now int64) (int, error) {
	b := &Batch{}
	n, err := s.reader.Poll(now, BatchSize, b)
	if err != nil {
		return 0, fmt.Errorf("%s: read: %w", s.name, err)
	}
	if n == 0 {
		return 0, nil
	}
	s.lastRow = now
	s.env.ProcTime = now
	et := s.spec.EventTime
	for i := range b.Rows {
		b.Meta[i].WM = s.currentWM(now)
		if et >= 0 && !s.spec.ProcTime {
			if ts := b.Rows[i][et]; !ts.IsNull() {
				s.tracker.Observe(ts.I)
			}
		}
	}
	s.job.rowsIn.Add(int64(n))
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
	case s.spec.IdleTimeout > 0 && window.Idle(s.lastRow, now, s.spec.IdleTimeout):
		from := s.tracker.Watermark()
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
func (s *sourceTask) barrier(ctx context.Context, b Barrier) error {
	if b.Flush {
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
	b.Restoring = b.Restoring || s.reader.Offset() < s.replayTo
	var err error
	if b.CheckpointID != 0 && !b.Restoring {
		pos := fmt.Appendf(nil, `{"offset":%d,"max_event_time":%d,"floor":%d}`, s.reader.Offset(), s.tracker.MaxEventTime(), s.floor)
		err = s.job.store.Write(b.CheckpointID, []state.KV{{Key: sourceKey(s.job.ID, s.vertex, s.subtask), Value: pos}})
	}
	if err == nil {
		err = s.chain.barrier(b)
	}
	s.publish()
	if aerr := s.ack(ctx, b, err); aerr != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: barrier %d: %w", s.name, b.Epoch, err)
	}
	return nil
}
