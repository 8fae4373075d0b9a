package window

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// The property tests compare against naive implementations that use
// arbitrary-precision arithmetic, so they stay honest at the int64 extremes.

var (
	bigMin = big.NewInt(minI)
	bigMax = big.NewInt(maxI)
)

// clip converts x to int64, saturating.
func clip(x *big.Int) int64 {
	if x.Cmp(bigMin) < 0 {
		return minI
	}
	if x.Cmp(bigMax) > 0 {
		return maxI
	}
	return x.Int64()
}

// naiveHop enumerates the window starts k*slide for k from
// floor((ts-size)/slide) to floor(ts/slide)+1 and keeps those whose true
// window [k*slide, k*slide+size) contains ts, clipped to int64.
func naiveHop(ts, slide, size int64) []Window {
	T, S, Z := big.NewInt(ts), big.NewInt(slide), big.NewInt(size)
	lo := new(big.Int).Sub(T, Z)
	lo.Div(lo, S) // Euclidean division = floor for S > 0
	hi := new(big.Int).Div(T, S)
	hi.Add(hi, big.NewInt(1))
	var out []Window
	for k := lo; k.Cmp(hi) <= 0; k.Add(k, big.NewInt(1)) {
		start := new(big.Int).Mul(k, S)
		end := new(big.Int).Add(start, Z)
		if start.Cmp(T) <= 0 && T.Cmp(end) < 0 {
			out = append(out, Window{clip(start), clip(end)})
		}
	}
	return out
}

// randTime draws a time from a mix of ranges: near the epoch, realistic
// epoch milliseconds, anywhere, and near both extremes.
func randTime(r *rand.Rand) int64 {
	switch r.IntN(6) {
	case 0:
		return r.Int64N(2001) - 1000
	case 1:
		return r.Int64N(4_000_000_000_000) - 2_000_000_000_000
	case 2:
		return int64(r.Uint64())
	case 3:
		return maxI - r.Int64N(1000)
	case 4:
		return minI + r.Int64N(1000)
	default:
		return r.Int64N(100) * 1000 // on boundaries of round sizes
	}
}

// randSlideSize draws a positive slide and a size with size/slide <= 64, so
// the naive enumeration stays small.
func randSlideSize(r *rand.Rand) (slide, size int64) {
	switch r.IntN(5) {
	case 0:
		slide = 1 + r.Int64N(20)
	case 1:
		slide = 1 + r.Int64N(100_000)
	case 2:
		slide = []int64{1000, 5000, 60_000, 3_600_000, 86_400_000}[r.IntN(5)]
	case 3:
		slide = 1 + r.Int64N(maxI/2)
	default:
		slide = maxI - r.Int64N(10)
	}
	switch r.IntN(5) {
	case 0:
		size = slide // tumbling
	case 1:
		size = slide * (1 + r.Int64N(8)) // slide divides size
	case 2:
		size = 1 + r.Int64N(slide) // size <= slide: gaps
	default:
		size = slide + r.Int64N(slide) // slide does not divide size
	}
	if size <= 0 || size/slide > 64 { // overflowed or too many windows
		size = slide
	}
	return slide, size
}

func TestHopMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var buf []Window
	for i := 0; i < 20000; i++ {
		ts := randTime(r)
		slide, size := randSlideSize(r)
		buf = Hop(ts, slide, size, buf[:0])
		want := naiveHop(ts, slide, size)
		if !slices.Equal(buf, want) {
			t.Fatalf("Hop(%d, %d, %d) = %v, naive %v", ts, slide, size, buf, want)
		}
		for _, w := range buf {
			if !w.Contains(ts) {
				t.Fatalf("Hop(%d, %d, %d): %v does not contain ts", ts, slide, size, w)
			}
		}
		if slide == size {
			if tw := Tumble(ts, size); len(buf) != 1 || buf[0] != tw {
				t.Fatalf("Tumble(%d, %d) = %v, Hop with slide = size %v", ts, size, tw, buf)
			}
		}
		// Tumble agrees with the naive enumeration too.
		if tw, want := Tumble(ts, size), naiveHop(ts, size, size); len(want) != 1 || tw != want[0] {
			t.Fatalf("Tumble(%d, %d) = %v, naive %v", ts, size, tw, want)
		}
	}
}

// naiveSessions sorts the row times and cuts a new session wherever a row
// is not before the current session's end (a saturated end is unbounded).
func naiveSessions(times []int64, gap int64) []Window {
	ts := slices.Clone(times)
	slices.Sort(ts)
	var out []Window
	for _, t := range ts {
		end := clip(new(big.Int).Add(big.NewInt(t), big.NewInt(gap)))
		if n := len(out); n > 0 && (t < out[n-1].End || out[n-1].End == maxI) {
			out[n-1].End = max(out[n-1].End, end)
			continue
		}
		out = append(out, Window{t, end})
	}
	return out
}

func TestSessionsMatchNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 4000; iter++ {
		var gap int64
		var base, spread int64
		switch r.IntN(4) {
		case 0: // dense, lots of merging and touching
			gap, base, spread = 1+r.Int64N(10), -50, 100
		case 1:
			gap, base, spread = 1+r.Int64N(100), -2000, 4000
		case 2: // near the top: saturated ends
			gap, base, spread = 1+r.Int64N(50), maxI-200, 201
		default: // near the bottom
			gap, base, spread = 1+r.Int64N(50), minI, 200
		}
		n := 1 + r.IntN(40)
		times := make([]int64, n)
		for i := range times {
			times[i] = base + r.Int64N(spread)
		}
		var sessions []Window
		for _, ts := range times { // random order
			old := slices.Clone(sessions)
			out, merged, absorbed := InsertSession(sessions, ts, gap)
			if !slices.Equal(sessions, old) {
				t.Fatalf("InsertSession modified its input")
			}
			checkInsert(t, old, ts, out, merged, absorbed)
			if t.Failed() {
				t.Fatalf("after inserting %d (gap %d) into %v", ts, gap, old)
			}
			sessions = out
		}
		if want := naiveSessions(times, gap); !slices.Equal(sessions, want) {
			t.Fatalf("gap %d, times %v:\n incremental %v\n naive       %v", gap, times, sessions, want)
		}
	}
}

func TestTrackerMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 2000; iter++ {
		var delay int64
		switch r.IntN(4) {
		case 0:
			delay = 0
		case 1:
			delay = r.Int64N(10_000)
		case 2:
			delay = maxI - r.Int64N(10)
		default:
			delay = r.Int64N(100) - 50 // some negative: treated as 0
		}
		tr := NewTracker(delay)
		prev := tr.Watermark()
		if prev != NoWatermark {
			t.Fatalf("initial watermark %d", prev)
		}
		maxSeen := int64(NoWatermark)
		for i := 0; i < 50; i++ {
			ts := randTime(r)
			if r.IntN(3) == 0 && maxSeen != NoWatermark { // out of order near the max
				ts = maxSeen - r.Int64N(1000)
				if ts > maxSeen { // wrapped
					ts = minI
				}
			}
			tr.Observe(ts)
			maxSeen = max(maxSeen, ts)
			wm := tr.Watermark()
			if wm < prev {
				t.Fatalf("watermark went back from %d to %d after Observe(%d)", prev, wm, ts)
			}
			want := clip(new(big.Int).Sub(big.NewInt(maxSeen), big.NewInt(max(delay, 0))))
			if wm != want {
				t.Fatalf("watermark %d, want max %d - delay %d = %d", wm, maxSeen, delay, want)
			}
			prev = wm
		}
	}
}

func TestDurationRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	units := []int64{1, 1000, 60_000, 3_600_000, 86_400_000}
	for i := 0; i < 10000; i++ {
		var ms int64
		switch r.IntN(3) {
		case 0:
			ms = 1 + r.Int64N(maxI)
		case 1:
			u := units[r.IntN(len(units))]
			ms = u * (1 + r.Int64N(10_000))
		default:
			ms = 1 + r.Int64N(100_000)
		}
		s := FormatDuration(ms)
		got, err := ParseDuration(s)
		if err != nil || got != ms {
			t.Fatalf("ParseDuration(FormatDuration(%d) = %q) = %d, %v", ms, s, got, err)
		}
		// Shortest: the next larger unit would not be exact.
		for _, u := range units {
			if ms%u == 0 && len(FormatDuration(ms)) > len(formatWith(ms, u)) {
				t.Fatalf("FormatDuration(%d) = %q is not the shortest", ms, s)
			}
		}
	}
}

func formatWith(ms, unit int64) string {
	names := map[int64]string{1: "ms", 1000: "s", 60_000: "m", 3_600_000: "h", 86_400_000: "d"}
	return strconv.FormatInt(ms/unit, 10) + names[unit]
}

// FuzzParseDuration: never panics; every accepted text is positive and
// formats back to an equal duration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"500ms", "10s", "5m", "1h", "1d", "1m30s", "", "0s", "-1s", "1.5s", "9223372036854775807ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseDuration(s)
		if err != nil {
			return
		}
		if ms <= 0 {
			t.Fatalf("ParseDuration(%q) = %d", s, ms)
		}
		back, err := ParseDuration(FormatDuration(ms))
		if err != nil || back != ms {
			t.Fatalf("round trip of %q: %d -> %q -> %d, %v", s, ms, FormatDuration(ms), back, err)
		}
	})
}
