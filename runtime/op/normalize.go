package op

import (
	"fmt"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// normalize (plan.Normalize) keeps the latest row of each key of a
// PRIMARY KEY table, so that its changes carry the rows they take back:
// an upsert of a key with a row is its old row (Before) then the new one
// (Upsert), of a key without one an Upsert alone; a delete is the Delete
// of the row it removes. A delete of a key without a row, and an upsert
// that changes nothing, emit nothing.
//
// Meta.Key is the encoded PRIMARY KEY (set by the hash exchange on the
// key columns); it stays the key of what is emitted.
//
// State: the rows by key, each encoded (value.AppendRow: no pointers for
// the collector to trace, no reference to the source's batch). Checkpoint
// records are keyed by the encoded key, valued by the encoded row; a delta
// writes the keys changed since the last snapshot.
type normalize struct {
	spec    *plan.Normalize
	rows    map[string]string
	changed map[string]struct{}
	peak    int
	bytes   int64
	buf     []byte
}

var (
	_ Operator = (*normalize)(nil)
	_ Stateful = (*normalize)(nil)
)

// normRowCost estimates a kept row's heap bytes beyond its key's and row's
// allocations: its entries in rows and changed, with the maps' slack
// (checked against runtime.MemStats by TestStateBytes).
const normRowCost = 80

// rowCost is what a kept row of key and encoding lengths k and v takes.
func rowCost(k, v int) int64 { return int64(normRowCost + allocSize(k) + allocSize(v)) }

func newNormalize(spec *plan.Normalize) *normalize {
	return &normalize{spec: spec, rows: map[string]string{}, changed: map[string]struct{}{}}
}

func (n *normalize) Process(b *Batch, out Emitter) error {
	res := &Batch{}
	for i, r := range b.Rows {
		m := b.Meta[i]
		m.ID = m.Key // a row's identity downstream (a join's row ids) is its key
		old, had := n.rows[m.Key]
		if m.Op.Retracts() {
			if !had {
				continue // a delete of a key without a row
			}
			row, err := n.decode(old, m.Key)
			if err != nil {
				return err
			}
			delete(n.rows, m.Key)
			n.bytes -= rowCost(len(m.Key), len(old))
			n.changed[m.Key] = struct{}{}
			m.Op = Delete
			res.Append(row, m)
			continue
		}
		n.buf = value.AppendRow(n.buf[:0], r)
		if had && old == string(n.buf) {
			continue // the row it has
		}
		if had {
			row, err := n.decode(old, m.Key)
			if err != nil {
				return err
			}
			bm := m
			bm.Op = Before
			res.Append(row, bm)
			n.bytes += int64(allocSize(len(n.buf)) - allocSize(len(old)))
		} else {
			n.bytes += rowCost(len(m.Key), len(n.buf))
		}
		n.rows[m.Key] = string(n.buf)
		n.peak = max(n.peak, len(n.rows))
		n.changed[m.Key] = struct{}{}
		m.Op = Upsert
		res.Append(r, m)
	}
	if shrink(len(n.rows), &n.peak) {
		n.rows = rebuilt(n.rows)
	}
	return emitIfAny(res, out)
}

func (n *normalize) decode(enc, key string) (plan.Row, error) {
	row, err := value.DecodeRow(KeyBytes(enc))
	if err == nil && len(row) != len(n.spec.Out) {
		err = fmt.Errorf("%d values, the table has %d columns", len(row), len(n.spec.Out))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the row of key %x: %w", n.spec.Table, key, err)
	}
	return row, nil
}

func (n *normalize) Watermark(wm int64, _ Emitter) (int64, error) { return wm, nil }
func (n *normalize) Barrier(Barrier, Emitter) error               { return nil }

// StateRows is the number of keys with a row.
func (n *normalize) StateRows() int { return len(n.rows) }

// StateBytes estimates the heap the kept rows take.
func (n *normalize) StateBytes() int64 { return n.bytes }

// Snapshot writes the rows of the keys changed since the last snapshot
// (deletes for the keys gone), or every row (a full snapshot).
func (n *normalize) Snapshot(w StateWriter) error {
	if w.Full() {
		for k, v := range n.rows {
			w.Put(KeyBytes(k), KeyBytes(v))
		}
	} else {
		for k := range n.changed {
			if v, ok := n.rows[k]; ok {
				w.Put(KeyBytes(k), KeyBytes(v))
			} else {
				w.Delete(KeyBytes(k))
			}
		}
	}
	clear(n.changed)
	return nil
}

// Restore loads the rows of the keys this task owns.
func (n *normalize) Restore(r StateReader) error {
	return r.Scan(func(k, v []byte) error {
		if !r.Owns(string(k)) {
			return nil
		}
		if _, err := n.decode(string(v), string(k)); err != nil {
			return fmt.Errorf("normalize state: %w", err)
		}
		n.rows[string(k)] = string(v)
		n.bytes += rowCost(len(k), len(v))
		return nil
	})
}
