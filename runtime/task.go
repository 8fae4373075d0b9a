package runtime

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
)

// ack is a task's report that it has handled a barrier. For a checkpoint
// it carries the task's counters since its previous checkpoint barrier, so
// the marker records counts consistent with the checkpoint's positions.
type ack struct {
	epoch   uint64
	ckpt    uint64
	err     error // the checkpoint failed at this task (not fatal)
	bytes   int
	offsets map[string]int64 // a source task's positions
	deltas  counts
	// late and bad are the last late rows and undecodable records since
	// the task's previous checkpoint barrier (bounded), for the marker.
	late []op.LateRow
	bad  []BadRecord
	// align is how long the barrier was held up at this task: from its
	// first input's barrier to its last (alignment), plus a sink's wait
	// for room at the barrier (backpressure from an external system).
	align time.Duration
}

// counts are a task's counters.
type counts struct{ rowsIn, rowsOut, late, bad, outOfRange int64 }

func (c *counts) add(o counts) {
	c.rowsIn += o.rowsIn
	c.rowsOut += o.rowsOut
	c.late += o.late
	c.bad += o.bad
	c.outOfRange += o.outOfRange
}

// taskBase is what source and non-source tasks share: the chain, the
// operators' state prefixes, and the checkpoint step of a barrier.
type taskBase struct {
	job      *Job
	name     string
	chain    *chain
	counters *op.Counters
	env      *op.Env
	// opPrefix[i] is where operator i keeps its state.
	opPrefix [][]byte
	subtask  int
	parallel int
	// logs[i] is operator i's state log (statelog.go).
	logs []*stateLog
	// writes feeds writeLoop (started at the first checkpoint).
	writes chan stateWrite
	// sinceCkpt: counters since the last checkpoint barrier;
	// lateSince and badSince the last few samples of them.
	sinceCkpt counts
	lateSince []op.LateRow
	badSince  []BadRecord
	// stateRows is this task's operators' state size, read by Status;
	// stateBytes[i] operator i's estimate of the heap its state takes.
	stateRows  *atomic.Int64
	stateBytes []atomic.Int64
	// live tells the coordinator whether the task answers (liveness.go).
	live *liveness
}

// restore loads every operator's state as of checkpoint at, from the
// state logs of every subtask that wrote them (see statelog.go).
func (t *taskBase) restore(at uint64) error {
	if at == 0 {
		return nil
	}
	for i, op := range t.chain.ops {
		fault.Point("restore.during")
		keys, vals, blocks, err := readStateLog(t.job.store, t.opPrefix[i], at)
		if err != nil {
			return fmt.Errorf("%s: read state of operator %d at checkpoint %d: %w", t.name, i, at, err)
		}
		r := stateReader{keys: keys, vals: vals, subtask: t.subtask, parallel: t.parallel}
		if err := op.Restore(r); err != nil {
			return fmt.Errorf("%s: restore operator %d at checkpoint %d: %w", t.name, i, at, err)
		}
		// The old logs this task supersedes at its first base: its own
		// subtask's, and those of subtasks beyond the new parallelism.
		l := t.log(i)
		for s, keys := range blocks {
			if s%t.parallel == t.subtask {
				l.written = append(l.written, keys...)
			}
		}
	}
	return nil
}

// log is operator i's state log at this task.
func (t *taskBase) log(i int) *stateLog {
	if t.logs == nil {
		t.logs = make([]*stateLog, len(t.chain.ops))
	}
	if t.logs[i] == nil {
		t.logs[i] = &stateLog{prefix: t.opPrefix[i], subtask: t.subtask}
	}
	return t.logs[i]
}

