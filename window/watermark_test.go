package window

import "testing"

func TestTracker(t *testing.T) {
	tr := NewTracker(5)
	if got := tr.Watermark(); got != NoWatermark {
		t.Fatalf("watermark before any row = %d, want NoWatermark", got)
	}
	if got := tr.MaxEventTime(); got != NoWatermark {
		t.Fatalf("max event time before any row = %d, want NoWatermark", got)
	}
	steps := []struct{ ts, want int64 }{
		{100, 95},
		{50, 95}, // out of order: no change
		{100, 95},
		{101, 96},
		{200, 195},
		{-1000, 195},
	}
	for _, s := range steps {
		tr.Observe(s.ts)
		if got := tr.Watermark(); got != s.want {
			t.Fatalf("after Observe(%d): watermark %d, want %d", s.ts, got, s.want)
		}
	}
	if tr.MaxEventTime() != 200 || tr.Delay() != 5 {
		t.Errorf("MaxEventTime, Delay = %d, %d; want 200, 5", tr.MaxEventTime(), tr.Delay())
	}

	// Restore from a checkpoint.
	re := NewTracker(tr.Delay())
	re.Observe(tr.MaxEventTime())
	if re != tr {
		t.Errorf("restored tracker %+v != %+v", re, tr)
	}

	// Negative rows and a zero delay.
	z := NewTracker(0)
	z.Observe(-7)
	if got := z.Watermark(); got != -7 {
		t.Errorf("zero delay: watermark %d, want -7", got)
	}

	// Negative delay is treated as zero.
	n := NewTracker(-10)
	n.Observe(3)
	if got := n.Watermark(); got != 3 {
		t.Errorf("negative delay: watermark %d, want 3", got)
	}

	// Saturation at the extremes.
	lo := NewTracker(10)
	lo.Observe(minI + 5)
	if got := lo.Watermark(); got != minI {
		t.Errorf("min+5 - 10 = %d, want saturated %d", got, int64(minI))
	}
	huge := NewTracker(maxI)
	huge.Observe(0)
	if got := huge.Watermark(); got != minI+1 {
		t.Errorf("0 - MaxInt64 = %d, want %d", got, int64(minI+1))
	}
	top := NewTracker(0)
	top.Observe(maxI)
	if got := top.Watermark(); got != maxI {
		t.Errorf("max - 0 = %d, want %d", got, int64(maxI))
	}
}

func TestCombine(t *testing.T) {
	tests := []struct {
		name    string
		inputs  []int64
		idle    []bool
		wm      int64
		allIdle bool
	}{
		{"no inputs", nil, nil, NoWatermark, true},
		{"one", []int64{5}, []bool{false}, 5, false},
		{"min", []int64{5, 3, 9}, []bool{false, false, false}, 3, false},
		{"idle ignored", []int64{5, 3, 9}, []bool{false, true, false}, 5, false},
		{"only active counts", []int64{5, 3, 9}, []bool{true, true, false}, 9, false},
		{"all idle: max", []int64{5, 3, 9}, []bool{true, true, true}, 9, true},
		{"one idle", []int64{5}, []bool{true}, 5, true},
		{"unstarted input holds back", []int64{NoWatermark, 7}, []bool{false, false}, NoWatermark, false},
		{"unstarted idle input ignored", []int64{NoWatermark, 7}, []bool{true, false}, 7, false},
		{"all idle, none started", []int64{NoWatermark, NoWatermark}, []bool{true, true}, NoWatermark, true},
		{"negative", []int64{-5, -3}, []bool{false, false}, -5, false},
		{"extremes", []int64{maxI, minI + 1}, []bool{false, false}, minI + 1, false},
	}
	for _, tt := range tests {
		wm, all := Combine(tt.inputs, tt.idle)
		if wm != tt.wm || all != tt.allIdle {
			t.Errorf("%s: Combine(%v, %v) = %d, %v; want %d, %v", tt.name, tt.inputs, tt.idle, wm, all, tt.wm, tt.allIdle)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Combine with mismatched lengths did not panic")
		}
	}()
	Combine([]int64{1, 2}, []bool{false})
}

func TestIdle(t *testing.T) {
	tests := []struct {
		last, now, timeout int64
		want               bool
	}{
		{100, 104, 5, false},
		{100, 105, 5, true}, // exactly the timeout
		{100, 1000, 5, true},
		{100, 1000, 0, false}, // off
		{100, 1000, -1, false},
		{100, 50, 5, false}, // clock went backwards
		{minI, maxI, 5, true},
		{maxI, minI, 5, false},
		{0, maxI, maxI, true},
	}
	for _, tt := range tests {
		if got := Idle(tt.last, tt.now, tt.timeout); got != tt.want {
			t.Errorf("Idle(%d, %d, %d) = %v, want %v", tt.last, tt.now, tt.timeout, got, tt.want)
		}
	}
}

func TestIdleAdvance(t *testing.T) {
	tests := []struct {
		from, since, now, want int64
	}{
		{100, 1000, 1000, 100},
		{100, 1000, 1500, 600},
		{100, 1000, 900, 100}, // clock went backwards: never below from
		{-100, 1000, 1050, -50},
		{NoWatermark, 1000, 5000, NoWatermark}, // nothing to advance from
		{maxI - 5, 0, 100, maxI},
		{100, minI, maxI, maxI},
		{minI + 1, 0, 1, minI + 2},
	}
	for _, tt := range tests {
		if got := IdleAdvance(tt.from, tt.since, tt.now); got != tt.want {
			t.Errorf("IdleAdvance(%d, %d, %d) = %d, want %d", tt.from, tt.since, tt.now, got, tt.want)
		}
	}
}
