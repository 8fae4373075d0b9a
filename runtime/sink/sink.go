package sink

import (
	"context"
	"errors"
	"fmt"

	"github.com/streamsql/streamsql/planner/plan"
)

// Change is one result change: an upsert of Row (a value for every column
// of the sink table, in the table's order) or, when Row is nil, a delete
// of the row whose primary key is Key (values in Spec.PrimaryKey order).
// Key is set for upserts too. Within one call, keys are distinct.
type Change struct {
	Key plan.Row
	Row plan.Row
}

// Spec is what a publisher knows of its sink.
type Spec struct {
	// Table is the streamsql sink table's name (for messages).
	Table string
	// Engine is its ENGINE (postgres).
	Engine string
	// Connection is the table's CONNECTION string.
	Connection string
	// Attrs are its ENGINE_ATTRIBUTE values (validated by the planner).
	Attrs map[string]string
	// Columns are the sink table's columns; PrimaryKey their indexes.
	Columns    plan.Schema
	PrimaryKey []int
	// SinkID names this sink's progress records. It changes when the
	// query is dropped and created again, so a new query never skips an
	// epoch because an old one committed the same number.
	SinkID string
	// ExactlyOnce: epochs are committed with progress records
	// (CommitEpoch); otherwise changes are applied as they come (Apply).
	ExactlyOnce bool
	// Partition and PartitionNames: a file sink's partition_by
	// (plan.ExternalSink).
	Partition      []plan.Expr
	PartitionNames []string
}

// Publisher writes a sink's changes to an external system.
type Publisher interface {
	// Open connects and prepares the target: checks (or creates) the
	// table and the progress records' home. It may be called again after
	// any error, to reconnect.
	Open(ctx context.Context) error
	// Committed returns the last epoch committed for Spec.SinkID (0: none).
	Committed(ctx context.Context) (uint64, error)
	// CommitEpoch writes changes and the progress record (SinkID, epoch)
	// atomically. If the outcome of the commit is unknown (the connection
	// broke while committing), it returns an error and the caller reads
	// Committed before going on. Committing an epoch already recorded
	// fails with ErrCommitted and changes nothing.
	CommitEpoch(ctx context.Context, epoch uint64, changes []Change) error
	// Apply writes changes without progress (at-least-once delivery).
	Apply(ctx context.Context, changes []Change) error
	// Close releases the connection.
	Close()
}

// ErrCommitted: the epoch already has a progress record.
var ErrCommitted = errors.New("epoch already committed")

// PermanentError is an error that retrying cannot fix (the target table
// does not match the sink, a bad connection string): the query fails
// instead of retrying.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as one retrying cannot fix.
func Permanent(format string, args ...any) error {
	return &PermanentError{Err: fmt.Errorf(format, args...)}
}

// IsPermanent reports whether err (or an error it wraps) is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// CheckKey checks that the spec has columns and a primary key of valid,
// distinct column indexes; why says what the sink needs the key for.
func (s Spec) CheckKey(why string) error {
	if len(s.Columns) == 0 {
		return Permanent("sink table %s has no columns", s.Table)
	}
	if len(s.PrimaryKey) == 0 {
		return Permanent("sink table %s has no PRIMARY KEY: %s", s.Table, why)
	}
	seen := map[int]bool{}
	for _, i := range s.PrimaryKey {
		if i < 0 || i >= len(s.Columns) || seen[i] {
			return Permanent("sink table %s: bad primary key column index %d", s.Table, i)
		}
		seen[i] = true
	}
	return nil
}
