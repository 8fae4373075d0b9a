package op

import "github.com/streamsql/streamsql/planner/plan"

// calc filters and projects (plan.Calc). Over an updating stream it passes
// changes through: an update whose old row passes the filter and new row
// does not becomes a delete of the old row; one whose old row fails and
// new row passes is an upsert alone.
type calc struct {
	noState
	filter  Eval
	project []Eval
}

var _ Operator = (*calc)(nil)

func newCalc(spec *plan.Calc, env *Env) (*calc, error) {
	c := &calc{}
	if spec.Filter != nil {
		f, err := Compile(spec.Filter, env)
		if err != nil {
			return nil, err
		}
		c.filter = f
	}
	if spec.Project != nil {
		p, err := CompileAll(spec.Project, env)
		if err != nil {
			return nil, err
		}
		c.project = p
	}
	return c, nil
}

func (c *calc) Process(b *Batch, out Emitter) error {
	// The batch is ours once emitted to us: rows are filtered and
	// projected in place.
	var vals []plan.Value
	n := 0
	for i, r := range b.Rows {
		if c.filter != nil && !c.filter(r).True() {
			if b.Meta[i].Op == Upsert && n > 0 && i > 0 && b.Meta[i-1].Op == Before && b.Meta[n-1].Op == Before {
				// An update whose new row fails the filter: its old row,
				// kept just before, becomes the row's delete.
				b.Meta[n-1].Op = Delete
			}
			continue
		}
		if c.project != nil {
			if len(vals) < len(c.project) {
				vals = make([]plan.Value, len(c.project)*64)
			}
			row := plan.Row(vals[:len(c.project):len(c.project)])
			vals = vals[len(c.project):]
			for j, p := range c.project {
				row[j] = p(r)
			}
			r = row
		}
		b.Rows[n], b.Meta[n] = r, b.Meta[i]
		n++
	}
	if n == 0 {
		return nil
	}
	clear(b.Rows[n:]) // the dropped rows can be collected
	b.Rows, b.Meta = b.Rows[:n], b.Meta[:n]
	return out.Emit(b)
}

func (c *calc) Watermark(wm int64, _ Emitter) (int64, error) { return wm, nil }
func (c *calc) Barrier(Barrier, Emitter) error               { return nil }
