package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// Key layout of a query in the versioned store (all under QueryPrefix):
//
//	q/<qid>/m                    the checkpoint marker (value: marker JSON)
//	q/<qid>/r/L...               an updating query's result rows: a state log
//	                             per sink subtask (statelog.go), records keyed
//	                             on the upsert key, valued the encoded row
//	q/<qid>/b/<sink>/<ckpt>/<n>  a block of an append-only query's result rows
//	q/<qid>/s/<v>/<i>            source task (vertex v, subtask i) position
//	q/<qid>/o/<v>/<op>/L...      operator op of vertex v: its state log (stateLog)
//
// A block key holds the sink subtask (4 bytes big-endian), the checkpoint
// the block was written for (8 bytes) and the block's number in that
// checkpoint (4 bytes); its value is records of (row id, row) (see
// blockBuilder), and its version is that checkpoint's id (a later one when
// a failed write is retried). Append-only rows are never updated or
// deleted, so a few large entries per checkpoint hold them as well as one
// entry per row would, at a fraction of the cost: a read at a marker sees
// exactly the blocks of the checkpoints up to it.
//
// Query ids come from a durable sequence and never repeat, so a replaced
// or dropped query's leftovers can never be read as a new one's.

// QueryPrefix is the key prefix of everything query qid stores.
func QueryPrefix(qid uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("q/"), qid)
}

func markerKey(qid uint64) []byte    { return append(QueryPrefix(qid), "/m"...) }
func resultPrefix(qid uint64) []byte { return append(QueryPrefix(qid), "/r/"...) }
func blockPrefix(qid uint64) []byte  { return append(QueryPrefix(qid), "/b/"...) }
func sourceKey(qid uint64, v, i int) []byte {
	return fmt.Appendf(QueryPrefix(qid), "/s/%d/%d", v, i)
}

// blockKey is the key of block n that sink subtask task wrote for
// checkpoint ckpt.
func blockKey(prefix []byte, task int, ckpt uint64, n int) []byte {
	k := make([]byte, 0, len(prefix)+18)
	k = append(k, prefix...)
	k = binary.BigEndian.AppendUint32(k, uint32(task))
	k = append(k, '/')
	k = binary.BigEndian.AppendUint64(k, ckpt)
	k = append(k, '/')
	return binary.BigEndian.AppendUint32(k, uint32(n))
}

// Results is a view's built-in results table: the latest values
// (consistency=latest; in memory, or for append-only results the committed
// rows plus those published since) and, in the versioned store, the values
// as of each completed checkpoint (consistency=committed reads at the
// marker).
type Results struct {
	store  state.Versioned
	prefix []byte // updating results: their state log
	blocks []byte // append-only results: blocks of rows

	mu sync.RWMutex
	// latest holds updating results' rows encoded (AppendRow), in tables
	// with nothing for the collector to trace per row (rowTable). One per
	// sink subtask (its shard: the keys it owns, see resultOwner), so a
	// sink's base reads only its own rows.
	latest    []*rowTable
	kind      plan.KeyKind // of the upsert key
	loaded    bool         // latest holds the rows (else latest reads read committed)
	committed uint64
	// logBlocks are the result log's blocks per sink subtask as of the
	// loaded checkpoint: the sinks' first bases delete them.
	logBlocks map[int][][]byte
	// appendOnly results (rows keyed by row id, never updated) are not kept
	// in memory: latest reads are the committed rows plus recent, the rows
	// published since the last completed checkpoint, as block records
	// (shared with the sinks' blocks, never modified).
	appendOnly bool
	recent     [][]byte
	// log is the change log of GET .../changes (changes.go).
	log *changeLog
	// width is the number of columns of a result row (0: not known), which
	// rows read back from the store must have.
	width atomic.Int64
}

// setWidth sets the number of columns of the query's result rows.
func (r *Results) setWidth(n int) { r.width.Store(int64(n)) }

// checkWidth rejects a stored result row (encoded, enc) that is not a
// whole row of the query's width.
func (r *Results) checkWidth(enc []byte) error {
	n, err := value.RowWidth(enc)
	if err != nil {
		return err
	}
	if w := r.width.Load(); w > 0 && int64(n) != w {
		return fmt.Errorf("a row of %d columns, the query's have %d", n, w)
	}
	return nil
}

