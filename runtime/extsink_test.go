package runtime

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestCommitterReserve: a sink subtask's journal is counted pending only
// once it fits the bounds, so pending epochs and bytes never pass them; it
// waits while the committer can make room (an epoch at or below the last
// marker is pending) and goes over the bound only when waiting could never
// end: nothing committable pending (epochs of failed checkpoints), or an
// epoch larger than the bound on its own.
func TestCommitterReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer SetSinkLimits(3, 100, sinkBackoffMax)()
		c := &committer{ext: &plan.ExternalSink{Table: "out", ExactlyOnce: true}, pending: map[uint64]int64{}, changed: make(chan struct{})}
		ctx := context.Background()
		pending := func() (int, int64) {
			m := c.metrics(time.Now())
			return m.PendingEpochs, m.PendingBytes
		}
		// reserve runs in the background; done reports whether it returned.
		reserve := func(epoch uint64, n int64) func() bool {
			ch := make(chan struct{})
			go func() {
				if err := c.reserve(ctx, epoch, n); err != nil {
					t.Error(err)
				}
				close(ch)
			}()
			synctest.Wait()
			return func() bool {
				synctest.Wait()
				select {
				case <-ch:
					return true
				default:
					return false
				}
			}
		}
		c.marker.Store(2)
		if !reserve(1, 60)() || !reserve(2, 30)() {
			t.Fatal("room for 90 of 100 bytes")
		}
		third := reserve(3, 30)
		if third() {
			t.Fatal("120 of 100 bytes with epochs 1 and 2 committable: must wait")
		}
		if e, b := pending(); e != 2 || b != 90 {
			t.Fatalf("pending %d epochs %d bytes while waiting", e, b)
		}
		c.setCommitted(1, nil)
		if !third() {
			t.Fatal("epoch 1 committed: room for epoch 3")
		}
		if e, b := pending(); e != 2 || b != 60 {
			t.Fatalf("pending %d epochs %d bytes", e, b)
		}
		// A second subtask's part of epoch 3 fits the same epoch.
		if !reserve(3, 10)() {
			t.Fatal("70 of 100 bytes")
		}
		// The epoch bound: three pending, a fourth waits.
		c.marker.Store(3)
		if !reserve(4, 5)() {
			t.Fatal("75 bytes in 3 epochs")
		}
		fifth := reserve(5, 1)
		if fifth() {
			t.Fatal("a fourth pending epoch past the bound of 3")
		}
		c.setCommitted(3, nil)
		if !fifth() {
			t.Fatal("epochs 2 and 3 committed: room")
		}
		// Only epochs above the marker pending (their checkpoints failed):
		// no wait, even past the bound.
		c.setCommitted(5, nil)
		if !reserve(6, 80)() || !reserve(7, 80)() {
			t.Fatal("epochs above the marker cannot be committed before this checkpoint completes: no wait")
		}
		// An epoch larger than the bound goes in once nothing is pending.
		c.setCommitted(7, nil)
		if !reserve(8, 500)() {
			t.Fatal("an oversize epoch with nothing pending")
		}
	})
}
