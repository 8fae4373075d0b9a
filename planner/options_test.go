package planner

import (
	"errors"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// TestDeliveryOption: the spellings SET delivery = ... takes and refuses,
// with the status and the words of the refusal; a view's plan carries the
// choice, and an INSERT INTO refuses it (testdata/delivery.sql has the
// SET_VAR forms).
func TestDeliveryOption(t *testing.T) {
	for _, c := range []struct {
		val  string
		want string // the option's value, or "" for a refusal
		msg  []string
	}{
		{val: "at_most_once", want: plan.DeliveryAtMostOnce},
		{val: "AT_MOST_ONCE", want: plan.DeliveryAtMostOnce},
		{val: " at_most_once ", want: plan.DeliveryAtMostOnce},
		{val: "exactly_once", want: plan.DeliveryExactlyOnce},
		{val: "Exactly_Once", want: plan.DeliveryExactlyOnce},
		{val: "at_least_once", msg: []string{"SET delivery='at_least_once'", "latest reads and /changes already are at-least-once", "committed reads are exactly-once", "exactly_once", "at_most_once"}},
		{val: "at-most-once", msg: []string{`not "at-most-once"`, "exactly_once or at_most_once", "did you mean at_most_once?"}},
		{val: "", msg: []string{`not ""`, "exactly_once or at_most_once"}},
		{val: "best_effort", msg: []string{`SET delivery must be exactly_once or at_most_once, not "best_effort"`}},
	} {
		var o plan.Options
		err := ApplyOptions(&o, []parser.SetVar{{Name: "delivery", Value: c.val}}, "SET")
		if c.want != "" {
			if err != nil || o.Delivery != c.want {
				t.Errorf("SET delivery = %q: %v, delivery %q; want %q", c.val, err, o.Delivery, c.want)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Status != 422 || pe.Name != "delivery" {
			t.Errorf("SET delivery = %q: %v (%T), want a 422 naming the option", c.val, err, err)
			continue
		}
		for _, m := range c.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("SET delivery = %q: %q lacks %q", c.val, err, m)
			}
		}
	}

	cat := testTables(t)
	plan1 := func(sql string, o plan.Options) (*plan.Graph, error) {
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		o.Parallelism, o.CheckpointInterval, o.EmitInterval = 1, 1000, 200
		switch s := stmts[0].Stmt.(type) {
		case *parser.Select:
			return Query(s, cat, o, "q", plan.SinkResults)
		case *parser.Insert:
			return Insert(s.Select, cat[s.Table], cat, o)
		}
		t.Fatalf("%s: not a SELECT or INSERT", sql)
		return nil, nil
	}
	sinkOf := func(g *plan.Graph) *plan.Sink {
		ops := g.Vertices[len(g.Vertices)-1].Ops
		return ops[len(ops)-1].(*plan.Sink)
	}
	// SET (the session's options) and SET_VAR (the hint overrides it).
	for _, c := range []struct {
		set, sql string
		amo      bool
	}{
		{"", "SELECT auction, price FROM bids", false},
		{plan.DeliveryAtMostOnce, "SELECT auction, price FROM bids", true},
		{plan.DeliveryAtMostOnce, "SELECT /*+ SET_VAR(delivery='exactly_once') */ auction, price FROM bids", false},
		{plan.DeliveryExactlyOnce, "SELECT /*+ SET_VAR(delivery='at_most_once') */ auction, COUNT(*) AS n FROM bids GROUP BY auction", true},
	} {
		g, err := plan1(c.sql, plan.Options{Delivery: c.set})
		if err != nil {
			t.Fatalf("%s (SET delivery %q): %v", c.sql, c.set, err)
		}
		if s := sinkOf(g); s.AtMostOnce != c.amo || !strings.Contains(g.Explain(), "delivery="+s.Delivery()) {
			t.Errorf("%s (SET delivery %q): at_most_once %v, want %v; EXPLAIN:\n%s", c.sql, c.set, s.AtMostOnce, c.amo, g.Explain())
		}
	}
	// SET before an INSERT INTO: refused, the sink table chooses.
	_, err := plan1("INSERT INTO pg_channels SELECT channel, SUM(price) FROM bids GROUP BY channel", plan.Options{Delivery: plan.DeliveryAtMostOnce})
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 422 || !strings.Contains(err.Error(), `ENGINE_ATTRIBUTE ("delivery"`) {
		t.Errorf("INSERT INTO after SET delivery: %v, want a 422 pointing at the table's ENGINE_ATTRIBUTE", err)
	}
}
