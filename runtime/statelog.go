package runtime

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// Operator state is stored as a log of blocks per operator and subtask,
// not as one store entry per key: a checkpoint's Puts and Deletes are
// encoded into blocks of about stateBlockSize bytes, each one entry in the
// versioned store at the checkpoint id (large values go to the store's
// blob files, state/blobs.go), under
//
//	<opPrefix> L <subtask:4> <checkpoint:8> <kind:1> <block:4>
//
// kind 'b' is a base (a full snapshot), 'd' a delta (what changed since the
// previous checkpoint). A record is op(1: put, 0: delete), then the key and
// (puts) the value, each uvarint-length-prefixed.
//
// Writing a few large entries instead of one per group or held row is what
// makes a checkpoint cheap (the store's per-entry cost dominated). The log
// is compacted by writing a base: when the deltas since the last base
// outgrow it twice over (a log holds at most about three times the state),
// and always at a task's first checkpoint. A base write also
// deletes the blocks it supersedes, at the same version, so a read at any
// checkpoint sees per subtask exactly one base and the deltas after it.
//
// Restore reads every subtask's log (a task may restart at another
// parallelism: operators keep the keys they Own), and the first checkpoint
// after it writes a base and deletes the old logs (subtask s's by the new
// subtask s mod parallelism), so logs of two parallelisms never mix.

const (
	stateBlockSize = 256 << 10
	// stateBlockMin is the size a writer's first block starts at: it
	// doubles up to a full block, so the snapshot of a handful of groups
	// (or the results changes a sink logs between checkpoints) holds a
	// few KiB, not a full block, for each of thousands of queries.
	stateBlockMin            = 4 << 10
	kindBase, kindDelta byte = 'b', 'd'
	// compactMin: below this many delta bytes a log is not compacted.
	compactMin = 4 << 20
)

// stateLog is one operator's log at one task: what the task has written
// since its last base, to delete when it writes the next.
type stateLog struct {
	prefix     []byte // the operator's prefix (shared by its subtasks)
	subtask    int
	written    [][]byte // block keys of this subtask's current chain
	baseBytes  int
	deltaBytes int
	based      bool // a base was written since the task started
}

func (l *stateLog) blockKey(ckpt uint64, kind byte, n int) []byte {
	k := append(append([]byte(nil), l.prefix...), 'L')
	k = binary.BigEndian.AppendUint32(k, uint32(l.subtask))
	k = binary.BigEndian.AppendUint64(k, ckpt)
	k = append(k, kind)
	return binary.BigEndian.AppendUint32(k, uint32(n))
}

// full reports whether the next snapshot must be a base.
func (l *stateLog) full() bool { return l.wouldCompact(0) }

// wouldCompact reports whether the next snapshot would be a base if its
// deltas came to pending bytes: a writer that knows can stop logging them.
func (l *stateLog) wouldCompact(pending int) bool {
	return !l.based || l.deltaBytes+pending > max(2*l.baseBytes, compactMin)
}

// writer returns the writer of the next snapshot: a base or a delta.
func (l *stateLog) writer() *stateWriter { return &stateWriter{all: l.full()} }

// blockPool recycles snapshot blocks once the store has written them. A
// checkpoint's blocks come to megabytes; allocated anew each time, they
// make the collector run, and trace the whole heap, more often.
var blockPool sync.Pool // of *[]byte

// getBlock returns an empty block buffer: room for stateBlockSize bytes and
// the record that crosses it.
func getBlock() []byte {
	if p, ok := blockPool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, fullBlock)
}

// fullBlock is the capacity of a full block buffer.
const fullBlock = stateBlockSize + stateBlockSize/4

// putBlocks gives blocks nothing refers to any more back for reuse.
func putBlocks(blocks [][]byte) {
	for _, b := range blocks {
		if cap(b) >= stateBlockSize {
			blockPool.Put(&b)
		}
	}
}

// blocks turns one checkpoint's records (from a stateWriter) into store
// writes: the blocks, and for a base the deletes of the chain it replaces.
func (l *stateLog) blocks(ckpt uint64, w *stateWriter) []state.KV {
	if w.n == 0 && !w.all {
		return nil
	}
	kind := kindDelta
	var kvs []state.KV
	if w.all {
		kind = kindBase
		for _, k := range l.written {
			kvs = append(kvs, state.KV{Key: k, Delete: true})
		}
		l.written, l.based, l.baseBytes, l.deltaBytes = nil, true, w.n, 0
	} else {
		l.deltaBytes += w.n
	}
	for n, b := range w.close() {
		k := l.blockKey(ckpt, kind, n)
		l.written = append(l.written, k)
		kvs = append(kvs, state.KV{Key: k, Value: b})
	}
	return kvs
}

// stateWriter collects an operator's snapshot as log records, in blocks
// of about stateBlockSize bytes (a record is never split; one larger than
// a block grows its block).
type stateWriter struct {
	all    bool // a base: the operator writes all its state
	blocks [][]byte
	n      int // bytes in all
}

var _ StateWriter = (*stateWriter)(nil)

func (w *stateWriter) Full() bool { return w.all }

