package planner

import (
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// unionAll plans SELECT ... UNION ALL SELECT ...: each branch as a
// subquery (its windows emit on close, a running aggregate its changes),
// then a chain of two-input Union stages, each gathering its inputs into
// one task. The branches must have the same number of columns, of the
// same types; the union's columns are named by the first branch. It is
// append-only when every branch is, else updating, keyed on (branch, the
// row's key or id): rows of two branches never replace each other.
func (b *builder) unionAll(sel *parser.Select) (*planned, error) {
	first := *sel
	first.UnionAll, first.With = nil, nil
	branches := append([]*parser.Select{&first}, sel.UnionAll...)
	var ps []*planned
	for _, br := range branches {
		p, err := b.query(br, true)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	out := append(plan.Schema(nil), ps[0].out...)
	updating := false
	for i, p := range ps {
		if len(p.out) != len(out) {
			return nil, errf("UNION", "UNION ALL of queries with %d and %d columns (query %d); every query of a UNION selects the same number of columns", len(out), len(p.out), i+1)
		}
		for c, col := range p.out {
			if col.Type != out[c].Type {
				return nil, errf(col.Name, "UNION ALL: column %d (%s) is %s in the first query and %s in query %d; CAST one of them", c+1, out[c].Name, out[c].Type, col.Type, i+1)
			}
			out[c].NotNull = out[c].NotNull && col.NotNull
		}
		updating = updating || !p.s.appendOnly()
	}
	acc := ps[0].s
	for i := 1; i < len(ps); i++ {
		spec := &plan.Union{Tags: [2]int{0, i}, Updating: updating, SideUpdating: [2]bool{!acc.appendOnly(), !ps[i].s.appendOnly()}, Out: out}
		if i > 1 {
			spec.Tags[0] = -1 // a union already
		}
		v := b.vertex(1, []plan.Edge{acc.gatherEdge(), ps[i].s.gatherEdge()}, spec)
		next := &stream{cur: v, scope: newScope("", out), eventTime: make([]bool, len(out)),
			lateness: max(acc.lateness, ps[i].s.lateness), sources: append(append([]*plan.Source(nil), acc.sources...), ps[i].s.sources...),
			winStart: -1, winEnd: -1}
		for c := range out {
			next.eventTime[c] = acc.eventTime[c] && ps[i].s.eventTime[c]
		}
		if acc.winStart >= 0 && acc.winStart == ps[i].s.winStart && acc.winEnd == ps[i].s.winEnd {
			next.winStart, next.winEnd = acc.winStart, acc.winEnd
		}
		if updating {
			next.changes = &changelog{key: plan.KeyGroup, keyOut: []int{-1, -1}, keyNames: []string{"_branch", "_key"}}
			next.multi = acc.multi || ps[i].s.multi
		}
		acc = next
	}
	p := &planned{s: acc, key: plan.KeyRowID, out: out, par: 1}
	if c := acc.changes; c != nil {
		p.key, p.keyOut, p.keyNames = c.key, c.keyOut, c.keyNames
	}
	return p, nil
}

// gatherEdge takes s's rows, as they are, to a new one-task stage.
func (s *stream) gatherEdge() plan.Edge {
	e := s.hashEdge(nil)
	e.Partition, e.KeyCols = plan.Gather, nil
	return e
}
