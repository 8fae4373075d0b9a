package state

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// MemVersioned is an in-memory Versioned with the same semantics as
// BadgerVersioned (several versions per key, reads at a version), for tests
// and benchmarks. Nothing survives Close.
type MemVersioned struct {
	next atomic.Uint64

	mu      sync.RWMutex
	keys    map[string][]memVersion // versions of each key, ascending by id
	sorted  []string                // sorted keys; may hold keys no longer in keys
	added   []string                // keys added since sorted was last merged
	discard uint64
	closed  bool
}

type memVersion struct {
	id  uint64
	val []byte
	del bool
}

var _ Versioned = (*MemVersioned)(nil)

// NewMemVersioned returns an empty in-memory store. Its first id is 1.
func NewMemVersioned() *MemVersioned {
	m := &MemVersioned{keys: make(map[string][]memVersion)}
	m.next.Store(1)
	return m
}

// NextID returns a new id, larger than every id handed out or written so far.
func (m *MemVersioned) NextID() uint64 {
	return m.next.Add(1) - 1
}

func (m *MemVersioned) bump(id uint64) {
	for {
		n := m.next.Load()
		if n > id || m.next.CompareAndSwap(n, id+1) {
			return
		}
	}
}

// Write stores kvs at version id.
func (m *MemVersioned) Write(id uint64, kvs []KV) error {
	if id == 0 {
		return errors.New("state write: id 0 is not a valid version")
	}
	for _, kv := range kvs {
		if len(kv.Key) == 0 {
			return fmt.Errorf("state write at %d: empty key", id)
		}
	}
	m.bump(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("state write at %d: %w", id, ErrClosed)
	}
	for _, kv := range kvs {
		m.putLocked(string(kv.Key), memVersion{id: id, val: bytes.Clone(kv.Value), del: kv.Delete})
	}
	return nil
}

func (m *MemVersioned) putLocked(key string, v memVersion) {
	if v.val == nil && !v.del {
		v.val = []byte{}
	}
	vs, ok := m.keys[key]
	if !ok {
		m.added = append(m.added, key)
	}
	i, found := slices.BinarySearchFunc(vs, v.id, func(e memVersion, id uint64) int {
		switch {
		case e.id < id:
			return -1
		case e.id > id:
			return 1
		}
		return 0
	})
	if found {
		vs[i] = v
	} else {
		vs = slices.Insert(vs, i, v)
	}
	// Like Badger's compaction: below the discard timestamp only the newest
	// version is kept, and not even that when it is a delete.
	keep := 0
	for keep+1 < len(vs) && vs[keep+1].id <= m.discard {
		keep++
	}
	if keep > 0 {
		vs = slices.Delete(vs, 0, keep)
	}
	if len(vs) > 0 && vs[0].id <= m.discard && vs[0].del {
		vs = vs[1:]
	}
	if len(vs) == 0 {
		delete(m.keys, key)
		return
	}
	m.keys[key] = vs
}

// versionAt returns the version of vs visible at at.
func versionAt(vs []memVersion, at uint64) (memVersion, bool) {
	i := sort.Search(len(vs), func(i int) bool { return vs[i].id > at })
	if i == 0 {
		return memVersion{}, false
	}
	return vs[i-1], true
}

// CommitMarker commits markerKey=value at version id (nothing to sync).
func (m *MemVersioned) CommitMarker(markerKey []byte, id uint64, value []byte) error {
	if err := m.Write(id, []KV{{Key: markerKey, Value: value}}); err != nil {
		return fmt.Errorf("state commit marker %q: %w", markerKey, err)
	}
	return nil
}

// LastMarker returns the newest version of markerKey and its value.
func (m *MemVersioned) LastMarker(markerKey []byte) (uint64, []byte, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, nil, false, fmt.Errorf("state last marker %q: %w", markerKey, ErrClosed)
	}
	vs := m.keys[string(markerKey)]
	if len(vs) == 0 || vs[len(vs)-1].del {
		return 0, nil, false, nil
	}
	v := vs[len(vs)-1]
	return v.id, bytes.Clone(v.val), true, nil
}

// Get reads key as of version at, or returns ErrNotFound.
func (m *MemVersioned) Get(key []byte, at uint64) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("state get %q at %d: %w", key, at, ErrClosed)
	}
	v, ok := versionAt(m.keys[string(key)], at)
	if !ok || v.del {
		return nil, ErrNotFound
	}
	return bytes.Clone(v.val), nil
}

