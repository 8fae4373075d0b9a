package runtime

import (
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// windowAssign assigns rows to windows (plan.WindowAssign). Input rows are
// [time, rest...]; output rows are [window_start, window_end, rest...], one
// per window the row is not late for. Tumble and hop lateness is judged
// here, against the row's watermark in log order; session rows pass
// through as [ts, ts+gap) for the aggregation to merge and judge.
type windowAssign struct {
	noState
	spec     plan.WindowSpec
	lateness int64
	buf      []window.Window
	counters *Counters
}

var _ Operator = (*windowAssign)(nil)

func (w *windowAssign) Process(b *Batch, out Emitter) error {
	res := &Batch{Rows: make([]plan.Row, 0, len(b.Rows)), Meta: make([]RowMeta, 0, len(b.Rows))}
	var slab []plan.Value // output rows are carved from one allocation per batch
	for i, r := range b.Rows {
		ts := r[0]
		if ts.IsNull() {
			continue // no time, no window
		}
		m := b.Meta[i]
		var wins []window.Window
		switch w.spec.Kind {
		case plan.Tumble:
			w.buf = append(w.buf[:0], window.Tumble(ts.I, w.spec.Size))
			wins = w.buf
		case plan.Hop:
			w.buf = window.Hop(ts.I, w.spec.Slide, w.spec.Size, w.buf[:0])
			wins = w.buf
		case plan.Session:
			w.buf = append(w.buf[:0], window.Window{Start: ts.I, End: ts.I + w.spec.Gap})
			wins = w.buf
		case plan.Given:
			// The row is [window_start, window_end, rest...] already.
			win := window.Window{Start: r[0].I, End: r[1].I}
			if r[1].IsNull() || window.Late(win, w.lateness, m.WM) {
				w.counters.late(&m, win.End-1)
				continue
			}
			res.Append(r, m)
			continue
		}
		late := false
		for _, win := range wins {
			if w.spec.Kind != plan.Session && !w.spec.ProcTime && window.Late(win, w.lateness, m.WM) {
				late = true
				continue
			}
			if len(slab) < len(r)+1 {
				slab = make([]plan.Value, (len(r)+1)*max(len(b.Rows), 64))
			}
			row := plan.Row(slab[: len(r)+1 : len(r)+1])
			slab = slab[len(r)+1:]
			row[0], row[1] = plan.Time(win.Start), plan.Time(win.End)
			copy(row[2:], r[1:])
			res.Append(row, m)
		}
		if late {
			w.counters.late(&m, ts.I)
		}
	}
	if res.Len() == 0 {
		return nil
	}
	return out.Emit(res)
}

func (w *windowAssign) Watermark(wm int64, _ Emitter) (int64, error) { return wm, nil }
func (w *windowAssign) Barrier(Barrier, Emitter) error               { return nil }
