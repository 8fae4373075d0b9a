package runtime

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/state"
)

// Key layout of a query in the versioned store (all under QueryPrefix):
//
//	q/<qid>/m          the checkpoint marker (value: marker JSON)
//	q/<qid>/r/<key>    a built-in result row on its upsert key
//	q/<qid>/s/<v>/<i>  source task (vertex v, subtask i) position
//
// Query ids come from a durable sequence and never repeat, so a replaced
// or dropped query's leftovers can never be read as a new one's.

// QueryPrefix is the key prefix of everything query qid stores.
func QueryPrefix(qid uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("q/"), qid)
}

func markerKey(qid uint64) []byte    { return append(QueryPrefix(qid), "/m"...) }
func resultPrefix(qid uint64) []byte { return append(QueryPrefix(qid), "/r/"...) }
func sourceKey(qid uint64, v, i int) []byte {
	return fmt.Appendf(QueryPrefix(qid), "/s/%d/%d", v, i)
}

// Results is a view's built-in results table: the latest values in
// memory (consistency=latest) and, in the versioned store, the values as of
// each completed checkpoint (consistency=committed reads at the marker).
type Results struct {
	store  state.Versioned
	prefix []byte

	mu        sync.RWMutex
	latest    map[string]plan.Row
	loaded    bool // latest holds the rows (else latest reads read committed)
	committed uint64
	// appendOnly results (rows keyed by row id, never updated) are not all
	// kept in memory: latest reads are the committed rows plus recent, the
	// rows published since the last completed checkpoint.
	appendOnly bool
	recent     map[string]plan.Row
}

// setAppendOnly switches the results to append-only keeping (before the
// job runs).
func (r *Results) setAppendOnly() {
	r.mu.Lock()
	r.appendOnly, r.latest, r.recent = true, map[string]plan.Row{}, map[string]plan.Row{}
	r.mu.Unlock()
}

// NewResults opens the results of query qid: empty for a new query; a
// restarting job sets the committed id and loads the latest rows.
func NewResults(store state.Versioned, qid uint64) *Results {
	return &Results{store: store, prefix: resultPrefix(qid), latest: map[string]plan.Row{}, loaded: true}
}

// restoring makes committed reads read at checkpoint id at once, and latest
// reads too until Load has the rows in memory.
func (r *Results) restoring(id uint64) {
	r.mu.Lock()
	r.committed, r.loaded = id, false
	r.mu.Unlock()
}

// Load sets committed to checkpoint id and latest to the rows as of id.
func (r *Results) Load(id uint64) error {
	latest := map[string]plan.Row{}
	r.mu.RLock()
	appendOnly := r.appendOnly
	r.mu.RUnlock()
	if id > 0 && !appendOnly {
		err := r.store.Scan(r.prefix, id, func(k, v []byte) error {
			row, err := DecodeRow(v)
			if err != nil {
				return fmt.Errorf("result %x: %w", k, err)
			}
			latest[string(k[len(r.prefix):])] = row
			return nil
		})
		if err != nil {
			return fmt.Errorf("load results at %d: %w", id, err)
		}
	}
	r.mu.Lock()
	r.latest, r.committed, r.loaded = latest, id, true
	r.mu.Unlock()
	return nil
}

// OpenResults opens query qid's results as of its last completed
// checkpoint, for a query that is not running (stopped).
func OpenResults(store state.Versioned, qid uint64) (*Results, error) {
	r := NewResults(store, qid)
	id, _, ok, err := store.LastMarker(markerKey(qid))
	if err != nil {
		return nil, fmt.Errorf("results of query %d: %w", qid, err)
	}
	if ok {
		err = r.Load(id)
	}
	return r, err
}

// Committed is the checkpoint id committed reads see (0: none yet).
func (r *Results) Committed() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.committed
}

// setCommitted makes checkpoint id the committed one. Every row published
// so far is in it (the next barrier comes only after it completed).
func (r *Results) setCommitted(id uint64) {
	r.mu.Lock()
	r.committed = id
	if r.appendOnly {
		clear(r.recent)
	}
	r.mu.Unlock()
}

func (r *Results) apply(changes map[string]change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.appendOnly {
		for k, c := range changes {
			if c.del {
				delete(r.recent, k)
			} else {
				r.recent[k] = c.row
			}
		}
		return
	}
	for k, c := range changes {
		if c.del {
			delete(r.latest, k)
		} else {
			r.latest[k] = c.row
		}
	}
}

// Rows returns the rows in key order: the latest ones, or (committed) the
// ones as of the last completed checkpoint.
func (r *Results) Rows(committed bool) ([]plan.Row, error) {
	r.mu.RLock()
	loaded, appendOnly := r.loaded, r.appendOnly
	r.mu.RUnlock()
	if !committed && appendOnly {
		return r.appendOnlyLatest()
	}
	if !committed && loaded {
		r.mu.RLock()
		keys := make([]string, 0, len(r.latest))
		for k := range r.latest {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		rows := make([]plan.Row, len(keys))
		for i, k := range keys {
			rows[i] = r.latest[k]
		}
		r.mu.RUnlock()
		return rows, nil
	}
	at := r.Committed()
	if at == 0 {
		return nil, nil
	}
	var rows []plan.Row
	err := r.store.Scan(r.prefix, at, func(k, v []byte) error {
		row, err := DecodeRow(v)
		if err != nil {
			return fmt.Errorf("result %x: %w", k, err)
		}
		rows = append(rows, row)
		return nil
	})
	return rows, err
}

// appendOnlyLatest is the committed rows plus those published since, in
// key order.
func (r *Results) appendOnlyLatest() ([]plan.Row, error) {
	r.mu.RLock()
	at := r.committed
	recent := make(map[string]plan.Row, len(r.recent))
	for k, row := range r.recent {
		recent[k] = row
	}
	r.mu.RUnlock()
	type keyed struct {
		k   string
		row plan.Row
	}
	var all []keyed
	if at > 0 {
		err := r.store.Scan(r.prefix, at, func(k, v []byte) error {
			key := string(k[len(r.prefix):])
			if _, newer := recent[key]; newer {
				return nil
			}
			row, err := DecodeRow(v)
			if err != nil {
				return fmt.Errorf("result %x: %w", k, err)
			}
			all = append(all, keyed{key, row})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for k, row := range recent {
		all = append(all, keyed{k, row})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].k < all[j].k })
	rows := make([]plan.Row, len(all))
	for i, kr := range all {
		rows[i] = kr.row
	}
	return rows, nil
}

// change is one pending result change.
type change struct {
	row plan.Row
	del bool
}

// groupKeyOf strips window_start and window_end from a windowed upsert key.
func groupKeyOf(k string, kind plan.KeyKind) string {
	if kind != plan.KeyWindowGroup {
		return k
	}
	b := []byte(k)
	for range 2 {
		var err error
		if _, b, err = DecodeValue(b); err != nil {
			return k
		}
	}
	return string(b)
}

// expired returns the keys owned by sink subtask i of n whose window_end is
// at or before cutoff (windowed results only).
func (r *Results) expired(cutoff int64, i, n int) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for k := range r.latest {
		b := []byte(k)
		if _, rest, err := DecodeValue(b); err == nil {
			if end, _, err := DecodeValue(rest); err == nil && end.I <= cutoff {
				if n <= 1 || int(HashKey(groupKeyOf(k, plan.KeyWindowGroup))%uint64(n)) == i {
					out = append(out, k)
				}
			}
		}
	}
	return out
}
