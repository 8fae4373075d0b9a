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

// The OVER aggregation's checkpoint: a record per held row, and over an
// append-only input one per partition. Records are keyed by the encoded
// partition key (what the exchange routes by, so a restore at another
// parallelism finds its partitions):
//
//	'r', the partition key's length (uvarint), the partition key, the
//	    row's identity: an append-only row's id (after its length) and
//	    offset (varint), an updating input's row's id
//	    -> the encoded row (after its length); updating, then the row last
//	    emitted for it (a byte: none 0, one 1, then the row after its
//	    length)
//	'p', the partition key (append-only)
//	    -> 'a', [the calls' accumulators (UNBOUNDED frames)], the sort key
//	    of the last row emitted (a byte: none 0, one 1, then its ORDER BY
//	    value, id and offset): the rows up to it are in the frame, the
//	    others pending
//
// An accumulator is n (varint), the 128-bit sum (uvarint low, varint
// high), the DOUBLE sum's bits (8 bytes), the MIN/MAX or FIRST_VALUE value
// (value.AppendValue) and whether FIRST_VALUE has one (a byte). A sliding
// frame's accumulators are rebuilt from its rows on restore. A row's record
// is written once when it comes (and, updating, when it is emitted anew)
// and deleted when it leaves: a delta writes what changed, never a whole
// partition's rows.

var errOverState = errors.New("over state")

// rowKey is the record key of row r of partition part.
func (o *overOp) rowKey(part string, r *overRow) []byte {
	o.buf = append(o.buf[:0], 'r')
	o.buf = binary.AppendUvarint(o.buf, uint64(len(part)))
	o.buf = append(o.buf, part...)
	if o.spec.Updating {
		o.buf = append(o.buf, r.id...)
		return o.buf
	}
	o.buf = binary.AppendUvarint(o.buf, uint64(len(r.id)))
	o.buf = append(o.buf, r.id...)
	o.buf = binary.AppendVarint(o.buf, r.off)
	return o.buf
}

func (o *overOp) Snapshot(w StateWriter) error {
	putRow := func(r *overRow) {
		k := len(o.rowKey(r.part.key, r))
		o.buf = appendLenRow(o.buf, r.row, &o.scratch)
		if o.spec.Updating {
			if r.out == nil {
				o.buf = append(o.buf, 0)
			} else {
				o.buf = appendLenRow(append(o.buf, 1), r.out, &o.scratch)
			}
		}
		w.Put(o.buf[:k], o.buf[k:])
		r.persisted = true
	}
	putPart := func(p *overPart) {
		o.buf = append(append(o.buf[:0], 'p'), p.key...)
		k := len(o.buf)
		o.buf = o.appendPart(o.buf, p)
		w.Put(o.buf[:k], o.buf[k:])
		p.persisted = true
	}
	if w.Full() {
		for _, p := range o.parts {
			if !o.spec.Updating {
				putPart(p)
			}
			for _, r := range p.f.rows[p.f.head:] {
				putRow(r)
			}
			for _, r := range p.rows {
				putRow(r)
			}
		}
		for _, r := range o.pending {
			putRow(r)
		}
	} else {
		for _, k := range o.removed {
			o.buf = append(append(o.buf[:0], 'p'), k...)
			w.Delete(o.buf)
		}
		for _, k := range o.removedRows {
			w.Delete(KeyBytes(k))
		}
		for _, p := range o.changed {
			if o.parts[p.key] == p && !o.spec.Updating {
				putPart(p)
			}
		}
		for _, r := range o.changedRows {
			if !r.gone {
				putRow(r)
			}
		}
	}
	for _, p := range o.changed {
		p.isChanged = false
	}
	for _, r := range o.changedRows {
		r.isChanged = false
	}
	clear(o.changed)
	clear(o.changedRows)
	o.changed, o.removed = o.changed[:0], o.removed[:0]
	o.changedRows, o.removedRows = o.changedRows[:0], o.removedRows[:0]
	return nil
}

// appendPart encodes an append-only partition's record.
func (o *overOp) appendPart(b []byte, p *overPart) []byte {
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
	if !p.hasMark {
		return append(b, 0)
	}
	b = value.AppendValue(append(b, 1), p.mark.ord)
	b = binary.AppendUvarint(b, uint64(len(p.mark.id)))
	b = append(b, p.mark.id...)
	return binary.AppendVarint(b, p.mark.off)
}

func boolByte(x bool) byte {
	if x {
		return 1
	}
	return 0
}

func appendLenRow(b []byte, r plan.Row, scratch *[]byte) []byte {
	*scratch = value.AppendRow((*scratch)[:0], r)
	b = binary.AppendUvarint(b, uint64(len(*scratch)))
	return append(b, *scratch...)
}

// overDecoder reads a record.
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

