package runtime

import (
	"fmt"

	"github.com/streamsql/streamsql/runtime/op"
)

// aligner is the barrier alignment of a task with several inputs: once
// barrier n arrives on an input, that input is blocked until barrier n has
// arrived on every input; then the barrier is complete.
// It is pure: the task loop feeds it and asks which inputs it may read.
type aligner struct {
	n       int
	blocked []bool
	arrived int
	pending op.Barrier
	active  bool
}

func newAligner(n int) *aligner {
	return &aligner{n: n, blocked: make([]bool, n)}
}

// Aligning reports whether a barrier has arrived on some input and not yet
// on all of them.
func (a *aligner) Aligning() bool { return a.active }

// Blocked reports whether input i must not be read now.
func (a *aligner) Blocked(i int) bool { return a.blocked[i] }

// Arrive records barrier b on input in. It returns the merged barrier and
// true when b has now arrived on every input.
func (a *aligner) Arrive(in int, b op.Barrier) (op.Barrier, bool, error) {
	if a.blocked[in] {
		return op.Barrier{}, false, fmt.Errorf("barrier %d on input %d while it is blocked", b.Epoch, in)
	}
	if !a.active {
		a.active, a.pending, a.arrived = true, b, 0
	} else if b.Epoch != a.pending.Epoch {
		return op.Barrier{}, false, fmt.Errorf("barrier %d on input %d while aligning barrier %d", b.Epoch, in, a.pending.Epoch)
	}
	a.pending.Flush = a.pending.Flush || b.Flush
	a.blocked[in] = true
	a.arrived++
	return a.complete()
}

func (a *aligner) complete() (op.Barrier, bool, error) {
	if a.arrived < a.n {
		return op.Barrier{}, false, nil
	}
	for i := range a.blocked {
		a.blocked[i] = false
	}
	a.active = false
	return a.pending, true, nil
}
