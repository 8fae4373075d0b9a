package window

import (
	"fmt"
	"math"
	"strconv"
)

const (
	msPerSecond = 1000
	msPerMinute = 60 * msPerSecond
	msPerHour   = 60 * msPerMinute
	msPerDay    = 24 * msPerHour
)

// formatUnits lists the units from largest to smallest.
var formatUnits = [...]struct {
	name string
	ms   int64
}{
	{"d", msPerDay},
	{"h", msPerHour},
	{"m", msPerMinute},
	{"s", msPerSecond},
	{"ms", 1},
}

// ParseDuration parses a positive duration such as '500ms', '10s', '5m',
// '1h' or '1d' into milliseconds. Several components may be combined, as in
// '1m30s' or '1h30m'; they are added. Units are lower case (ms, s, m, h, d)
// and numbers are unsigned integers. Zero, negative, empty, malformed and
// overflowing durations are errors that quote the text.
func ParseDuration(s string) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, fmt.Errorf("invalid duration %q: %s", s, why)
	}
	if s == "" {
		return bad("empty; expected a number and a unit (ms, s, m, h, d), e.g. '10s'")
	}
	if s[0] == '-' {
		return bad("must be positive")
	}
	var total int64
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			return bad(fmt.Sprintf("expected a number at %q; durations look like '500ms', '10s', '5m', '1h', '1d' or '1m30s'", s[i:]))
		}
		n, err := strconv.ParseInt(s[i:j], 10, 64)
		if err != nil {
			return bad("number out of range")
		}
		k := j
		for k < len(s) && (s[k] < '0' || s[k] > '9') {
			k++
		}
		var unit int64
		switch s[j:k] {
		case "ms":
			unit = 1
		case "s":
			unit = msPerSecond
		case "m":
			unit = msPerMinute
		case "h":
			unit = msPerHour
		case "d":
			unit = msPerDay
		case "":
			return bad(fmt.Sprintf("missing unit after %s (ms, s, m, h or d)", s[i:j]))
		default:
			if s[j] == '.' {
				return bad("fractions are not supported; use a smaller unit, e.g. '1500ms'")
			}
			return bad(fmt.Sprintf("unknown unit %q (want ms, s, m, h or d)", s[j:k]))
		}
		if n > math.MaxInt64/unit || total > math.MaxInt64-n*unit {
			return bad("out of range")
		}
		total += n * unit
		i = k
	}
	if total <= 0 {
		return bad("must be positive")
	}
	return total, nil
}

// FormatDuration formats ms in the largest unit that represents it exactly:
// 500ms, 10s, 5m, 1h, 1d, 90s. For positive ms it is the inverse of
// ParseDuration. Zero formats as "0s" and negative values get a leading '-'.
func FormatDuration(ms int64) string {
	if ms == 0 {
		return "0s"
	}
	for _, u := range formatUnits {
		if ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.name
		}
	}
	panic("unreachable") // the last unit is 1ms
}
