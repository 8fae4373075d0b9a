package window

import (
	"math"
	"slices"
	"strings"
	"testing"
)

const (
	maxI = math.MaxInt64
	minI = math.MinInt64
)

func TestContains(t *testing.T) {
	tests := []struct {
		w    Window
		ts   int64
		want bool
	}{
		{Window{0, 10}, 0, true},    // ts = start
		{Window{0, 10}, 9, true},    // ts = end-1
		{Window{0, 10}, 10, false},  // ts = end
		{Window{0, 10}, -1, false},  // before start
		{Window{-10, 0}, -10, true}, // negative start
		{Window{-10, 0}, -1, true},  // negative end-1
		{Window{-10, 0}, 0, false},  // negative window, ts = end
		{Window{5, 6}, 5, true},     // 1ms window
		{Window{5, 6}, 6, false},    // 1ms window, ts = end
		{Window{minI, minI + 1}, minI, true},
		{Window{minI, minI + 1}, minI + 1, false},
		{Window{maxI - 10, maxI}, maxI - 1, true},
		{Window{maxI - 10, maxI}, maxI, true}, // saturated end is unbounded
		{Window{maxI, maxI}, maxI, true},
		{Window{maxI - 10, maxI - 1}, maxI - 1, false}, // ordinary end
	}
	for _, tt := range tests {
		if got := tt.w.Contains(tt.ts); got != tt.want {
			t.Errorf("%v.Contains(%d) = %v, want %v", tt.w, tt.ts, got, tt.want)
		}
	}
}

func TestTumble(t *testing.T) {
	tests := []struct {
		ts, size int64
		want     Window
	}{
		{0, 10, Window{0, 10}},      // ts = start
		{9, 10, Window{0, 10}},      // ts = end-1
		{10, 10, Window{10, 20}},    // ts = end: next window
		{-1, 10, Window{-10, 0}},    // floor, not truncation
		{-10, 10, Window{-10, 0}},   // negative start
		{-11, 10, Window{-20, -10}}, // negative, end-1 of the previous window
		{-9, 10, Window{-10, 0}},    // truncation would give [0, 10)
		{5, 1, Window{5, 6}},        // 1ms
		{-5, 1, Window{-5, -4}},     // 1ms negative
		{0, 1, Window{0, 1}},        // 1ms at epoch
		{1_700_000_012_345, 10_000, Window{1_700_000_010_000, 1_700_000_020_000}},
		{1_700_000_012_345, 86_400_000, Window{1_699_920_000_000, 1_700_006_400_000}},
		{maxI, 10, Window{maxI - 7, maxI}},          // end saturates
		{maxI - 7, 10, Window{maxI - 7, maxI}},      // start of the top window
		{maxI - 8, 10, Window{maxI - 17, maxI - 7}}, // end-1 of the one below
		{maxI, 1, Window{maxI, maxI}},               // degenerate, saturated
		{minI, 10, Window{minI, minI + 8}},          // start saturates
		{minI + 7, 10, Window{minI, minI + 8}},      // same (clipped) window
		{minI + 8, 10, Window{minI + 8, minI + 18}},
		{minI, 1, Window{minI, minI + 1}},
		{0, maxI, Window{0, maxI}},
		{-1, maxI, Window{minI + 1, 0}},
		{minI, maxI, Window{minI, minI + 1}},
		{maxI, maxI, Window{maxI, maxI}},
	}
	for _, tt := range tests {
		got := Tumble(tt.ts, tt.size)
		if got != tt.want {
			t.Errorf("Tumble(%d, %d) = %v, want %v", tt.ts, tt.size, got, tt.want)
		}
		if !got.Contains(tt.ts) {
			t.Errorf("Tumble(%d, %d) = %v does not contain ts", tt.ts, tt.size, got)
		}
	}
}

