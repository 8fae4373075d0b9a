package value

import (
	"fmt"
	"strings"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// ParseTime parses the timestamp text forms streamsql accepts (RFC 3339,
// 'YYYY-MM-DD HH:MM:SS[.fff]', 'YYYY-MM-DD', and PostgreSQL's text forms:
// a space or a T, a zone offset of +hh, +hhmm, +hh:mm or +hh:mm:ss, a
// trailing " UTC"), UTC unless a zone is given,
// into epoch milliseconds. The form results are written in
// (2024-01-01T00:00:10.000Z, plan.FormatTime) is read directly, without
// the time package's cost: ingest reads it once per row. The result is
// not range-checked: callers check plan.TimeInRange where times enter.
// Constants of SQL text (the planner), CASTs (expressions), ingest rows,
// Kafka records and PostgreSQL protocol parameters all parse times here.
func ParseTime(s string) (int64, bool) {
	if ms, ok := parseCanonicalTime(s); ok {
		return ms, true
	}
	return parseTimeLayouts(s)
}

// timeLayouts are the forms of parseTimeLayouts, the common ones first.
var timeLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999Z07:00:00",
	"2006-01-02T15:04:05.999999999Z07:00:00",
}

// parseTimeLayouts is ParseTime through the time package, for every form.
func parseTimeLayouts(s string) (int64, bool) {
	s = strings.TrimSuffix(s, " UTC")
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UnixMilli(), true
		}
	}
	return 0, false
}

// parseCanonicalTime parses exactly YYYY-MM-DDTHH:MM:SS.sssZ with fields
// in range; anything else is left to the general parser.
func parseCanonicalTime(s string) (int64, bool) {
	if len(s) != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return 0, false
	}
	num := func(from, to int) (int64, bool) {
		var n int64
		for k := from; k < to; k++ {
			c := s[k]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	milli, ok7 := num(20, 23)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	dim := [13]int64{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month]
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		dim = 29
	}
	if day > dim {
		return 0, false
	}
	return ((daysFromCivil(year, month, day)*24+hour)*60+minute)*60000 + sec*1000 + milli, true
}

// daysFromCivil is the number of days from 1970-01-01 to the given
// proleptic Gregorian date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era-- // floor division
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// ParseDuration is window.ParseDuration up to the span of the TIMESTAMP
// range (3,652,059 days, about 10,000 years): a longer duration means
// nothing for event times, and refusing it keeps window bounds, watermarks
// and retention arithmetic far from int64's limits. Window sizes, options
// and table attributes are parsed here.
func ParseDuration(s string) (int64, error) {
	d, err := window.ParseDuration(s)
	if span := plan.MaxTime - plan.MinTime + 1; err == nil && d > span {
		return 0, fmt.Errorf("invalid duration %q: longer than the TIMESTAMP range %s (%s)", s, plan.TimeRange, window.FormatDuration(span))
	}
	return d, err
}
