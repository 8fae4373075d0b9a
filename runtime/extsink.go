package runtime

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/runtime/sink"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// External sinks (INSERT INTO a table with ENGINE=postgres) are two-phase
// (DESIGN.md, docs/exactly-once.md). Each sink subtask (journalWriter, on its task's goroutine)
// turns the query's changes into rows of the sink table; one committer per
// query (its own goroutine) writes them to the external system through a
// sink.Publisher.
//
// exactly_once: between checkpoints a sink subtask encodes its changes as
// log records (op.LogWriter: put key row / delete key); at checkpoint n it
// writes them as the journal of epoch n, blocks at n under
//
//	q/<qid>/j/ <epoch:8> <subtask:4> <block:4>
//
// so the journal is part of checkpoint n. Once n's marker is committed the
// committer reads, at that marker, the lowest journaled epoch it has not
// committed, deduplicates it per key (last change wins) and commits it
// with its progress record in one transaction of the external system;
// then the next. After a restart it reads the system's progress first
// and skips the epochs recorded there. Journal blocks of committed epochs
// are deleted by sink subtask 0 at its next checkpoint. Epochs journaled
// but not committed are bounded (SinkLimits, sinklimits.go): at a
// checkpoint barrier a sink subtask first waits (awaitRoom) until its
// epoch's journal fits the bound, which backpressures the query; its task
// counts the wait as the checkpoint's alignment time.
//
// at_least_once: at every barrier a sink subtask hands the changes since
// the previous one (deduplicated per key) to the committer, which applies
// them in order; a checkpoint barrier waits until everything handed over
// before it is applied, so a restart from the checkpoint replays whatever
// was not. Replay alone does not undo what was applied after the
// checkpoint: it re-emits the same rows, but barriers fall elsewhere, so a
// group that was written and then failed HAVING (or a session that was
// written and then merged away) may never be emitted, nor deleted, again.
// So before applying a batch the committer logs its keys in the meta store
// (sinkWAL, synced), tagged with the last checkpoint before the batch; after
// a restart from checkpoint M it first deletes every key logged after M,
// then applies the replay, which re-emits every such key that should exist
// (the same input rows touch it again). Entries are pruned once a later
// checkpoint completes, and no checkpoint of the new run completes before
// that undo is applied (committer.undone): it would become the restore
// point, and the undo after a crash reads the WAL from there on.

// alBatches is how many at-least-once batches may wait for the committer.
const alBatches = 8

func journalPrefix(qid uint64) []byte { return fmt.Appendf(QueryPrefix(qid), "/j/") }

func journalKey(prefix []byte, epoch uint64, subtask, n int) []byte {
	k := append([]byte(nil), prefix...)
	k = binary.BigEndian.AppendUint64(k, epoch)
	k = binary.BigEndian.AppendUint32(k, uint32(subtask))
	return binary.BigEndian.AppendUint32(k, uint32(n))
}

// journalWriter is one subtask of an external sink.
type journalWriter struct {
	c        *committer
	ext      *plan.ExternalSink
	store    state.Versioned
	ctx      context.Context
	task     int
	counters *op.Counters
	// exactly_once: the records since the last checkpoint. A journal
	// write that fails is written again with the next checkpoint, under
	// the same keys (its bytes stay counted pending).
	w op.LogWriter
	// at_least_once: the changes since the last barrier, one per key.
	batch    []sink.Change
	batchIdx map[string]int
	lastDone chan struct{} // closed when the last batch handed over is applied
	// prev is the last checkpoint barrier this subtask has passed (at
	// start: the restored checkpoint); epoch the last barrier (0: none).
	prev   uint64
	epoch  uint64
	row    plan.Row
	keyBuf []byte
	rowBuf []byte
}

var _ sinkWriter = (*journalWriter)(nil)

