package op

import (
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// union is UNION ALL of two inputs (plan.Union). It forwards each side's
// rows, tagging those of a branch (Tags[side] >= 0) with the branch: the
// row id (RowMeta.ID) of an append-only union becomes (branch, row id),
// the key of an updating one (branch, key or row id), so rows of two
// branches never overwrite each other downstream. A batch's new ids are
// carved from one string (no allocation per row). Its watermark is the
// lower of its sides', and the rows it forwards carry no later one.
type union struct {
	noState
	spec *plan.Union
	wm   [2]int64
	tags [2][]byte // the branches' encoded tags
	buf  []byte
	ends []int
}

var _ TwoInput = (*union)(nil)

func newUnion(spec *plan.Union) *union {
	u := &union{spec: spec, wm: [2]int64{window.NoWatermark, window.NoWatermark}}
	for side, t := range spec.Tags {
		if t >= 0 {
			u.tags[side] = value.AppendValue(nil, plan.Int(int64(t)))
		}
	}
	return u
}

func (u *union) ProcessSide(side int, b *Batch, out Emitter) error {
	// A row carries its producer's watermark; after the union it is on
	// time against the lower of the sides' (a fast side's rows must not
	// close windows the slow side still feeds).
	wm := min(u.wm[0], u.wm[1])
	for i := range b.Meta {
		b.Meta[i].WM = min(b.Meta[i].WM, wm)
	}
	tag := u.tags[side]
	if tag == nil {
		return out.Emit(b) // a union's rows, tagged already
	}
	keyed := u.spec.Updating && u.spec.SideUpdating[side]
	u.buf, u.ends = u.buf[:0], u.ends[:0]
	for i := range b.Meta {
		m := &b.Meta[i]
		u.buf = append(u.buf, tag...)
		switch {
		case keyed:
			u.buf = append(u.buf, m.Key...)
		case m.ID != "":
			u.buf = append(u.buf, m.ID...)
		default:
			u.buf = value.AppendValue(u.buf, plan.Int(m.Offset))
		}
		u.ends = append(u.ends, len(u.buf))
	}
	ids := string(u.buf)
	start := 0
	for i, end := range u.ends {
		m := &b.Meta[i]
		m.ID = ids[start:end]
		if u.spec.Updating {
			m.Key = m.ID
		}
		start = end
	}
	return out.Emit(b)
}

func (u *union) Process(b *Batch, out Emitter) error { return u.ProcessSide(0, b, out) }

func (u *union) WatermarkSide(side int, wm int64, _ Emitter) (int64, error) {
	u.wm[side] = max(u.wm[side], wm)
	return min(u.wm[0], u.wm[1]), nil
}

func (u *union) Watermark(wm int64, _ Emitter) (int64, error) { return wm, nil }
func (u *union) Barrier(Barrier, Emitter) error               { return nil }
