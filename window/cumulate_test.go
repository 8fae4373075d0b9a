package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestCumulate(t *testing.T) {
	tests := []struct {
		ts, step, size int64
		want           []Window
	}{
		{0, 2, 6, []Window{{0, 2}, {0, 4}, {0, 6}}},   // first pane: every window
		{1, 2, 6, []Window{{0, 2}, {0, 4}, {0, 6}}},   // pane end - 1
		{2, 2, 6, []Window{{0, 4}, {0, 6}}},           // pane boundary: not in [0, 2)
		{5, 2, 6, []Window{{0, 6}}},                   // last pane: the max window only
		{6, 2, 6, []Window{{6, 8}, {6, 10}, {6, 12}}}, // the next max window
		{-1, 2, 6, []Window{{-6, 0}}},                 // negative: floor
		{-6, 2, 6, []Window{{-6, -4}, {-6, -2}, {-6, 0}}},
		{-3, 2, 6, []Window{{-6, -2}, {-6, 0}}},
		{7, 10, 10, []Window{{0, 10}}}, // step = size: TUMBLE
		{1_700_000_012_345, 3_600_000, 86_400_000, nil},
	}
	for _, tt := range tests {
		got := Cumulate(tt.ts, tt.step, tt.size, nil)
		want := tt.want
		if want == nil {
			want = naiveCumulate(tt.ts, tt.step, tt.size)
			if len(want) == 0 {
				t.Fatalf("naive: no window for %d", tt.ts)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("Cumulate(%d, %d, %d) = %v, want %v", tt.ts, tt.step, tt.size, got, want)
		}
	}
}

// naiveCumulate is the windows [s, s+k*step) with s a multiple of size
// and start <= ts < end, found by trying the max windows around ts.
func naiveCumulate(ts, step, size int64) []Window {
	var out []Window
	q := ts / size
	for s := (q - 2) * size; s <= (q+2)*size; s += size {
		for k := int64(1); k*step <= size; k++ {
			if w := (Window{s, s + k*step}); w.Contains(ts) {
				out = append(out, w)
			}
		}
	}
	return out
}

// TestCumulateMatchesNaive: random times, steps and sizes, against the
// windows found by trying every candidate.
func TestCumulateMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		step := 1 + rng.Int64N(50)
		size := step * (1 + rng.Int64N(12))
		ts := rng.Int64N(20000) - 10000
		got := Cumulate(ts, step, size, nil)
		if want := naiveCumulate(ts, step, size); !slices.Equal(got, want) {
			t.Fatalf("Cumulate(%d, %d, %d) = %v, want %v", ts, step, size, got, want)
		}
		max, pane := CumulatePane(ts, step, size)
		if max != Tumble(ts, size) || got[0].End != CumulateEnd(max.Start, step, pane) {
			t.Fatalf("CumulatePane(%d, %d, %d) = %v, %d; windows %v", ts, step, size, max, pane, got)
		}
	}
}

func TestCumulateNearTheRange(t *testing.T) {
	// Near MaxInt64 the ends saturate and every window still contains ts.
	for _, ts := range []int64{maxI, maxI - 1, minI, minI + 1} {
		for _, w := range Cumulate(ts, 3, 9, nil) {
			if !w.Contains(ts) {
				t.Errorf("Cumulate(%d, 3, 9): %v does not contain it", ts, w)
			}
		}
	}
}

func TestCumulatePanics(t *testing.T) {
	for _, c := range [][2]int64{{0, 10}, {10, 0}, {3, 10}, {-1, 10}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Cumulate(0, %d, %d) did not panic", c[0], c[1])
				}
			}()
			Cumulate(0, c[0], c[1], nil)
		}()
	}
}