// cur is the block the next record, of n bytes, goes to. The first block
// starts at stateBlockMin and doubles until it is a full one (from the
// pool); the blocks after it start full.
func (w *stateWriter) cur(n int) *[]byte {
	last := len(w.blocks) - 1
	switch {
	case last < 0:
		w.blocks = append(w.blocks, make([]byte, 0, max(stateBlockMin, n)))
		last = 0
	case len(w.blocks[last]) >= stateBlockSize:
		w.blocks = append(w.blocks, getBlock())
		last++
	}
	b := &w.blocks[last]
	if need := len(*b) + n; need > cap(*b) && cap(*b) < fullBlock {
		var c []byte
		if size := max(2*cap(*b), need); size >= fullBlock {
			c = getBlock()
		} else {
			c = make([]byte, 0, size)
		}
		*b = append(c, *b...)
	}
	return b
}

func (w *stateWriter) Put(k, v []byte) {
	b := w.cur(1 + uvarintLen(len(k)) + len(k) + uvarintLen(len(v)) + len(v))
	before := len(*b)
	*b = append(*b, 1)
	*b = binary.AppendUvarint(*b, uint64(len(k)))
	*b = append(*b, k...)
	*b = binary.AppendUvarint(*b, uint64(len(v)))
	*b = append(*b, v...)
	w.n += len(*b) - before
}

func (w *stateWriter) Delete(k []byte) {
	b := w.cur(1 + uvarintLen(len(k)) + len(k))
	before := len(*b)
	*b = append(*b, 0)
	*b = binary.AppendUvarint(*b, uint64(len(k)))
	*b = append(*b, k...)
	w.n += len(*b) - before
}

// close returns the blocks (a base of nothing is one empty block: it still
// marks where the chain starts).
func (w *stateWriter) close() [][]byte {
	if len(w.blocks) == 0 {
		w.blocks = append(w.blocks, []byte{})
	}
	return w.blocks
}

// logRecords decodes one block's records.
func logRecords(b []byte, fn func(put bool, k, v []byte) error) error {
	for len(b) > 0 {
		if b[0] > 1 {
			return fmt.Errorf("bad record kind %d", b[0])
		}
		put := b[0] == 1
		b = b[1:]
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return fmt.Errorf("bad key length")
		}
		k := b[w : w+int(n)]
		b = b[w+int(n):]
		var v []byte
		if put {
			n, w = binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return fmt.Errorf("bad value length")
			}
			v = b[w : w+int(n)]
			b = b[w+int(n):]
		}
		if err := fn(put, k, v); err != nil {
			return err
		}
	}
	return nil
}

// readStateLog reads an operator's state at checkpoint at from every
// subtask's log: each subtask's last base, then its later deltas in order.
// It returns the records in key order, and the block keys per writing
// subtask (for the first base after a restore to delete).
func readStateLog(store state.Versioned, prefix []byte, at uint64) (keys []string, vals map[string][]byte, blocks map[int][][]byte, err error) {
	type block struct {
		key     []byte
		subtask int
		ckpt    uint64
		kind    byte
		value   []byte
	}
	var all []block
	lp := append(append([]byte(nil), prefix...), 'L')
	err = store.Scan(lp, at, func(k, v []byte) error {
		rest := k[len(lp):]
		if len(rest) != 4+8+1+4 {
			return fmt.Errorf("state block key %x: bad length", k)
		}
		all = append(all, block{key: append([]byte(nil), k...), subtask: int(binary.BigEndian.Uint32(rest)),
			ckpt: binary.BigEndian.Uint64(rest[4:]), kind: rest[12], value: append([]byte(nil), v...)})
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	// Keys sort by subtask, checkpoint, kind, block: per subtask, find the
	// last base and replay from it.
	base := map[int]uint64{}
	blocks = map[int][][]byte{}
	for _, b := range all {
		blocks[b.subtask] = append(blocks[b.subtask], b.key)
		if b.kind == kindBase {
			base[b.subtask] = max(base[b.subtask], b.ckpt)
		}
	}
	vals = map[string][]byte{}
	for _, b := range all {
		if b.ckpt < base[b.subtask] || b.kind == kindDelta && b.ckpt == base[b.subtask] {
			continue
		}
		err := logRecords(b.value, func(put bool, k, v []byte) error {
			if put {
				vals[string(k)] = v
			} else {
				delete(vals, string(k))
			}
			return nil
		})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("state block %x: %w", b.key, err)
		}
	}
	keys = make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, vals, blocks, nil
}

// stateReader reads an operator's state at the restored checkpoint.
type stateReader struct {
	keys     []string
	vals     map[string][]byte
	subtask  int
	parallel int
}

func (r stateReader) Scan(fn func(k, v []byte) error) error {
	for _, k := range r.keys {
		if err := fn([]byte(k), r.vals[k]); err != nil {
			return err
		}
	}
	return nil
}

func (r stateReader) Owns(groupKey string) bool {
	return r.parallel <= 1 || int(value.HashKey(groupKey)%uint64(r.parallel)) == r.subtask
}
