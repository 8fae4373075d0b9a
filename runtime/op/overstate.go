package op

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// The OVER aggregation's checkpoint. Over an append-only input, one
// record per partition, keyed 'p' then the encoded partition key (what the
// exchange routes by), valued 'a', [the calls' accumulators (UNBOUNDED
// frames)], the frame's rows, the pending rows. Over an updating input
// (whose partitions hold every current row), one record per row, keyed 'r',
// the partition key's length (uvarint), the partition key and the row's id,
// valued by its encoded row and the row last emitted for it (a byte: none
// 0, one 1, then the row): a delta writes the rows added or re-emitted and
// deletes those taken back.
//
// A row is its id, offset and encoded row (value.AppendRow, after its
// length); a list is its length then its items (uvarints). An accumulator is n (varint), the
// 128-bit sum (uvarint low, varint high), the DOUBLE sum's bits (8 bytes),
// the MIN/MAX or FIRST_VALUE value (value.AppendValue) and whether
// FIRST_VALUE has one (a byte). A sliding frame's accumulators are rebuilt
// from its rows on restore. A delta writes the partitions changed since the
// last snapshot and deletes the records of those dropped.

var errOverState = errors.New("over state")

func (o *overOp) Snapshot(w StateWriter) error {
	if o.spec.Updating {
		return o.snapshotRows(w)
	}
	var pending map[*overPart][]*overRow
	if !o.spec.Updating && len(o.pending) > 0 {
		pending = map[*overPart][]*overRow{}
		for _, r := range o.pending {
			if w.Full() || r.part.isChanged {
				pending[r.part] = append(pending[r.part], r)
			}
		}
		for _, rs := range pending {
			slices.SortFunc(rs, compareRows)
		}
	}
	put := func(p *overPart) {
		o.buf = append(o.buf[:0], 'p')
		o.buf = append(o.buf, p.key...)
		k := len(o.buf)
		o.buf = o.appendPart(o.buf, p, pending[p])
		w.Put(o.buf[:k], o.buf[k:])
		p.persisted = true
	}
	if w.Full() {
		for _, p := range o.parts {
			put(p)
		}
	} else {
		for _, k := range o.removed {
			o.buf = append(append(o.buf[:0], 'p'), k...)
			w.Delete(o.buf)
		}
		for _, p := range o.changed {
			if o.parts[p.key] == p {
				put(p)
			}
		}
	}
	for _, p := range o.changed {
		p.isChanged = false
	}
	clear(o.changed)
	o.changed, o.removed = o.changed[:0], o.removed[:0]
	return nil
}

// rowKey is the record key of an updating input's row.
func (o *overOp) rowKey(part, id string) []byte {
	o.buf = append(o.buf[:0], 'r')
	o.buf = binary.AppendUvarint(o.buf, uint64(len(part)))
	o.buf = append(o.buf, part...)
	o.buf = append(o.buf, id...)
	return o.buf
}

func (o *overOp) snapshotRows(w StateWriter) error {
	put := func(p *overPart, r *overRow) {
		k := len(o.rowKey(p.key, r.id))
		o.buf = appendLenRow(o.buf, r.row, &o.scratch)
		if r.out == nil {
			o.buf = append(o.buf, 0)
		} else {
			o.buf = appendLenRow(append(o.buf, 1), r.out, &o.scratch)
		}
		w.Put(o.buf[:k], o.buf[k:])
		r.persisted = true
	}
	if w.Full() {
		for _, p := range o.parts {
			for _, r := range p.rows {
				put(p, r)
			}
		}
	} else {
		for _, k := range o.removedRows {
			w.Delete(KeyBytes(k))
		}
		for _, r := range o.changedRows {
			if !r.gone {
				put(r.part, r)
			}
		}
	}
	for _, r := range o.changedRows {
		r.isChanged = false
	}
	clear(o.changedRows)
	o.changedRows, o.removedRows = o.changedRows[:0], o.removedRows[:0]
	return nil
}

