package planner

import (
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/window"
)

// cumulateSpec fills spec for CUMULATE(ts, step, size): windows [s,
// s+k*step) of each size-aligned [s, s+size), as Flink's cumulating
// windows (window.Cumulate). size must be a multiple of step, and a row
// falls in up to size/step windows (bounded as HOP's).
func cumulateSpec(spec *plan.WindowSpec, step, size int64) error {
	if spec.ProcTime {
		return errf("CUMULATE", "CUMULATE needs an event-time column, not PROCTIME()")
	}
	if size%step != 0 {
		return errf("CUMULATE", "CUMULATE's max size %s is not a multiple of its step %s",
			window.FormatDuration(size), window.FormatDuration(step))
	}
	if size/step > MaxHopWindows {
		return errf("CUMULATE", "CUMULATE of max size %s in steps of %s has %d windows per max window; at most %d are allowed",
			window.FormatDuration(size), window.FormatDuration(step), size/step, MaxHopWindows)
	}
	spec.Kind, spec.Slide, spec.Size = plan.Cumulate, step, size
	return nil
}
