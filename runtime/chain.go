package runtime

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/value"
)

// terminal is where a chain ends: an exchange to the next tasks or a sink.
type terminal interface {
	op.Emitter
	Watermark(wm int64) error
	// Barrier forwards b (an exchange: it fails only when the query
	// stops) or publishes the epoch (a sink).
	Barrier(b op.Barrier) error
	End() error
	// Idle tells the consumers that the source became idle or active.
	Idle(idle bool) error
	// awaitRoom is the part of barrier b that may wait, before Barrier:
	// an external sink's room (backpressure). It returns how long it
	// waited (the task counts it as alignment), and an error only when
	// the query stops.
	awaitRoom(ctx context.Context, b op.Barrier, live *liveness) (time.Duration, error)
	// snapshot returns what the terminal pre-commits at checkpoint id
	// (after Barrier), for the task's writer.
	snapshot(id uint64) sinkWrites
}

// chain runs a task's operators in order; what operator i emits goes
// straight into operator i+1, and what the last emits into the terminal.
type chain struct {
	ops   []op.Operator
	links []op.Emitter
	term  terminal
	// rows[i] counts the rows that entered operator i, rows[len(ops)] those
	// that entered the terminal (metrics.go). Counting happens here, between
	// operators, one atomic add per batch: operators stay pure.
	rows []atomic.Int64
}

// link feeds what an operator emits to the next one, counting it.
type link struct {
	next op.Operator
	out  op.Emitter
	n    *atomic.Int64
}

func (l link) Emit(b *op.Batch) error {
	l.n.Add(int64(b.Len()))
	return l.next.Process(b, l.out)
}

// counted feeds what the last operator emits to the terminal, counting it.
type counted struct {
	term terminal
	n    *atomic.Int64
}

func (c counted) Emit(b *op.Batch) error {
	c.n.Add(int64(b.Len()))
	return c.term.Emit(b)
}

func newChain(ops []op.Operator, term terminal) *chain {
	c := &chain{ops: ops, links: make([]op.Emitter, len(ops)), term: term, rows: make([]atomic.Int64, len(ops)+1)}
	var out op.Emitter = counted{term: term, n: &c.rows[len(ops)]}
	for i := len(ops) - 1; i >= 0; i-- {
		c.links[i] = out
		out = link{next: ops[i], out: out, n: &c.rows[i]}
	}
	return c
}

// process runs a batch through the chain from its first operator.
func (c *chain) process(b *op.Batch) error {
	c.rows[0].Add(int64(b.Len()))
	if len(c.ops) == 0 {
		return c.term.Emit(b)
	}
	return c.ops[0].Process(b, c.links[0])
}

// watermark advances the chain from operator `from` on: each operator
// gets the watermark its predecessor forwards.
func (c *chain) watermark(wm int64) error { return c.watermarkFrom(0, wm) }

func (c *chain) watermarkFrom(from int, wm int64) error {
	for i := from; i < len(c.ops); i++ {
		var err error
		if wm, err = c.ops[i].Watermark(wm, c.links[i]); err != nil {
			return err
		}
	}
	return c.term.Watermark(wm)
}

// barrier lets every operator emit what the epoch changed.
func (c *chain) barrier(b op.Barrier) error {
	for i, op := range c.ops {
		if err := op.Barrier(b, c.links[i]); err != nil {
			return err
		}
	}
	return nil
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
	tgt       []uint32 // per row of the batch being emitted: its target
	// live is the producing task's: time blocked on a full queue is
	// waiting, not working.
	live *liveness
}

var _ terminal = (*output)(nil)

