package funcs

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
)

// String functions beyond table.go's: SUBSTRING_INDEX and LOCATE as
// MySQL has them, SPLIT_INDEX as Flink has it, ROUND with digits and
// TRUNCATE. Their per-row closures allocate nothing: results are
// substrings of the argument, and arguments are evaluated into a buffer
// the closure keeps.

// SUBSTRING_INDEX(s, delim, count): the part of s before the count-th
// delim (count > 0), or after the count-th from the right (count < 0);
// all of s when there are fewer; ” when count is 0 or delim is ”.
func compileSubstringIndex(_ *plan.Call, a []Eval, _ *Env) Eval {
	vs := make([]plan.Value, len(a))
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		return plan.Str(substringIndex(ToString(vs[0]), ToString(vs[1]), ToInt(vs[2])))
	}
}

func substringIndex(s, delim string, n int64) string {
	if n == 0 || delim == "" {
		return ""
	}
	if n > 0 {
		at := 0
		for ; n > 0; n-- {
			i := strings.Index(s[at:], delim)
			if i < 0 {
				return s
			}
			at += i + len(delim)
		}
		return s[:at-len(delim)]
	}
	end := len(s)
	for ; n < 0; n++ {
		i := strings.LastIndex(s[:end], delim)
		if i < 0 {
			return s
		}
		end = i
	}
	return s[end+len(delim):]
}

// LOCATE(sub, s[, pos]): the position (from 1, in characters) of the
// first sub in s at or after pos; 0 when there is none or pos is out of
// s (MySQL's: LOCATE(”, 'abc', 4) is 4, LOCATE(”, 'abc', 5) is 0).
func compileLocate(_ *plan.Call, a []Eval, _ *Env) Eval {
	vs := make([]plan.Value, len(a))
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		sub, s := ToString(vs[0]), ToString(vs[1])
		off, pos := 0, int64(1)
		if len(vs) == 3 {
			pos = ToInt(vs[2])
			var ok bool
			if off, ok = byteOffset(s, pos); !ok {
				return plan.Int(0)
			}
		}
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return plan.Int(0)
		}
		return plan.Int(pos + int64(utf8.RuneCountInString(s[off:off+i])))
	}
}

// SPLIT_INDEX(s, delim, index), as Flink's: the index-th (from 0) part
// of s split at every delim; NULL when index is negative or past the
// last part, and for ” (which has no parts). An empty delim splits at
// each whitespace character (Flink's, by Java's Character.isWhitespace).
func compileSplitIndex(_ *plan.Call, a []Eval, _ *Env) Eval {
	vs := make([]plan.Value, len(a))
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		part, ok := splitIndex(ToString(vs[0]), ToString(vs[1]), ToInt(vs[2]))
		if !ok {
			return plan.Null
		}
		return plan.Str(part)
	}
}

func splitIndex(s, delim string, n int64) (string, bool) {
	if n < 0 || s == "" {
		return "", false
	}
	for {
		var i, w int
		if delim == "" {
			i = strings.IndexFunc(s, javaSpace)
			if i >= 0 {
				_, w = utf8.DecodeRuneInString(s[i:])
			}
		} else {
			i, w = strings.Index(s, delim), len(delim)
		}
		if i < 0 {
			if n == 0 {
				return s, true
			}
			return "", false
		}
		if n == 0 {
			return s[:i], true
		}
		s, n = s[i+w:], n-1
	}
}

// javaSpace is Java's Character.isWhitespace: Unicode spaces but the
// no-break ones, and the ASCII separators.
func javaSpace(r rune) bool {
	switch r {
	case '\u00a0', '\u2007', '\u202f', '\u0085':
		return false
	case '\u001c', '\u001d', '\u001e', '\u001f':
		return true
	}
	return unicode.IsSpace(r)
}

// ROUND(x, d) and TRUNCATE(x, d), by MySQL's my_double_round and
// Item_func_round::int_op: d digits after the point (before it when
// negative). A DOUBLE rounds half away from zero (MySQL: to even), d past
// the digits a DOUBLE has leaves it as it is (ROUND(1e308, 2) is 1e308),
// NaN and infinities stay. A BIGINT is exact: ROUND(15, -1) is 20, and a
// result beyond BIGINT is NULL, counted out of range (MySQL: an error).
func compileRoundTo(trunc bool) func(*plan.Call, []Eval, *Env) Eval {
	return func(c *plan.Call, a []Eval, env *Env) Eval {
		if len(a) == 1 {
			return keepInt(math.Round)(c, a, env) // ROUND(x)
		}
		t := c.T
		return Strict2(a[0], a[1], func(x, d plan.Value) plan.Value {
			if t == plan.TypeDouble {
				return plan.Float(roundFloat(ToFloat(x), ToInt(d), trunc))
			}
			v, ok := roundInt(ToInt(x), ToInt(d), trunc)
			if !ok {
				return env.OutOfRangeNull()
			}
			return plan.Int(v)
		})
	}
}

func roundFloat(x float64, d int64, trunc bool) float64 {
	neg := d < 0
	k := d
	if neg {
		k = -d // d = MinInt64 stays negative: Pow gives +Inf all the same
	}
	p := math.Pow(10, float64(k))
	if math.IsInf(p, 0) || k < 0 {
		if neg {
			return 0
		}
		return x
	}
	div, mul := x/p, x*p
	if !neg && math.IsInf(mul, 0) {
		return x
	}
	f := math.Round
	if trunc {
		f = math.Trunc
	}
	if neg {
		return f(div) * p
	}
	return f(mul) / p
}

func roundInt(x, d int64, trunc bool) (int64, bool) {
	if d >= 0 {
		return x, true
	}
	if d < -19 { // as MySQL: past its table of powers of 10, 0
		return 0, true
	}
	if d == -19 { // 10^19 is past BIGINT: 0, or beyond BIGINT from ±5e18 on
		if trunc || (x < 5e18 && x > -5e18) {
			return 0, true
		}
		return 0, false
	}
	p := int64(1)
	for ; d < 0; d++ {
		p *= 10
	}
	q := x / p * p
	if rem := x - q; !trunc && (rem >= p-rem && rem > 0 || -rem >= p+rem && rem < 0) {
		if rem > 0 {
			return AddInt(q, p)
		}
		return SubInt(q, p)
	}
	return q, true
}
