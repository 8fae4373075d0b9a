package runtime

import (
	"context"

	"github.com/streamsql/streamsql/runtime/op"
)

// mailbox is a task's inbox: one bounded queue per input and one wake-up
// signal. Producers block when a queue is full (backpressure, never
// dropping); the consumer reads the inputs it is allowed to read (barrier
// alignment blocks some) and sleeps on the signal when none has a message.
type mailbox struct {
	queues []chan Message
	wake   chan struct{}
	next   int // round-robin start, for fairness
}

// QueueCapacity is the number of messages an input queue holds.
const QueueCapacity = 32

func newMailbox(inputs int) *mailbox {
	m := &mailbox{queues: make([]chan Message, inputs), wake: make(chan struct{}, 1)}
	for i := range m.queues {
		m.queues[i] = make(chan Message, QueueCapacity)
	}
	return m
}

// inbox is the producer side of one input of a mailbox.
type inbox struct {
	q    chan Message
	wake chan struct{}
}

func (m *mailbox) input(i int) inbox { return inbox{q: m.queues[i], wake: m.wake} }

// Send delivers msg, blocking while the queue is full or until ctx ends.
func (in inbox) Send(ctx context.Context, msg Message) error {
	select {
	case in.q <- msg:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case in.wake <- struct{}{}:
	default:
	}
	return nil
}

// TrySend delivers msg if its queue has room, without blocking.
func (in inbox) TrySend(msg Message) bool {
	select {
	case in.q <- msg:
	default:
		return false
	}
	select {
	case in.wake <- struct{}{}:
	default:
	}
	return true
}

// Next returns the next message from an input that blocked does not
// exclude, waiting for one. It returns ctx's error when ctx ends.
func (m *mailbox) Next(ctx context.Context, blocked func(int) bool) (Message, int, error) {
	n := len(m.queues)
	for {
		for k := 0; k < n; k++ {
			i := (m.next + k) % n
			if blocked(i) {
				continue
			}
			select {
			case msg := <-m.queues[i]:
				m.next = (i + 1) % n
				return msg, i, nil
			default:
			}
		}
		select {
		case <-m.wake:
		case <-ctx.Done():
			return Message{}, -1, ctx.Err()
		}
	}
}

// MsgKind is the kind of a message between tasks.
type MsgKind uint8

const (
	MsgData MsgKind = iota
	MsgWatermark
	MsgBarrier
	// MsgEnd: the input has ended (a bounded source is exhausted).
	MsgEnd
	// MsgIdle: the source became idle (Idle) or active again (!Idle).
	MsgIdle
)

// Message is what flows on a queue between tasks.
type Message struct {
	Kind      MsgKind
	Batch     *op.Batch
	Watermark int64
	Barrier   op.Barrier
	Idle      bool // MsgIdle
}
