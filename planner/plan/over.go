package plan

import (
	"fmt"
	"strings"
)

// OverFn is the function of an OVER aggregation's call.
type OverFn uint8

const (
	OverCountStar OverFn = iota
	OverCount
	OverSum
	OverAvg
	OverMin
	OverMax
	OverFirstValue
	OverLastValue
)

func (f OverFn) String() string {
	return [...]string{"count(*)", "count", "sum", "avg", "min", "max", "first_value", "last_value"}[f]
}

// OverCall is one window call: Fn over input column Arg (-1 for
// COUNT(*)), of result type T.
type OverCall struct {
	Fn  OverFn
	Arg int
	T   Type
}

func (c OverCall) String() string {
	if c.Fn == OverCountStar {
		return "count(*)"
	}
	return fmt.Sprintf("%s(#%d)", c.Fn, c.Arg)
}

// FrameUnit is what a frame's offset counts: rows, or the ORDER BY
// column's values (milliseconds of a TIMESTAMP).
type FrameUnit uint8

const (
	FrameRows FrameUnit = iota
	FrameRange
)

// OverFrame is a frame that ends at the current row: ROWS BETWEEN N
// PRECEDING AND CURRENT ROW (the row and the N before it), RANGE BETWEEN
// INTERVAL N PRECEDING AND CURRENT ROW (the rows whose order value is
// within N ms before the current row's, its peers included), or
// UNBOUNDED PRECEDING (every row up to the current one; for RANGE, its
// peers included).
type OverFrame struct {
	Unit      FrameUnit
	Unbounded bool
	N         int64 // rows, or ms
}

func (f OverFrame) String() string {
	unit := [...]string{"ROWS", "RANGE"}[f.Unit]
	switch {
	case f.Unbounded:
		return unit + " UNBOUNDED PRECEDING"
	case f.Unit == FrameRange:
		return fmt.Sprintf("RANGE %s PRECEDING", ms(f.N))
	}
	return fmt.Sprintf("ROWS %d PRECEDING", f.N)
}

// Over computes window calls over the rows of each partition in the
// order of Order, every call over the same frame. Its input is hashed on
// Partition (empty: one task). Output rows are computed by Output over
// the row [input..., call results...].
//
// Over an append-only input (not Updating), Order is an event-time
// column: a row is emitted once the watermark passes it (its time plus
// AllowedLateness), in order of (time, row id), and the output is
// append-only; rows behind the watermark are late (dropped, counted).
// Over an updating input, the output is updating, keyed on the input's
// row identity (RowMeta.ID): a change re-emits the rows whose frames it
// changes, at the barrier.
type Over struct {
	Partition       []int
	Order           int
	Frame           OverFrame
	Calls           []OverCall
	Updating        bool
	AllowedLateness int64
	In              Schema
	Output          []Expr
	Out             Schema
}

func (*Over) OpName() string { return "Over" }

func (o *Over) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Over partition=%v order=#%d frame=%s calls=[", o.Partition, o.Order, o.Frame)
	for i, c := range o.Calls {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.String())
	}
	fmt.Fprintf(&b, "] output=[%s]", joinExprs(o.Output))
	if o.Updating {
		b.WriteString(" updating")
	} else {
		fmt.Fprintf(&b, " allowed_lateness=%s", ms(o.AllowedLateness))
	}
	return b.String()
}
