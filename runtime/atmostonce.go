package runtime

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"
)

// at_most_once external sinks (docs/connectors.md, DESIGN.md) apply their
// changes at every barrier, as at_least_once sinks do, but keep no key
// log: a restart never writes again what the crashed run may have begun
// writing. Checkpoint ids and barrier epochs cannot say what was written
// (ids never repeat, and epochs restart with the process), source
// positions can: a barrier is a cut through every source, and with
// aligned barriers the changes a sink holds at barrier E are exactly what
// the input up to E's cut produced, less what the input up to the
// previous barrier's cut produced.
//
// So every source task notes its positions at every barrier (cutTable),
// and before the committer applies a batch (the changes between barriers
// P and E) it records E's cut in the meta store, synced (amoLog). After
// a crash the query restores its checkpoint and replays; the committer
// drops every replayed batch whose starting cut is below the recorded one
// at some source: part of its input produced output the crashed run had
// begun writing. The first batch it writes starts at or past that cut, so
// what it and the batches after it write is disjoint from what was
// written (for a deterministic query: processing-time results are not).
// What is lost is what the crashed run had not finished writing, and the
// replayed changes between the recorded cut and the first barrier past it.

// endOfInput is the epoch of the batch a sink publishes at the end of a
// bounded input (no barrier follows it).
const endOfInput = math.MaxUint64

// cutKeep is how many barrier epochs a cutTable keeps: a batch is applied
// at most alBatches (per sink subtask) barriers after its own.
const cutKeep = 256

// cutTable is the source positions at each barrier (the cut), merged over
// the source tasks: written by the source tasks as they pass a barrier,
// read by the committer. Epoch 0 is the positions the run starts from.
type cutTable struct {
	mu     sync.Mutex
	cuts   map[uint64]map[string]int64
	latest uint64
	// written is the cut the last run recorded (read before the tasks
	// start; not changed after).
	written map[string]int64
}

// cutKey is the key of a source task's position in a cut.
func cutKey(vertex, subtask int, k string) string { return fmt.Sprintf("%d/%d/%s", vertex, subtask, k) }

// hold is where source task (vertex, subtask) reading table stops until
// it has passed a barrier: the last run's recorded cut.
func (t *cutTable) hold(vertex, subtask int, table string) (int64, bool) {
	h, ok := t.written[cutKey(vertex, subtask, table)]
	return h, ok
}

func newCutTable() *cutTable {
	return &cutTable{cuts: map[uint64]map[string]int64{}}
}

// note adds the positions of source task (vertex, subtask) at barrier
// epoch (0: before it reads); two sources of one table (a self-join) have
// their own.
func (t *cutTable) note(epoch uint64, vertex, subtask int, offsets map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.cuts[epoch]
	if c == nil {
		c = make(map[string]int64, len(offsets))
		t.cuts[epoch] = c
	}
	for k, off := range offsets {
		c[cutKey(vertex, subtask, k)] = off
	}
	if epoch > t.latest {
		t.latest = epoch
		for e := range t.cuts {
			if e != 0 && e+cutKeep < epoch {
				delete(t.cuts, e)
			}
		}
	}
}

// get is the cut at barrier epoch: complete once the sink has passed the
// barrier (every source passed it first). endOfInput: every position of
// the latest cut, at the end.
func (t *cutTable) get(epoch uint64) (map[string]int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if epoch == endOfInput {
		end := map[string]int64{}
		for k := range t.cuts[t.latest] {
			end[k] = math.MaxInt64
		}
		return end, nil
	}
	c, ok := t.cuts[epoch]
	if !ok {
		return nil, fmt.Errorf("no source positions at barrier %d (the latest is %d)", epoch, t.latest)
	}
	return c, nil
}

// AtMostOnceKey is where query qid's at_most_once sink records the
// source positions its writes cover, in the meta store's catalog (one
// entry; no other query's key has it as a prefix).
func AtMostOnceKey(qid uint64) string { return fmt.Sprintf("sinkcut/%d/", qid) }

// amoLog is an at_most_once sink's record of what it has begun writing;
// used only on the committer's goroutine.
type amoLog struct {
	kv   MetaKV
	key  string
	cuts *cutTable
	// written is the last cut recorded; skipping: the crashed run's cut
	// (read at start) is not passed yet.
	written  map[string]int64
	skipping bool
	skipped  atomic.Int64 // changes dropped since the start (read by status)
}

// load reads the cut the last run recorded.
func (l *amoLog) load() error {
	kvs, err := l.kv.ListCatalog(l.key)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if string(kv.Key) != l.key {
			continue
		}
		if err := json.Unmarshal(kv.Value, &l.written); err != nil {
			return fmt.Errorf("at_most_once record %q: %w", l.key, err)
		}
		l.skipping = len(l.written) > 0
	}
	l.cuts.written = maps.Clone(l.written)
	return nil
}

// admit says whether batch b is written; before it is, its cut is
// recorded (synced).
func (l *amoLog) admit(b alBatch) (bool, error) {
	if l.skipping {
		from, err := l.cuts.get(b.from)
		if err != nil {
			return false, err
		}
		for k, w := range l.written {
			if p, ok := from[k]; !ok || p < w {
				l.skipped.Add(int64(len(b.changes)))
				return false, nil
			}
		}
		l.skipping = false
	}
	to, err := l.cuts.get(b.to)
	if err != nil {
		return false, err
	}
	if maps.Equal(to, l.written) {
		return true, nil
	}
	val, err := json.Marshal(to)
	if err != nil {
		return false, err
	}
	if err := l.kv.PutCatalog(l.key, val); err != nil {
		return false, fmt.Errorf("record source positions: %w", err)
	}
	l.written = maps.Clone(to)
	return true, nil
}
