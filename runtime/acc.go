package runtime

import (
	"fmt"
	"math"

	"github.com/streamsql/streamsql/planner/plan"
)

// acc is one aggregate's accumulator. Which fields are used depends on fn.
type acc struct {
	n    int64   // COUNT, AVG count, SUM seen-non-null count
	i    int64   // BIGINT SUM
	f    float64 // DOUBLE SUM, AVG sum
	v    plan.Value
	seen map[string]struct{} // COUNT(DISTINCT)
}

// ErrOverflow is returned when a BIGINT SUM overflows.
var ErrOverflow = fmt.Errorf("BIGINT value is out of range in SUM")

func (a *acc) add(fn plan.AggFn, t plan.Type, v plan.Value, keyBuf []byte) error {
	if fn == plan.AggCountStar {
		a.n++
		return nil
	}
	if v.IsNull() {
		return nil
	}
	switch fn {
	case plan.AggCount:
		a.n++
	case plan.AggCountDistinct:
		if a.seen == nil {
			a.seen = map[string]struct{}{}
		}
		k := AppendValue(keyBuf[:0], v)
		if _, ok := a.seen[string(k)]; !ok {
			a.seen[string(k)] = struct{}{}
		}
	case plan.AggSum:
		a.n++
		if t == plan.TypeDouble {
			a.f += v.F()
			return nil
		}
		if sumOverflows(a.i, v.I) {
			return ErrOverflow
		}
		a.i += v.I
	case plan.AggAvg:
		a.n++
		a.f += toFloat(v)
	case plan.AggMin:
		if a.v.IsNull() || Compare(v, a.v) < 0 {
			a.v = v
		}
	case plan.AggMax:
		if a.v.IsNull() || Compare(v, a.v) > 0 {
			a.v = v
		}
	}
	return nil
}

// merge folds o into a (session merges).
func (a *acc) merge(fn plan.AggFn, t plan.Type, o *acc) error {
	switch fn {
	case plan.AggCountStar, plan.AggCount:
		a.n += o.n
	case plan.AggCountDistinct:
		if a.seen == nil {
			a.seen = map[string]struct{}{}
		}
		for k := range o.seen {
			a.seen[k] = struct{}{}
		}
	case plan.AggSum:
		a.n += o.n
		if t == plan.TypeDouble {
			a.f += o.f
			return nil
		}
		if sumOverflows(a.i, o.i) {
			return ErrOverflow
		}
		a.i += o.i
	case plan.AggAvg:
		a.n += o.n
		a.f += o.f
	case plan.AggMin:
		if !o.v.IsNull() && (a.v.IsNull() || Compare(o.v, a.v) < 0) {
			a.v = o.v
		}
	case plan.AggMax:
		if !o.v.IsNull() && (a.v.IsNull() || Compare(o.v, a.v) > 0) {
			a.v = o.v
		}
	}
	return nil
}

func (a *acc) result(fn plan.AggFn, t plan.Type) plan.Value {
	switch fn {
	case plan.AggCountStar, plan.AggCount:
		return plan.Int(a.n)
	case plan.AggCountDistinct:
		return plan.Int(int64(len(a.seen)))
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
	}
	if a.v.IsNull() {
		return plan.Null
	}
	return Cast(a.v, t)
}

// sumOverflows reports whether x+y overflows int64.
func sumOverflows(x, y int64) bool {
	return (y > 0 && x > math.MaxInt64-y) || (y < 0 && x < math.MinInt64-y)
}