func TestHop(t *testing.T) {
	w := func(s, e int64) Window { return Window{s, e} }
	tests := []struct {
		name            string
		ts, slide, size int64
		want            []Window
	}{
		{"start", 0, 5, 10, []Window{w(-5, 5), w(0, 10)}},
		{"end-1", 4, 5, 10, []Window{w(-5, 5), w(0, 10)}},
		{"end", 5, 5, 10, []Window{w(0, 10), w(5, 15)}},
		{"negative", -1, 5, 10, []Window{w(-10, 0), w(-5, 5)}},
		{"negative boundary", -5, 5, 10, []Window{w(-10, 0), w(-5, 5)}},
		{"negative boundary-1", -6, 5, 10, []Window{w(-15, -5), w(-10, 0)}},
		{"slide not dividing size", 0, 3, 10, []Window{w(-9, 1), w(-6, 4), w(-3, 7), w(0, 10)}},
		{"slide not dividing size 2", 7, 3, 10, []Window{w(0, 10), w(3, 13), w(6, 16)}},
		{"slide not dividing size neg", -1, 3, 10, []Window{w(-9, 1), w(-6, 4), w(-3, 7)}},
		{"slide > size in window", 0, 10, 5, []Window{w(0, 5)}},
		{"slide > size end-1", 4, 10, 5, []Window{w(0, 5)}},
		{"slide > size gap", 5, 10, 5, nil},
		{"slide > size gap end", 9, 10, 5, nil},
		{"slide > size next", 10, 10, 5, []Window{w(10, 15)}},
		{"slide > size negative", -6, 10, 5, []Window{w(-10, -5)}},
		{"slide > size negative gap", -5, 10, 5, nil},
		{"slide > size negative gap 2", -1, 10, 5, nil},
		{"1ms", 7, 1, 1, []Window{w(7, 8)}},
		{"1ms slide", 7, 1, 3, []Window{w(5, 8), w(6, 9), w(7, 10)}},
		{"slide = size is tumble", -3, 7, 7, []Window{w(-7, 0)}},
		{"max", maxI, 5, 10, []Window{w(maxI-7, maxI), w(maxI-2, maxI)}},
		{"max-3", maxI - 3, 5, 10, []Window{w(maxI-12, maxI-2), w(maxI-7, maxI)}},
		{"max-8", maxI - 8, 5, 10, []Window{w(maxI-17, maxI-7), w(maxI-12, maxI-2)}},
		{"min", minI, 5, 10, []Window{w(minI, minI+3), w(minI, minI+8)}},
		{"min+3", minI + 3, 5, 10, []Window{w(minI, minI+8), w(minI+3, minI+13)}},
		{"huge size", 0, 1 << 62, maxI, []Window{w(-(1 << 62), maxI-(1<<62)), w(0, maxI)}},
		{"huge size min", minI, 1 << 62, maxI, []Window{w(minI, minI+(1<<62)-1), w(minI, -1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Hop(tt.ts, tt.slide, tt.size, nil)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Hop(%d, %d, %d) = %v, want %v", tt.ts, tt.slide, tt.size, got, tt.want)
			}
			for _, g := range got {
				if !g.Contains(tt.ts) {
					t.Errorf("window %v does not contain %d", g, tt.ts)
				}
			}
		})
	}
}

func TestHopAppendsToBuf(t *testing.T) {
	buf := make([]Window, 0, 8)
	buf = append(buf, Window{1, 2})
	got := Hop(0, 5, 10, buf)
	want := []Window{{1, 2}, {-5, 5}, {0, 10}}
	if !slices.Equal(got, want) {
		t.Fatalf("Hop with buf = %v, want %v", got, want)
	}
	if &got[0] != &buf[0] {
		t.Errorf("Hop reallocated a buffer with enough capacity")
	}
	// Reuse, as a caller would per row.
	got = Hop(5, 10, 5, got[:0])
	if len(got) != 0 {
		t.Errorf("Hop in a gap = %v, want none", got)
	}
}

func TestNonPositivePanics(t *testing.T) {
	cases := map[string]func(){
		"tumble 0":      func() { Tumble(1, 0) },
		"tumble -1":     func() { Tumble(1, -1) },
		"hop slide 0":   func() { Hop(1, 0, 10, nil) },
		"hop size 0":    func() { Hop(1, 10, 0, nil) },
		"hop size -5":   func() { Hop(1, 10, -5, nil) },
		"session gap 0": func() { InsertSession(nil, 1, 0) },
		"session gap -": func() { InsertSession(nil, 1, -3) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if s, _ := r.(string); !strings.Contains(s, "must be positive") {
					t.Errorf("panic %v does not say what is wrong", r)
				}
			}()
			f()
		})
	}
}

