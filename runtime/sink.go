package runtime

import (
	"fmt"
	"math"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/state"
)

// sink ends a chain: it takes the changelog and, at barriers, does the
// sink's I/O (publishing, pre-committing the epoch). Sinks run on their
// task's goroutine.
type sink interface {
	Emitter
	// Barrier publishes the epoch's changes and, for a checkpoint,
	// pre-commits them as part of the checkpoint.
	Barrier(b Barrier) error
}

// resultsSink writes the built-in results table. Changes are deduplicated
// per key: pending since the last barrier (published to the latest view at
// the next one) and uncommitted since the last checkpoint (written to the
// versioned store at the checkpoint's id).
type resultsSink struct {
	res         *Results
	store       state.Versioned
	prefix      []byte
	appendOnly  bool
	pending     map[string]change
	uncommitted map[string]change
	counters    *Counters
	keyBuf      []byte
	written     int // bytes pre-committed, for checkpoint statistics
	// retention > 0 drops result rows of windows that ended more than
	// retention before the watermark (results_retention), at checkpoints.
	retention   int64
	wm          int64
	kind        plan.KeyKind
	task, tasks int
}

var _ sink = (*resultsSink)(nil)

func newResultsSink(res *Results, store state.Versioned, qid uint64, key plan.KeyKind, c *Counters) *resultsSink {
	return &resultsSink{res: res, store: store, prefix: resultPrefix(qid), appendOnly: key == plan.KeyRowID,
		pending: map[string]change{}, uncommitted: map[string]change{}, counters: c, kind: key, wm: math.MinInt64, tasks: 1}
}

func (s *resultsSink) watermark(wm int64) { s.wm = wm }

// publish applies the pending changes to the latest results.
func (s *resultsSink) publish() {
	if len(s.pending) > 0 {
		s.res.apply(s.pending)
		s.pending = map[string]change{}
	}
}

// expire deletes the rows this sink owns whose window ended more than the
// retention before the watermark.
func (s *resultsSink) expire() {
	if s.retention <= 0 || s.kind != plan.KeyWindowGroup || s.wm == math.MinInt64 {
		return
	}
	for _, k := range s.res.expired(s.wm-s.retention, s.task, s.tasks) {
		if c, ok := s.pending[k]; ok && c.del {
			continue
		}
		s.pending[k] = change{del: true}
		s.uncommitted[k] = change{del: true}
	}
}

func (s *resultsSink) Emit(b *Batch) error {
	for i, r := range b.Rows {
		m := &b.Meta[i]
		key := m.Key
		if s.appendOnly {
			// The deterministic row id: a join's (RowMeta.ID), else the
			// source offset of the input row.
			if m.ID != "" {
				key = m.ID
			} else {
				s.keyBuf = AppendValue(s.keyBuf[:0], plan.Int(m.Offset))
				key = string(s.keyBuf)
			}
		}
		c := change{row: r, del: m.Op == Delete}
		s.pending[key] = c
		s.uncommitted[key] = c
	}
	s.counters.RowsOut += int64(b.Len())
	return nil
}

func (s *resultsSink) Barrier(b Barrier) error {
	s.publish()
	if b.CheckpointID != 0 {
		s.expire() // over the rows just published too
		s.publish()
	}
	if b.CheckpointID == 0 || len(s.uncommitted) == 0 {
		return nil
	}
	kvs := make([]state.KV, 0, len(s.uncommitted))
	for k, c := range s.uncommitted {
		key := append(append([]byte(nil), s.prefix...), k...)
		if c.del {
			kvs = append(kvs, state.KV{Key: key, Delete: true})
		} else {
			kvs = append(kvs, state.KV{Key: key, Value: AppendRow(nil, c.row)})
		}
		s.written += len(kvs[len(kvs)-1].Key) + len(kvs[len(kvs)-1].Value)
	}
	if err := s.store.Write(b.CheckpointID, kvs); err != nil {
		return fmt.Errorf("results pre-commit at checkpoint %d: %w", b.CheckpointID, err)
	}
	s.uncommitted = map[string]change{}
	return nil
}

// discardSink counts rows and drops them (benchmarks).
type discardSink struct{ counters *Counters }

var _ sink = (*discardSink)(nil)

func (d *discardSink) Emit(b *Batch) error   { d.counters.RowsOut += int64(b.Len()); return nil }
func (d *discardSink) Barrier(Barrier) error { return nil }

// bytesWritten reports (and resets) what a sink pre-committed.
func bytesWritten(s sink) int {
	r, ok := s.(*resultsSink)
	if !ok {
		return 0
	}
	n := r.written
	r.written = 0
	return n
}
