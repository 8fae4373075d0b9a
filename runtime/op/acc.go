package op

import (
	"fmt"
	"math"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// acc is one aggregate's accumulator. Which fields are used depends on fn.
type acc struct {
	n   int64   // COUNT, AVG count, SUM seen-non-null count
	i   int64   // BIGINT SUM
	f   float64 // DOUBLE SUM, AVG sum
	v   plan.Value
	set *distinctSet // COUNT(DISTINCT); APPROX_COUNT_DISTINCT's sketch, GROUP_CONCAT's entries (aggs.go)
}

// errOverflow is returned when a BIGINT SUM overflows.
var errOverflow = fmt.Errorf("BIGINT value is out of range in SUM")

// add folds v into the accumulator. It returns how many bytes a
// COUNT(DISTINCT) set grew by (0 for every other function); buf is scratch
// space for the member's encoding.
func (a *acc) add(fn plan.AggFn, t plan.Type, v plan.Value, buf *[]byte) (int, error) {
	if fn == plan.AggCountStar {
		a.n++
		return 0, nil
	}
	if v.IsNull() {
		return 0, nil
	}
	switch fn {
	case plan.AggCount:
		a.n++
	case plan.AggCountDistinct:
		grown := 0
		if a.set == nil {
			a.set = &distinctSet{}
			grown = distinctSetCost
		}
		*buf = value.AppendValue((*buf)[:0], v)
		g, err := a.set.add(*buf)
		return grown + g, err
	case plan.AggSum:
		a.n++
		if t == plan.TypeDouble {
			a.f += v.F()
			return 0, nil
		}
		if sumOverflows(a.i, v.I) {
			return 0, errOverflow
		}
		a.i += v.I
	case plan.AggAvg:
		a.n++
		a.f += funcs.ToFloat(v)
	case plan.AggMin, plan.AggMax:
		if !a.v.IsNull() {
			if c := value.Compare(v, a.v); c == 0 || (c < 0) != (fn == plan.AggMin) {
				return 0, nil
			}
		}
		// A VARCHAR minimum or maximum holds its string.
		grown := len(v.S) - len(a.v.S)
		a.v = v
		return grown, nil
	default:
		return a.addMore(fn, v, buf)
	}
	return 0, nil
}

// merge folds o into a (session merges). A COUNT(DISTINCT) set is merged
// smaller into larger: a takes the larger of the two sets, the other one's
// members are added to it, and o keeps the smaller one (its caller drops
// it). It returns how many bytes a's set grew by.
func (a *acc) merge(fn plan.AggFn, t plan.Type, ag *plan.Agg, o *acc) (int, error) {
	switch fn {
	case plan.AggCountStar, plan.AggCount:
		a.n += o.n
	case plan.AggCountDistinct:
		if o.set.len() > a.set.len() {
			a.set, o.set = o.set, a.set
		}
		if o.set.len() == 0 {
			return 0, nil
		}
		return a.set.addAll(o.set)
	case plan.AggSum:
		a.n += o.n
		if t == plan.TypeDouble {
			a.f += o.f
			return 0, nil
		}
		if sumOverflows(a.i, o.i) {
			return 0, errOverflow
		}
		a.i += o.i
	case plan.AggAvg:
		a.n += o.n
		a.f += o.f
	case plan.AggMin, plan.AggMax:
		if !o.v.IsNull() {
			return a.add(fn, t, o.v, nil)
		}
	default:
		return a.mergeMore(fn, ag, o)
	}
	return 0, nil
}

func (a *acc) result(fn plan.AggFn, t plan.Type) plan.Value {
	switch fn {
	case plan.AggCountStar, plan.AggCount:
		return plan.Int(a.n)
	case plan.AggCountDistinct:
		if a.set == nil {
			return plan.Int(a.n) // retracting: the bag's size (retract.go); else 0
		}
		return plan.Int(int64(a.set.len()))
	case plan.AggSum:
		if a.n == 0 {
			return plan.Null
		}
		if t == plan.TypeDouble {
			return plan.Float(a.f)
		}
		return plan.Int(a.i)
	case plan.AggAvg:
		if a.n == 0 {
			return plan.Null
		}
		return plan.Float(a.f / float64(a.n))
	case plan.AggMin, plan.AggMax:
	default:
		return a.resultMore(fn)
	}
	if a.v.IsNull() {
		return plan.Null
	}
	return funcs.Cast(a.v, t)
}

// sumOverflows reports whether x+y overflows int64.
func sumOverflows(x, y int64) bool {
	return (y > 0 && x > math.MaxInt64-y) || (y < 0 && x < math.MinInt64-y)
}
