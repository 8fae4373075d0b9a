package state

import "errors"

// KV is one write: a put of Value at Key, or a delete of Key.
type KV struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// ErrNotFound is returned by Get for a key with no live version.
var ErrNotFound = errors.New("state: key not found")

// Versioned is the checkpoint-versioned state store (Badger in managed mode:
// commit timestamp = checkpoint id). All operator state, sink journals,
// built-in results and per-query checkpoint markers live here.
//
// Atomicity comes from markers, never from a single write: a checkpoint's
// writes become meaningful once its marker is committed and synced, and every
// read of committed state reads at the marker's id.
type Versioned interface {
	// NextID returns a new checkpoint id, larger than every id this store has
	// ever handed out or seen, across restarts (allocated above MaxVersion at open).
	NextID() uint64
	// Write stores kvs at version id. It may split into several Badger
	// transactions (ErrTxnTooBig); it is not atomic and not synced. It keeps
	// no reference to kvs' keys and values once it returns.
	Write(id uint64, kvs []KV) error
	// CommitMarker syncs everything written so far, then commits the marker
	// key at version id with value, then syncs again. Only after it returns is
	// checkpoint id complete.
	CommitMarker(markerKey []byte, id uint64, value []byte) error
	// LastMarker returns the newest version of markerKey: the last completed
	// checkpoint id and the marker's value. ok is false when there is none.
	LastMarker(markerKey []byte) (id uint64, value []byte, ok bool, err error)
	// Get reads key as of version at.
	Get(key []byte, at uint64) ([]byte, error)
	// Scan calls fn for each live key under prefix as of version at, in key
	// order. k and v are only valid during the call.
	Scan(prefix []byte, at uint64, fn func(k, v []byte) error) error
	// Repair makes state under prefix read as of version at again: every key
	// with a version above at is rewritten at a new id (> every existing
	// version) with its value as of at, or deleted if it had none. It returns
	// the id it wrote at (0 when nothing needed repair). The caller then
	// commits a marker at that id.
	Repair(prefix []byte, at uint64) (uint64, error)
	// DropPrefix removes every version of every key under prefix.
	DropPrefix(prefix []byte) error
	// SetDiscardTs lets Badger garbage-collect versions below ts (DB-wide).
	SetDiscardTs(ts uint64)
	// CollectGarbage reclaims now the space of what no read at or above the
	// discard timestamp can see (blob files of large values).
	CollectGarbage() error
	Close() error
}
