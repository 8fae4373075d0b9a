package ckpt

import (
	"fmt"
	"time"
)

// Config is what a Coordinator needs to know of its query.
type Config struct {
	// Emit is the emit interval: the driver ticks at it (> 0).
	Emit time.Duration
	// Every is the checkpoint interval (0: checkpoints off; barriers still
	// publish results).
	Every time.Duration
	// Timeout bounds a checkpoint: one in flight for longer at a tick is
	// recorded as failed and the next barrier may follow it.
	Timeout time.Duration
	// Tasks is how many tasks ack each barrier.
	Tasks int
	// NextID hands out checkpoint ids: never one handed out before, even
	// across queries and restarts (state.Versioned.NextID).
	NextID func() uint64
}

// Barrier is what the driver injects at every source.
type Barrier struct {
	Epoch uint64
	// ID is the checkpoint id (0: an emit barrier, no checkpoint).
	ID uint64
	// Flush: the sources first read every row available (a requested
	// checkpoint).
	Flush bool
}

// Ack is a task's report that it has handled barrier Epoch.
type Ack struct {
	Epoch uint64
	// Err: the checkpoint failed at this task (not fatal to the query).
	Err   error
	Bytes int64
	// Align is how long the barrier was held up at the task.
	Align time.Duration
	// Offsets are a source task's positions, by table.
	Offsets map[string]int64
}

// Kind says what an Output asks the driver to do.
type Kind int

const (
	// Inject: send Barrier to every source. A barrier with an ID starts
	// checkpoint ID (the driver records it as in progress).
	Inject Kind = iota + 1
	// Commit: every task acked checkpoint ID without an error; commit its
	// marker (with Offsets) and report the outcome with Committed.
	Commit
	// Completed: checkpoint ID is complete (its marker committed).
	Completed
	// Failed: checkpoint ID failed (Err says why); its writes stay in the
	// store and a later marker covers them.
	Failed
	// Answer: the checkpoint requests Requests are answered with ID (0 when
	// checkpoints are off) or Err; Stopped when the job stops first.
	Answer
)

// Output is one thing the driver must do, in the order given.
type Output struct {
	Kind    Kind
	Barrier Barrier
	ID      uint64
	Err     error
	Stopped bool
	// Bytes, Align (the longest any task held the barrier up) and Took
	// (from injection) describe an ended checkpoint; Offsets are the
	// positions a restart resumes from (the lowest per table).
	Bytes    int64
	Align    time.Duration
	Took     time.Duration
	Offsets  map[string]int64
	Requests []int
}

// Coordinator is the checkpoint protocol of one query as a pure state
// machine: it is told the time, the ticks, the acks, the requests and how
// a marker commit went, and answers with what to do (Output). It starts no
// goroutine, reads no clock and does no I/O; one goroutine (the driver)
// calls it.
//
// At every tick it injects a barrier, unless one is in flight: a
// checkpoint when the interval has come, else an emit barrier if some
// source moved since the last one. A request injects a flushing
// checkpoint at once, or right after the barrier in flight. When every
// task acked a barrier, an emit barrier is done, a checkpoint whose acks
// all succeeded is committed, and one with a failed ack fails. One
// barrier is in flight at a time, unless a checkpoint times out: then it
// is recorded as failed and the next barrier follows it.
type Coordinator struct {
	cfg        Config
	epoch      uint64
	inFlight   bool
	committing bool // Commit was output; Committed not yet called
	cur        Barrier
	acked      int
	failed     error
	bytes      int64
	align      time.Duration
	offsets    map[string]int64
	started    time.Time
	lastCkpt   time.Time
	waiting    []int // asked before the barrier in flight
	queued     []int // asked while it was in flight
	out        []Output
}

// New returns a coordinator whose first checkpoint interval begins at now.
func New(cfg Config, now time.Time) *Coordinator {
	return &Coordinator{cfg: cfg, lastCkpt: now}
}

// due reports whether a checkpoint is due at now: from half a tick before
// the interval is over, since the tick that ends it comes a little less
// than the interval after lastCkpt (taken after the tick that started the
// last one): waiting for the next made 1 s checkpoints every 1.2 s.
func (c *Coordinator) due(now time.Time) bool {
	return now.Sub(c.lastCkpt) >= c.cfg.Every-c.cfg.Emit/2
}

