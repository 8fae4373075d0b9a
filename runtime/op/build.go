package op

import (
	"fmt"

	"github.com/streamsql/streamsql/planner/plan"
)

// Build makes the operator of one spec: the one place where plan specs
// become operators. env is the task's (its processing time), c its
// counters.
func Build(spec plan.Op, env *Env, c *Counters) (Operator, error) {
	switch s := spec.(type) {
	case *plan.Calc:
		return newCalc(s, env)
	case *plan.Aggregate:
		if s.Window.Kind == plan.Cumulate && s.Windowed {
			return newCumAgg(s, env, c)
		}
		return newHashAgg(s, env, c)
	case *plan.IntervalJoin:
		return newIntervalJoin(s, env, c)
	case *plan.TemporalJoin:
		return newTemporalJoin(s, env, c)
	case *plan.Normalize:
		return newNormalize(s), nil
	case *plan.ChangelogJoin:
		return newChangelogJoin(s, env, c)
	case *plan.Union:
		return newUnion(s), nil
	case *plan.TopN:
		return newTopN(s, c)
	case *plan.Over:
		return newOver(s, env, c)
	}
	return nil, fmt.Errorf("no operator for %s", spec.OpName())
}