func (o *output) Emit(b *op.Batch) error {
	if o.partition != plan.Hash && o.partition != plan.ByKey {
		return o.live.send(o.ctx, o.targets[0], Message{Kind: MsgData, Batch: b})
	}
	// The group key is encoded once, here, and travels with the row. The
	// batch is ours once emitted to us: its rows are keyed in place and,
	// with one target, it goes on as it is.
	n := len(o.targets)
	o.tgt = o.tgt[:0]
	for i, r := range b.Rows {
		if o.partition != plan.ByKey {
			o.keyBuf = value.EncodeKey(o.keyBuf[:0], r, o.keyCols)
			b.Meta[i].Key = string(o.keyBuf)
		}
		if n > 1 {
			o.tgt = append(o.tgt, uint32(value.HashKey(b.Meta[i].Key)%uint64(n)))
		}
	}
	if n == 1 {
		return o.live.send(o.ctx, o.targets[0], Message{Kind: MsgData, Batch: b})
	}
	// Several targets: the first keeps the input batch (its rows moved up in
	// order), the others get batches of exactly their size.
	counts := make([]int, n)
	for _, t := range o.tgt {
		counts[t]++
	}
	parts := make([]*op.Batch, n)
	for t := 1; t < n; t++ {
		if counts[t] > 0 {
			parts[t] = &op.Batch{Rows: make([]plan.Row, 0, counts[t]), Meta: make([]op.RowMeta, 0, counts[t])}
		}
	}
	k := 0
	for i, t := range o.tgt {
		if t == 0 {
			b.Rows[k], b.Meta[k] = b.Rows[i], b.Meta[i]
			k++
		} else {
			parts[t].Append(b.Rows[i], b.Meta[i])
		}
	}
	clear(b.Rows[k:])
	if k > 0 {
		b.Rows, b.Meta = b.Rows[:k], b.Meta[:k]
		parts[0] = b
	}
	for t, p := range parts {
		if p != nil {
			if err := o.live.send(o.ctx, o.targets[t], Message{Kind: MsgData, Batch: p}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *output) broadcast(m Message) error {
	for _, t := range o.targets {
		if err := o.live.send(o.ctx, t, m); err != nil {
			return err
		}
	}
	return nil
}

func (o *output) Watermark(wm int64) error {
	return o.broadcast(Message{Kind: MsgWatermark, Watermark: wm})
}
func (o *output) Barrier(b op.Barrier) error {
	return o.broadcast(Message{Kind: MsgBarrier, Barrier: b})
}
func (o *output) End() error           { return o.broadcast(Message{Kind: MsgEnd}) }
func (o *output) Idle(idle bool) error { return o.broadcast(Message{Kind: MsgIdle, Idle: idle}) }
func (o *output) awaitRoom(context.Context, op.Barrier, *liveness) (time.Duration, error) {
	return 0, nil
}
func (o *output) snapshot(uint64) sinkWrites { return sinkWrites{} }

// sinkEnd ends a chain in a sink.
type sinkEnd struct {
	sinkWriter
	ended chan struct{}
	// wm is the watermark that reached the sink: the query's watermark
	// (read by Status).
	wm atomic.Int64
}

func (s *sinkEnd) Watermark(wm int64) error {
	s.wm.Store(wm)
	if w, ok := s.sinkWriter.(interface{ watermark(int64) }); ok {
		w.watermark(wm)
	}
	return nil
}
func (s *sinkEnd) Idle(bool) error { return nil }

func (s *sinkEnd) Barrier(b op.Barrier) error { return s.sinkWriter.Barrier(b) }

func (s *sinkEnd) awaitRoom(ctx context.Context, b op.Barrier, live *liveness) (time.Duration, error) {
	w, ok := s.sinkWriter.(roomWaiter)
	if !ok {
		return 0, nil
	}
	start := time.Now()
	err := live.wait(func() error { return w.awaitRoom(ctx, b) })
	return time.Since(start), err
}

func (s *sinkEnd) snapshot(id uint64) sinkWrites { return s.sinkWriter.snapshot(id) }

// roomWaiter is a sink that may have to wait at a barrier until the
// external system behind it has room (journalWriter.awaitRoom).
type roomWaiter interface {
	awaitRoom(ctx context.Context, b op.Barrier) error
}

// End publishes what the end of input released (no barrier follows it)
// to the latest results.
func (s *sinkEnd) End() error {
	if w, ok := s.sinkWriter.(interface{ end() error }); ok {
		if err := w.end(); err != nil {
			return err
		}
	}
	close(s.ended)
	return nil
}
