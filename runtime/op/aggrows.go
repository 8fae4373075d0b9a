package op

import (
	"errors"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// AggregateRows evaluates spec, a running aggregation (not windowed,
// taking nothing back), over rows, its input rows (keys..., arguments...):
// the rows it would emit at the next barrier, one per group passing
// HAVING, in the order of each group's first row. It is the same operator
// a view's aggregation runs (a pull query over a view's results
// aggregates them with it), driven over a slice: the rows are one batch,
// then one barrier. Without keys there is one group even over no rows
// (COUNT(*) 0, SUM NULL), as SQL's aggregate without GROUP BY has.
func AggregateRows(spec *plan.Aggregate, rows []plan.Row) ([]plan.Row, error) {
	if spec.Windowed || spec.Retract || spec.EmitMode != plan.EmitChanges {
		return nil, errors.New("AggregateRows takes a running aggregation in changes mode that takes nothing back")
	}
	a, err := newHashAgg(spec, &Env{}, &Counters{})
	if err != nil {
		return nil, err
	}
	in := &Batch{Rows: rows, Meta: make([]RowMeta, len(rows))}
	var kb []byte
	for i, r := range rows {
		// The group key as the hash exchange before a view's aggregation
		// encodes it: the key columns' values.
		kb = value.EncodeKey(kb[:0], r, spec.Keys)
		in.Meta[i].Key = string(kb)
	}
	var out collected
	if err := a.Process(in, &out); err != nil {
		return nil, err
	}
	if len(spec.Keys) == 0 && a.live == 0 {
		a.markDirty(a.groupIn(a.keyOf(""), window.Window{}))
	}
	if err := a.Barrier(Barrier{}, &out); err != nil {
		return nil, err
	}
	return out.rows, nil
}

// collected keeps the rows emitted to it (AggregateRows: upserts only).
type collected struct{ rows []plan.Row }

func (c *collected) Emit(b *Batch) error {
	c.rows = append(c.rows, b.Rows...)
	return nil
}
