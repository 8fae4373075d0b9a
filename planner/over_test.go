package planner

import (
	"errors"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// TestOverErrorNames: an OVER aggregation refused names what it is about
// (the engine points at it in the statement), with a 422.
func TestOverErrorNames(t *testing.T) {
	cat := testTables(t)
	for _, c := range []struct{ sql, name, mentions string }{
		{"SELECT COUNT(*) OVER (PARTITION BY auction ORDER BY price) FROM bids", "price", "event-time column of bids is ts"},
		{"SELECT COUNT(*) OVER (PARTITION BY auction ORDER BY ts DESC) FROM bids", "ts", "ascending"},
		{"SELECT COUNT(*) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING) FROM bids", "ROWS", "CURRENT ROW"},
		{"SELECT COUNT(*) OVER (ORDER BY ts RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) FROM bids", "RANGE", "INTERVAL"},
		{"SELECT COUNT(*) OVER (ORDER BY ts), SUM(price) OVER (PARTITION BY auction ORDER BY ts) FROM bids", "OVER", "different windows"},
		{"SELECT COUNT(*) OVER (ORDER BY ts), RANK() OVER (ORDER BY price) FROM bids", "rank", "Top-N"},
		{"SELECT NTILE(2) OVER (ORDER BY ts), COUNT(*) OVER (ORDER BY ts) FROM bids", "ntile", "not supported"},
		{"SELECT auction, COUNT(*) OVER (ORDER BY ts) FROM bids GROUP BY auction", "OVER", "subquery"},
		{"SELECT SUM(SUM(price)) OVER (ORDER BY ts) FROM bids", "sum", "nested"},
	} {
		stmts, err := parser.Parse(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		_, err = Query(stmts[0].Stmt.(*parser.Select), cat, plan.Options{Parallelism: 1}, "q", plan.SinkResults)
		var pe *Error
		if !errors.As(err, &pe) || pe.Status != 422 || pe.Name != c.name || !strings.Contains(pe.Msg, c.mentions) {
			t.Errorf("%s: %#v, want a 422 naming %q that mentions %q", c.sql, err, c.name, c.mentions)
		}
	}
}
