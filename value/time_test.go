package value

import (
	"math/rand/v2"
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
