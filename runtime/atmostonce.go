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
// and before a sink subtask's batch (its changes between barriers P and
// E) is written it records E's cut in the meta store, synced (amoLog).
// After a crash the query restores its checkpoint and replays; each sink
// subtask (amoGate) drops every replayed batch whose starting cut is below
// the recorded one at some source: part of its input produced output the
// crashed run had begun writing. The first batch it writes starts at or
// past that cut, so what it and the batches after it write is disjoint
// from what was written (for a deterministic query: processing-time
// results are not). What is lost is what the crashed run had not finished
// writing, and the replayed changes between the recorded cut and the
// first barrier past it.
//
// The same gate serves an external sink (its committer applies each
// subtask's batches: committer.run) and the built-in results of a view
// with delivery=at_most_once (each results sink subtask publishes its
// batches to the latest view and /changes: resultsGate, sink.go); the
// record is one per query, shared by its sink subtasks.

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

// amoLog is an at_most_once sink's record of what it has begun writing,
// one per query: its sink subtasks (an external sink's committer, the
// results sink's subtasks, each through its own amoGate) share it.
type amoLog struct {
	kv   MetaKV
	key  string
	cuts *cutTable
	// last is the cut the crashed run recorded (read by load before the
	// tasks start; not changed after): a gate skips until it is passed.
	last map[string]int64

	mu sync.Mutex
	// written is the cut recorded last: every change written so far comes
	// from input below it.
	written map[string]int64
	skipped atomic.Int64 // changes dropped since the start (read by status)
	// dropped: changes of failed writes not written again, since the
	// start (an external sink's; read by status).
	dropped atomic.Int64
}

// amoGate is one sink subtask's view of the query's amoLog: whether it
// still skips the replay of what the crashed run may have written. Used
// on that subtask's goroutine only (the committer's, for an external
// sink's batches of that subtask).
type amoGate struct {
	l        *amoLog
	skipping bool
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
		if err := json.Unmarshal(kv.Value, &l.last); err != nil {
			return fmt.Errorf("at_most_once record %q: %w", l.key, err)
		}
	}
	l.written = maps.Clone(l.last)
	l.cuts.written = maps.Clone(l.last)
	return nil
}

// replaying says whether the last run recorded a cut: its replay is
// skipped up to there.
func (l *amoLog) replaying() bool { return len(l.last) > 0 }

// gate is a new sink subtask's gate, skipping while the last run's cut is
// not passed.
func (l *amoLog) gate() *amoGate { return &amoGate{l: l, skipping: l.replaying()} }

// admit says whether the n changes a sink subtask has between barrier
// epochs from and to (0: the start; endOfInput: the end) are written
// (published). While the subtask skips, a batch that starts below the
// last run's cut at some source is dropped (counted): part of its input
// produced output the crashed run may have written; the first that starts
// at or past it ends the skipping. Before a batch is written, the cut at
// to is recorded (synced), unless what is recorded covers it already
// (another subtask recorded it, or a later one): the record only grows.
// Nothing to write (n == 0) records nothing.
func (g *amoGate) admit(from, to uint64, n int) (bool, error) {
	if n == 0 {
		return true, nil
	}
	l := g.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if g.skipping {
		start, err := l.cuts.get(from)
		if err != nil {
			return false, err
		}
		for k, w := range l.last {
			if p, ok := start[k]; !ok || p < w {
				l.skipped.Add(int64(n))
				return false, nil
			}
		}
		g.skipping = false
	}
	end, err := l.cuts.get(to)
	if err != nil {
		return false, err
	}
	if covers(l.written, end) {
		return true, nil
	}
	rec := maps.Clone(l.written)
	if rec == nil {
		rec = make(map[string]int64, len(end))
	}
	for k, p := range end {
		if w, ok := rec[k]; !ok || p > w {
			rec[k] = p
		}
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	if err := l.kv.PutCatalog(l.key, val); err != nil {
		return false, fmt.Errorf("record source positions: %w", err)
	}
	l.written = rec
	return true, nil
}

// covers says whether cut w is at or past cut c at every source of c.
func covers(w, c map[string]int64) bool {
	for k, p := range c {
		if q, ok := w[k]; !ok || q < p {
			return false
		}
	}
	return true
}
