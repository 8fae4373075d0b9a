package op

import (
	"encoding/binary"
	"fmt"
)

// The state log's record encoding. What an operator's Snapshot writes (and
// what a sink logs of its results or journals) is a sequence of records:
// op(1: put, 0: delete), then the key and (puts) the value, each
// uvarint-length-prefixed, in blocks of about BlockSize bytes. Where the
// blocks go (their keys, bases and deltas, the store) is the task's
// (runtime/statelog.go).

const (
	// BlockSize is the size at which a state log block is full: the next
	// record starts a new one.
	BlockSize = 256 << 10
	// blockMin is the size a writer's first block starts at: it doubles up
	// to a full block, so the snapshot of a handful of groups (or the
	// results changes a sink logs between checkpoints) holds a few KiB,
	// not a full block, for each of thousands of queries.
	blockMin = 4 << 10
	// fullBlock is the capacity of a full block buffer: room for BlockSize
	// bytes and the record that crosses it.
	fullBlock = BlockSize + BlockSize/4
)

// LogWriter collects a snapshot as state log records, in blocks of about
// BlockSize bytes (a record is never split; one larger than a block grows
// its block). It is the StateWriter a task gives its operators.
type LogWriter struct {
	all    bool // a base: the operator writes all its state
	blocks [][]byte
	n      int // bytes in all
	// reuse returns an empty recycled full block, or nil (then the writer
	// makes one); nil: never recycled.
	reuse func() []byte
}

var _ StateWriter = (*LogWriter)(nil)

// NewLogWriter returns the writer of a base (all: the snapshot writes all
// the state) or of a delta. reuse, if not nil, returns a recycled empty
// block of full capacity, or nil when it has none (the task's pool).
func NewLogWriter(all bool, reuse func() []byte) LogWriter {
	return LogWriter{all: all, reuse: reuse}
}

func (w *LogWriter) Full() bool { return w.all }

// Len is the bytes of the records written.
func (w *LogWriter) Len() int { return w.n }

// newBlock returns an empty buffer of a full block's capacity.
func (w *LogWriter) newBlock() []byte {
	if w.reuse != nil {
		if b := w.reuse(); b != nil {
			return b[:0]
		}
	}
	return make([]byte, 0, fullBlock)
}

// cur is the block the next record, of n bytes, goes to. The first block
// starts at blockMin and doubles until it is a full one (from the pool);
// the blocks after it start full.
func (w *LogWriter) cur(n int) *[]byte {
	last := len(w.blocks) - 1
	switch {
	case last < 0:
		w.blocks = append(w.blocks, make([]byte, 0, max(blockMin, n)))
		last = 0
	case len(w.blocks[last]) >= BlockSize:
		w.blocks = append(w.blocks, w.newBlock())
		last++
	}
	b := &w.blocks[last]
	if need := len(*b) + n; need > cap(*b) && cap(*b) < fullBlock {
		var c []byte
		if size := max(2*cap(*b), need); size >= fullBlock {
			c = w.newBlock()
		} else {
			c = make([]byte, 0, size)
		}
		*b = append(c, *b...)
	}
	return b
}

func (w *LogWriter) Put(k, v []byte) {
	b := w.cur(1 + UvarintLen(len(k)) + len(k) + UvarintLen(len(v)) + len(v))
	before := len(*b)
	*b = append(*b, 1)
	*b = binary.AppendUvarint(*b, uint64(len(k)))
	*b = append(*b, k...)
	*b = binary.AppendUvarint(*b, uint64(len(v)))
	*b = append(*b, v...)
	w.n += len(*b) - before
}

func (w *LogWriter) Delete(k []byte) {
	b := w.cur(1 + UvarintLen(len(k)) + len(k))
	before := len(*b)
	*b = append(*b, 0)
	*b = binary.AppendUvarint(*b, uint64(len(k)))
	*b = append(*b, k...)
	w.n += len(*b) - before
}

// Blocks returns the blocks written so far (to give them back for reuse
// once nothing refers to them).
func (w *LogWriter) Blocks() [][]byte { return w.blocks }

// Close returns the writer's blocks, closed (a base of nothing is one
// empty block: it still marks where the chain starts).
func (w *LogWriter) Close() [][]byte {
	if len(w.blocks) == 0 {
		w.blocks = append(w.blocks, []byte{})
	}
	return w.blocks
}

// LogRecords decodes one block's records.
func LogRecords(b []byte, fn func(put bool, k, v []byte) error) error {
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

// UvarintLen is the length of n as a uvarint: the size of a length prefix
// of the record formats (the state log's, runtime's results blocks).
func UvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}
