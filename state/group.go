package state

import (
	"errors"
	"sync"
)

// group commits concurrent requests together (group commit): a caller whose
// request finds no group running runs one over every request queued by then
// (its own first); the others wait, and the first of those still queued
// when a group ends runs the next. One Badger transaction and one sync then
// serve many callers: a thousand queries checkpointing every second each
// made a transaction and two syncs of their own, more than the disk could
// take (their checkpoints timed out).
//
// Every request of a group gets the group's error. run is called by one
// goroutine at a time.
type group[R any] struct {
	run     func(reqs []R) error
	mu      sync.Mutex
	queue   []*groupReq[R]
	running bool
	// queued, when set, is called with the number of requests waiting
	// whenever one queues behind a running group (tests).
	queued func(n int)
}

type groupReq[R any] struct {
	req  R
	err  error
	done bool
	// wake gets one send: the request is done, or its caller runs the next
	// group.
	wake chan struct{}
}

// errGroupPanicked is what a group's other requests get when run panicked.
var errGroupPanicked = errors.New("state: the group commit carrying this write panicked")

// do commits req with whatever else is queued and returns the group's error.
func (g *group[R]) do(req R) error {
	r := &groupReq[R]{req: req, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, r)
	lead := !g.running
	g.running = true
	n := len(g.queue)
	g.mu.Unlock()
	if !lead {
		if g.queued != nil {
			g.queued(n)
		}
		<-r.wake
		if r.done {
			return r.err
		}
	}
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()
	reqs := make([]R, len(batch))
	for i, b := range batch {
		reqs[i] = b.req
	}
	err := errGroupPanicked
	defer func() {
		// Also when run panicked: the others are answered and the next
		// group runs, while the panic goes on up this caller's stack.
		for _, b := range batch {
			b.err, b.done = err, true
			if b != r {
				b.wake <- struct{}{}
			}
		}
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		next := g.queue[0]
		g.mu.Unlock()
		next.wake <- struct{}{}
	}()
	err = g.run(reqs)
	return err
}
