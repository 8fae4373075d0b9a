package runtime

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
)

// stuckReader is a memReader whose first Poll with rows does not return
// until released: a task stuck in one message (here in the source's
// read; a runaway expression looks the same to the coordinator).
type stuckReader struct {
	*memReader
	release chan struct{}
	stuck   chan struct{} // closed once Poll is stuck
	once    bool
}

func (r *stuckReader) Poll(now int64, max int, b *op.Batch) (int, error) {
	if !r.once && r.Available(now) > r.Offset() {
		r.once = true
		close(r.stuck)
		<-r.release
	}
	return r.memReader.Poll(now, max, b)
}

// TestStalledJobFails: a task that works on one message for longer than
// the stall timeout fails its query with the reason, and Stop does not
// wait for it past StopTimeout; the stuck goroutine ends on its own once
// it returns.
func TestStalledJobFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := &stuckReader{memReader: &memReader{ready: make(chan struct{})}, release: make(chan struct{}), stuck: make(chan struct{})}
		store := state.NewMemVersioned()
		deps := Deps{Store: store, Reader: func(*plan.Source, SourcePosition, []bool) (Reader, error) { return rd, nil }}
		g := countGraph(&plan.Source{Table: "t", Engine: "mem", Schema: plan.Schema{{Name: "ts", Type: plan.TypeTimestamp}}, EventTime: 0}, false)
		job, err := Start(g, deps, StartOptions{QueryID: 1, Name: "q", Results: NewResults(store, 1), StallTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rd.add(plan.Row{plan.Time(1000)})
		<-rd.stuck
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if st := job.Status(); st.State != StateRunning {
			t.Fatalf("after 9 s stuck (timeout 10 s): state %s (%v), want running", st.State, st.Err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		st := job.Status()
		if st.State != StateFailed || st.Err == nil || !strings.Contains(st.Err.Error(), "q/stage0/0 has worked on one message for") ||
			!strings.Contains(st.Err.Error(), "stall timeout 10s") {
			t.Fatalf("after 11 s stuck: state %s, error %v; want failed naming the stuck task", st.State, st.Err)
		}
		start := time.Now()
		err = job.Stop()
		if err == nil || !strings.Contains(err.Error(), "did not stop within 5s") || !strings.Contains(err.Error(), "q/stage0/0") {
			t.Fatalf("Stop of a stuck job: %v, want an error naming the stuck task", err)
		}
		if d := time.Since(start); d != StopTimeout {
			t.Fatalf("Stop waited %v, want %v", d, StopTimeout)
		}
		close(rd.release)
		<-job.Stopped()
	})
}

// TestWaitingIsNotStuck: time spent blocked on a consumer's full queue
// or an external sink's room is waiting, not working.
func TestWaitingIsNotStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &liveness{}
		t0 := time.Now()
		l.begin(t0)
		if d := l.stuck(t0.Add(time.Minute)); d != time.Minute {
			t.Fatalf("working for a minute: stuck %v", d)
		}
		mb := newMailbox(1)
		in := mb.input(0)
		for range QueueCapacity {
			if !in.TrySend(Message{Kind: MsgWatermark}) {
				t.Fatal("queue full early")
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- l.send(ctx, in, Message{Kind: MsgWatermark}) }()
		synctest.Wait() // the sender is blocked on the full queue
		if d := l.stuck(t0.Add(time.Hour)); d != 0 {
			t.Fatalf("blocked on a full queue: stuck %v, want 0", d)
		}
		cancel()
		<-done
		if d := l.stuck(t0.Add(time.Hour)); d != time.Hour {
			t.Fatalf("after the send: stuck %v, want 1h", d)
		}
		l.end()
		if d := l.stuck(t0.Add(time.Hour)); d != 0 {
			t.Fatalf("idle: stuck %v", d)
		}
	})
}
