package runtime

import (
	"fmt"
	"math"
	"slices"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// sinkWriter ends a chain: it takes the changelog, publishes it at barriers and
// snapshots at checkpoints like an operator: what it pre-commits as part
// of a checkpoint (results blocks, an epoch's journal) it hands to its
// task, whose writer writes it with the operators' state (task.go), so a
// failed write is kept and retried in one place. Sinks run on their task's
// goroutine.
type sinkWriter interface {
	op.Emitter
	// Barrier publishes the epoch's changes; an error fails the query.
	Barrier(b op.Barrier) error
	// snapshot returns the writes of checkpoint id (after its Barrier).
	// The sink lets go of them: a failed write is the writer's to retry.
	snapshot(id uint64) sinkWrites
}

// sinkWrites are what a sink pre-commits at a checkpoint.
type sinkWrites struct {
	kvs []state.KV
	// bufs are pooled blocks among the values (putBlocks once written).
	bufs [][]byte
	// what names them in errors.
	what string
	// written, if set, is called once they are in the store.
	written func()
}

// size is the bytes of the writes, for checkpoint statistics.
func (w sinkWrites) size() int { return kvBytes(w.kvs) }

func kvBytes(kvs []state.KV) int {
	n := 0
	for _, kv := range kvs {
		n += len(kv.Key) + len(kv.Value)
	}
	return n
}

// upsertResults writes an updating query's built-in results table. Changes
// are kept in emission order, not deduplicated: at each barrier they are
// published to the latest view and logged (encoded, a later change of a
// key superseding an earlier one), and at a checkpoint the log's records
// are written as a few blocks at the checkpoint's id (stateLog, the same
// log operators keep their state in), with a full base of the rows this
// sink owns at its first checkpoint and whenever the deltas outgrow it.
type upsertResults struct {
	res     *Results
	store   state.Versioned
	log     stateLog
	pending []keyedChange // since the last barrier
	w       op.LogWriter  // logged since the last checkpoint
	// baseNext: the next checkpoint writes a base, so changes are not
	// logged until then.
	baseNext bool
	counters *op.Counters
	rowBuf   []byte
	// retention > 0 drops result rows of windows that ended more than
	// retention before the watermark (results_retention), at checkpoints.
	retention   int64
	wm          int64
	kind        plan.KeyKind
	task, tasks int
	// consolidate (plan.Sink.Consolidate): a key may change several times
	// in one epoch, from several producer tasks in any order; each epoch's
	// changes (an update's old row as a delete) are netted per key before
	// they apply (consolidated).
	consolidate bool
	// gate drops the changes a crashed run may have published
	// (delivery=at_most_once; nil otherwise).
	gate *resultsGate
}

var _ sinkWriter = (*upsertResults)(nil)

func newUpsertResults(res *Results, store state.Versioned, qid uint64, key plan.KeyKind, task, tasks int, c *op.Counters) *upsertResults {
	return &upsertResults{res: res, store: store, log: stateLog{prefix: resultPrefix(qid), subtask: task}, w: newStateWriter(false),
		counters: c, kind: key, wm: math.MinInt64, task: task, tasks: tasks}
}

func (s *upsertResults) watermark(wm int64) {
	s.wm = wm
	s.res.watermark(s.task, s.tasks, wm)
}

// publishAt publishes the pending changes at barrier epoch to
// (endOfInput: the end of input), unless an at_most_once gate drops them.
func (s *upsertResults) publishAt(to uint64) error {
	if len(s.pending) == 0 {
		return nil
	}
	if s.consolidate {
		s.pending = consolidated(s.pending)
	}
	ok, err := s.gate.admit(to, len(s.pending))
	if err != nil || !ok {
		clear(s.pending)
		s.pending = s.pending[:0]
		return err
	}
	s.publish()
	return nil
}

// publish applies the pending changes (consolidated already, if the sink
// consolidates) to the latest results and logs them.
func (s *upsertResults) publish() {
	if len(s.pending) == 0 {
		return
	}
	// The rows are encoded into one buffer for this publication (the
	// latest view and the log copy what they keep).
	s.rowBuf = s.rowBuf[:0]
	for i := range s.pending {
		c := &s.pending[i]
		if c.del {
			if !s.baseNext {
				s.w.Delete(op.KeyBytes(c.key))
			}
		} else {
			start := len(s.rowBuf)
			s.rowBuf = value.AppendRow(s.rowBuf, c.row)
			c.enc, c.row = s.rowBuf[start:len(s.rowBuf):len(s.rowBuf)], nil
			if !s.baseNext {
				s.w.Put(op.KeyBytes(c.key), c.enc)
			}
		}
	}
	s.res.apply(s.task, s.pending)
	if !s.baseNext && s.log.wouldCompact(s.w.Len()) {
		// The next checkpoint writes a base (all the rows, from the latest
		// view): logging the changes until then would be wasted. This also
		// bounds the log when no checkpoint comes.
		putBlocks(s.w.Blocks())
		s.baseNext, s.w = true, newStateWriter(false)
	}
	clear(s.pending)
	s.pending = s.pending[:0]
}

// consolidated nets an epoch's changes per key, whatever order they came
// in from several producers (a join of updating inputs: a pair that moved
// from one join task to another is deleted by one and upserted by the
// other), so an insert and a delete of the same row within one epoch
// leave nothing: a delete cancels an upsert of the same row; of what is
// left, the key's last upsert applies, else its delete (of the row it held
// before the epoch). Keys keep the order of their first change.
func consolidated(cs []keyedChange) []keyedChange {
	byKey := map[string][]int{}
	var order []string
	for i, c := range cs {
		if _, ok := byKey[c.key]; !ok {
			order = append(order, c.key)
		}
		byKey[c.key] = append(byKey[c.key], i)
	}
	same := func(x, y plan.Row) bool { return slices.EqualFunc(x, y, func(a, b plan.Value) bool { return a == b }) }
	out := cs[:0:0]
	for _, k := range order {
		idx := byKey[k]
		gone := make([]bool, len(idx))
		for a, i := range idx {
			if !cs[i].del || cs[i].row == nil {
				continue
			}
			for b, j := range idx {
				if !gone[b] && !cs[j].del && same(cs[i].row, cs[j].row) {
					gone[a], gone[b] = true, true
					break
				}
			}
		}
		last, del := -1, -1
		for a, i := range idx {
			switch {
			case gone[a]:
			case cs[i].del:
				del = i
			default:
				last = i
			}
		}
		switch {
		case last >= 0:
			out = append(out, cs[last])
		case del >= 0:
			out = append(out, cs[del])
		}
	}
	return out
}

// expire deletes the rows this sink owns whose window ended more than the
// retention before the watermark.
func (s *upsertResults) expire() {
	if s.retention <= 0 || s.kind != plan.KeyWindowGroup || s.wm == math.MinInt64 {
		return
	}
	for _, k := range s.res.expired(s.wm-s.retention, s.task) {
		s.pending = append(s.pending, keyedChange{key: k, del: true})
	}
}

func (s *upsertResults) Emit(b *op.Batch) error {
	n := 0
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if m.Op == op.Before {
			if !s.consolidate {
				continue // the Upsert after it replaces the row
			}
			// Netted with the epoch's other changes of the key: the old
			// row's delete (consolidated).
			s.pending = append(s.pending, keyedChange{key: m.Key, row: r, del: true})
			continue
		}
		n++
		if s.tasks > 1 && resultOwner(m.Key, s.kind, s.tasks) != s.task {
			// A base of this sink's log holds the rows it owns: a change
			// from elsewhere would be lost at the next one.
			return fmt.Errorf("results: sink %d of %d got a change of key %x, owned by sink %d", s.task, s.tasks, m.Key, resultOwner(m.Key, s.kind, s.tasks))
		}
		s.pending = append(s.pending, keyedChange{key: m.Key, row: r, del: m.Op == op.Delete})
	}
	s.counters.RowsOut += int64(n)
	return nil
}