func (o *overOp) appendPart(b []byte, p *overPart, pending []*overRow) []byte {
	b = append(b, 'a')
	if o.spec.Frame.Unbounded {
		for i := range p.f.accs {
			a := &p.f.accs[i]
			b = binary.AppendVarint(b, a.n)
			b = binary.AppendUvarint(b, a.lo)
			b = binary.AppendVarint(b, a.hi)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.f))
			b = value.AppendValue(b, a.v)
			b = append(b, boolByte(a.has))
		}
	}
	frame := p.f.rows[p.f.head:]
	b = binary.AppendUvarint(b, uint64(len(frame)))
	for _, r := range frame {
		b = appendOverRow(b, r, &o.scratch)
	}
	b = binary.AppendUvarint(b, uint64(len(pending)))
	for _, r := range pending {
		b = appendOverRow(b, r, &o.scratch)
	}
	return b
}

func boolByte(x bool) byte {
	if x {
		return 1
	}
	return 0
}

func appendOverRow(b []byte, r *overRow, scratch *[]byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(r.id)))
	b = append(b, r.id...)
	b = binary.AppendVarint(b, r.off)
	return appendLenRow(b, r.row, scratch)
}

func appendLenRow(b []byte, r plan.Row, scratch *[]byte) []byte {
	*scratch = value.AppendRow((*scratch)[:0], r)
	b = binary.AppendUvarint(b, uint64(len(*scratch)))
	return append(b, *scratch...)
}

// overDecoder reads a partition record.
type overDecoder struct {
	b   []byte
	err error
}

func (d *overDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", errOverState, what)
	}
}