// barrier runs barrier b through the task: the operators emit the epoch's
// changes; for a checkpoint, their state (and extra, a source's position)
// is collected for the checkpoint id; then the terminal takes the barrier
// (a sink publishes, an exchange forwards it) and, for a checkpoint, hands
// over what it pre-commits (a sink's results or journal). The state is
// written to the store off the task goroutine (writeLoop), which acks the
// coordinator once it is; other barriers are acked here. A failed write
// fails the checkpoint, not the query; an operator error is fatal and
// returned. aligned is how long the task aligned the barrier across its
// inputs; the terminal's wait for room (awaitRoom) is added to it.
func (t *taskBase) barrier(ctx context.Context, b op.Barrier, aligned time.Duration, extra []state.KV, offsets map[string]int64) error {
	if err := t.chain.barrier(b); err != nil {
		return fmt.Errorf("%s: barrier %d: %w", t.name, b.Epoch, err)
	}
	a := ack{epoch: b.Epoch, ckpt: b.CheckpointID, offsets: offsets, align: aligned}
	var w stateWrite
	if b.CheckpointID != 0 {
		w.kvs = extra
		for i, o := range t.chain.ops {
			l := t.log(i)
			sw := l.writer()
			if err := o.Snapshot(sw); err != nil {
				return fmt.Errorf("%s: snapshot at checkpoint %d: %w", t.name, b.CheckpointID, err)
			}
			w.kvs = append(w.kvs, l.blocks(b.CheckpointID, sw)...)
			a.bytes += sw.Len()
			w.bufs = append(w.bufs, sw.Blocks()...)
		}
	}
	waited, err := t.chain.term.awaitRoom(ctx, b, t.live)
	a.align += waited
	if err != nil {
		return nil // only when the query stops
	}
	if err := t.chain.term.Barrier(b); err != nil {
		if ctx.Err() != nil {
			return nil // an exchange fails only when the query stops
		}
		// A results sink that could not record what it publishes
		// (at_most_once).
		return fmt.Errorf("%s: barrier %d: %w", t.name, b.Epoch, err)
	}
	if b.CheckpointID != 0 {
		w.sink = t.chain.term.snapshot(b.CheckpointID)
		a.bytes += w.sink.size()
	}
	t.publish()
	if b.CheckpointID == 0 {
		select {
		case t.job.acks <- a:
		case <-ctx.Done():
		}
		return nil
	}
	a.deltas, a.late, a.bad = t.sinceCkpt, t.lateSince, t.badSince
	t.sinceCkpt, t.lateSince, t.badSince = counts{}, nil, nil
	if t.writes == nil {
		t.writes = make(chan stateWrite, 1)
		go t.writeLoop(ctx)
	}
	w.ack = a
	// The coordinator sends the next barrier only after this ack, so the
	// writer is idle here and the send does not block for long.
	select {
	case t.writes <- w:
	case <-ctx.Done():
	}
	return nil
}

// stateWrite is one checkpoint's writes for writeLoop: the operators'
// state (and a source's position), what the sink pre-commits, and the ack
// to send once they are written.
type stateWrite struct {
	kvs  []state.KV
	bufs [][]byte // the kvs' values (blocks): reused once written
	sink sinkWrites
	ack  ack
}

// writeLoop writes checkpoints' state in the background, so the task goes
// on processing rows while the store takes them (asynchronous snapshots:
// the operators' state was captured, as bytes, at the barrier). It is the
// only goroutine a task starts besides its own, and touches nothing of the
// task but its channel: the kvs and the ack are handed over.
func (t *taskBase) writeLoop(ctx context.Context) {
	cw := ckptWriter{store: t.job.store}
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-t.writes:
			retried, err := cw.write(w.ack.ckpt, w.kvs, w.sink.kvs)
			w.ack.bytes += retried
			if err != nil {
				if w.ack.err == nil {
					what := "write state"
					if len(w.sink.kvs) > 0 {
						what += " and " + w.sink.what
					}
					w.ack.err = fmt.Errorf("%s: %s: %w", t.name, what, err)
				}
			} else {
				// The store keeps no reference (Versioned.Write).
				putBlocks(w.bufs)
				putBlocks(w.sink.bufs)
				if w.sink.written != nil {
					w.sink.written()
				}
			}
			fault.Point("checkpoint.after_state")
			select {
			case t.job.acks <- w.ack:
			case <-ctx.Done():
				return
			}
		}
	}
}