// decodeRow decodes a stored result row, which must have the query's width.
func (r *Results) decodeRow(enc []byte) (plan.Row, error) {
	if err := r.checkWidth(enc); err != nil {
		return nil, err
	}
	return value.DecodeRow(enc)
}

// readBlocks feeds add the rows of the append-only blocks as of
// checkpoint at (none when 0), then those of recent (published since).
func (r *Results) readBlocks(at uint64, recent [][]byte, add func(key []byte, row plan.Row) error) error {
	if at > 0 {
		err := r.store.Scan(r.blocks, at, func(k, v []byte) error {
			if err := r.decodeBlock(v, add); err != nil {
				return fmt.Errorf("result block %x: %w", k, err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read results at %d: %w", at, err)
		}
	}
	for _, b := range recent {
		if err := decodeBlock(b, add); err != nil {
			return fmt.Errorf("recent results: %w", err)
		}
	}
	return nil
}

// decodeBlock decodes an append-only block's records (see decodeBlock),
// whose rows must have the query's width.
func (r *Results) decodeBlock(b []byte, fn func(key []byte, row plan.Row) error) error {
	return decodeBlock(b, func(key []byte, row plan.Row) error {
		if w := r.width.Load(); w > 0 && int64(len(row)) != w {
			return fmt.Errorf("record %x: a row of %d columns, the query's have %d", key, len(row), w)
		}
		return fn(key, row)
	})
}

// setAppendOnly switches the results to append-only keeping (before the
// job runs).
func (r *Results) setAppendOnly() {
	r.mu.Lock()
	r.appendOnly, r.latest, r.recent = true, newShards(1), nil
	r.mu.Unlock()
}

// shard splits the latest rows into one shard per sink subtask of an
// updating query keyed on kind (before the job runs).
func (r *Results) shard(n int, kind plan.KeyKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.latest
	r.latest, r.kind = newShards(n), kind
	for _, t := range old {
		t.each(func(k, enc []byte) {
			key := string(k)
			r.latest[resultOwner(key, kind, n)].set(key, enc)
		})
	}
}

func newShards(n int) []*rowTable {
	out := make([]*rowTable, max(n, 1))
	for i := range out {
		out[i] = newRowTable()
	}
	return out
}

// ResultsOptions are the options of NewResults and OpenResults.
type ResultsOptions struct {
	// ChangeLogSize is how many records the change log of /changes keeps
	// (0: DefaultChangeLogSize).
	ChangeLogSize int
}

// ResultsOption sets a field of ResultsOptions.
type ResultsOption func(*ResultsOptions)

// WithChangeLogSize makes the change log keep n records (0: the default).
func WithChangeLogSize(n int) ResultsOption {
	return func(o *ResultsOptions) { o.ChangeLogSize = n }
}

// NewResults opens the results of query qid: empty for a new query; a
// restarting job sets the committed id and loads the latest rows.
func NewResults(store state.Versioned, qid uint64, opts ...ResultsOption) *Results {
	var o ResultsOptions
	for _, f := range opts {
		f(&o)
	}
	return &Results{store: store, prefix: resultPrefix(qid), blocks: blockPrefix(qid), latest: newShards(1), loaded: true, log: newChangeLog(o.ChangeLogSize)}
}

// restoring makes committed reads read at checkpoint id at once, and latest
// reads too until Load has the rows in memory.
func (r *Results) restoring(id uint64) {
	r.mu.Lock()
	r.committed, r.loaded = id, false
	r.mu.Unlock()
}

// Load sets committed to checkpoint id and latest to the rows as of id.
// Append-only results have nothing to load: their latest reads read the
// store.
func (r *Results) Load(id uint64) error {
	var blocks map[int][][]byte
	r.mu.RLock()
	appendOnly, n, kind := r.appendOnly, len(r.latest), r.kind
	r.mu.RUnlock()
	latest := newShards(n)
	if id > 0 && !appendOnly {
		keys, vals, b, err := readStateLog(r.store, r.prefix, id)
		if err != nil {
			return fmt.Errorf("load results at %d: %w", id, err)
		}
		for _, k := range keys {
			if err := r.checkWidth(vals[k]); err != nil {
				return fmt.Errorf("load results at %d: result %x: %w", id, k, err)
			}
			latest[resultOwner(k, kind, n)].set(k, vals[k])
		}
		blocks = b
	}
	r.mu.Lock()
	r.latest, r.committed, r.loaded, r.logBlocks = latest, id, true, blocks
	r.mu.Unlock()
	return nil
}

// readLog reads an updating query's results at checkpoint at, in key
// order (CompareKeys).
func (r *Results) readLog(at uint64) ([]plan.Row, error) {
	keys, vals, _, err := readStateLog(r.store, r.prefix, at)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b string) int { return value.CompareKeys(op.KeyBytes(a), op.KeyBytes(b), false) })
	rows := make([]plan.Row, len(keys))
	for i, k := range keys {
		if rows[i], err = r.decodeRow(vals[k]); err != nil {
			return nil, fmt.Errorf("result %x: %w", k, err)
		}
	}
	return rows, nil
}

// superseded returns the result log blocks that sink subtask task of
// tasks replaces with its first base (see stateLog), once.
func (r *Results) superseded(task, tasks int) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for s, keys := range r.logBlocks {
		if s%tasks == task {
			out = append(out, keys...)
			delete(r.logBlocks, s)
		}
	}
	return out
}

