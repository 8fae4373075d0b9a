package funcs

import (
	"github.com/streamsql/streamsql/value"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// MaxStringLen bounds strings built by LPAD and RPAD (MySQL answers NULL
// past max_allowed_packet; so do we, past 1 MiB).
const MaxStringLen = 1 << 20

// Eval is a compiled expression: it evaluates against one row.
type Eval func(r plan.Row) plan.Value

// Env is what expressions read besides the row: the processing time of
// the batch being evaluated, set by the task loop (operators read no clock).
type Env struct {
	ProcTime int64
	// OutOfRange counts results of arithmetic beyond their type's range
	// (BIGINT overflow, TIMESTAMP arithmetic past 0001-01-01 or
	// 9999-12-31) since the task last took it: each is NULL, never a
	// wrapped value, and counted in the query's out_of_range.
	OutOfRange int64
	// regexps are the constant patterns this task's calls compiled,
	// shared by the calls with the same one (regexp.go).
	regexps map[reKey]*reSource
}

// OutOfRangeNull notes a result beyond its type's range and returns what
// it is: NULL.
func (e *Env) OutOfRangeNull() plan.Value {
	if e != nil {
		e.OutOfRange++
	}
	return plan.Null
}

// TimeValue is ms as a TIMESTAMP, or NULL outside the TIMESTAMP range
// (counted).
func (e *Env) TimeValue(ms int64) plan.Value {
	if !plan.TimeInRange(ms) {
		return e.OutOfRangeNull()
	}
	return plan.Time(ms)
}

// Strict1 is f over a's value, NULL when it is NULL.
func Strict1(a Eval, f func(plan.Value) plan.Value) Eval {
	return func(r plan.Row) plan.Value {
		v := a(r)
		if v.IsNull() {
			return plan.Null
		}
		return f(v)
	}
}

// Strict2 is f over a's and b's values, NULL when either is NULL (b is
// not evaluated when a is NULL).
func Strict2(a, b Eval, f func(x, y plan.Value) plan.Value) Eval {
	return func(r plan.Row) plan.Value {
		x := a(r)
		if x.IsNull() {
			return plan.Null
		}
		y := b(r)
		if y.IsNull() {
			return plan.Null
		}
		return f(x, y)
	}
}

// StrictN is f over every argument's value, NULL at the first NULL.
func StrictN(args []Eval, f func(vs []plan.Value) plan.Value) Eval {
	return func(r plan.Row) plan.Value {
		vs := make([]plan.Value, len(args))
		for i, a := range args {
			vs[i] = a(r)
			if vs[i].IsNull() {
				return plan.Null
			}
		}
		return f(vs)
	}
}

// ToString renders a value as MySQL would in string context.
func ToString(v plan.Value) string {
	switch v.K {
	case plan.TypeVarchar:
		return v.S
	case plan.TypeTimestamp:
		return time.UnixMilli(v.I).UTC().Format("2006-01-02 15:04:05.000")
	case plan.TypeDouble:
		return strconv.FormatFloat(v.F(), 'g', -1, 64)
	}
	return strconv.FormatInt(v.I, 10)
}

// ToFloat is v as a DOUBLE (text that is no number is 0).
func ToFloat(v plan.Value) float64 { return value.Float(v) }

// ToInt is v as a BIGINT (DOUBLEs rounded and clamped: FloatToInt).
func ToInt(v plan.Value) int64 {
	switch v.K {
	case plan.TypeDouble:
		return FloatToInt(v.F())
	case plan.TypeVarchar:
		i, err := strconv.ParseInt(strings.TrimSpace(v.S), 10, 64)
		if err != nil {
			return FloatToInt(ToFloat(v))
		}
		return i
	}
	return v.I
}

// FloatToInt rounds f to a BIGINT, clamped to its range (NaN is 0), as
// MySQL's CAST(... AS SIGNED) does: a conversion of a float beyond the
// range is not defined in Go.
func FloatToInt(f float64) int64 {
	switch r := math.Round(f); {
	case math.IsNaN(r):
		return 0
	case r >= 1<<63:
		return math.MaxInt64
	case r < -(1 << 63):
		return math.MinInt64
	default:
		return int64(r)
	}
}

// Compare orders two values as SQL does (value.Compare).
func Compare(x, y plan.Value) int { return value.Compare(x, y) }

// Cast converts v to type t (NULL stays NULL).
func Cast(v plan.Value, t plan.Type) plan.Value {
	if v.IsNull() || v.K == t {
		return v
	}
	switch t {
	case plan.TypeBigint:
		return plan.Int(ToInt(v))
	case plan.TypeDouble:
		return plan.Float(ToFloat(v))
	case plan.TypeVarchar:
		return plan.Str(ToString(v))
	case plan.TypeBoolean:
		return plan.Bool(v.True())
	case plan.TypeTimestamp:
		var ms int64
		switch v.K {
		case plan.TypeVarchar:
			var ok bool
			if ms, ok = parseTimeText(v.S); !ok {
				return plan.Null
			}
		case plan.TypeDouble:
			f := math.Round(v.F())
			if !(float64(plan.MinTime) <= f && f <= float64(plan.MaxTime)) { // NaN too
				return plan.Null
			}
			ms = int64(f)
		default:
			ms = v.I
		}
		return timeValue(ms)
	}
	return plan.Null
}

// timeValue is ms as a TIMESTAMP, or NULL outside the TIMESTAMP range:
// what a cast gives beyond it (MySQL's CAST answers NULL there too; time
// arithmetic uses Env.TimeValue, which also counts it), never a wrapped
// value.
func timeValue(ms int64) plan.Value {
	if !plan.TimeInRange(ms) {
		return plan.Null
	}
	return plan.Time(ms)
}

// AddInt, SubInt and MulInt are BIGINT arithmetic that reports overflow
// (false).
func AddInt(x, y int64) (int64, bool) {
	s := x + y
	return s, (s > x) == (y > 0)
}

func SubInt(x, y int64) (int64, bool) {
	d := x - y
	return d, (d < x) == (y > 0)
}

func MulInt(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	p := x * y
	if p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
		return 0, false
	}
	return p, true
}

func parseTimeText(s string) (int64, bool) { return value.ParseTime(s) }