// ckptWriter is the one place where a checkpoint's writes go to the store
// and, when that fails, are kept for the next checkpoint: snapshots are
// incremental (operators' state logs, results, journals), so what a failed
// checkpoint did not write must go with the next one, under the same keys
// (block keys name the checkpoint they were first written for), so what a
// partial write left is overwritten, never read twice (the failed
// checkpoint has no marker; versions it did write are below the next
// marker and so are included by it, or repaired away at restart).
type ckptWriter struct {
	store state.Versioned
	// kept are the writes of failed checkpoints: the operators' and the
	// sink's (whose bytes count again in the statistics when retried).
	kept, keptSink []state.KV
}

// write writes checkpoint id's writes (ops: the operators' and a
// source's; sink: the sink's) at id, with the kept writes of failed
// checkpoints but those superseded by these. It returns the bytes of kept
// sink writes it retried; on an error it keeps every write for the next.
func (w *ckptWriter) write(id uint64, ops, sink []state.KV) (retried int, err error) {
	kept, keptSink := w.kept, w.keptSink
	if len(kept)+len(keptSink) > 0 {
		next := append(slices.Clip(ops), sink...)
		kept, keptSink = superseded(kept, next), superseded(keptSink, next)
	}
	retried = kvBytes(keptSink)
	kvs := slices.Concat(kept, keptSink, ops, sink)
	w.kept, w.keptSink = nil, nil
	if len(kvs) == 0 {
		return retried, nil
	}
	if err := w.store.Write(id, kvs); err != nil {
		w.kept, w.keptSink = append(kept, ops...), append(keptSink, sink...)
		return retried, err
	}
	return retried, nil
}

// superseded returns the kept writes of failed checkpoints without those
// whose keys the next write writes again (a base deletes every block of
// the chain it replaces, the kept ones too): kept writes pile up only
// while nothing supersedes them, so what a retry needs stays bounded by
// about the state log's size, however many checkpoints failed (each
// delta rewrote a COUNT(DISTINCT) set whole, and a disk full for a
// minute made a retry need more than the disk held).
func superseded(kept, next []state.KV) []state.KV {
	if len(kept) == 0 {
		return kept
	}
	again := make(map[string]struct{}, len(next))
	for _, kv := range next {
		again[string(kv.Key)] = struct{}{}
	}
	return slices.DeleteFunc(kept, func(kv state.KV) bool {
		_, ok := again[string(kv.Key)]
		return ok
	})
}

// publish moves the operators' counters to the job.
func (t *taskBase) publish() {
	n := 0
	for i, o := range t.chain.ops {
		if s, ok := o.(op.Stateful); ok {
			n += s.StateRows()
			t.stateBytes[i].Store(s.StateBytes())
		}
	}
	t.stateRows.Store(int64(n))
	c := t.counters
	if c.LateRows != 0 || len(c.Late) > 0 {
		t.job.addLate(c.LateRows, c.Late)
		t.sinceCkpt.late += c.LateRows
		t.lateSince = keepLast(t.lateSince, c.Late, op.MaxLateSamples)
		c.LateRows, c.Late = 0, c.Late[:0]
	}
	if c.RowsOut != 0 {
		t.job.rowsOut.Add(c.RowsOut)
		t.sinceCkpt.rowsOut += c.RowsOut
		c.RowsOut = 0
	}
	if t.env != nil && t.env.OutOfRange != 0 {
		t.job.outOfRange.Add(t.env.OutOfRange)
		t.sinceCkpt.outOfRange += t.env.OutOfRange
		t.env.OutOfRange = 0
	}
}