// OpenResults opens query qid's results as of its last completed
// checkpoint, for a query that is not running (stopped); g is its plan,
// which says how its results are stored.
func OpenResults(store state.Versioned, qid uint64, g *plan.Graph, opts ...ResultsOption) (*Results, error) {
	r := NewResults(store, qid, opts...)
	r.setWidth(len(g.Out))
	if resultsKey(g) == plan.KeyRowID {
		r.setAppendOnly()
	}
	id, _, ok, err := store.LastMarker(markerKey(qid))
	if err != nil {
		return nil, fmt.Errorf("results of query %d: %w", qid, err)
	}
	if ok {
		err = r.Load(id)
	}
	return r, err
}

// resultsKey is what the results sink of g is keyed on (KeyGroup when g
// has none).
func resultsKey(g *plan.Graph) plan.KeyKind {
	for _, v := range g.Vertices {
		if s, ok := lastSink(v.Ops); ok && s.Kind == plan.SinkResults {
			return s.Key
		}
	}
	return plan.KeyGroup
}

// Committed is the checkpoint id committed reads see (0: none yet).
func (r *Results) Committed() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.committed
}

// setCommitted makes checkpoint id the committed one. Every row published
// so far is in it (the next barrier comes only after it completed).
func (r *Results) setCommitted(id uint64) {
	r.mu.Lock()
	r.committed = id
	if r.appendOnly {
		clear(r.recent) // let the blocks go; keep the capacity
		r.recent = r.recent[:0]
	}
	r.log.checkpoint(id)
	r.mu.Unlock()
}

// apply publishes sink subtask task's changes, in order.
func (r *Results) apply(task int, changes []keyedChange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.latest[task]
	for _, c := range changes {
		if c.del {
			t.del(c.key)
		} else {
			t.set(c.key, c.enc)
		}
	}
	r.log.changes(changes)
}

// owned calls fn with every latest row sink subtask task owns (a base of
// its log), under the read lock.
func (r *Results) owned(task int, fn func(k, enc []byte)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	r.latest[task].each(fn)
}

// resultOwner is the sink subtask an upsert key's changes come from: the
// aggregation's, which the exchange chose by the group key.
func resultOwner(k string, kind plan.KeyKind, tasks int) int {
	if tasks <= 1 {
		return 0
	}
	return int(value.HashKey(groupKeyOf(k, kind)) % uint64(tasks))
}

// appendRecent publishes an append-only sink's rows: records of a block
// (see blockBuilder) that nobody modifies any more.
func (r *Results) appendRecent(records ...[]byte) {
	r.mu.Lock()
	r.recent = append(r.recent, records...)
	r.log.rows(records)
	r.mu.Unlock()
}

// watermark notes sink subtask task's (of tasks) watermark for the change
// log.
func (r *Results) watermark(task, tasks int, wm int64) { r.log.watermark(task, tasks, wm) }

// KeyedRow is a result row with its upsert key (encoded values) or row id.
type KeyedRow struct {
	Key string
	Row plan.Row
}

