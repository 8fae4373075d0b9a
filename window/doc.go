// Package window owns the event-time arithmetic of streamsql: assigning rows
// to tumbling, hopping, cumulating and session windows, merging sessions, deciding when a
// row is late and when a window is closed, and computing watermarks (per
// source, combined over an operator's inputs, and advanced by the wall clock
// when every input is idle).
//
// The package is pure. It imports only the Go standard library, starts no
// goroutines, reads no clock and keeps no global state: every time, including
// "now", is an argument. That keeps replays deterministic and lets the
// planner and the runtime share one definition of window semantics.
//
// Conventions:
//
//   - Times and durations are int64 milliseconds; times are since the Unix
//     epoch, UTC. Negative times are valid.
//   - Windows are half-open [Start, End) and aligned to the epoch: a tumbling
//     window of size n starts at a multiple of n (floor division, so
//     Tumble(-1, 10) is [-10, 0)).
//   - Arithmetic saturates instead of wrapping. A window whose true bounds
//     lie outside the int64 range is clipped to math.MinInt64 or
//     math.MaxInt64, and an End of math.MaxInt64 stands for "unbounded", so
//     Window.Contains(math.MaxInt64) is true for it and every window that
//     Tumble or Hop returns for ts contains ts.
//   - NoWatermark (math.MinInt64) is the watermark before any row; nothing is
//     late and no window is closed under it. A watermark of math.MaxInt64
//     closes every window (the end-of-input flush).
//
// Sizes, slides and gaps must be positive; the functions that take them
// panic otherwise (the planner validates them, with ParseDuration, first).
package window