func (d *overDecoder) value(what string) plan.Value {
	if d.err != nil {
		return plan.Null
	}
	v, rest, err := value.DecodeValue(d.b)
	if err != nil {
		d.fail(what)
		return plan.Null
	}
	d.b = rest
	return v
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

// end fails the record when bytes are left after it.
func (d *overDecoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%w: %d bytes after the record", errOverState, len(d.b))
	}
	return d.err
}

func (o *overOp) Restore(r StateReader) error {
	marked := map[*overPart]bool{} // append-only: the partitions whose record came
	err := r.Scan(func(k, v []byte) error {
		switch {
		case len(k) > 0 && k[0] == 'p' && !o.spec.Updating:
			key := string(k[1:])
			if !r.Owns(key) {
				return nil
			}
			p := o.part(key)
			if marked[p] {
				return fmt.Errorf("%w: partition %x twice", errOverState, key)
			}
			marked[p] = true
			if err := o.restorePart(p, v); err != nil {
				return fmt.Errorf("partition %x: %w", key, err)
			}
		case len(k) > 0 && k[0] == 'r':
			d := &overDecoder{b: k[1:]}
			part := d.bytes("partition key")
			if d.err != nil {
				return fmt.Errorf("row record %x: %w", k, d.err)
			}
			if !r.Owns(string(part)) {
				return nil
			}
			if err := o.restoreRow(string(part), d, v); err != nil {
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
	for _, p := range o.parts {
		slices.SortFunc(p.rows, compareRows)
		for i := 1; i < len(p.rows); i++ {
			if compareRows(p.rows[i-1], p.rows[i]) == 0 {
				return fmt.Errorf("%w: partition %x holds row %x twice", errOverState, p.key, p.rows[i].id)
			}
		}
		if o.spec.Updating {
			continue
		}
		if !marked[p] {
			return fmt.Errorf("%w: rows of partition %x without its record", errOverState, p.key)
		}
		// Its rows up to the last emitted are its frame, the others
		// pending.
		rows := p.rows
		p.rows = nil
		for _, r := range rows {
			if p.hasMark && compareRows(r, &p.mark) <= 0 {
				if o.spec.Frame.Unbounded {
					return fmt.Errorf("%w: partition %x: an emitted row in an UNBOUNDED frame", errOverState, p.key)
				}
				o.push(&p.f, r)
				continue
			}
			p.npending++
			o.pending = heapPush(o.pending, r, rowsBefore)
		}
		if !o.spec.Frame.Unbounded && o.spec.Frame.Unit == plan.FrameRows && int64(len(p.f.rows)) > o.spec.Frame.N {
			return fmt.Errorf("%w: partition %x: %d rows in a frame of %d", errOverState, p.key, len(p.f.rows), o.spec.Frame.N)
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

// restoreRow restores one held row into partition part; d holds the rest
// of its key (its identity).
func (o *overOp) restoreRow(part string, d *overDecoder, v []byte) error {
	var id string
	var off int64
	if o.spec.Updating {
		id = string(d.b)
	} else {
		id = string(d.bytes("row id"))
		off = d.varint("row offset")
		if err := d.end(); err != nil {
			return err
		}
	}
	d = &overDecoder{b: v}
	row := d.row("row", len(o.spec.In))
	var out plan.Row
	if o.spec.Updating {
		switch d.byte1("emitted") {
		case 0:
		case 1:
			out = d.row("emitted row", len(o.spec.Out))
		default:
			d.fail("emitted")
		}
	}
	if err := d.end(); err != nil {
		return err
	}
	ord := row[o.spec.Order]
	if !o.spec.Updating && (ord.K != plan.TypeTimestamp || ord.IsNull()) {
		return fmt.Errorf("%w: a row without a time", errOverState)
	}
	p := o.part(part)
	r := &overRow{ord: ord, id: id, off: off, row: row, part: p, out: out, persisted: true}
	p.rows = append(p.rows, r) // sorted (and, append-only, split) after the scan
	o.held++
	o.bytes += o.rowCost(r)
	if out != nil {
		o.bytes += outCost(out)
	}
	return nil
}

// restorePart restores an append-only partition's record.
func (o *overOp) restorePart(p *overPart, v []byte) error {
	d := &overDecoder{b: v}
	if kind := d.byte1("kind"); d.err == nil && kind != 'a' {
		return fmt.Errorf("%w: a partition record of kind %q", errOverState, kind)
	}
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
			}
			a.v = d.value("value")
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
	switch d.byte1("mark") {
	case 0:
	case 1:
		p.hasMark = true
		p.mark.ord = d.value("mark time")
		p.mark.id = string(d.bytes("mark id"))
		p.mark.off = d.varint("mark offset")
		if d.err == nil && (p.mark.ord.K != plan.TypeTimestamp || p.mark.ord.IsNull()) {
			d.fail("mark time")
		}
	default:
		d.fail("mark")
	}
	if err := d.end(); err != nil {
		return err
	}
	p.persisted = true
	return nil
}
