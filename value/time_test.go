package value

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestParseTimestamp: the direct reading of the canonical form agrees with
// the general parser (the time package), in range and at every field's edges.
func TestParseTimestamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()
	for range 100000 {
		ms := lo + rng.Int64N(hi-lo+1)
		s := plan.FormatTime(ms)
		if got, ok := parseCanonicalTime(s); !ok || got != ms {
			t.Fatalf("parseCanonicalTime(%s) = %d, %v; want %d", s, got, ok, ms)
		}
	}
	for _, s := range []string{
		"2024-02-29T00:00:00.000Z", "2023-02-29T00:00:00.000Z", "1900-02-29T00:00:00.000Z", "2000-02-29T00:00:00.000Z",
		"2024-04-31T00:00:00.000Z", "2024-13-01T00:00:00.000Z", "2024-00-01T00:00:00.000Z", "2024-01-00T00:00:00.000Z",
		"2024-01-01T24:00:00.000Z", "2024-01-01T23:60:00.000Z", "2024-01-01T23:59:60.000Z", "2024-01-01t00:00:00.000Z",
		"2024-01-01T00:00:00.000z", "2024-01-01T00:00:00,000Z", "+024-01-01T00:00:00.000Z", "0000-01-01T00:00:00.000Z",
		"9999-12-31T23:59:59.999Z", "2024-01-01T00:00:00.00Z", "2024-01-01T00:00:00.0000Z", "2024-01-01T00:00:00.000+01:00",
	} {
		want, wantOK := parseTimeLayouts(s)
		if got, ok := ParseTime(s); got != want || ok != wantOK {
			t.Errorf("ParseTime(%s) = %d, %v; parseTimeLayouts: %d, %v", s, got, ok, want, wantOK)
		}
	}
}

// FuzzParseTimestamp: the direct reading of the canonical form agrees with
// the general parser (the time package).
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2024-01-01T00:00:01.000Z", "2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00.000Z", "0000-01-01T00:00:00.000Z", "2024-01-01T00:00:01Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, wantOK := parseTimeLayouts(s)
		if got, ok := ParseTime(s); got != want || ok != wantOK {
			t.Fatalf("ParseTime(%q) = %d, %v; parseTimeLayouts: %d, %v", s, got, ok, want, wantOK)
		}
	})
}

// TestParseDuration: window.ParseDuration up to the TIMESTAMP range's
// span, which is accepted; one millisecond more is refused naming it.
func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"500ms", 500}, {"10s", 10000}, {"3652059d", plan.MaxTime - plan.MinTime + 1}} {
		if got, err := ParseDuration(c.in); err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"3652059d1ms", `invalid duration "3652059d1ms": longer than the TIMESTAMP range 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (3652059d)`},
		{"106751991167d", "longer than the TIMESTAMP range"},
		{"0s", "0s"},
		{"soon", "soon"},
	} {
		if got, err := ParseDuration(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDuration(%q) = %d, %v; want an error with %q", c.in, got, err, c.want)
		}
	}
}

// TestParseTimeForms: every accepted form, zones and the layouts'
// fractions; nothing else.
func TestParseTimeForms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"2024-01-01T00:00:01.000Z", 1704067201000},
		{"2024-01-01T00:00:01Z", 1704067201000},
		{"2024-01-01T01:00:01+01:00", 1704067201000},
		{"2024-01-01 00:00:01.5", 1704067201500},
		{"2024-01-01T00:00:01.123456789", 1704067201123},
		{"2024-01-01", 1704067200000},
		{"1969-12-31T23:59:59.999Z", -1},
	} {
		if got, ok := ParseTime(c.in); !ok || got != c.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", c.in, got, ok, c.want)
		}
	}
	for _, s := range []string{"", "yesterday", "2024-01-01 00:00", "2024/01/01", "1704067201000", "2024-02-30"} {
		if got, ok := ParseTime(s); ok {
			t.Errorf("ParseTime(%q) = %d, want refused", s, got)
		}
	}
}

// TestParseTimePostgreSQLForms: the text forms PostgreSQL clients send
// (a space before the zone offset, short offsets, " UTC") read as the
// same instant as RFC 3339.
func TestParseTimePostgreSQLForms(t *testing.T) {
	want := time.Date(2024, 1, 2, 1, 4, 5, 678e6, time.UTC).UnixMilli()
	for _, s := range []string{
		"2024-01-02T01:04:05.678Z", "2024-01-02 01:04:05.678", "2024-01-02 03:04:05.678+02", "2024-01-02T03:04:05.678+0200",
		"2024-01-02 03:04:05.678+02:00", "2024-01-01 20:34:05.678-04:30", "2024-01-02 01:04:05.678 UTC", "2024-01-02 03:04:05.678+02:00:00",
	} {
		if got, ok := ParseTime(s); !ok || got != want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"2024-01-02 01:04:05 CET", "2024-01-02 01:04:05+2", "yesterday"} {
		if _, ok := ParseTime(s); ok {
			t.Errorf("ParseTime(%q) parsed", s)
		}
	}
}
