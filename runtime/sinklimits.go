package runtime

import "time"

// SinkLimits bound a query's external sink: the journaled epochs not yet
// committed to the external system (epochs and bytes: an exactly_once sink
// subtask waits for room at a checkpoint beyond them) and the longest wait
// between attempts while the external system fails. A zero field takes its
// default (300 epochs, 1 GiB, 5 s). Tests set small ones through
// StartOptions.SinkLimits (queries.Config.SinkLimits).
type SinkLimits struct {
	MaxPendingEpochs int
	MaxPendingBytes  int64
	BackoffMax       time.Duration
}

// SinkLimits' defaults, and the first wait between attempts.
const (
	defaultMaxPendingEpochs       = 300
	defaultMaxPendingBytes  int64 = 1 << 30
	defaultSinkBackoffMax         = 5 * time.Second
	sinkBackoffMin                = 100 * time.Millisecond
)

// orDefaults returns l with every zero field set to its default.
func (l SinkLimits) orDefaults() SinkLimits {
	if l.MaxPendingEpochs == 0 {
		l.MaxPendingEpochs = defaultMaxPendingEpochs
	}
	if l.MaxPendingBytes == 0 {
		l.MaxPendingBytes = defaultMaxPendingBytes
	}
	if l.BackoffMax == 0 {
		l.BackoffMax = defaultSinkBackoffMax
	}
	return l
}
