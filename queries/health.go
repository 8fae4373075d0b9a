package queries

import (
	"fmt"
	"sync"
	"time"
)

// healthWait bounds each look of Health: at the catalog's lock, and at
// the stores.
const healthWait = time.Second

// health runs one look at the stores at a time: a store that does not
// answer is reported as such by every Health call until it does, rather
// than piling up goroutines.
type health struct {
	mu      sync.Mutex
	running chan struct{} // closed when the look in flight ends
	started time.Time
	err     error
}

// Health reports whether the engine can serve requests: nil, or what
// stops it. Requests that read or change the catalog need its lock for a
// moment: held for longer than healthWait (nobody should hold it while
// waiting for anything), they would wait; both stores must answer a read
// within healthWait. Queries that failed or wait for an external system
// do not make the engine unhealthy: the API reports them.
func (e *Engine) Health() error {
	deadline := time.Now().Add(healthWait)
	for !e.mu.TryRLock() {
		if time.Now().After(deadline) {
			op, held := holderOf(&e.holder, time.Now())
			if op == "" {
				return fmt.Errorf("the catalog's lock could not be taken in %s: requests that read or change the catalog wait", healthWait)
			}
			return fmt.Errorf("the catalog's lock has been held for %s by %s: requests that read or change the catalog wait", held.Round(time.Millisecond), op)
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.mu.RUnlock()
	return e.readStores()
}

// readStores reads from both stores, waiting up to healthWait.
func (e *Engine) readStores() error {
	h := &e.health
	h.mu.Lock()
	if h.running == nil {
		done := make(chan struct{})
		h.running, h.started = done, time.Now()
		go func() {
			_, err := e.meta.ListCatalog(instanceKey)
			if err != nil {
				err = fmt.Errorf("the catalog store does not read: %w", err)
			} else if _, _, _, err = e.store.LastMarker([]byte("healthz")); err != nil {
				err = fmt.Errorf("the state store does not read: %w", err)
			}
			h.mu.Lock()
			h.err, h.running = err, nil
			h.mu.Unlock()
			close(done)
		}()
	}
	running, started := h.running, h.started
	h.mu.Unlock()
	select {
	case <-running:
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.err
	case <-time.After(healthWait):
		return fmt.Errorf("a read from the stores has not answered for %s", time.Since(started).Round(time.Millisecond))
	}
}
