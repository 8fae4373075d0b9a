package window

import (
	"fmt"
	"math"
)

// NoWatermark is the watermark before any row (math.MinInt64). Nothing is
// late under it.
const NoWatermark = math.MinInt64

// Tracker is one source's (or one Kafka partition's) event-time watermark:
// the largest event time read so far minus the watermark delay, advanced in
// log order, so a replay of the same log makes the same lateness decisions.
// It is a small value type; the zero Tracker is not ready for use (use
// NewTracker).
//
// To checkpoint a Tracker, save MaxEventTime; to restore it, call
// NewTracker(delay) and Observe the saved value.
type Tracker struct {
	delay int64
	max   int64 // NoWatermark before any row
}

// NewTracker returns a Tracker with the given watermark delay (bounded
// disorder) in milliseconds. A negative delay is treated as 0: a watermark
// ahead of the rows would make rows late for their own windows.
func NewTracker(delay int64) Tracker {
	return Tracker{delay: max(delay, 0), max: NoWatermark}
}

// Observe records a row with event time ts. Call it after the row has been
// judged against Watermark (the watermark of the rows before it).
func (t *Tracker) Observe(ts int64) {
	if ts > t.max {
		t.max = ts
	}
}

// Watermark is max event time minus delay (saturating), or NoWatermark
// before any row. It never decreases.
func (t Tracker) Watermark() int64 {
	return SatSub(t.max, t.delay)
}

// MaxEventTime is the largest event time observed, or NoWatermark before any
// row.
func (t Tracker) MaxEventTime() int64 { return t.max }

// Delay is the tracker's watermark delay.
func (t Tracker) Delay() int64 { return t.delay }

// Combine is an operator's watermark over its inputs: the minimum of the
// watermarks of the inputs that are not idle. When every input is idle (or
// there are none), allIdle is true and wm is the maximum over all inputs
// (as Flink does), the point the caller advances from with IdleAdvance.
// inputs and idle must have equal length; Combine panics otherwise.
//
// Combine is stateless: an input that stops being idle may pull the result
// below an earlier one, so the caller keeps its operator watermark monotone
// (max of the previous value and the new one).
func Combine(inputs []int64, idle []bool) (wm int64, allIdle bool) {
	if len(inputs) != len(idle) {
		panic(fmt.Sprintf("window.Combine: %d inputs but %d idle flags", len(inputs), len(idle)))
	}
	lo, hi := int64(math.MaxInt64), int64(NoWatermark)
	active := false
	for i, w := range inputs {
		hi = max(hi, w)
		if !idle[i] {
			active = true
			lo = min(lo, w)
		}
	}
	if !active {
		return hi, true
	}
	return lo, false
}

// Idle reports whether an input whose last row arrived at lastRowAt (wall
// clock, ms; for an input that never had a row, when it started) is idle at
// now: now - lastRowAt >= timeout. A timeout <= 0 means never idle.
func Idle(lastRowAt, now, timeout int64) bool {
	if timeout <= 0 {
		return false
	}
	return SatSub(now, lastRowAt) >= timeout
}

// IdleAdvance is the watermark of an operator all of whose inputs have been
// idle since idleSince (wall clock, ms) and whose watermark stood at from
// then: from + (now - idleSince), saturating, never below from. A watermark
// that never started (NoWatermark) does not advance: there is no event time
// to advance from.
func IdleAdvance(from, idleSince, now int64) int64 {
	if from == NoWatermark {
		return NoWatermark
	}
	elapsed := SatSub(now, idleSince)
	if elapsed <= 0 {
		return from
	}
	return SatAdd(from, elapsed)
}
