package op

import "github.com/streamsql/streamsql/planner/plan"

// calc filters and projects (plan.Calc).
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