// Subscribe reads the change log from seq from (0: from now). With
// snapshot (latest results only) it also returns the current rows, the
// subscription starting right after them.
func (r *Results) Subscribe(from uint64, committed, snapshot bool) (*Subscription, []KeyedRow, error) {
	if !snapshot || committed {
		sub, err := r.log.subscribe(from, committed)
		return sub, nil, err
	}
	r.mu.RLock()
	appendOnly := r.appendOnly
	if appendOnly {
		// The rows are read from the store and recent: hold the writers
		// off while taking the cursor and recent.
		sub, err := r.log.subscribe(0, false)
		r.mu.RUnlock()
		if err != nil {
			return nil, nil, err
		}
		rows, err := r.Snapshot(0)
		return sub, rows, err
	}
	defer r.mu.RUnlock()
	sub, err := r.log.subscribe(0, false)
	if err != nil {
		return nil, nil, err
	}
	var rows []KeyedRow
	for _, t := range r.latest {
		t.each(func(k, enc []byte) {
			if row, derr := value.DecodeRow(enc); derr == nil {
				rows = append(rows, KeyedRow{Key: string(k), Row: row})
			}
		})
	}
	return sub, rows, nil
}

// Snapshot returns the rows with their keys as of checkpoint at (0: the
// latest of append-only results; updating results read the log at the
// checkpoint).
func (r *Results) Snapshot(at uint64) ([]KeyedRow, error) {
	var out []KeyedRow
	add := func(k []byte, row plan.Row) error {
		out = append(out, KeyedRow{Key: string(k), Row: row})
		return nil
	}
	if r.appendOnly {
		r.mu.RLock()
		var recent [][]byte
		if at == 0 {
			at, recent = r.committed, slices.Clone(r.recent)
		}
		r.mu.RUnlock()
		if err := r.readBlocks(at, recent, add); err != nil {
			return nil, err
		}
		return out, nil
	}
	keys, vals, _, err := readStateLog(r.store, r.prefix, at)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		row, err := r.decodeRow(vals[k])
		if err != nil {
			return nil, fmt.Errorf("read results at %d: result %x: %w", at, k, err)
		}
		out = append(out, KeyedRow{Key: k, Row: row})
	}
	return out, nil
}

// Rows returns the rows in key order (CompareKeys: by the values of
// window_start, window_end and the GROUP BY columns; append-only results
// by row id, the source offset): the latest ones, or (committed) the
// ones as of the last completed checkpoint.
func (r *Results) Rows(committed bool) ([]plan.Row, error) {
	r.mu.RLock()
	loaded, appendOnly := r.loaded, r.appendOnly
	r.mu.RUnlock()
	if appendOnly {
		return r.appendOnlyRows(committed)
	}
	if !committed && loaded {
		type kv struct {
			k   string
			row plan.Row
		}
		var all []kv
		var err error
		r.mu.RLock()
		for _, t := range r.latest {
			t.each(func(k, enc []byte) {
				row, derr := value.DecodeRow(enc)
				if derr != nil && err == nil {
					err = fmt.Errorf("result %x: %w", k, derr)
				}
				all = append(all, kv{string(k), row})
			})
		}
		r.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		slices.SortFunc(all, func(a, b kv) int { return value.CompareKeys(op.KeyBytes(a.k), op.KeyBytes(b.k), false) })
		rows := make([]plan.Row, len(all))
		for i, e := range all {
			rows[i] = e.row
		}
		return rows, nil
	}
	at := r.Committed()
	if at == 0 {
		return nil, nil
	}
	rows, err := r.readLog(at)
	if err != nil {
		return nil, fmt.Errorf("read results at %d: %w", at, err)
	}
	return rows, nil
}

// appendOnlyRows reads append-only results in row id order (CompareKeys:
// the source offset, a join's left then right row id): the rows in the
// blocks as of the last completed checkpoint and, unless committed, those
// published since.
func (r *Results) appendOnlyRows(committed bool) ([]plan.Row, error) {
	r.mu.RLock()
	at := r.committed
	var recent [][]byte
	if !committed {
		recent = slices.Clone(r.recent)
	}
	r.mu.RUnlock()
	// Rows in the order read (the store's blocks, then recent) and their
	// keys with their index, sorted: moving 24-byte keys, not rows too.
	type keyed struct {
		k string
		i int
	}
	var rows []plan.Row
	var keys []keyed
	add := func(key []byte, row plan.Row) error {
		keys = append(keys, keyed{string(key), len(rows)})
		rows = append(rows, row)
		return nil
	}
	if err := r.readBlocks(at, recent, add); err != nil {
		return nil, err
	}
	// Row ids are unique per query, so no key should appear twice; if one
	// did, the one read last wins, as with an update of the key.
	slices.SortFunc(keys, func(a, b keyed) int {
		if c := value.CompareKeys(op.KeyBytes(a.k), op.KeyBytes(b.k), true); c != 0 {
			return c
		}
		return a.i - b.i
	})
	out := make([]plan.Row, 0, len(keys))
	for j, kr := range keys {
		if j+1 < len(keys) && keys[j+1].k == kr.k {
			continue
		}
		out = append(out, rows[kr.i])
	}
	return out, nil
}

