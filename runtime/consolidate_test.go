package runtime

import (
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestConsolidated: an epoch's changes of a key net to the same result in
// every order two producers may interleave them.
func TestConsolidated(t *testing.T) {
	r := func(v int64) plan.Row { return plan.Row{plan.Int(v)} }
	up := func(k string, v int64) keyedChange { return keyedChange{key: k, row: r(v)} }
	del := func(k string, v int64) keyedChange { return keyedChange{key: k, row: r(v), del: true} }
	cases := []struct {
		name string
		in   []keyedChange
		want []keyedChange // nil row: none
	}{
		{"update in order", []keyedChange{del("a", 1), up("a", 2)}, []keyedChange{up("a", 2)}},
		{"update reordered", []keyedChange{up("a", 2), del("a", 1)}, []keyedChange{up("a", 2)}},
		{"added and taken back", []keyedChange{up("a", 2), del("a", 2)}, nil},
		{"moved, then deleted", []keyedChange{up("a", 2), del("a", 1), del("a", 2)}, []keyedChange{del("a", 1)}},
		{"reordered across keys", []keyedChange{up("a", 2), up("b", 5), del("a", 1)}, []keyedChange{up("a", 2), up("b", 5)}},
		{"a delete without its row", []keyedChange{{key: "a", del: true}}, []keyedChange{{key: "a", del: true}}},
		// A PRIMARY KEY table's key updated then deleted in one epoch:
		// the update's old row (its Before) is what goes.
		{"updated, then deleted", []keyedChange{del("a", 0), up("a", 1), del("a", 1)}, []keyedChange{del("a", 0)}},
		{"inserted, then deleted", []keyedChange{up("a", 1), del("a", 1)}, nil},
	}
	for _, c := range cases {
		got := consolidated(append([]keyedChange(nil), c.in...))
		if len(got) != len(c.want) {
			t.Errorf("%s: got %d changes %+v, want %+v", c.name, len(got), got, c.want)
			continue
		}
		for i := range got {
			g, w := got[i], c.want[i]
			if g.key != w.key || g.del != w.del || len(g.row) != len(w.row) || len(w.row) > 0 && g.row[0] != w.row[0] {
				t.Errorf("%s: change %d is %+v, want %+v", c.name, i, g, w)
			}
		}
	}
}