// sideWatermark advances one side of a two-input operator to the minimum
// over that side's inputs and forwards what the operator releases.
func (t *task) sideWatermark(side int) error {
	wm := int64(math.MaxInt64)
	for i, w := range t.inWM {
		if t.sides[i] == side {
			wm = min(wm, w)
		}
	}
	if wm <= t.sideWM[side] {
		return nil
	}
	t.sideWM[side] = wm
	fw, err := t.two.WatermarkSide(side, wm, t.chain.links[0])
	if err != nil || fw <= t.wm {
		return err
	}
	t.wm = fw
	return t.chain.watermarkFrom(1, fw)
}

// clampWM bounds the rows' watermarks by the other inputs' watermarks. A
// row carries the watermark of its own producer before it; with several
// producers, the operator's watermark is the minimum over all of them, so
// a fast producer's rows must not close windows a slow one still feeds.
func (t *task) clampWM(in int, b *op.Batch) {
	if len(t.inWM) < 2 {
		return
	}
	other := int64(math.MaxInt64)
	for i, w := range t.inWM {
		if i != in {
			other = min(other, w)
		}
	}
	for i := range b.Meta {
		if b.Meta[i].WM > other {
			b.Meta[i].WM = other
		}
	}
}

// inputIdle records an input's idleness; when every input of a side of a
// two-input operator is idle (or one becomes active) the operator is told.
func (t *task) inputIdle(in int, idle bool) error {
	if t.idle == nil {
		t.idle = make([]bool, len(t.inWM))
	}
	t.idle[in] = idle
	idler, ok := t.two.(op.Idler)
	if t.two == nil || !ok {
		return nil
	}
	side, all := t.sides[in], true
	for i, s := range t.sides {
		if s == side && !t.idle[i] {
			all = false
		}
	}
	fw, err := idler.SideIdle(side, all, t.chain.links[0])
	if err != nil || fw <= t.wm {
		return err
	}
	t.wm = fw
	return t.chain.watermarkFrom(1, fw)
}

// task runs a non-source vertex subtask: it reads its mailbox, aligns
// barriers across its inputs and drives its chain.
type task struct {
	taskBase
	mb    *mailbox
	align *aligner
	// alignStart is when the first input's barrier of the barrier being
	// aligned was read.
	alignStart time.Time
	inWM       []int64
	ended      []bool
	wm         int64
	endSent    bool
	restoreAt  uint64
	// Two-input vertices (joins): the first operator, each input's side,
	// and each side's watermark (the minimum over its inputs).
	two    op.TwoInput
	sides  []int
	sideWM [2]int64
	idle   []bool // per input: its source said it is idle
}

func (t *task) run(ctx context.Context) error {
	if err := t.restore(t.restoreAt); err != nil {
		return err
	}
	t.job.taskRestored()
	for {
		msg, in, err := t.mb.Next(ctx, t.align.Blocked)
		if err != nil {
			return nil // stopped
		}
		now := time.Now()
		t.env.ProcTime = now.UnixMilli()
		t.live.begin(now)
		switch msg.Kind {
		case MsgData:
			fault.PointIn("task.process", t.job.Name)
			if t.two != nil {
				t.chain.rows[0].Add(int64(msg.Batch.Len()))
				err = t.two.ProcessSide(t.sides[in], msg.Batch, t.chain.links[0])
			} else {
				t.clampWM(in, msg.Batch)
				err = t.chain.process(msg.Batch)
			}
		case MsgWatermark:
			if msg.Watermark > t.inWM[in] {
				t.inWM[in] = msg.Watermark
			}
			if t.two != nil {
				err = t.sideWatermark(t.sides[in])
				break
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
			if !t.align.Aligning() {
				t.alignStart = now
			}
			b, done, aerr := t.align.Arrive(in, msg.Barrier)
			if aerr != nil {
				return fmt.Errorf("%s: %w", t.name, aerr)
			}
			if done {
				err = t.barrier(ctx, b, now.Sub(t.alignStart), nil, nil)
			}
		case MsgIdle:
			err = t.inputIdle(in, msg.Idle)
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
		t.live.end()
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
}
