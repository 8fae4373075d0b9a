package planner

import (
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// OptionNames are the per-query options of SET_VAR hints and SET.
var OptionNames = []string{"emit_mode", "parallelism", "state_ttl", "checkpoint_interval", "emit_interval", "results_retention", "delivery", "consistency"}

// deliveryValues are the values of the delivery option.
var deliveryValues = []string{plan.DeliveryExactlyOnce, plan.DeliveryAtMostOnce}

// consistencyValues are the values of the consistency setting.
var consistencyValues = []string{plan.ConsistencyCommitted, plan.ConsistencyLatest}

// MaxParallelism bounds the parallelism option.
const MaxParallelism = 64

// ApplyOptions sets opts from name=value pairs, rejecting unknown names and
// bad values with an error that names them.
func ApplyOptions(opts *plan.Options, vars []parser.SetVar, where string) error {
	for _, v := range vars {
		val := strings.TrimSpace(v.Value)
		dur := func(allowZero bool) (int64, error) {
			if allowZero && (val == "0" || val == "0s") {
				return 0, nil
			}
			d, err := value.ParseDuration(val)
			if err != nil {
				return 0, badf(v.Name, "%s %s: %v", where, v.Name, err)
			}
			return d, nil
		}
		var err error
		switch v.Name {
		case "emit_mode":
			switch strings.ToLower(val) {
			case "changes":
				opts.EmitMode = plan.EmitChanges
			case "on_window_close":
				opts.EmitMode = plan.EmitOnWindowClose
			default:
				return badf(v.Name, "%s emit_mode must be changes or on_window_close, not %q", where, val)
			}
		case "parallelism":
			p, perr := strconv.Atoi(val)
			if perr != nil || p < 1 || p > MaxParallelism {
				return badf(v.Name, "%s parallelism must be an integer from 1 to %d, not %q", where, MaxParallelism, val)
			}
			opts.Parallelism = p
		case "state_ttl":
			opts.StateTTL, err = dur(true)
		case "checkpoint_interval":
			opts.CheckpointInterval, err = dur(true)
		case "emit_interval":
			opts.EmitInterval, err = dur(false)
		case "results_retention":
			opts.ResultsRetention, err = dur(true)
		case "delivery":
			err = setDelivery(opts, val, where)
		case "consistency":
			switch c := strings.ToLower(val); c {
			case plan.ConsistencyCommitted, plan.ConsistencyLatest:
				opts.Consistency = c
			default:
				return badf(v.Name, "%s consistency must be %s, not %q%s", where, strings.Join(consistencyValues, " or "), val, didYouMean(val, consistencyValues))
			}
		default:
			return errf(v.Name, "unknown option %s in %s%s (options: %s)", v.Name, where, didYouMean(v.Name, OptionNames), strings.Join(OptionNames, ", "))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckIntervals refuses a checkpoint interval (ms; 0: checkpoints off)
// shorter than the emit interval: a checkpoint rides on a barrier, and
// barriers go out at the emit interval, so it would silently become the
// emit interval.
func CheckIntervals(checkpoint, emit int64) error {
	if checkpoint > 0 && emit > 0 && checkpoint < emit {
		return errf("checkpoint_interval", "checkpoint_interval %s is shorter than emit_interval %s: a checkpoint rides on a barrier, and barriers go out every emit_interval; set emit_interval to %s or less (SET_VAR(emit_interval='%s')), or checkpoint_interval to %s or more",
			window.FormatDuration(checkpoint), window.FormatDuration(emit), window.FormatDuration(checkpoint), window.FormatDuration(checkpoint), window.FormatDuration(emit))
	}
	return nil
}

// setDelivery sets the delivery option of built-in results: exactly_once
// (the default) or at_most_once. at_least_once is what latest reads and
// /changes already are, so it is refused with the reason.
func setDelivery(opts *plan.Options, val, where string) error {
	switch d := strings.ToLower(val); d {
	case plan.DeliveryExactlyOnce, plan.DeliveryAtMostOnce:
		opts.Delivery = d
		return nil
	case "at_least_once":
		return errf("delivery", "%s delivery='at_least_once' is not an option of built-in results: their latest reads and /changes already are at-least-once across a crash (the replay may publish a change again) and committed reads are exactly-once; delivery must be exactly_once (the default) or at_most_once (no change published twice, those since the last checkpoint lost in a crash)", where)
	}
	return errf("delivery", "%s delivery must be %s, not %q%s", where, strings.Join(deliveryValues, " or "), val, didYouMean(val, deliveryValues))
}
