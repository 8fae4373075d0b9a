package runtime

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// Reader is a replayable source position: a source task polls it for rows.
// Readers do I/O (the ingest log, a Kafka consumer) but hold no goroutines;
// the source task owns time and passes it in. Every reader has every
// method: what it cannot do (say, partitions) it answers as plainReader
// does, and caps says which of the optional behaviours it has. Readers are
// this package's (caps is unexported): NewLogReader, NewNexmarkReader and
// OpenKafkaReader make them, and Deps.Reader, filled by the server
// (package queries), picks one for a source's ENGINE.
type Reader interface {
	// Poll appends up to max rows available at wall time now (ms) to b,
	// with Meta.Offset set, and returns how many.
	Poll(now int64, max int, b *op.Batch) (int, error)
	// Offset is the offset of the next row.
	Offset() int64
	// Available is the end of what is readable now (Flush reads up to it).
	Available(now int64) int64
	// Ready fires when more rows may have become readable; nil means the
	// task must poll on its ticker.
	Ready() <-chan struct{}
	// Done reports a bounded source that has nothing more to give.
	Done() bool
	// caps says what else the reader does (fixed for a reader).
	caps() readerCaps
	// Watermark (caps.stamps) is the watermark of the rows read.
	Watermark(now int64) int64
	// Positions (caps.partitioned) is the position of each partition.
	Positions() map[int32]kafkaPartPos
	// FlushTarget (caps.async): a flush reads until the target it sets at
	// now is reached (or a deadline).
	FlushTarget(now int64) func() bool
	// Problem (caps.reports) says why the reader cannot read now (nil: it
	// can); the query shows retrying.
	Problem() error
	// Lag (caps.reports) is how far behind the end of its input the
	// reader is, per partition (nil: not known).
	Lag() map[int32]int64
	// TakeBad (caps.reports) returns (and forgets) the records it could
	// not decode since the last call: how many, and the last few.
	TakeBad() (int64, []BadRecord)
	// Sync (caps.reports) makes durable what the reader sent aside (the
	// Kafka reader's dead letters) before a checkpoint records its
	// position; bounded in time, best effort.
	Sync()
	// Holding (caps.reports) reports input read but not handed out yet
	// (the Kafka reader's records waiting for a schema registry): rows
	// still to come, so the source is not idle.
	Holding() bool
	// Close releases what the reader holds (the source task's end).
	Close()
}

// readerCaps are a reader's optional behaviours.
type readerCaps struct {
	// wakes: Ready fires whenever rows become readable (taken before a
	// poll that found none, it fires for the next ones), so its source
	// needs no ticker unless time moves its watermark.
	wakes bool
	// stamps: the reader stamps each row's watermark itself (per-partition
	// watermarks); the source task uses its Watermark, not its tracker.
	stamps bool
	// partitioned: a position per partition (Positions).
	partitioned bool
	// async: rows arrive asynchronously; a flush waits for FlushTarget.
	async bool
	// reports: Problem, Lag and TakeBad say something.
	reports bool
}

// plainReader is the answers of a reader without the optional behaviours,
// for embedding.
type plainReader struct{}

func (plainReader) caps() readerCaps                  { return readerCaps{} }
func (plainReader) Watermark(int64) int64             { return 0 }
func (plainReader) Positions() map[int32]kafkaPartPos { return nil }
func (plainReader) FlushTarget(int64) func() bool     { return func() bool { return true } }
func (plainReader) Problem() error                    { return nil }
func (plainReader) Lag() map[int32]int64              { return nil }
func (plainReader) TakeBad() (int64, []BadRecord)     { return 0, nil }
func (plainReader) Holding() bool                     { return false }
func (plainReader) Sync()                             {}
func (plainReader) Close()                            {}

// SourcePosition is where a source's reader starts: its checkpointed
// position, or the start offset of a query without a checkpoint.
type SourcePosition struct {
	// Offset is the offset of the next row.
	Offset int64
	// partitions is a Kafka source's position per partition (nil: none
	// checkpointed).
	partitions map[int32]kafkaPartPos
}

