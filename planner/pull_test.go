package planner

import (
	"errors"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// pullView is a view's schema as the engine hands it to Pull.
var pullView = &plan.ViewDef{Name: "v", Out: plan.Schema{
	{Name: "window_start", Type: plan.TypeTimestamp, NotNull: true}, {Name: "channel", Type: plan.TypeVarchar},
	{Name: "bids", Type: plan.TypeBigint, NotNull: true}, {Name: "price", Type: plan.TypeDouble},
}}

func pullSQL(t *testing.T, sql string, opts plan.Options) (*plan.PullQuery, error) {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return Pull(stmts[0].Stmt.(*parser.Select), pullView, opts, nil)
}

// TestPullTypesAndConsistency: a pull query's result types are a view's
// (SUM of BIGINT BIGINT, of DOUBLE DOUBLE, AVG DOUBLE, COUNT BIGINT), and
// its consistency is committed unless SET or SET_VAR choose latest.
func TestPullTypesAndConsistency(t *testing.T) {
	q, err := pullSQL(t, "SELECT channel, SUM(bids), SUM(price), AVG(bids), COUNT(DISTINCT channel), MIN(window_start) FROM v GROUP BY channel", plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.Type{plan.TypeVarchar, plan.TypeBigint, plan.TypeDouble, plan.TypeDouble, plan.TypeBigint, plan.TypeTimestamp}
	for i, c := range q.Out {
		if c.Type != want[i] {
			t.Errorf("column %s: %s, want %s", c.Name, c.Type, want[i])
		}
	}
	if q.Consistency != plan.ConsistencyCommitted || q.Group == nil || len(q.Group.Agg.Keys) != 1 {
		t.Errorf("consistency %q, group %+v; want committed, grouped by one key", q.Consistency, q.Group)
	}
	if q, _ := pullSQL(t, "SELECT * FROM v", plan.Options{Consistency: plan.ConsistencyLatest}); q.Consistency != plan.ConsistencyLatest || q.Group != nil {
		t.Errorf("SET consistency latest: %q (group %v)", q.Consistency, q.Group)
	}
	if q, _ := pullSQL(t, "SELECT /*+ SET_VAR(consistency='committed') */ * FROM v", plan.Options{Consistency: plan.ConsistencyLatest}); q.Consistency != plan.ConsistencyCommitted {
		t.Errorf("the hint over SET: %q, want committed", q.Consistency)
	}
}

// TestPullErrorNames: a refused pull query's error names what the caller
// positions at, with its status.
func TestPullErrorNames(t *testing.T) {
	for _, c := range []struct {
		sql, name string
		status    int
	}{
		{"SELECT channel, bids FROM v GROUP BY channel", "bids", 422},
		{"SELECT channel FROM v WHERE window_start < 'later'", "later", 422},
		{"SELECT channel FROM v GROUP BY TUMBLE(window_start, '1m')", "tumble", 422},
		{"SELECT channel, COUNT(*) FROM v GROUP BY 3", "GROUP", 422},
		{"SELECT /*+ SET_VAR(consistency='soon') */ channel FROM v", "consistency", 400},
		{"SELECT /*+ SET_VAR(emit_mode='changes') */ channel FROM v", "emit_mode", 422},
		{"SELECT DISTINCT channel FROM v ORDER BY bids", "bids", 422},
		{"SELECT channel FROM v UNION ALL SELECT channel FROM v", "UNION", 422},
	} {
		_, err := pullSQL(t, c.sql, plan.Options{})
		var pe *Error
		if !errors.As(err, &pe) || pe.Name != c.name || pe.Status != c.status {
			t.Errorf("%s: %v, want an error about %q (%d)", c.sql, err, c.name, c.status)
		}
	}
}
