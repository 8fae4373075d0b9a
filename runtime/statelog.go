package runtime

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// Operator state is stored as a log of blocks per operator and subtask,
// not as one store entry per key: a checkpoint's Puts and Deletes are
// encoded into blocks of about op.BlockSize bytes, each one entry in the
// versioned store at the checkpoint id (large values go to the store's
// blob files, state/blobs.go), under
//
//	<opPrefix> L <subtask:4> <checkpoint:8> <kind:1> <block:4>
//
// kind 'b' is a base (a full snapshot), 'd' a delta (what changed since the
// previous checkpoint). The records in a block are op's encoding
// (op.LogWriter, op.LogRecords: op(1: put, 0: delete), then the key and
// (puts) the value, each uvarint-length-prefixed).
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
func (l *stateLog) writer() *op.LogWriter {
	w := newStateWriter(l.full())
	return &w
}

// newStateWriter returns a writer of state log records (op.LogWriter) of
// a base (all) or a delta, whose full blocks come from blockPool.
func newStateWriter(all bool) op.LogWriter { return op.NewLogWriter(all, reuseBlock) }

// blockPool recycles snapshot blocks once the store has written them. A
// checkpoint's blocks come to megabytes; allocated anew each time, they
// make the collector run, and trace the whole heap, more often.
var blockPool sync.Pool // of *[]byte

// reuseBlock returns an empty block buffer from the pool (room for
// op.BlockSize bytes and the record that crosses it), or nil.
func reuseBlock() []byte {
	if p, ok := blockPool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

// putBlocks gives blocks nothing refers to any more back for reuse.
func putBlocks(blocks [][]byte) {
	for _, b := range blocks {
		if cap(b) >= op.BlockSize {
			blockPool.Put(&b)
		}
	}
}

// blocks turns one checkpoint's records (from an op.LogWriter) into store
// writes: the blocks, and for a base the deletes of the chain it replaces.
func (l *stateLog) blocks(ckpt uint64, w *op.LogWriter) []state.KV {
	if w.Len() == 0 && !w.Full() {
		return nil
	}
	kind := kindDelta
	var kvs []state.KV
	if w.Full() {
		kind = kindBase
		for _, k := range l.written {
			kvs = append(kvs, state.KV{Key: k, Delete: true})
		}
		l.written, l.based, l.baseBytes, l.deltaBytes = nil, true, w.Len(), 0
	} else {
		l.deltaBytes += w.Len()
	}
	for n, b := range w.Close() {
		k := l.blockKey(ckpt, kind, n)
		l.written = append(l.written, k)
		kvs = append(kvs, state.KV{Key: k, Value: b})
	}
	return kvs
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
		err := op.LogRecords(b.value, func(put bool, k, v []byte) error {
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