func (s *journalWriter) Emit(b *op.Batch) error {
	n := 0
	for i, r := range b.Rows {
		m := &b.Meta[i]
		key := m.Key
		if s.ext.RowID >= 0 || s.ext.AppendOnly {
			if m.Op.Retracts() {
				return fmt.Errorf("sink %s: a delete of key %x in an append-only query", s.ext.Table, m.Key)
			}
			if m.ID != "" {
				key = m.ID
			} else {
				s.keyBuf = value.AppendValue(s.keyBuf[:0], plan.Int(m.Offset))
				key = string(s.keyBuf)
			}
		}
		switch m.Op {
		case op.Before:
			continue // the Upsert after it replaces the row
		case op.Delete:
			s.change(key, nil)
			n++
			continue
		}
		n++
		row := s.sinkRow(r, key)
		for _, p := range s.ext.PrimaryKey {
			if row[p].IsNull() {
				return fmt.Errorf("sink %s: a result row has NULL in PRIMARY KEY column %s, which the sink table cannot hold (filter it out with WHERE %s IS NOT NULL, or COALESCE it)",
					s.ext.Table, s.ext.Columns[p].Name, s.ext.Columns[p].Name)
			}
		}
		s.change(key, row)
	}
	s.counters.RowsOut += int64(n)
	return nil
}

// sinkRow lays the query's row r out as a row of the sink table (into
// s.row, valid until the next call): columns by position, BIGINT
// widened to DOUBLE where the table says so, the row id in _row_id.
func (s *journalWriter) sinkRow(r plan.Row, id string) plan.Row {
	s.row = s.row[:0]
	for i, v := range r {
		if len(s.row) == s.ext.RowID {
			s.row = append(s.row, plan.Str(hex.EncodeToString([]byte(id))))
		}
		if s.ext.ToDouble[i] && v.K == plan.TypeBigint {
			v = plan.Float(float64(v.I))
		}
		s.row = append(s.row, v)
	}
	if len(s.row) == s.ext.RowID {
		s.row = append(s.row, plan.Str(hex.EncodeToString([]byte(id))))
	}
	return s.row
}

// change records an upsert of row (nil: a delete) of key.
func (s *journalWriter) change(key string, row plan.Row) {
	if s.ext.ExactlyOnce {
		if row == nil {
			s.w.Delete(op.KeyBytes(key))
		} else {
			s.rowBuf = value.AppendRow(s.rowBuf[:0], row)
			s.w.Put(op.KeyBytes(key), s.rowBuf)
		}
		return
	}
	c, err := s.c.toChange(key, row)
	if err != nil {
		panic(err) // the key was encoded by this query's own operators
	}
	if c.Row != nil {
		c.Row = append(plan.Row(nil), c.Row...)
	}
	if i, ok := s.batchIdx[key]; ok {
		s.batch[i] = c
		return
	}
	if s.batchIdx == nil {
		s.batchIdx = map[string]int{}
	}
	s.batchIdx[key] = len(s.batch)
	s.batch = append(s.batch, c)
}

// publish hands the at-least-once (or at-most-once) batch to the
// committer: at barrier epoch to, and at the end of input (endOfInput).
func (s *journalWriter) publish(to uint64) {
	if len(s.batch) == 0 {
		return
	}
	var keys []string
	if s.c.wal != nil {
		keys = make([]string, 0, len(s.batchIdx))
		for k := range s.batchIdx {
			keys = append(keys, k)
		}
	}
	if done, err := s.c.enqueue(s.ctx, alBatch{changes: s.batch, keys: keys, prev: s.prev, from: s.epoch, to: to, task: s.task}); err == nil {
		s.lastDone = done
	}
	s.batch, s.batchIdx = nil, nil
}

