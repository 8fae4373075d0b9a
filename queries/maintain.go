package queries

import (
	"context"
	"time"
)

// MaintainInterval is how often the engine garbage-collects old state
// versions and truncates ingest logs.
const MaintainInterval = 5 * time.Second

// startMaintenance runs the maintenance loop until Close.
func (e *Engine) startMaintenance() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	e.stopBg = func() {
		cancel()
		<-done
	}
	go func() {
		defer close(done)
		t := time.NewTicker(MaintainInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				e.maintain()
			}
		}
	}()
}

// maintain lets Badger drop state versions no query can read any more:
// every read is at some query's last completed checkpoint or later, so
// versions older than the oldest of those (except each key's newest at or
// below it) are garbage. SetDiscardTs is DB-wide: one minimum for all.
func (e *Engine) maintain() {
	e.mu.RLock()
	var oldest uint64
	for _, v := range e.views {
		var id uint64
		switch {
		case v.Job != nil:
			id = v.Job.Status().LastCheckpoint
		case v.Results != nil:
			id = v.Results.Committed()
		}
		if id == 0 {
			continue // nothing committed yet: it reads nothing old
		}
		if oldest == 0 || id < oldest {
			oldest = id
		}
	}
	e.mu.RUnlock()
	if oldest > 0 {
		e.store.SetDiscardTs(oldest)
	}
}
