package window

import (
	"fmt"
	"math"
	"sort"
)

// Window is the half-open event-time interval [Start, End), in milliseconds
// since the Unix epoch. An End of math.MaxInt64 is saturated and means
// "unbounded above".
type Window struct{ Start, End int64 }

// Contains reports whether ts lies in [w.Start, w.End). A saturated End
// (math.MaxInt64) is unbounded, so it contains math.MaxInt64 as well.
func (w Window) Contains(ts int64) bool {
	return w.Start <= ts && before(ts, w.End)
}

// before reports ts < end, treating a saturated end (math.MaxInt64) as +inf.
func before(ts, end int64) bool {
	return ts < end || end == math.MaxInt64
}

// SatAdd returns a+b, clamped to [math.MinInt64, math.MaxInt64].
func SatAdd(a, b int64) int64 {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}

// SatSub returns a-b, clamped to [math.MinInt64, math.MaxInt64].
func SatSub(a, b int64) int64 {
	s := a - b
	if b > 0 && s > a {
		return math.MinInt64
	}
	if b < 0 && s < a {
		return math.MaxInt64
	}
	return s
}

// floorMod returns a mod n in [0, n) for n > 0 (a - floor(a/n)*n).
func floorMod(a, n int64) int64 {
	m := a % n
	if m < 0 {
		m += n
	}
	return m
}

func mustPositive(what string, v int64) {
	if v <= 0 {
		panic(fmt.Sprintf("window: %s must be positive, got %d", what, v))
	}
}

// Tumble returns the tumbling window of the given size that contains ts:
// [floor(ts/size)*size, that+size). It panics if size <= 0.
func Tumble(ts, size int64) Window {
	mustPositive("tumble size", size)
	d := floorMod(ts, size)
	// The true bounds are ts-d and ts-d+size; compute both from ts so that
	// clipping one does not disturb the other.
	return Window{Start: SatSub(ts, d), End: SatAdd(ts, size-d)}
}

// Hop appends to buf every hopping window of the given slide and size that
// contains ts, ascending by Start, and returns it. Windows start at the
// multiples of slide and are size long. slide may exceed size (then some ts
// fall in no window) and need not divide size. Hop(ts, n, n, nil) is
// [Tumble(ts, n)]. It panics if slide or size is not positive.
//
// A row falls in up to ceil(size/slide) windows; bounding that ratio is the
// caller's business.
func Hop(ts, slide, size int64, buf []Window) []Window {
	mustPositive("hop slide", slide)
	mustPositive("hop size", size)
	// The latest start at or before ts is ts-d. Starts ts-d-j*slide (j >= 0)
	// contain ts while d+j*slide < size.
	d := floorMod(ts, slide)
	if d >= size {
		return buf
	}
	n := (size-d-1)/slide + 1 // no overflow: size-d-1 >= 0
	for j := n - 1; j >= 0; j-- {
		off := d + j*slide // <= size-1: no overflow
		buf = append(buf, Window{Start: SatSub(ts, off), End: SatAdd(ts, size-off)})
	}
	return buf
}

// InsertSession adds a row at ts to one key's sessions.
//
// sessions must be sorted by Start and non-overlapping (each session ends at
// or before the next one starts). A session is [first, last+gap). The row
// forms [ts, ts+gap) and merges with every session it overlaps
// (ts < s.End && s.Start < ts+gap); that can bridge several sessions into
// one. Touching is not overlapping: a row at ts == s.End starts a new
// session, and so does a row with ts+gap == s.Start.
//
// It returns the new sorted list, the session the row ends up in (merged),
// and absorbed: the old sessions that no longer exist because merged replaced
// them. The caller deletes each absorbed session's result and folds its
// state into merged's. merged is never in absorbed: when the row falls inside
// an existing session without changing it, merged is that session and
// absorbed is empty; otherwise merged is a window that was not in sessions.
// So the caller's step is always: load state at merged (possibly empty),
// fold in and delete every absorbed session, add the row.
//
// sessions is not modified, and neither out nor absorbed shares its backing
// array: a caller may compute the insertion, find the row late for merged
// (Late(merged, ...)), and keep using sessions as if nothing happened.
// absorbed is nil when empty. It panics if gap <= 0.
func InsertSession(sessions []Window, ts, gap int64) (out []Window, merged Window, absorbed []Window) {
	merged, i, j := SessionSpan(sessions, ts, gap)
	if j == i+1 && merged == sessions[i] {
		// Inside an existing session, which does not change.
		out = make([]Window, len(sessions))
		copy(out, sessions)
		return out, merged, nil
	}
	if j > i {
		absorbed = make([]Window, j-i)
		copy(absorbed, sessions[i:j])
	}
	out = make([]Window, 0, len(sessions)-(j-i)+1)
	out = append(out, sessions[:i]...)
	out = append(out, merged)
	out = append(out, sessions[j:]...)
	return out, merged, absorbed
}

// SessionSpan is InsertSession without allocating: the session a row at ts
// ends up in (merged) and the sessions it absorbs, sessions[i:j] (empty
// when i == j: merged is new and goes at index i). When the row falls
// inside an existing session without changing it, j == i+1 and merged ==
// sessions[i]. The caller that keeps its own sorted list replaces
// sessions[i:j] by merged (slices.Replace). It panics if gap <= 0.
func SessionSpan(sessions []Window, ts, gap int64) (merged Window, i, j int) {
	mustPositive("session gap", gap)
	merged = Window{Start: ts, End: SatAdd(ts, gap)}
	// Ends ascend, so the sessions with ts < End are a suffix; of those, the
	// ones with Start < merged.End are a prefix of that suffix.
	i = sort.Search(len(sessions), func(k int) bool { return before(ts, sessions[k].End) })
	j = i
	for j < len(sessions) && before(sessions[j].Start, merged.End) {
		j++
	}
	if j > i {
		merged.Start = min(merged.Start, sessions[i].Start)
		merged.End = max(merged.End, sessions[j-1].End)
	}
	return merged, i, j
}

// Late reports whether window w is done at watermark wm:
// w.End + allowedLateness <= wm (saturating). A row is late for w when this
// holds for the watermark of the rows before it; w is closed (its final
// result may be emitted and its state purged) under the same condition.
// Nothing is late at NoWatermark; everything is at math.MaxInt64.
func Late(w Window, allowedLateness, wm int64) bool {
	if wm == NoWatermark {
		return false
	}
	return SatAdd(w.End, allowedLateness) <= wm
}

// HoldBack is watermark wm held back by allowedLateness: what an
// operator forwards when it emits rows once the watermark is that far
// past them (a window closed on its end + lateness), so that no row it
// emits later is behind what it forwarded. NoWatermark stays so.
func HoldBack(wm, allowedLateness int64) int64 {
	if wm == NoWatermark || wm < NoWatermark+allowedLateness {
		return NoWatermark
	}
	return wm - allowedLateness
}
