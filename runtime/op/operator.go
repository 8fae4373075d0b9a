package op

// Emitter receives what an operator produces: the next operator of the
// chain, or the task's output (an exchange or a sink).
type Emitter interface {
	Emit(b *Batch) error
}

// Operator is a deterministic stream operator. It runs on its task's
// goroutine only: no goroutines, no clock reads, no I/O. Time comes in as
// watermarks and as Env.ProcTime; output goes to out.
type Operator interface {
	// Process consumes one batch.
	Process(b *Batch, out Emitter) error
	// Watermark is called when the operator's input watermark advances. It
	// returns the watermark to forward: an operator that may still emit rows
	// older than wm (a LEFT join's unmatched rows) holds it back.
	Watermark(wm int64, out Emitter) (int64, error)
	// Barrier is called at every barrier, before the task forwards it:
	// changes accumulated in the epoch are emitted here.
	Barrier(b Barrier, out Emitter) error
	// Snapshot writes what changed since the last checkpoint (it runs on
	// the task's goroutine, after Barrier); Restore reads the state back as
	// of the restored checkpoint, before the first row.
	Snapshot(w StateWriter) error
	Restore(r StateReader) error
}

// Stateful is an operator that keeps state: it reports how many entries
// (groups, held rows) it holds, and an estimate of the heap bytes they
// take (statemem.go), for the API and metrics.
type Stateful interface {
	StateRows() int
	StateBytes() int64
}

// TwoInput is an operator with two inputs (a join): the first operator of
// a task whose vertex has two input edges. Side 0 is the left input (edge
// 0), side 1 the right.
type TwoInput interface {
	Operator
	ProcessSide(side int, b *Batch, out Emitter) error
	// WatermarkSide is called when one side's watermark advances; it
	// returns the watermark to forward downstream.
	WatermarkSide(side int, wm int64, out Emitter) (int64, error)
}

// Idler is a two-input operator that reacts to a side going idle (a
// stream-to-table join stops waiting for an idle table side).
type Idler interface {
	SideIdle(side int, idle bool, out Emitter) (int64, error)
}

// StateWriter takes an operator's checkpoint writes. Keys are the
// operator's own; the task logs them in its place (runtime/statelog.go,
// as LogWriter records: statelog.go). Put and Delete copy what they keep:
// the caller may reuse its buffers.
type StateWriter interface {
	Put(key, value []byte)
	Delete(key []byte)
	// Full reports that this snapshot must write all the operator's state,
	// not only what changed since the last one (the task starts a new base
	// of its state log); nothing needs deleting then.
	Full() bool
}

// StateReader reads an operator's state as of the restored checkpoint.
// State is written per group key, not per task, so a query may restart at
// another parallelism: a task keeps the groups it Owns.
type StateReader interface {
	Scan(fn func(k, v []byte) error) error
	// Owns reports whether this task owns the encoded group key (the hash
	// exchange routes that key to it).
	Owns(groupKey string) bool
}

// Counters are an operator's counts, published by its task.
type Counters struct {
	RowsOut  int64 // sinks
	LateRows int64
	// Late holds the most recent late rows (at most MaxLateSamples).
	Late []LateRow
}

// MaxLateSamples is how many recent late rows are kept for inspection: by
// an operator's Counters, and by its task and job (runtime).
const MaxLateSamples = 20

// LateRow identifies a row dropped as late: its source offset and event time.
type LateRow struct {
	Offset    int64 `json:"offset"`
	EventTime int64 `json:"event_time"`
}

// late counts one late row.
func (c *Counters) late(m *RowMeta, ts int64) {
	c.LateRows++
	if len(c.Late) == MaxLateSamples {
		c.Late = append(c.Late[:0], c.Late[1:]...)
	}
	c.Late = append(c.Late, LateRow{Offset: m.Offset, EventTime: ts})
}

// noState is embedded by stateless operators.
type noState struct{}

func (noState) Snapshot(StateWriter) error { return nil }
func (noState) Restore(StateReader) error  { return nil }
