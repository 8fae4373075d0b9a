package runtime

import (
	"context"
	"testing"
)

func TestAlignerTwoInputs(t *testing.T) {
	a := newAligner(2)
	if _, done, _ := a.Arrive(0, Barrier{Epoch: 1}); done {
		t.Fatal("complete after one of two inputs")
	}
	if !a.Blocked(0) || a.Blocked(1) {
		t.Fatal("input 0 must block, input 1 must not")
	}
	b, done, err := a.Arrive(1, Barrier{Epoch: 1, Flush: true})
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
			_, done, err := a.Arrive(in, Barrier{Epoch: epoch})
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
	a.Arrive(0, Barrier{Epoch: 1})
	if _, _, err := a.Arrive(0, Barrier{Epoch: 2}); err == nil {
		t.Fatal("a barrier on a blocked input must be an error")
	}
	if _, _, err := a.Arrive(1, Barrier{Epoch: 2}); err == nil {
		t.Fatal("a different epoch while aligning must be an error")
	}
}

func TestAlignerEndedInput(t *testing.T) {
	a := newAligner(2)
	a.Arrive(0, Barrier{Epoch: 1})
	b, done, _ := a.End(1)
	if !done || b.Epoch != 1 {
		t.Fatal("ending the last missing input completes the barrier")
	}
	if _, done, _ := a.Arrive(0, Barrier{Epoch: 2}); !done {
		t.Fatal("with one live input a barrier completes at once")
	}
}

// TestMailboxAlignment interleaves two producers and checks that a blocked
// input is not read until it is unblocked, and nothing is lost or reordered.
func TestMailboxAlignment(t *testing.T) {
	ctx := context.Background()
	m := newMailbox(2)
	in0, in1 := m.input(0), m.input(1)
	in0.Send(ctx, Message{Kind: MsgData, Watermark: 1})
	in0.Send(ctx, Message{Kind: MsgBarrier, Barrier: Barrier{Epoch: 1}})
	in0.Send(ctx, Message{Kind: MsgData, Watermark: 2})
	in1.Send(ctx, Message{Kind: MsgData, Watermark: 10})
	in1.Send(ctx, Message{Kind: MsgBarrier, Barrier: Barrier{Epoch: 1}})
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