// sortedLocked merges newly added keys into m.sorted (needs the write lock).
func (m *MemVersioned) sortedLocked() []string {
	if len(m.added) == 0 {
		return m.sorted
	}
	slices.Sort(m.added)
	merged := make([]string, 0, len(m.sorted)+len(m.added))
	i, j := 0, 0
	push := func(k string) {
		if _, live := m.keys[k]; !live {
			return
		}
		if n := len(merged); n > 0 && merged[n-1] == k {
			return
		}
		merged = append(merged, k)
	}
	for i < len(m.sorted) || j < len(m.added) {
		if j == len(m.added) || (i < len(m.sorted) && m.sorted[i] <= m.added[j]) {
			push(m.sorted[i])
			i++
		} else {
			push(m.added[j])
			j++
		}
	}
	m.sorted, m.added = merged, m.added[:0]
	return m.sorted
}

// Scan calls fn for each live key under prefix as of version at, in key
// order. It works on a snapshot, so fn may write to the store.
func (m *MemVersioned) Scan(prefix []byte, at uint64, fn func(k, v []byte) error) error {
	type kv struct {
		k string
		v []byte
	}
	var snap []kv
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("state scan %q at %d: %w", prefix, at, ErrClosed)
	}
	keys := m.sortedLocked()
	p := string(prefix)
	for i := sort.SearchStrings(keys, p); i < len(keys) && strings.HasPrefix(keys[i], p); i++ {
		v, ok := versionAt(m.keys[keys[i]], at)
		if ok && !v.del {
			snap = append(snap, kv{keys[i], v.val})
		}
	}
	m.mu.Unlock()
	for _, e := range snap {
		if err := fn([]byte(e.k), bytes.Clone(e.v)); err != nil {
			return err
		}
	}
	return nil
}

// Repair rewrites every key under prefix whose newest version is above at,
// at a fresh id, with its value as of at (or a delete). It returns that id,
// or 0 when nothing needed repair.
func (m *MemVersioned) Repair(prefix []byte, at uint64) (uint64, error) {
	var fixes []KV
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return 0, fmt.Errorf("state repair %q to %d: %w", prefix, at, ErrClosed)
	}
	keys := m.sortedLocked()
	p := string(prefix)
	for i := sort.SearchStrings(keys, p); i < len(keys) && strings.HasPrefix(keys[i], p); i++ {
		vs := m.keys[keys[i]]
		if len(vs) == 0 || vs[len(vs)-1].id <= at {
			continue
		}
		v, ok := versionAt(vs, at)
		if !ok || v.del {
			fixes = append(fixes, KV{Key: []byte(keys[i]), Delete: true})
		} else {
			fixes = append(fixes, KV{Key: []byte(keys[i]), Value: v.val})
		}
	}
	m.mu.Unlock()
	if len(fixes) == 0 {
		return 0, nil
	}
	id := m.NextID()
	if err := m.Write(id, fixes); err != nil {
		return 0, fmt.Errorf("state repair %q to %d: %w", prefix, at, err)
	}
	return id, nil
}

// DropPrefix removes every version of every key under prefix.
func (m *MemVersioned) DropPrefix(prefix []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("state drop prefix %q: %w", prefix, ErrClosed)
	}
	p := string(prefix)
	for k := range m.keys {
		if strings.HasPrefix(k, p) {
			delete(m.keys, k)
		}
	}
	m.sorted = slices.DeleteFunc(m.sorted, func(k string) bool { return strings.HasPrefix(k, p) })
	m.added = slices.DeleteFunc(m.added, func(k string) bool { return strings.HasPrefix(k, p) })
	return nil
}

// SetDiscardTs lets the store forget versions below ts (applied lazily, as
// keys are written).
func (m *MemVersioned) SetDiscardTs(ts uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ts > m.discard {
		m.discard = ts
	}
}

// CollectGarbage has nothing to do: versions are forgotten as keys are
// written.
func (m *MemVersioned) CollectGarbage() error { return nil }

// Close drops everything. Later calls return ErrClosed.
func (m *MemVersioned) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.keys, m.sorted, m.added = nil, nil, nil
	return nil
}
