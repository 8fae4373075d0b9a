package window

// Cumulating windows (CUMULATE(ts, step, size), as Flink's): the
// size-aligned tumbling window [s, s+size) that contains ts (its "max
// window", Tumble(ts, size)) is cut into size/step panes of step each, and
// its cumulative windows are [s, s+k*step) for k = 1..size/step, all
// starting at s. A row in pane k (s+(k-1)*step <= ts < s+k*step) falls in
// windows k..size/step. size must be a multiple of step.

// CumulatePane returns the max window that contains ts and the 1-based
// index of ts's pane in it: ts falls in the cumulative windows [max.Start,
// CumulateEnd(max.Start, step, j)) for j = pane..size/step. It panics if
// step or size is not positive or size is not a multiple of step.
func CumulatePane(ts, step, size int64) (max Window, pane int) {
	mustCumulate(step, size)
	max = Tumble(ts, size)
	// ts-Start < size: no overflow. A clipped Start (ts near MinInt64) is
	// not the true start; the pane still counts from it, within range.
	return max, int((ts-max.Start)/step) + 1
}

// CumulateEnd is the end of the k-th cumulative window of the max window
// starting at start: start + k*step (saturating).
func CumulateEnd(start, step int64, k int) int64 {
	return SatAdd(start, step*int64(k))
}

// Cumulate appends to buf every cumulative window of the given step and
// size that contains ts, ascending by End, and returns it.
// Cumulate(ts, n, n, nil) is [Tumble(ts, n)]. It panics as CumulatePane.
func Cumulate(ts, step, size int64, buf []Window) []Window {
	max, pane := CumulatePane(ts, step, size)
	for k := pane; k <= int(size/step); k++ {
		buf = append(buf, Window{Start: max.Start, End: CumulateEnd(max.Start, step, k)})
	}
	return buf
}

func mustCumulate(step, size int64) {
	mustPositive("cumulate step", step)
	mustPositive("cumulate size", size)
	if size%step != 0 {
		panic("window: cumulate size must be a multiple of its step")
	}
}