func (s *upsertResults) Barrier(b op.Barrier) error {
	defer s.gate.passed(b.Epoch)
	if err := s.publishAt(b.Epoch); err != nil {
		return err
	}
	if b.CheckpointID == 0 {
		return nil
	}
	s.expire() // over the rows just published too
	return s.publishAt(b.Epoch)
}

// end publishes what the end of input released.
func (s *upsertResults) end() error { return s.publishAt(endOfInput) }

// snapshot writes the log's blocks since the last checkpoint, or a base
// of the rows this sink owns (its first checkpoint, or deltas outgrown).
func (s *upsertResults) snapshot(id uint64) sinkWrites {
	w := s.w
	s.w = newStateWriter(false)
	if s.baseNext || s.log.full() {
		s.baseNext = false
		if !s.log.based {
			s.log.written = append(s.log.written, s.res.superseded(s.task, s.tasks)...)
		}
		putBlocks(w.Blocks()) // the deltas, superseded by the base
		w = newStateWriter(true)
		s.res.owned(s.task, w.Put)
	}
	return sinkWrites{kvs: s.log.blocks(id, &w), bufs: w.Blocks(), what: "results"}
}

// blockTarget is the size at which an append-only sink closes a block
// (the store keeps large values in blob files: state/blobs.go).
const blockTarget = 256 << 10

