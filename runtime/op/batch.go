package op

import (
	"unsafe"

	"github.com/streamsql/streamsql/planner/plan"
)

// Op is what a row means to the operator that receives it: a change of
// the stream (docs/sql.md, changelog streams). An append-only stream only
// inserts; an updating one also takes rows back. An update is carried as
// two adjacent rows of one batch: Before (the old row) then Upsert (the
// new one), so that a consumer keyed on the upsert key applies one upsert
// and skips the Before, and a consumer that retracts takes the old row
// back and adds the new one.
type Op uint8

const (
	// Insert: a row of an insert-only stream.
	Insert Op = iota
	// Upsert: set the result row for Meta.Key (an insert when the key had
	// none; otherwise the Before row just ahead of it is the old one).
	Upsert
	// Delete: remove the result row for Meta.Key. On a stream that feeds
	// an operator (not only a sink) the row is the one taken back; a sink
	// needs only the key, and may get a nil row.
	Delete
	// Before: the old row of an update, directly followed by the Upsert
	// of its new row. Keyed sinks skip it; operators that retract take it
	// back.
	Before
)

// Retracts reports whether the row is taken back (Delete, Before) rather
// than added (Insert, Upsert).
func (o Op) Retracts() bool { return o >= Delete }

// RowMeta travels with each row.
type RowMeta struct {
	// Offset is the source offset of the input row it derives from; with the
	// source it makes the deterministic row id of append-only results.
	Offset int64
	// WM is the source watermark before this row in log order: the
	// watermark lateness is judged against (docs/sql.md: late rows).
	WM int64
	// Key is the encoded group key (set by a hash exchange) or, on changes,
	// the encoded upsert key.
	Key string
	Op  Op
	// ID, when set, is the deterministic row id of an append-only result
	// row derived from several input rows (an interval join: the encoded
	// ids of its left and right rows, see intervalJoin); sinks use it
	// instead of Offset. Empty: the row id is Offset.
	ID string
}

// Batch is a group of rows moving between operators and tasks. Once
// emitted a batch belongs to the receiver.
type Batch struct {
	Rows []plan.Row
	Meta []RowMeta
}

// Len is the number of rows.
func (b *Batch) Len() int { return len(b.Rows) }

// Append adds one row.
func (b *Batch) Append(r plan.Row, m RowMeta) {
	b.Rows = append(b.Rows, r)
	b.Meta = append(b.Meta, m)
}

// Barrier separates epochs. Every barrier ends an emit interval (changes
// are emitted); a barrier with a CheckpointID is also a checkpoint.
type Barrier struct {
	Epoch        uint64
	CheckpointID uint64 // 0: not a checkpoint
	// Flush: sources read everything acknowledged before forwarding it
	// (POST /v1/checkpoints).
	Flush bool
}

// KeyBytes is the bytes of an encoded key (RowMeta.Key), without a copy,
// for callees that only read them: decoders, and a StateWriter (which
// copies what it keeps).
func KeyBytes(k string) []byte { return unsafe.Slice(unsafe.StringData(k), len(k)) }