// blockBuilder encodes append-only result rows into blocks of records, one
// (key, row) record per row: the key and the encoded row (AppendRow), each
// preceded by its length as a uvarint. A block is closed once it holds
// target bytes or more. Blocks are never modified once written to, so
// their bytes may be shared (with Results.recent, with a failed write
// kept for retry).
type blockBuilder struct {
	target  int
	closed  [][]byte
	cur     []byte // the open block
	scratch []byte
}

// add appends the record of (key, row).
func (b *blockBuilder) add(key string, row plan.Row) {
	b.scratch = value.AppendRow(b.scratch[:0], row)
	n := op.UvarintLen(len(key)) + len(key) + op.UvarintLen(len(b.scratch)) + len(b.scratch)
	if cap(b.cur)-len(b.cur) < n {
		// Grow by doubling up to the target (plus some room for the record
		// that crosses it), not by append's smaller steps. After a full
		// block, rows come fast: the next one starts at its full size.
		full := b.target + b.target/8
		c := max(2*cap(b.cur), 4<<10)
		if len(b.closed) > 0 {
			c = full
		}
		c = max(min(c, full), len(b.cur)+n)
		cur := make([]byte, len(b.cur), c)
		copy(cur, b.cur)
		b.cur = cur
	}
	b.cur = binary.AppendUvarint(b.cur, uint64(len(key)))
	b.cur = append(b.cur, key...)
	b.cur = binary.AppendUvarint(b.cur, uint64(len(b.scratch)))
	b.cur = append(b.cur, b.scratch...)
	if len(b.cur) >= b.target {
		b.closed, b.cur = append(b.closed, b.cur), nil
	}
}

// take returns every block (the open one closed) and starts over.
func (b *blockBuilder) take() [][]byte {
	blocks := b.closed
	if len(b.cur) > 0 {
		blocks = append(blocks, b.cur)
	}
	b.closed, b.cur = nil, nil
	return blocks
}

// decodeBlock calls fn with each record of a block, in order. key is only
// valid during the call; the row is the caller's.
func decodeBlock(b []byte, fn func(key []byte, row plan.Row) error) error {
	for len(b) > 0 {
		key, rest, err := lengthPrefixed(b)
		if err != nil {
			return fmt.Errorf("record key: %w", err)
		}
		enc, rest, err := lengthPrefixed(rest)
		if err != nil {
			return fmt.Errorf("record %x: row: %w", key, err)
		}
		row, err := value.DecodeRow(enc)
		if err != nil {
			return fmt.Errorf("record %x: %w", key, err)
		}
		if err := fn(key, row); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// lengthPrefixed splits a uvarint-length-prefixed byte string off b.
func lengthPrefixed(b []byte) (s, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, errors.New("bad length")
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// keyedChange is one result change: an upsert of row (enc: its
// encoding, once published), or a delete.
type keyedChange struct {
	key string
	row plan.Row
	enc []byte
	del bool
}

// groupKeyOf strips window_start and window_end from a windowed upsert key.
func groupKeyOf(k string, kind plan.KeyKind) string {
	if kind != plan.KeyWindowGroup {
		return k
	}
	// The window values are skipped in place: the result is a suffix of k
	// (this runs for every result change of a parallel sink).
	b := op.KeyBytes(k)
	for range 2 {
		var err error
		if _, b, err = value.DecodeValue(b); err != nil {
			return k
		}
	}
	return k[len(k)-len(b):]
}

// expired returns the keys owned by sink subtask i whose window_end is
// at or before cutoff (windowed results only).
func (r *Results) expired(cutoff int64, i int) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	r.latest[i].each(func(k, _ []byte) {
		if _, rest, err := value.DecodeValue(k); err == nil {
			if end, _, err := value.DecodeValue(rest); err == nil && end.I <= cutoff {
				out = append(out, string(k))
			}
		}
	})
	return out
}
