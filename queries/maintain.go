package queries

import (
	"context"
	"time"

	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/state"
)

// MaintainInterval is how often the engine garbage-collects old state
// versions, truncates ingest logs and reclaims their value-log space.
const MaintainInterval = 5 * time.Second

// startMaintenance runs the maintenance loop until Close.
func (e *Engine) startMaintenance() {
	e.stopBg = every(MaintainInterval, func(time.Time) { e.maintain() })
}

// every runs fn on a goroutine of its own each interval, with the tick's
// time, until stop is called; stop waits for it to return.
func every(interval time.Duration, fn func(now time.Time)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				fn(now)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
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
		if err := e.store.CollectGarbage(); err != nil {
			e.log.Warn("state space", "err", err)
		}
	}
	e.truncateLogs(time.Now())
	if err := e.meta.CollectGarbage(); err != nil {
		e.log.Warn("ingest log space", "err", err)
	}
}

// truncateLogs deletes ingest-log rows that are both older than their
// table's retention and below the offset every query reading the table
// would resume from (its last completed checkpoint, or its start).
func (e *Engine) truncateLogs(now time.Time) {
	e.mu.RLock()
	type plan struct {
		log  *state.Log
		keep int64
	}
	var plans []plan
	for name, def := range e.tables {
		if def.Engine != "http" {
			continue
		}
		l, err := e.meta.Log(def.ID)
		if err != nil {
			continue
		}
		keep := l.OffsetBefore(now.Add(-time.Duration(def.Retention) * time.Millisecond))
		for _, v := range e.views {
			if need, reads := e.resumeOffset(v, name); reads && need < keep {
				keep = need
			}
		}
		if keep > l.Start() {
			plans = append(plans, plan{l, keep})
		}
	}
	e.mu.RUnlock()
	for _, p := range plans {
		if err := p.log.Truncate(p.keep); err != nil {
			e.log.Warn("truncate ingest log", "table_id", p.log.ID(), "err", err)
		}
	}
}

// resumeOffset is the offset of table that view v would read from after a
// restart, and whether v reads table at all (caller holds mu).
func (e *Engine) resumeOffset(v *View, table string) (int64, bool) {
	if !readsTable(v, table) {
		return 0, false
	}
	if v.Graph == nil {
		return 0, true // not running: keep everything it may need
	}
	if c, ok := runtime.LastCheckpointOf(e.store, v.Record.ID); ok {
		if off, ok := c.Offsets[table]; ok {
			return off, true
		}
	}
	return v.Record.StartOffsets[table], true
}