func TestLate(t *testing.T) {
	tests := []struct {
		w        Window
		lateness int64
		wm       int64
		want     bool
	}{
		{Window{0, 10}, 0, NoWatermark, false},
		{Window{0, 10}, 0, 9, false},
		{Window{0, 10}, 0, 10, true}, // end <= wm
		{Window{0, 10}, 0, 11, true},
		{Window{0, 10}, 5, 14, false},
		{Window{0, 10}, 5, 15, true},
		{Window{-20, -10}, 0, -11, false},
		{Window{-20, -10}, 0, -10, true},
		{Window{-20, -10}, 3, -8, false},
		{Window{-20, -10}, 3, -7, true},
		{Window{minI, minI + 1}, 0, NoWatermark, false}, // nothing is late before any row
		{Window{minI, minI + 1}, 0, minI + 1, true},
		{Window{0, 10}, maxI, maxI - 1, false}, // end+lateness saturates
		{Window{0, 10}, maxI, maxI, true},      // the end-of-input watermark closes everything
		{Window{maxI - 5, maxI}, 0, maxI - 1, false},
		{Window{maxI - 5, maxI}, 10, maxI, true},
		{Window{maxI, maxI}, 0, maxI, true},
	}
	for _, tt := range tests {
		if got := Late(tt.w, tt.lateness, tt.wm); got != tt.want {
			t.Errorf("Late(%v, %d, %d) = %v, want %v", tt.w, tt.lateness, tt.wm, got, tt.want)
		}
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	add := []struct{ a, b, want int64 }{
		{1, 2, 3}, {maxI, 1, maxI}, {maxI - 1, 1, maxI}, {maxI, maxI, maxI},
		{minI, -1, minI}, {minI, minI, minI}, {minI, maxI, -1}, {maxI, minI, -1},
		{-5, 3, -2},
	}
	for _, tt := range add {
		if got := SatAdd(tt.a, tt.b); got != tt.want {
			t.Errorf("SatAdd(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	sub := []struct{ a, b, want int64 }{
		{1, 2, -1}, {minI, 1, minI}, {minI + 1, 1, minI}, {maxI, -1, maxI},
		{0, minI, maxI}, {-1, minI, maxI}, {-2, maxI, minI}, {maxI, maxI, 0}, {minI, minI, 0},
	}
	for _, tt := range sub {
		if got := SatSub(tt.a, tt.b); got != tt.want {
			t.Errorf("SatSub(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestNearTheTimeRange: windows, sessions, lateness and watermarks of
// event times at the ends of the TIMESTAMP range (0001-01-01 to
// 9999-12-31, what ingest accepts) with durations up to the range's span
// (what the planner accepts) do not overflow: ends stay above starts and
// past the times they contain.
func TestNearTheTimeRange(t *testing.T) {
	const (
		minTime int64 = -62135596800000 // 0001-01-01T00:00:00.000Z
		maxTime int64 = 253402300799999 // 9999-12-31T23:59:59.999Z
		span          = maxTime - minTime + 1
		day     int64 = 86400000
	)
	if w := Tumble(maxTime, day); w.Start != maxTime+1-day || w.End != maxTime+1 {
		t.Errorf("TUMBLE(9999-12-31T23:59:59.999, 1d) = %v", w)
	}
	for _, ts := range []int64{minTime, minTime + 1, -1, 0, maxTime - 1, maxTime} {
		for _, size := range []int64{1, day, span} {
			if w := Tumble(ts, size); !w.Contains(ts) || w.End-w.Start != size {
				t.Errorf("TUMBLE(%d, %d) = %v", ts, size, w)
			}
			for _, w := range Hop(ts, max(size/3, 1), size, nil) {
				if !w.Contains(ts) || w.End-w.Start != size {
					t.Errorf("HOP(%d, %d, %d) has %v", ts, max(size/3, 1), size, w)
				}
			}
			_, s, _ := InsertSession(nil, ts, size)
			if s.Start != ts || s.End != ts+size {
				t.Errorf("session of %d, gap %d: %v", ts, size, s)
			}
			if Late(Window{ts, ts + size}, span, ts) || !Late(Window{ts - size, ts}, 0, ts) {
				t.Errorf("lateness of windows at %d, size %d", ts, size)
			}
			tr := NewTracker(span)
			tr.Observe(ts)
			if wm := tr.Watermark(); wm != ts-span {
				t.Errorf("watermark of %d with delay %d: %d", ts, span, wm)
			}
		}
	}
}

func TestHoldBack(t *testing.T) {
	for _, c := range []struct{ wm, lateness, want int64 }{
		{NoWatermark, 0, NoWatermark},
		{NoWatermark, 5, NoWatermark},
		{100, 0, 100},
		{100, 30, 70},
		{-100, 30, -130},
		{NoWatermark + 10, 30, NoWatermark}, // would pass below NoWatermark
		{NoWatermark + 30, 30, NoWatermark},
		{NoWatermark + 31, 30, NoWatermark + 1},
		{maxI, 1000, maxI - 1000},
	} {
		if got := HoldBack(c.wm, c.lateness); got != c.want {
			t.Errorf("HoldBack(%d, %d) = %d, want %d", c.wm, c.lateness, got, c.want)
		}
	}
}
