package state

import (
	"fmt"
	"sync"
)

// SyncRecorder is a test seam for MetaOptions.WrapSync and
// VersionedOptions.WrapSync. It logs the start and return of every sync it
// wraps, with an optional probe of some state taken at both moments; it can
// make the next sync fail or block; and tests can add their own notes to the
// same log. Together these show what was visible or acknowledged before a
// sync returned.
//
// The zero value is ready to use. Threading: safe for concurrent use; the
// probe is called without the recorder's lock held, so it may read the store
// being synced.
type SyncRecorder struct {
	mu     sync.Mutex
	n      int // syncs started
	events []SyncEvent
	fail   error
	hold   *syncHold
	probe  func() string
}

type syncHold struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

// SyncEventKind says what a SyncEvent records.
type SyncEventKind int

const (
	// SyncStarted: a sync was called (before the real sync runs).
	SyncStarted SyncEventKind = iota
	// SyncReturned: a sync is about to return to its caller.
	SyncReturned
	// SyncNote: a note added by Note.
	SyncNote
)

// SyncEvent is one entry of a SyncRecorder's log.
type SyncEvent struct {
	Kind SyncEventKind
	// DB is the name given to WrapNamed ("" for Wrap and notes).
	DB string
	// Sync numbers the syncs from 1, in the order they started (0 for notes).
	Sync int
	// Err is what the sync returned (SyncReturned only).
	Err error
	// Text is the probe's result (SyncStarted, SyncReturned; "" without a
	// probe) or the note (SyncNote).
	Text string
}

func (e SyncEvent) String() string {
	db := ""
	if e.DB != "" {
		db = e.DB + " "
	}
	switch e.Kind {
	case SyncStarted:
		return fmt.Sprintf("%ssync %d start [%s]", db, e.Sync, e.Text)
	case SyncReturned:
		if e.Err != nil {
			return fmt.Sprintf("%ssync %d failed [%s]: %v", db, e.Sync, e.Text, e.Err)
		}
		return fmt.Sprintf("%ssync %d done [%s]", db, e.Sync, e.Text)
	default:
		return "note " + e.Text
	}
}

// Wrap wraps next; pass it as WrapSync.
func (r *SyncRecorder) Wrap(next SyncFunc) SyncFunc { return r.WrapNamed("")(next) }

// WrapNamed returns a WrapSync function whose events carry db, for a
// recorder shared by several databases.
func (r *SyncRecorder) WrapNamed(db string) func(SyncFunc) SyncFunc {
	return func(next SyncFunc) SyncFunc {
		return func() error {
			r.mu.Lock()
			r.n++
			n, fail, hold, probe := r.n, r.fail, r.hold, r.probe
			r.fail, r.hold = nil, nil
			r.mu.Unlock()

			r.record(SyncEvent{Kind: SyncStarted, DB: db, Sync: n}, probe)
			if hold != nil {
				close(hold.started)
				<-hold.release
			}
			err := fail
			if err == nil {
				err = next()
			}
			r.record(SyncEvent{Kind: SyncReturned, DB: db, Sync: n, Err: err}, probe)
			return err
		}
	}
}

func (r *SyncRecorder) record(e SyncEvent, probe func() string) {
	if probe != nil {
		e.Text = probe()
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// FailNext makes the next sync return err without syncing (a failed fsync).
func (r *SyncRecorder) FailNext(err error) {
	r.mu.Lock()
	r.fail = err
	r.mu.Unlock()
}

// HoldNext makes the next sync block, after its start is logged and before
// it syncs, until release is called. started is closed once that sync is
// blocked. release may be called more than once.
func (r *SyncRecorder) HoldNext() (started <-chan struct{}, release func()) {
	h := &syncHold{started: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	r.hold = h
	r.mu.Unlock()
	return h.started, func() { h.once.Do(func() { close(h.release) }) }
}

// SetProbe sets a function called at the start and at the return of every
// sync; its result is logged with the event (nil: no probe).
func (r *SyncRecorder) SetProbe(probe func() string) {
	r.mu.Lock()
	r.probe = probe
	r.mu.Unlock()
}

// Note adds a test's own event to the log.
func (r *SyncRecorder) Note(text string) {
	r.record(SyncEvent{Kind: SyncNote, Text: text}, nil)
}

// Events returns a copy of the log.
func (r *SyncRecorder) Events() []SyncEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]SyncEvent(nil), r.events...)
}

// Count returns how many syncs have started.
func (r *SyncRecorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
