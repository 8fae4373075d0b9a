package runtime

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// reader is a replayable source position: a source task polls it for rows.
// Readers do I/O (the ingest log) but hold no goroutines; the source task
// owns time and passes it in.
type reader interface {
	// Poll appends up to max rows available at wall time now (ms) to b,
	// with Meta.Offset set, and returns how many.
	Poll(now int64, max int, b *Batch) (int, error)
	// Offset is the offset of the next row.
	Offset() int64
	// Available is the end of what is readable now (Flush reads up to it).
	Available(now int64) int64
	// Ready fires when more rows may have become readable; nil means the
	// task must poll on its ticker.
	Ready() <-chan struct{}
	// Done reports a bounded source that has nothing more to give.
	Done() bool
}

// wakingReader is a reader whose Ready fires whenever rows become readable
// (taken before a poll that found none, it fires for the next ones): its
// source needs no ticker unless time moves its watermark.
type wakingReader interface {
	reader
	wakes()
}

// logReader reads an HTTP-ingest table's durable log.
type logReader struct {
	log    *state.Log
	off    int64
	upsert bool // a PRIMARY KEY table: each row ends with its delete flag
	width  int  // the table's columns (0: not checked)
}

var _ reader = (*logReader)(nil)

func (r *logReader) Poll(_ int64, max int, b *Batch) (int, error) {
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
		m := RowMeta{Offset: off}
		if want := r.width + btoi(r.upsert); r.width > 0 && len(row) != want {
			return fmt.Errorf("log offset %d: a row of %d values, the table's have %d", off, len(row), want)
		}
		if r.upsert {
			if len(row) == 0 {
				return fmt.Errorf("log offset %d: upsert row without its operation", off)
			}
			m.Op = Upsert
			if row[len(row)-1].True() {
				m.Op = Delete
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
func (r *logReader) Done() bool             { return false }
func (r *logReader) wakes()                 {}

// nexmarkReader generates a Nexmark table: row idx is the idx-th event of
// its kind, a pure function of idx.
type nexmarkReader struct {
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

var _ reader = (*nexmarkReader)(nil)

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

func (r *nexmarkReader) Poll(now int64, max int, b *Batch) (int, error) {
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
	b.Rows, b.Meta = make([]plan.Row, 0, want), make([]RowMeta, 0, want)
	for n := range want {
		row := r.gen.Fill(r.kind, r.idx, r.cols, plan.Row(slab[n*w:(n+1)*w:(n+1)*w]))
		for _, v := range row {
			if v.K == plan.TypeTimestamp && !plan.TimeInRange(v.I) {
				r.pastRange = true
				return n, nil
			}
		}
		b.Append(row, RowMeta{Offset: int64(r.idx)})
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