// appendResults writes an append-only query's built-in results table. Its
// rows are never updated or deleted (each has a unique row id), so it
// encodes them as they come into blocks (blockBuilder), which is all it
// keeps: at a barrier it publishes the records added since the last one to
// the latest view (sharing the bytes), and at a checkpoint it writes the
// blocks at the checkpoint's id, each as one entry (see blockKey), rather
// than one entry per row.
type appendResults struct {
	res      *Results
	store    state.Versioned
	prefix   []byte
	task     int // the sink's subtask: blocks of several sinks never collide
	tasks    int
	counters *op.Counters
	blocks   blockBuilder
	// Published so far: blocks.closed[:pubBlocks], and pubOff bytes of the
	// next block (closed or open); fresh rows were added since.
	pubBlocks, pubOff int
	fresh             int
	keyBuf            []byte
	// gate drops the rows a crashed run may have published
	// (delivery=at_most_once; nil otherwise).
	gate *resultsGate
}

var _ sinkWriter = (*appendResults)(nil)

func newAppendResults(res *Results, store state.Versioned, qid uint64, task, tasks int, c *op.Counters) *appendResults {
	return &appendResults{res: res, store: store, prefix: blockPrefix(qid), task: task, tasks: tasks, counters: c,
		blocks: blockBuilder{target: blockTarget}}
}

func (s *appendResults) watermark(wm int64) { s.res.watermark(s.task, s.tasks, wm) }

func (s *appendResults) Emit(b *op.Batch) error {
	for i, r := range b.Rows {
		m := &b.Meta[i]
		if m.Op.Retracts() {
			// The planner feeds append-only results only insert-only
			// streams (subqueries included); a delete is a broken invariant.
			return fmt.Errorf("append-only results: a delete of key %x", m.Key)
		}
		// The deterministic row id: a join's or a subquery's (RowMeta.ID),
		// else the source offset of the input row.
		if m.ID != "" {
			s.blocks.add(m.ID, r)
		} else {
			s.keyBuf = value.AppendValue(s.keyBuf[:0], plan.Int(m.Offset))
			s.blocks.add(string(s.keyBuf), r)
		}
	}
	s.counters.RowsOut += int64(b.Len())
	s.fresh += b.Len()
	return nil
}