// Tick is the emit interval's tick at now; moved says whether a source
// sent something down its chain since the last barrier.
func (c *Coordinator) Tick(now time.Time, moved bool) []Output {
	c.out = c.out[:0]
	if c.inFlight && !c.committing && c.cur.ID != 0 && now.Sub(c.started) > c.cfg.Timeout {
		err := fmt.Errorf("checkpoint %d timed out after %s", c.cur.ID, c.cfg.Timeout)
		c.end(Failed, err, now)
		c.finish(now, 0, err)
	}
	if !c.inFlight && (c.cfg.Every > 0 && c.due(now) || moved) {
		c.inject(now, false)
	}
	return c.out
}

// Request asks for a checkpoint now (a flush with checkpoints off); the
// answer names req.
func (c *Coordinator) Request(now time.Time, req int) []Output {
	c.out = c.out[:0]
	c.queued = append(c.queued, req)
	if !c.inFlight {
		c.inject(now, true)
	}
	return c.out
}

// Ack takes a task's ack. Acks of a barrier no longer in flight (one that
// timed out) are ignored here.
func (c *Coordinator) Ack(now time.Time, a Ack) []Output {
	c.out = c.out[:0]
	if !c.inFlight || c.committing || a.Epoch != c.cur.Epoch {
		return c.out
	}
	c.acked++
	c.bytes += a.Bytes
	c.align = max(c.align, a.Align)
	for t, off := range a.Offsets {
		// A table read twice (a self-join) resumes from the lower.
		if cur, seen := c.offsets[t]; !seen || off < cur {
			c.offsets[t] = off
		}
	}
	if a.Err != nil && c.failed == nil {
		c.failed = a.Err
	}
	if c.acked < c.cfg.Tasks {
		return c.out
	}
	switch {
	case c.cur.ID == 0:
		c.finish(now, 0, nil)
	case c.failed != nil:
		c.end(Failed, c.failed, now)
		c.finish(now, 0, c.failed)
	default:
		c.committing = true
		c.out = append(c.out, Output{Kind: Commit, ID: c.cur.ID, Offsets: c.offsets})
	}
	return c.out
}

// Committed reports how the marker commit of the last Commit went.
func (c *Coordinator) Committed(now time.Time, err error) []Output {
	c.out = c.out[:0]
	if !c.committing {
		return c.out
	}
	c.committing = false
	id := c.cur.ID
	if err != nil {
		err = fmt.Errorf("checkpoint %d: commit marker: %w", id, err)
		c.end(Failed, err, now)
		c.finish(now, 0, err)
		return c.out
	}
	c.end(Completed, nil, now)
	c.finish(now, id, nil)
	return c.out
}

// Stop answers every request: the job stopped.
func (c *Coordinator) Stop() []Output {
	c.out = c.out[:0]
	if reqs := append(c.waiting, c.queued...); len(reqs) > 0 {
		c.out = append(c.out, Output{Kind: Answer, Stopped: true, Requests: reqs})
	}
	c.waiting, c.queued = nil, nil
	return c.out
}

func (c *Coordinator) inject(now time.Time, force bool) {
	c.epoch++
	c.cur = Barrier{Epoch: c.epoch, Flush: force}
	if c.cfg.Every > 0 && (force || c.due(now)) {
		c.cur.ID = c.cfg.NextID()
		c.lastCkpt = now
	}
	c.inFlight, c.acked, c.failed, c.bytes, c.align, c.offsets, c.started = true, 0, nil, 0, 0, map[string]int64{}, now
	c.waiting, c.queued = c.queued, nil
	c.out = append(c.out, Output{Kind: Inject, Barrier: c.cur})
}

// end records how the checkpoint in flight ended.
func (c *Coordinator) end(k Kind, err error, now time.Time) {
	c.out = append(c.out, Output{Kind: k, ID: c.cur.ID, Err: err, Bytes: c.bytes, Align: c.align, Took: now.Sub(c.started), Offsets: c.offsets})
}

// finish ends the barrier in flight: its requests are answered, and those
// asked meanwhile get the next barrier at once.
func (c *Coordinator) finish(now time.Time, id uint64, err error) {
	c.inFlight = false
	if len(c.waiting) > 0 {
		c.out = append(c.out, Output{Kind: Answer, ID: id, Err: err, Requests: c.waiting})
	}
	c.waiting = nil
	if len(c.queued) > 0 {
		c.inject(now, true)
	}
}