// logReader reads an HTTP-ingest table's durable log.
type logReader struct {
	plainReader
	log    *state.Log
	off    int64
	upsert bool // a PRIMARY KEY table: each row ends with its delete flag
	width  int  // the table's columns (0: not checked)
	// bounded: the log does not grow; Done at its end.
	bounded bool
}

var _ Reader = (*logReader)(nil)

// NewLogReader reads src, an HTTP-ingest table, from its log l at at.
func NewLogReader(l *state.Log, src *plan.Source, at SourcePosition) Reader {
	return &logReader{log: l, off: at.Offset, upsert: src.Upsert, width: len(src.Schema)}
}

// NewBoundedLogReader is NewLogReader for a log that no longer grows (a
// bounded side input's, ENGINE=file): the source ends at its end.
func NewBoundedLogReader(l *state.Log, src *plan.Source, at SourcePosition) Reader {
	return &logReader{log: l, off: at.Offset, upsert: src.Upsert, width: len(src.Schema), bounded: true}
}

func (r *logReader) Poll(_ int64, max int, b *op.Batch) (int, error) {
	var slab []plan.Value
	if k := min(int64(max), r.log.End()-r.off); k > 0 {
		// Sized once, and the rows carved from one allocation: every
		// query over the table reads these rows.
		b.Rows, b.Meta = slices.Grow(b.Rows, int(k)), slices.Grow(b.Meta, int(k))
		slab = make([]plan.Value, int(k)*(r.width+btoi(r.upsert)))
	}
	n := 0
	next, err := r.log.Read(r.off, max, func(off int64, raw []byte) error {
		row, err := value.DecodeRowIn(raw, &slab)
		if err != nil {
			return fmt.Errorf("log offset %d: %w", off, err)
		}
		m := op.RowMeta{Offset: off}
		if want := r.width + btoi(r.upsert); r.width > 0 && len(row) != want {
			return fmt.Errorf("log offset %d: a row of %d values, the table's have %d", off, len(row), want)
		}
		if r.upsert {
			if len(row) == 0 {
				return fmt.Errorf("log offset %d: upsert row without its operation", off)
			}
			m.Op = op.Upsert
			if row[len(row)-1].True() {
				m.Op = op.Delete
			}
			row = row[:len(row)-1]
		}
		b.Append(row, m)
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	r.off = next
	return n, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (r *logReader) Offset() int64          { return r.off }
func (r *logReader) Available(int64) int64  { return r.log.End() }
func (r *logReader) Ready() <-chan struct{} { return r.log.Changed() }
func (r *logReader) Done() bool             { return r.bounded && r.off >= r.log.End() }
func (r *logReader) caps() readerCaps       { return readerCaps{wakes: true} }

// nexmarkReader generates a Nexmark table: row idx is the idx-th event of
// its kind, a pure function of idx.
type nexmarkReader struct {
	plainReader
	gen   *nexmark.Generator
	kind  nexmark.Kind
	cols  []int
	idx   uint64
	limit uint64 // 0: unbounded
	rate  int64  // events per second of wall time; 0: as fast as possible
	start int64  // wall ms when the generator started (throttled)
	// pastRange: event idx has a time past the TIMESTAMP range (a base_time
	// near its end); the stream ends before it.
	pastRange bool
}

var _ Reader = (*nexmarkReader)(nil)

// NexmarkColumns maps a table's columns to the standard columns of kind,
// or says which column is not one of them.
func NexmarkColumns(kind nexmark.Kind, schema plan.Schema) ([]int, error) {
	std := nexmark.Columns(kind)
	cols := make([]int, len(schema))
	for i, c := range schema {
		j := std.Index(c.Name)
		if j < 0 {
			names := make([]string, len(std))
			for k, s := range std {
				names[k] = s.Name
			}
			return nil, fmt.Errorf("column %s is not a Nexmark %s field (%s)", c.Name, kind, strings.Join(names, ", "))
		}
		if std[j].Type != c.Type {
			return nil, fmt.Errorf("column %s of a Nexmark %s table must be %s, not %s", c.Name, kind, std[j].Type, c.Type)
		}
		cols[i] = j
	}
	return cols, nil
}

// NewNexmarkReader generates src, a Nexmark table, from at on, its
// schedule (events_per_second) from now; used is as for newNexmarkReader.
func NewNexmarkReader(src *plan.Source, at SourcePosition, used []bool) (Reader, error) {
	r, err := newNexmarkReader(src, at.Offset, time.Now().UnixMilli(), used)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// newNexmarkReader generates src from row from on. used, when not nil, is
// the columns the query reads: the others are left NULL, not generated.
func newNexmarkReader(src *plan.Source, from int64, now int64, used []bool) (*nexmarkReader, error) {
	kind, err := nexmark.ParseKind(src.Attrs["kind"])
	if err != nil {
		return nil, err
	}
	cols, err := NexmarkColumns(kind, src.Schema)
	if err != nil {
		return nil, err
	}
	for i := range cols {
		if used != nil && !used[i] {
			cols[i] = nexmark.Skip
		}
	}
	num := func(k string) (int64, error) {
		s, ok := src.Attrs[k]
		if !ok {
			return 0, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("nexmark %s must be a non-negative integer, not %q", k, s)
		}
		return v, nil
	}
	cfg := nexmark.Config{}
	r := &nexmarkReader{kind: kind, cols: cols, idx: uint64(from), start: now}
	if r.rate, err = num("events_per_second"); err != nil {
		return nil, err
	}
	cfg.EventsPerSecond = r.rate
	events, err := num("events")
	if err != nil {
		return nil, err
	}
	if events > 0 {
		// "events" counts all generated events; this table sees its kind's share.
		r.limit = nexmark.Count(kind, uint64(events))
		if r.limit == 0 {
			r.limit = 1
		}
	}
	if cfg.BaseTime, err = num("base_time"); err != nil {
		return nil, err
	}
	seed, err := num("seed")
	if err != nil {
		return nil, err
	}
	cfg.Seed = uint64(seed)
	r.gen = nexmark.New(cfg)
	if r.rate > 0 && from > 0 {
		// Resume on schedule: the restored position is due now, not once
		// the time it took to get there has passed again.
		n := r.gen.EventNumber(kind, uint64(from))
		r.start = now - int64(n*1000/uint64(r.rate))
	}
	return r, nil
}

func (r *nexmarkReader) available(now int64) uint64 {
	end := uint64(1<<63 - 1)
	if r.rate > 0 {
		end = nexmark.Count(r.kind, nexmark.Due(r.start, now, r.rate))
	}
	if r.limit > 0 && end > r.limit {
		end = r.limit
	}
	return end
}

func (r *nexmarkReader) Poll(now int64, max int, b *op.Batch) (int, error) {
	if r.pastRange {
		return 0, nil
	}
	end := r.available(now)
	want := int(min(uint64(max), end-min(r.idx, end)))
	if want == 0 {
		return 0, nil
	}
	// One allocation for the batch's rows, one for its values.
	w := len(r.cols)
	slab := make([]plan.Value, want*w)
	b.Rows, b.Meta = make([]plan.Row, 0, want), make([]op.RowMeta, 0, want)
	for n := range want {
		row := r.gen.Fill(r.kind, r.idx, r.cols, plan.Row(slab[n*w:(n+1)*w:(n+1)*w]))
		for _, v := range row {
			if v.K == plan.TypeTimestamp && !plan.TimeInRange(v.I) {
				r.pastRange = true
				return n, nil
			}
		}
		b.Append(row, op.RowMeta{Offset: int64(r.idx)})
		r.idx++
	}
	return want, nil
}

func (r *nexmarkReader) Offset() int64 { return int64(r.idx) }

// Available is what is due now; an unthrottled, unbounded generator has
// nothing "acknowledged" beyond what it has read, so Flush reads nothing more.
func (r *nexmarkReader) Available(now int64) int64 {
	if r.rate == 0 && r.limit == 0 {
		return int64(r.idx)
	}
	return int64(r.available(now))
}
func (r *nexmarkReader) Ready() <-chan struct{} { return nil }
func (r *nexmarkReader) Done() bool             { return r.pastRange || r.limit > 0 && r.idx >= r.limit }