// publishAt publishes the rows added since the last barrier at barrier
// epoch to (endOfInput: the end of input), unless an at_most_once gate
// drops them.
func (s *appendResults) publishAt(to uint64) error {
	ok, err := s.gate.admit(to, s.fresh)
	if err != nil || !ok {
		s.drop()
		return err
	}
	s.publish()
	return nil
}

// drop takes the records added since the last barrier out of the blocks:
// neither published nor checkpointed. Published bytes stay as they are
// (Results.recent shares them); only unpublished ones are cut off or
// written over.
func (s *appendResults) drop() {
	b := &s.blocks
	if s.pubBlocks < len(b.closed) {
		// The block holding the published end was closed since: keep its
		// published part as a (short) closed block; every later block and
		// the open one are new.
		kept := b.closed[s.pubBlocks][:s.pubOff:s.pubOff]
		b.closed = b.closed[:s.pubBlocks]
		if len(kept) > 0 {
			b.closed = append(b.closed, kept)
			s.pubBlocks++
		}
		b.cur, s.pubOff = b.cur[:0], 0
	} else {
		b.cur = b.cur[:s.pubOff]
	}
	s.fresh = 0
}

// publish hands the records added since the last barrier to the latest
// view.
func (s *appendResults) publish() {
	s.fresh = 0
	var recs [][]byte
	for ; s.pubBlocks < len(s.blocks.closed); s.pubBlocks++ {
		if b := s.blocks.closed[s.pubBlocks][s.pubOff:]; len(b) > 0 {
			recs = append(recs, b)
		}
		s.pubOff = 0
	}
	if cur := s.blocks.cur; len(cur) > s.pubOff {
		recs = append(recs, cur[s.pubOff:len(cur):len(cur)])
		s.pubOff = len(cur)
	}
	if len(recs) > 0 {
		s.res.appendRecent(recs...)
	}
}

func (s *appendResults) Barrier(b op.Barrier) error {
	defer s.gate.passed(b.Epoch)
	return s.publishAt(b.Epoch)
}

// end publishes what the end of input released.
func (s *appendResults) end() error { return s.publishAt(endOfInput) }

// snapshot writes the blocks since the last checkpoint, each as one entry
// at the checkpoint's id. A block whose write fails is written again with
// the next checkpoint, at its id but under the same key, so what the
// failed write left behind is overwritten rather than read twice. The
// blocks stay shared with the latest view (Results.recent): not pooled.
func (s *appendResults) snapshot(id uint64) sinkWrites {
	var kvs []state.KV
	for n, block := range s.blocks.take() {
		kvs = append(kvs, state.KV{Key: blockKey(s.prefix, s.task, id, n), Value: block})
	}
	s.pubBlocks, s.pubOff = 0, 0
	return sinkWrites{kvs: kvs, what: "results"}
}

// discardResults counts rows and drops them (benchmarks).
type discardResults struct{ counters *op.Counters }

var _ sinkWriter = (*discardResults)(nil)

func (d *discardResults) Emit(b *op.Batch) error     { d.counters.RowsOut += int64(b.Len()); return nil }
func (d *discardResults) Barrier(op.Barrier) error   { return nil }
func (d *discardResults) snapshot(uint64) sinkWrites { return sinkWrites{} }

// resultsGate is an at_most_once results sink subtask's gate (amoGate,
// atmostonce.go) and the last barrier it passed. Its methods on a nil
// gate (exactly_once results) admit everything.
type resultsGate struct {
	g    *amoGate
	from uint64 // the last barrier epoch passed (0: the start)
}

// admit says whether the n changes since the last barrier are published
// at barrier epoch to (atmostonce.go: recorded first, synced, or dropped
// in a replay); per barrier, never per row.
func (r *resultsGate) admit(to uint64, n int) (bool, error) {
	if r == nil {
		return true, nil
	}
	return r.g.admit(r.from, to, n)
}

// passed notes that the sink passed barrier epoch.
func (r *resultsGate) passed(epoch uint64) {
	if r != nil {
		r.from = epoch
	}
}
