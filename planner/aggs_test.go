package planner

import (
	"errors"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// TestAggregateRefusals: the planning errors of the new aggregates name
// what they are about (APPROX_COUNT_DISTINCT over an updating input,
// GROUP_CONCAT's DISTINCT with another ORDER BY key, a type that does not
// fit).
func TestAggregateRefusals(t *testing.T) {
	cat := testTables(t)
	cases := []struct{ sql, name string }{
		{"SELECT n, APPROX_COUNT_DISTINCT(s) FROM (SELECT auction, COUNT(*) AS n, SUM(price) AS s FROM bids GROUP BY auction) r GROUP BY n", "approx_count_distinct"},
		{"SELECT auction, GROUP_CONCAT(DISTINCT channel ORDER BY price) FROM bids GROUP BY auction", "DISTINCT"},
		{"SELECT auction, BIT_XOR(channel) FROM bids GROUP BY auction", "bit_xor"},
		{"SELECT auction, VAR_SAMP(ts) FROM bids GROUP BY auction", "var_samp"},
	}
	for _, c := range cases {
		stmts, err := parser.Parse(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Query(stmts[0].Stmt.(*parser.Select), cat, plan.Options{Parallelism: 1, CheckpointInterval: 1000, EmitInterval: 200}, "q", plan.SinkResults)
		var pe *Error
		if !errors.As(err, &pe) || pe.Name != c.name || pe.Status != 422 {
			t.Errorf("%s: %#v, want a 422 about %s", c.sql, err, c.name)
		}
	}
}
