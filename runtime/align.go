package runtime

import "fmt"

// aligner is the barrier alignment of a task with several inputs: once
// barrier n arrives on an input, that input is blocked until barrier n has
// arrived on every input that has not ended; then the barrier is complete.
// It is pure: the task loop feeds it and asks which inputs it may read.
type aligner struct {
	n       int
	blocked []bool
	ended   []bool
	arrived int
	pending Barrier
	active  bool
}

func newAligner(n int) *aligner {
	return &aligner{n: n, blocked: make([]bool, n), ended: make([]bool, n)}
}

// Aligning reports whether a barrier has arrived on some input and not yet
// on all of them.
func (a *aligner) Aligning() bool { return a.active }

// Blocked reports whether input i must not be read now.
func (a *aligner) Blocked(i int) bool { return a.blocked[i] }

// Arrive records barrier b on input in. It returns the merged barrier and
// true when b has now arrived on every live input.
func (a *aligner) Arrive(in int, b Barrier) (Barrier, bool, error) {
	if a.blocked[in] {
		return Barrier{}, false, fmt.Errorf("barrier %d on input %d while it is blocked", b.Epoch, in)
	}
	if !a.active {
		a.active, a.pending, a.arrived = true, b, 0
	} else if b.Epoch != a.pending.Epoch {
		return Barrier{}, false, fmt.Errorf("barrier %d on input %d while aligning barrier %d", b.Epoch, in, a.pending.Epoch)
	}
	a.pending.Flush = a.pending.Flush || b.Flush
	a.blocked[in] = true
	a.arrived++
	return a.complete()
}

// End records that input in has ended; a barrier being aligned may
// complete without it.
func (a *aligner) End(in int) (Barrier, bool, error) {
	a.ended[in] = true
	if a.blocked[in] {
		a.blocked[in] = false
		a.arrived--
	}
	if !a.active {
		return Barrier{}, false, nil
	}
	return a.complete()
}

// AllEnded reports whether every input has ended.
func (a *aligner) AllEnded() bool {
	for _, e := range a.ended {
		if !e {
			return false
		}
	}
	return true
}

func (a *aligner) complete() (Barrier, bool, error) {
	live := 0
	for _, e := range a.ended {
		if !e {
			live++
		}
	}
	if a.arrived < live {
		return Barrier{}, false, nil
	}
	for i := range a.blocked {
		a.blocked[i] = false
	}
	a.active = false
	return a.pending, true, nil
}