// awaitRoom is the part of a barrier that may wait for the external
// system; the task runs it (and times it) before Barrier. at_least_once:
// the changes since the last barrier are handed to the committer
// (waiting while it is behind), and a checkpoint or flush waits until
// everything handed over is applied. exactly_once, at a checkpoint: the
// epoch's journal is counted pending once it fits the bound (committer.
// reserve), so the pending bytes and epochs do not pass it.
func (s *journalWriter) awaitRoom(ctx context.Context, b op.Barrier) error {
	if !s.ext.ExactlyOnce {
		s.publish(b.Epoch)
		if b.CheckpointID == 0 && !b.Flush {
			return nil
		}
		// The checkpoint covers every change before it: wait until they
		// are applied (a restart from it would not replay them). A flush
		// (POST /v1/checkpoints) waits too, with checkpoints off. Batches
		// are applied after the undo of the last run's keys; without one
		// the checkpoint still waits for the undo (committer.undone).
		wait := s.lastDone
		if wait == nil {
			wait = s.c.undone
		}
		select {
		case <-wait:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if b.CheckpointID == 0 || s.w.Len() == 0 {
		return nil
	}
	return s.c.reserve(ctx, b.CheckpointID, int64(s.w.Len()))
}

func (s *journalWriter) Barrier(b op.Barrier) error {
	if !s.ext.ExactlyOnce && b.CheckpointID != 0 {
		s.prev = b.CheckpointID
	}
	s.epoch = b.Epoch
	return nil
}

// end publishes what the end of input released.
func (s *journalWriter) end() error {
	if !s.ext.ExactlyOnce {
		s.publish(endOfInput)
	}
	return nil
}

// snapshot is exactly_once's pre-commit: the records since the last
// checkpoint as epoch id's journal, and (subtask 0) the deletes of
// committed epochs' journals.
func (s *journalWriter) snapshot(id uint64) sinkWrites {
	if !s.ext.ExactlyOnce {
		return sinkWrites{}
	}
	w := sinkWrites{what: "sink " + s.ext.Table + " journal"}
	if s.w.Len() > 0 {
		for n, block := range s.w.Close() {
			w.kvs = append(w.kvs, state.KV{Key: journalKey(s.c.prefix, id, s.task, n), Value: block})
		}
		w.bufs = s.w.Blocks()
		engine := s.ext.Engine
		w.written = func() { fault.PointIn("sink.after_journal", engine) }
	}
	s.w = newStateWriter(false)
	if s.task == 0 {
		w.kvs = append(w.kvs, s.c.takeObsolete()...)
	}
	return w
}

// committer writes one query's external sink: the epochs its subtasks
// journaled (exactly_once) or the batches they hand over (at_least_once).
// It runs on its own goroutine (run); the other methods are called by the
// sink subtasks, the coordinator and the API.
type committer struct {
	limits SinkLimits // zero fields: defaults
	pub    sink.Publisher
	ext    *plan.ExternalSink
	sinkID string
	store  state.Versioned
	prefix []byte
	logger interface {
		Warn(msg string, args ...any)
		Info(msg string, args ...any)
	}

	marker  atomic.Uint64 // the last completed checkpoint
	poke    chan struct{} // a marker was committed (capacity 1)
	batches chan alBatch
	opened  bool // run's goroutine only
	// wal logs the keys an at_least_once sink writes (nil: exactly_once,
	// or append-only rows, which are never deleted); restored is the
	// checkpoint the job started from.
	wal      *sinkWAL
	restored uint64
	// undone is closed once the keys the WAL logged after the restored
	// checkpoint are deleted (at once without a WAL). No checkpoint of
	// this run may complete before: it would become the restore point,
	// and the next run's undo, which starts from it, would not see those
	// keys (they would stay, stale, unless the replay touched them).
	undone chan struct{}

	mu        sync.Mutex
	committed uint64 // the last epoch committed (exactly_once)
	// through: every epoch journaled up to this checkpoint is committed.
	through  uint64
	pending  map[uint64]int64 // journaled epochs not committed: bytes
	obsolete []state.KV       // deletes of committed epochs' journal blocks
	// obsoleteThrough: journal blocks of epochs up to here are queued
	// for deletion already.
	obsoleteThrough uint64
	lastErr         error
	changed         chan struct{} // closed (and replaced) when committed or lastErr change
	// markers: completed checkpoints the external system may not have yet,
	// oldest first, with when they completed (exactly_once; metrics.go).
	markers []markerTime
	// amo records what an at_most_once sink writes (nil otherwise);
	// gates are its sink subtasks' (run's goroutine only).
	amo   *amoLog
	gates map[int]*amoGate
	// applying is when the at_least_once batch being applied was handed
	// over (unix ns; 0: none).
	applying atomic.Int64
}

type alBatch struct {
	changes []sink.Change
	keys    []string // the encoded upsert keys (for the WAL)
	prev    uint64   // the last checkpoint before the batch
	// from and to are the barrier epochs around the batch (0: the start;
	// endOfInput: the end), and task the sink subtask it is from, for
	// at_most_once.
	from, to uint64
	task     int
	done     chan struct{}
	at       time.Time // when it was handed over
}

func newCommitter(pub sink.Publisher, ext *plan.ExternalSink, sinkID string, store state.Versioned, qid uint64, j *Job) *committer {
	return &committer{pub: pub, ext: ext, sinkID: sinkID, store: store, prefix: journalPrefix(qid), logger: j.logger.With("query", j.Name), restored: j.restored,
		poke: make(chan struct{}, 1), batches: make(chan alBatch, alBatches), pending: map[uint64]int64{},
		changed: make(chan struct{}), undone: make(chan struct{})}
}

// markerCommitted tells the committer that checkpoint id is complete.
func (c *committer) markerCommitted(id uint64) {
	c.noteMarker(id, time.Now())
	c.marker.Store(id)
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// run is the committer's loop, until ctx ends. It returns an error only
// for a failure retrying cannot fix (the query fails).
func (c *committer) run(ctx context.Context) error {
	defer c.pub.Close()
	// Open at once: a missing or mismatched table shows before any data
	// flows, and a restart commits what the last run journaled.
	if err := c.retry(ctx, c.commitCompleted); err != nil {
		return err
	}
	if c.amo != nil && c.amo.replaying() {
		c.logger.Info("sink: at_most_once: skipping the replay up to the source positions the last run had begun writing", "sink", c.ext.Table, "positions", c.amo.last)
	}
	if c.wal != nil {
		// Undo what the last run may have applied after the restored
		// checkpoint; the replay writes back what should be there.
		if err := c.retry(ctx, c.undoSinceRestored); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	close(c.undone)
	for {
		if c.ext.ExactlyOnce {
			select {
			case <-ctx.Done():
				return nil
			case <-c.poke:
			}
			if err := c.retry(ctx, c.commitCompleted); err != nil {
				return err
			}
			continue
		}
		var b alBatch
		select {
		case <-ctx.Done():
			return nil
		case <-c.poke:
			if c.wal != nil {
				if err := c.retry(ctx, func(context.Context) error { return c.wal.prune(c.marker.Load()) }); err != nil {
					return err
				}
			}
			continue
		case b = <-c.batches:
		}
		logged := c.wal == nil
		c.applying.Store(b.at.UnixNano())
		write := true
		if c.amo != nil {
			g := c.gates[b.task]
			if g == nil {
				if c.gates == nil {
					c.gates = map[int]*amoGate{}
				}
				g = c.amo.gate()
				c.gates[b.task] = g
			}
			var err error
			if write, err = g.admit(b.from, b.to, len(b.changes)); err != nil {
				return fmt.Errorf("sink %s: %w", c.ext.Table, err)
			}
		}
		attempted := false
		err := c.retry(ctx, func(ctx context.Context) error {
			if !write {
				return nil
			}
			if c.amo != nil {
				// at_most_once never writes a batch again: the attempt
				// that failed may have written part of it (some Kafka
				// records, some files). Retries before the first attempt
				// (the sink would not open) lose nothing.
				if attempted {
					c.amo.dropped.Add(int64(len(b.changes)))
					c.logger.Warn("sink: at_most_once: a write failed; its changes are dropped, not written again", "sink", c.ext.Table, "changes", len(b.changes))
					return nil
				}
				attempted = true
			}
			if !logged {
				if err := c.wal.put(b.prev, b.keys); err != nil {
					return err
				}
				logged = true
				fault.PointIn("sink.after_keylog", c.ext.Engine)
			}
			return c.pub.Apply(ctx, b.changes)
		})
		c.applying.Store(0)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		close(b.done)
	}
}

// retry runs fn, opening the publisher first when needed, until it
// succeeds or ctx ends; between attempts it backs off, and the query
// reports the error (state retrying). A permanent error ends it.
func (c *committer) retry(ctx context.Context, fn func(context.Context) error) error {
	backoff := sinkBackoffMin
	for {
		err := c.open(ctx)
		if err == nil {
			err = fn(ctx)
		}
		if err == nil {
			c.setErr(nil)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		err = fmt.Errorf("sink %s: %w", c.ext.Table, err)
		if sink.IsPermanent(err) {
			return err
		}
		if c.opened {
			c.pub.Close()
			c.opened = false
		}
		c.setErr(err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, c.limits.orDefaults().BackoffMax)
	}
}

// open connects, prepares the target and (exactly_once) reads what it
// has committed.
func (c *committer) open(ctx context.Context) error {
	if c.opened {
		return nil
	}
	if err := c.pub.Open(ctx); err != nil {
		return err
	}
	if c.ext.ExactlyOnce {
		n, err := c.pub.Committed(ctx)
		if err != nil {
			c.pub.Close()
			return fmt.Errorf("read progress: %w", err)
		}
		c.setCommitted(n, nil)
	}
	c.opened = true
	return nil
}

// commitCompleted commits, in order, every journaled epoch up to the
// last completed checkpoint that the external system does not have.
func (c *committer) commitCompleted(ctx context.Context) error {
	if !c.ext.ExactlyOnce {
		return nil
	}
	for ctx.Err() == nil {
		at := c.marker.Load()
		if at == 0 {
			return nil
		}
		epoch, changes, keys, err := c.nextEpoch(at)
		if err != nil {
			return err
		}
		if epoch == 0 {
			c.setThrough(at)
			return nil
		}
		err = c.pub.CommitEpoch(ctx, epoch, changes)
		if errors.Is(err, sink.ErrCommitted) {
			c.logger.Info("sink epoch was committed already", "sink", c.ext.Table, "epoch", epoch)
			err = nil
		}
		if err != nil {
			return fmt.Errorf("commit epoch %d: %w", epoch, err)
		}
		c.setCommitted(epoch, keys)
	}
	return nil
}

// nextEpoch reads the journal at checkpoint at: the lowest epoch not yet
// committed, its changes deduplicated per key, and its block keys. It
// queues the blocks of committed epochs for deletion. Epoch 0: none.
func (c *committer) nextEpoch(at uint64) (uint64, []sink.Change, [][]byte, error) {
	c.mu.Lock()
	committed, through := c.committed, c.obsoleteThrough
	c.mu.Unlock()
	var (
		epoch  uint64
		blocks [][]byte
		keys   [][]byte
		old    []state.KV
	)
	errStop := errors.New("stop")
	err := c.store.Scan(c.prefix, at, func(k, v []byte) error {
		rest := k[len(c.prefix):]
		if len(rest) != 16 {
			return fmt.Errorf("journal key %x: bad length", k)
		}
		e := binary.BigEndian.Uint64(rest)
		switch {
		case e <= committed:
			if e > through {
				old = append(old, state.KV{Key: append([]byte(nil), k...), Delete: true})
			}
		case epoch == 0 || e == epoch:
			epoch = e
			keys = append(keys, append([]byte(nil), k...))
			blocks = append(blocks, append([]byte(nil), v...))
		default:
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return 0, nil, nil, fmt.Errorf("read journal at checkpoint %d: %w", at, err)
	}
	c.mu.Lock()
	c.obsolete = append(c.obsolete, old...)
	c.obsoleteThrough = max(c.obsoleteThrough, committed)
	if epoch != 0 {
		if _, ok := c.pending[epoch]; !ok {
			c.pending[epoch] = 0 // journaled before a restart
		}
	}
	c.mu.Unlock()
	if epoch == 0 {
		return 0, nil, nil, nil
	}
	var changes []sink.Change
	idx := map[string]int{}
	for i, b := range blocks {
		err := op.LogRecords(b, func(put bool, k, v []byte) error {
			var row plan.Row
			if put {
				var err error
				if row, err = value.DecodeRow(v); err != nil {
					return fmt.Errorf("key %x: %w", k, err)
				}
				if len(row) != len(c.ext.Columns) {
					return fmt.Errorf("key %x: a row of %d columns, table %s has %d", k, len(row), c.ext.Table, len(c.ext.Columns))
				}
			}
			ch, err := c.toChange(string(k), row)
			if err != nil {
				return err
			}
			if j, ok := idx[string(k)]; ok {
				changes[j] = ch
			} else {
				idx[string(k)] = len(changes)
				changes = append(changes, ch)
			}
			return nil
		})
		if err != nil {
			return 0, nil, nil, sink.Permanent("journal block %x of epoch %d: %v", keys[i], epoch, err)
		}
	}
	return epoch, changes, keys, nil
}

// toChange makes a sink change of an upsert of row (nil: a delete) of
// the encoded upsert key.
func (c *committer) toChange(key string, row plan.Row) (sink.Change, error) {
	ch := sink.Change{Row: row, Key: make(plan.Row, len(c.ext.PrimaryKey))}
	if row != nil {
		for i, p := range c.ext.PrimaryKey {
			ch.Key[i] = row[p]
		}
		return ch, nil
	}
	// A delete carries only the encoded key: ([window_start, window_end,]
	// GROUP BY values...).
	var vals plan.Row
	for b := op.KeyBytes(key); len(b) > 0; {
		v, rest, err := value.DecodeValue(b)
		if err != nil {
			return ch, fmt.Errorf("key %x: %w", key, err)
		}
		vals, b = append(vals, v), rest
	}
	for i, k := range c.ext.KeyValues {
		if k >= len(vals) {
			return ch, fmt.Errorf("key %x has %d values, the sink's key needs value %d", key, len(vals), k+1)
		}
		ch.Key[i] = vals[k]
	}
	return ch, nil
}

// undoSinceRestored deletes the keys the WAL says were written after the
// restored checkpoint.
func (c *committer) undoSinceRestored(ctx context.Context) error {
	keys, err := c.wal.since(c.restored)
	if err != nil || len(keys) == 0 {
		return err
	}
	changes := make([]sink.Change, 0, len(keys))
	for _, k := range keys {
		ch, err := c.toChange(k, nil)
		if err != nil {
			return sink.Permanent("sink write-ahead log: %v", err)
		}
		changes = append(changes, ch)
	}
	c.logger.Info("sink: deleting rows written after the restored checkpoint; the replay writes them again", "sink", c.ext.Table, "rows", len(changes), "checkpoint", c.restored)
	return c.pub.Apply(ctx, changes)
}

// SinkWALPrefix is where query qid's at_least_once sink logs its keys in
// the meta store's catalog.
func SinkWALPrefix(qid uint64) string { return fmt.Sprintf("sinkwal/%d/", qid) }

// MetaKV is the meta store's catalog, as the sink WAL uses it.
type MetaKV interface {
	PutCatalog(key string, val []byte) error
	DeleteCatalogKeys(keys []string) error
	ListCatalog(prefix string) ([]state.KV, error)
}

// sinkWAL is an at_least_once sink's log of the keys it writes: one entry
// per batch, <prefix><seq:16 hex> = <prev checkpoint:8> (<len> <key>)...,
// written (synced) before the batch is applied. Used only on the
// committer's goroutine.
type sinkWAL struct {
	kv     MetaKV
	prefix string
	seq    uint64 // the last entry's number (0: not read yet)
	read   bool
}

func (w *sinkWAL) entries() ([]state.KV, error) {
	kvs, err := w.kv.ListCatalog(w.prefix)
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		n, err := strconv.ParseUint(string(kv.Key[len(w.prefix):]), 16, 64)
		if err != nil || len(kv.Value) < 8 {
			return nil, fmt.Errorf("sink write-ahead log entry %q: bad key or value", kv.Key)
		}
		w.seq = max(w.seq, n)
	}
	w.read = true
	return kvs, nil
}

// since returns the keys logged after checkpoint ckpt (after its barrier).
func (w *sinkWAL) since(ckpt uint64) ([]string, error) {
	kvs, err := w.entries()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var keys []string
	for _, kv := range kvs {
		if binary.BigEndian.Uint64(kv.Value) < ckpt {
			continue
		}
		for b := kv.Value[8:]; len(b) > 0; {
			n, m := binary.Uvarint(b)
			if m <= 0 || uint64(len(b)-m) < n {
				return nil, fmt.Errorf("sink write-ahead log entry %q: bad key length", kv.Key)
			}
			k := string(b[m : m+int(n)])
			b = b[m+int(n):]
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}

// put logs the keys of a batch emitted after checkpoint prev.
func (w *sinkWAL) put(prev uint64, keys []string) error {
	if !w.read {
		if _, err := w.entries(); err != nil {
			return err
		}
	}
	v := binary.BigEndian.AppendUint64(nil, prev)
	for _, k := range keys {
		v = binary.AppendUvarint(v, uint64(len(k)))
		v = append(v, k...)
	}
	if err := w.kv.PutCatalog(fmt.Sprintf("%s%016x", w.prefix, w.seq+1), v); err != nil {
		return fmt.Errorf("sink write-ahead log: %w", err)
	}
	w.seq++
	return nil
}

// prune drops the entries of batches emitted before checkpoint ckpt
// (complete: its state reflects them).
func (w *sinkWAL) prune(ckpt uint64) error {
	kvs, err := w.entries()
	if err != nil {
		return err
	}
	var old []string
	for _, kv := range kvs {
		if binary.BigEndian.Uint64(kv.Value) < ckpt {
			old = append(old, string(kv.Key))
		}
	}
	if len(old) == 0 {
		return nil
	}
	return w.kv.DeleteCatalogKeys(old)
}

// enqueue hands an at-least-once batch over; the channel returned is
// closed once it is applied. It blocks while the committer is behind.
func (c *committer) enqueue(ctx context.Context, b alBatch) (chan struct{}, error) {
	b.done, b.at = make(chan struct{}), time.Now()
	select {
	case c.batches <- b:
		return b.done, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// reserve counts n more journal bytes of epoch as pending, first waiting
// while that would take the pending epochs past SinkLimits.MaxPendingEpochs
// or their bytes past MaxPendingBytes. It waits only while the committer can make
// room: while some pending epoch is at or below the last marker (its
// checkpoint completed, so it is committed once the external system
// takes it). Epochs of failed checkpoints wait for a later marker, which
// needs this checkpoint: past the bound with only those pending, waiting
// would never end, so the journal goes over the bound instead. An epoch
// larger than the bound on its own goes in once nothing else is pending.
func (c *committer) reserve(ctx context.Context, epoch uint64, n int64) error {
	for {
		c.mu.Lock()
		_, known := c.pending[epoch]
		epochs := len(c.pending)
		if !known {
			epochs++
		}
		bytes, progress := n, false
		marker := c.marker.Load()
		for e, b := range c.pending {
			bytes += b
			progress = progress || e <= marker
		}
		if lim := c.limits.orDefaults(); (epochs <= lim.MaxPendingEpochs && bytes <= lim.MaxPendingBytes) || !progress {
			c.pending[epoch] += n
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// takeObsolete returns the deletes of journal blocks whose epochs are
// committed (sink subtask 0 writes them at its next checkpoint).
func (c *committer) takeObsolete() []state.KV {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.obsolete
	c.obsolete = nil
	return o
}

// setCommitted records that the external system has every epoch up to
// epoch; keys are the journal blocks of epoch, now obsolete.
func (c *committer) setCommitted(epoch uint64, keys [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch < c.committed {
		return
	}
	c.committed = epoch
	for _, k := range keys {
		c.obsolete = append(c.obsolete, state.KV{Key: k, Delete: true})
	}
	c.obsoleteThrough = max(c.obsoleteThrough, epoch)
	for e := range c.pending {
		if e <= epoch {
			delete(c.pending, e)
		}
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// setThrough records that every epoch journaled up to checkpoint at is
// committed.
func (c *committer) setThrough(at uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at > c.through {
		c.through = at
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

func (c *committer) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && c.lastErr == nil {
		return
	}
	if err != nil {
		c.logger.Warn("sink unavailable, retrying", "sink", c.ext.Table, "err", err)
	} else {
		c.logger.Info("sink recovered", "sink", c.ext.Table, "after", c.lastErr)
	}
	c.lastErr = err
	close(c.changed)
	c.changed = make(chan struct{})
}

// SinkStatus is an external sink's progress, for the API.
type SinkStatus struct {
	Table    string `json:"table"`
	Engine   string `json:"engine"`
	Delivery string `json:"delivery"`
	SinkID   string `json:"sink_id"`
	// CommittedEpoch is the last epoch (checkpoint id) the external
	// system has (exactly_once).
	CommittedEpoch uint64 `json:"committed_epoch"`
	// CommittedCheckpoint: the external system has every change up to
	// this checkpoint.
	CommittedCheckpoint uint64 `json:"committed_checkpoint"`
	// PendingEpochs are journaled epochs not yet committed.
	PendingEpochs int `json:"pending_epochs"`
	// SkippedChanges (at_most_once): replayed changes not written since
	// the start, because the last run may have begun writing them.
	SkippedChanges int64 `json:"skipped_changes,omitempty"`
	// DroppedChanges (at_most_once): changes of writes that failed, not
	// written again (the failed write may have written some of them).
	DroppedChanges int64  `json:"dropped_changes,omitempty"`
	Error          string `json:"error,omitempty"`
}

func (c *committer) status() SinkStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := SinkStatus{Table: c.ext.Table, Engine: c.ext.Engine, Delivery: c.ext.Delivery(), SinkID: c.sinkID,
		CommittedEpoch: c.committed, CommittedCheckpoint: c.through, PendingEpochs: len(c.pending)}
	if c.lastErr != nil {
		s.Error = c.lastErr.Error()
	}
	if c.amo != nil {
		s.SkippedChanges = c.amo.skipped.Load()
		s.DroppedChanges = c.amo.dropped.Load()
	}
	return s
}

// waitCommitted waits until the external system has checkpoint id's epoch
// (exactly_once; at_least_once sinks applied it before the checkpoint
// completed) or ctx ends.
func (c *committer) waitCommitted(ctx context.Context, id uint64) bool {
	if !c.ext.ExactlyOnce {
		return true
	}
	for {
		c.mu.Lock()
		done, ch := c.through >= id || c.committed >= id, c.changed
		c.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}