func (d *overDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *overDecoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *overDecoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *overDecoder) byte1(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// count reads a list's length, at most what the rest of the record can
// hold (each item takes a byte at least).
func (d *overDecoder) count(what string) int {
	n := d.uvarint(what)
	if n > uint64(len(d.b)) {
		d.fail(what)
		return 0
	}
	return int(n)
}

func (d *overDecoder) row(what string, width int) plan.Row {
	enc := d.bytes(what)
	if d.err != nil {
		return nil
	}
	r, err := value.DecodeRow(enc)
	if err != nil || len(r) != width {
		d.fail(what)
		return nil
	}
	return r
}

func (o *overOp) decodeRow(d *overDecoder, p *overPart) *overRow {
	id := d.bytes("row id")
	off := d.varint("row offset")
	row := d.row("row", len(o.spec.In))
	if d.err != nil {
		return nil
	}
	r := &overRow{id: string(id), off: off, row: row, part: p, ord: row[o.spec.Order]}
	if !o.spec.Updating && (r.ord.K != plan.TypeTimestamp || r.ord.IsNull()) {
		d.fail("row time")
		return nil
	}
	return r
}

func (o *overOp) Restore(r StateReader) error {
	err := r.Scan(func(k, v []byte) error {
		switch {
		case len(k) > 0 && k[0] == 'p' && !o.spec.Updating:
			key := string(k[1:])
			if !r.Owns(key) {
				return nil
			}
			if err := o.restorePart(key, v); err != nil {
				return fmt.Errorf("partition %x: %w", key, err)
			}
		case len(k) > 0 && k[0] == 'r' && o.spec.Updating:
			d := &overDecoder{b: k[1:]}
			part := d.bytes("partition key")
			if d.err != nil {
				return fmt.Errorf("row record %x: %w", k, d.err)
			}
			if !r.Owns(string(part)) {
				return nil
			}
			if err := o.restoreRow(string(part), string(d.b), v); err != nil {
				return fmt.Errorf("row record %x: %w", k, err)
			}
		default:
			return fmt.Errorf("%w: unknown record %x", errOverState, k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if o.spec.Updating {
		for _, p := range o.parts {
			slices.SortFunc(p.rows, compareRows)
			for i := 1; i < len(p.rows); i++ {
				if compareRows(p.rows[i-1], p.rows[i]) == 0 {
					return fmt.Errorf("%w: partition %x holds row %x twice", errOverState, p.key, p.rows[i].id)
				}
			}
		}
	}
	if !o.spec.Updating && o.spec.Frame.Unit == plan.FrameRange && !o.spec.Frame.Unbounded {
		// The rows of every frame in emission order, to drop them by the
		// watermark.
		for _, p := range o.parts {
			o.queue = append(o.queue, p.f.rows[p.f.head:]...)
		}
		slices.SortFunc(o.queue, compareRows)
	}
	return nil
}

// restoreRow restores one row of an updating input into partition part.
func (o *overOp) restoreRow(part, id string, v []byte) error {
	d := &overDecoder{b: v}
	row := d.row("row", len(o.spec.In))
	var out plan.Row
	switch d.byte1("emitted") {
	case 0:
	case 1:
		out = d.row("emitted row", len(o.spec.Out))
	default:
		d.fail("emitted")
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) > 0 {
		return fmt.Errorf("%w: %d bytes after the row", errOverState, len(d.b))
	}
	p := o.part(part)
	r := &overRow{ord: row[o.spec.Order], id: id, row: row, part: p, out: out, persisted: true}
	p.rows = append(p.rows, r)
	o.held++
	o.bytes += o.rowCost(r)
	if out != nil {
		o.bytes += outCost(out)
	}
	return nil
}

func (o *overOp) restorePart(key string, v []byte) error {
	if _, dup := o.parts[key]; dup {
		return fmt.Errorf("%w: partition twice", errOverState)
	}
	d := &overDecoder{b: v}
	if kind := d.byte1("kind"); d.err == nil && kind != 'a' {
		return fmt.Errorf("%w: a partition record of kind %q", errOverState, kind)
	}
	p := &overPart{key: key, f: overFrame{accs: make([]overAcc, len(o.spec.Calls))}}
	var bytes int64
	{
		if o.spec.Frame.Unbounded {
			for i := range p.f.accs {
				a := &p.f.accs[i]
				a.n = d.varint("count")
				a.lo = d.uvarint("sum")
				a.hi = d.varint("sum")
				if d.err == nil && len(d.b) < 8 {
					d.fail("double sum")
				}
				if d.err == nil {
					a.f = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
					d.b = d.b[8:]
					var err error
					if a.v, d.b, err = value.DecodeValue(d.b); err != nil {
						d.fail("value")
					}
				}
				switch d.byte1("first value") {
				case 0:
				case 1:
					a.has = true
				default:
					d.fail("first value")
				}
				if d.err == nil && a.n < 0 {
					d.fail("count")
				}
			}
		}
		n := d.count("frame")
		for range n {
			r := o.decodeRow(d, p)
			if d.err != nil {
				return d.err
			}
			if len(p.f.rows) > 0 && compareRows(p.f.rows[len(p.f.rows)-1], r) >= 0 {
				return fmt.Errorf("%w: frame rows out of order", errOverState)
			}
			o.push(&p.f, r)
			bytes += o.rowCost(r)
		}
		if o.spec.Frame.Unbounded && n > 0 {
			return fmt.Errorf("%w: rows in an UNBOUNDED frame", errOverState)
		}
		n = d.count("pending")
		for range n {
			r := o.decodeRow(d, p)
			if d.err != nil {
				return d.err
			}
			p.npending++
			o.pending = heapPush(o.pending, r, rowsBefore)
			bytes += o.rowCost(r)
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) > 0 {
		return fmt.Errorf("%w: %d bytes after the partition", errOverState, len(d.b))
	}
	p.persisted = true
	o.held += len(p.f.rows) + p.npending
	o.parts[key] = p
	o.peak = max(o.peak, len(o.parts))
	o.bytes += bytes + int64(overPartCost+allocSize(len(key)))
	return nil
}
