package runtime

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
	// Watermark is called when the task's input watermark advances.
	Watermark(wm int64, out Emitter) error
	// Barrier is called at every barrier, before the task forwards it:
	// changes accumulated in the epoch are emitted here.
	Barrier(b Barrier, out Emitter) error
	// Snapshot writes what changed since the last checkpoint; Restore
	// reads it back (filled in by the checkpoint-restore work; recovery
	// currently replays the source logs).
	Snapshot(w StateWriter) error
	Restore(r StateReader) error
}

// StateWriter takes an operator's checkpoint writes.
type StateWriter interface {
	Put(key, value []byte)
	Delete(key []byte)
}

// StateReader reads an operator's state as of the restored checkpoint.
type StateReader interface {
	Scan(prefix []byte, fn func(k, v []byte) error) error
}

// Counters are an operator's counts, published by its task.
type Counters struct {
	LateRows int64
	// Late holds the most recent late rows (at most MaxLateSamples).
	Late []LateRow
}

// LateRow identifies a row dropped as late: its source offset and event time.
type LateRow struct {
	Offset    int64
	EventTime int64
}

// late counts one late row.
func (c *Counters) late(m *RowMeta, ts int64) {
	c.LateRows++
	if len(c.Late) == MaxLateSamples {
		c.Late = append(c.Late[:0], c.Late[1:]...)
	}
	c.Late = append(c.Late, LateRow{Offset: m.Offset, EventTime: ts})
}

// noState is embedded by operators whose checkpoint is not written yet.
type noState struct{}

func (noState) Snapshot(StateWriter) error { return nil }
func (noState) Restore(StateReader) error  { return nil }
