package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/runtime/op"
)

func TestAlignerTwoInputs(t *testing.T) {
	a := newAligner(2)
	if _, done, _ := a.Arrive(0, op.Barrier{Epoch: 1}); done {
		t.Fatal("complete after one of two inputs")
	}
	if !a.Blocked(0) || a.Blocked(1) {
		t.Fatal("input 0 must block, input 1 must not")
	}
	b, done, err := a.Arrive(1, op.Barrier{Epoch: 1, Flush: true})
	if err != nil || !done || b.Epoch != 1 || !b.Flush {
		t.Fatalf("got %+v %v %v", b, done, err)
	}
	if a.Blocked(0) || a.Blocked(1) {
		t.Fatal("inputs must unblock after completion")
	}
}

func TestAlignerBackToBack(t *testing.T) {
	a := newAligner(3)
	for epoch := uint64(1); epoch <= 3; epoch++ {
		for _, in := range []int{2, 0, 1} {
			_, done, err := a.Arrive(in, op.Barrier{Epoch: epoch})
			if err != nil {
				t.Fatal(err)
			}
			if done != (in == 1) {
				t.Fatalf("epoch %d input %d: done=%v", epoch, in, done)
			}
		}
	}
}

func TestAlignerMismatchAndBlocked(t *testing.T) {
	a := newAligner(2)
	a.Arrive(0, op.Barrier{Epoch: 1})
	if _, _, err := a.Arrive(0, op.Barrier{Epoch: 2}); err == nil {
		t.Fatal("a barrier on a blocked input must be an error")
	}
	if _, _, err := a.Arrive(1, op.Barrier{Epoch: 2}); err == nil {
		t.Fatal("a different epoch while aligning must be an error")
	}
}

// TestMailboxAlignment interleaves two producers and checks that a blocked
// input is not read until it is unblocked, and nothing is lost or reordered.
func TestMailboxAlignment(t *testing.T) {
	ctx := context.Background()
	m := newMailbox(2)
	in0, in1 := m.input(0), m.input(1)
	in0.Send(ctx, Message{Kind: MsgData, Watermark: 1})
	in0.Send(ctx, Message{Kind: MsgBarrier, Barrier: op.Barrier{Epoch: 1}})
	in0.Send(ctx, Message{Kind: MsgData, Watermark: 2})
	in1.Send(ctx, Message{Kind: MsgData, Watermark: 10})
	in1.Send(ctx, Message{Kind: MsgBarrier, Barrier: op.Barrier{Epoch: 1}})
	a := newAligner(2)
	var order []int64
	for len(order) < 3 {
		msg, in, err := m.Next(ctx, a.Blocked)
		if err != nil {
			t.Fatal(err)
		}
		switch msg.Kind {
		case MsgData:
			if a.Blocked(in) {
				t.Fatal("read a blocked input")
			}
			order = append(order, msg.Watermark)
		case MsgBarrier:
			_, done, err := a.Arrive(in, msg.Barrier)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				order = append(order, -1)
			}
		}
	}
	// Data 2 (after the barrier on input 0) must come after the barrier completes.
	seen := map[int64]int{}
	for i, v := range order {
		seen[v] = i
	}
	if _, ok := seen[2]; ok && seen[2] < seen[-1] {
		t.Fatalf("post-barrier data read before alignment: %v", order)
	}
}

// slowRoomSink is a sink whose awaitRoom waits (fake time) as an
// external sink past its bound would.
type slowRoomSink struct {
	discardResults
	wait time.Duration
}

func (s *slowRoomSink) awaitRoom(context.Context, op.Barrier) error {
	time.Sleep(s.wait)
	return nil
}

// alignTask is a task with inputs inputs and no operators, ending in
// sink, reporting to job's acks.
func alignTask(inputs int, sink sinkWriter) (*task, *Job) {
	j := &Job{acks: make(chan ack, 8)}
	j.toRestore.Store(1)
	c := &op.Counters{}
	mb := newMailbox(inputs)
	t := &task{taskBase: taskBase{job: j, name: "t", chain: newChain(nil, &sinkEnd{sinkWriter: sink, ended: make(chan struct{})}),
		counters: c, env: &op.Env{}, stateRows: new(atomic.Int64)},
		mb: mb, align: newAligner(inputs), inWM: make([]int64, inputs), ended: make([]bool, inputs), sides: make([]int, inputs)}
	return t, j
}

// TestAlignmentTime: a task reports as a barrier's alignment time how
// long it held the barrier up: from its first input's barrier to its last,
// plus its sink's wait for room; the task loop measures it, with (here
// fake) time as its input.
func TestAlignmentTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tk, j := alignTask(2, &discardResults{counters: &op.Counters{}})
		go tk.run(ctx)
		in0, in1 := tk.mb.input(0), tk.mb.input(1)
		in0.Send(ctx, Message{Kind: MsgBarrier, Barrier: op.Barrier{Epoch: 1}})
		time.Sleep(3 * time.Second)
		in1.Send(ctx, Message{Kind: MsgBarrier, Barrier: op.Barrier{Epoch: 1}})
		if a := <-j.acks; a.epoch != 1 || a.align != 3*time.Second {
			t.Fatalf("barrier 1: epoch %d aligned %v, want 3s", a.epoch, a.align)
		}
		// Both inputs' barriers at once: nothing to align.
		in1.Send(ctx, Message{Kind: MsgBarrier, Barrier: op.Barrier{Epoch: 2}})
		in0.Send(ctx, Message{Kind: MsgBarrier, Barrier: op.Barrier{Epoch: 2}})
		if a := <-j.acks; a.epoch != 2 || a.align != 0 {
			t.Fatalf("barrier 2: epoch %d aligned %v, want 0", a.epoch, a.align)
		}

		// A sink waiting for room adds its wait, also at a single input.
		tk, j = alignTask(1, &slowRoomSink{discardResults: discardResults{counters: &op.Counters{}}, wait: 5 * time.Second})
		go tk.run(ctx)
		tk.mb.input(0).Send(ctx, Message{Kind: MsgBarrier, Barrier: op.Barrier{Epoch: 1}})
		if a := <-j.acks; a.align != 5*time.Second {
			t.Fatalf("sink waiting 5s for room: aligned %v", a.align)
		}
	})
}
