package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultStallTimeout is how long a task may work on one message (a batch,
// a watermark, a barrier) without waiting for anything before its query is
// failed as not answering (StartOptions.StallTimeout).
const DefaultStallTimeout = time.Minute

// StopTimeout bounds how long Stop waits for a job's goroutines.
const StopTimeout = 5 * time.Second

// liveness is what the coordinator sees of whether a task answers: when
// it began the message it is working on, and whether it is waiting for
// someone else meanwhile (a consumer's full queue, an external sink's
// room). A task that has worked on one message for longer than the stall
// timeout without waiting is stuck (a runaway expression, an operator
// bug): Go cannot stop its goroutine, so the job is failed with the
// reason and its other goroutines stop; the stuck one ends on its own, if
// ever, and finds the job cancelled.
//
// The task's goroutine writes it (two atomic stores a message); the
// coordinator and Status read it.
type liveness struct {
	busySince atomic.Int64 // UnixNano; 0 while the task waits for input
	waiting   atomic.Int32 // > 0 while it waits for a consumer or a sink
}

// The methods do nothing on a nil liveness (tasks built by tests).

func (l *liveness) begin(now time.Time) {
	if l != nil {
		l.busySince.Store(now.UnixNano())
	}
}

func (l *liveness) end() {
	if l != nil {
		l.busySince.Store(0)
	}
}

// stuck is how long the task has worked on its message without waiting
// (0 when it is waiting or idle).
func (l *liveness) stuck(now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	since := l.busySince.Load()
	if since == 0 || l.waiting.Load() > 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, since)), 0)
}

// wait runs fn (a blocking hand-over) as waiting, not working.
func (l *liveness) wait(fn func() error) error {
	if l == nil {
		return fn()
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	return fn()
}

// send delivers msg to in, counting the time blocked on a full queue as
// waiting (backpressure is not a stall).
func (l *liveness) send(ctx context.Context, in inbox, msg Message) error {
	if in.TrySend(msg) {
		return nil
	}
	return l.wait(func() error { return in.Send(ctx, msg) })
}

// stalled names the tasks stuck for longer than limit ("" when none).
func (j *Job) stalled(now time.Time, limit time.Duration) string {
	var out []string
	check := func(t *taskBase) {
		if d := t.live.stuck(now); d > 0 && d > limit {
			out = append(out, fmt.Sprintf("%s has worked on one message for %s", t.name, d.Round(time.Second)))
		}
	}
	for _, s := range j.sources {
		check(&s.taskBase)
	}
	for _, t := range j.tasks {
		check(&t.taskBase)
	}
	return strings.Join(out, ", ")
}

// busyTasks names the tasks that are working on a message now, and for
// how long (for the error of a job that does not stop).
func (j *Job) busyTasks(now time.Time) string {
	return j.stalled(now, -1)
}

// checkStall fails the job when a task has not answered for the stall
// timeout (the coordinator calls it at every tick).
func (j *Job) checkStall(now time.Time) {
	if j.stallTimeout <= 0 {
		return
	}
	if s := j.stalled(now, j.stallTimeout); s != "" {
		j.fail(fmt.Errorf("query %s does not answer: %s without waiting for input or output (stall timeout %s); "+
			"it is failed: drop it, or fix it and CREATE OR REPLACE it", j.Name, s, j.stallTimeout))
	}
}

// wait waits up to d for every goroutine of the job to return; the error
// names the tasks still working.
func (j *Job) wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-j.stopped:
		return nil
	case <-t.C:
	}
	busy := j.busyTasks(time.Now())
	if busy == "" {
		busy = "its tasks are blocked"
	}
	return fmt.Errorf("query %s did not stop within %s (%s); it goes on in the background and is not waited for", j.Name, d, busy)
}

// Stopped is closed once every goroutine of the job has returned.
func (j *Job) Stopped() <-chan struct{} { return j.stopped }
