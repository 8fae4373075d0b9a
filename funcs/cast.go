package funcs

import (
	"math"

	"github.com/streamsql/streamsql/planner/plan"
)

// The casts beyond Cast's: CAST(x AS UNSIGNED) and CAST(x AS
// DECIMAL(p, s)). Both are planned as calls the runtime compiles as
// operators ("cast_unsigned", "cast_decimal"): CastCall builds them.

// CastCall is the bound call of CAST(x AS UNSIGNED) (a BIGINT) or CAST(x
// AS DECIMAL(prec, scale)) (a DOUBLE).
func CastCall(target string, x plan.Expr, prec, scale int) *plan.Call {
	if target == "UNSIGNED" {
		return &plan.Call{Fn: "cast_unsigned", Args: []plan.Expr{x}, T: plan.TypeBigint}
	}
	return &plan.Call{Fn: "cast_decimal", Args: []plan.Expr{x, &plan.Const{V: plan.Int(int64(prec))}, &plan.Const{V: plan.Int(int64(scale))}}, T: plan.TypeDouble}
}

// CastUnsigned is v as UNSIGNED, which streamsql holds in a BIGINT: a
// value below 0 is NULL (MySQL wraps it to 2^64 + v, which no BIGINT
// holds: NULL, never a wrapped value), one above BIGINT's range is
// clamped to it (as SIGNED is).
func CastUnsigned(v plan.Value) plan.Value {
	if v.IsNull() {
		return v
	}
	if i := ToInt(v); i >= 0 {
		return plan.Int(i)
	}
	return plan.Null
}

// CastDecimal is v as DECIMAL(prec, scale), which streamsql holds in a
// DOUBLE: rounded to scale digits after the point (half away from zero,
// as MySQL rounds decimals) and clamped to the largest value of prec
// digits (MySQL clamps too, with a warning); NaN, which no DECIMAL holds,
// is NULL.
func CastDecimal(v plan.Value, prec, scale int64) plan.Value {
	if v.IsNull() {
		return v
	}
	f := ToFloat(v)
	if math.IsNaN(f) {
		return plan.Null
	}
	f = roundFloat(f, scale, false)
	if top := math.Pow(10, float64(prec-scale)) - math.Pow(10, float64(-scale)); f > top {
		f = top
	} else if f < -top {
		f = -top
	}
	return plan.Float(f)
}
