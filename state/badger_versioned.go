package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/streamsql/streamsql/internal/fault"
)

// idFloorKey is a key reserved by BadgerVersioned. DropPrefix writes it at a
// fresh id so that MaxVersion, and with it NextID after a restart, never goes
// backwards when the dropped prefix held the newest versions. Scan and Repair
// skip it.
var idFloorKey = []byte("\xff\xffstreamsql/state/id-floor")

// BadgerVersioned is the Badger implementation of Versioned: a Badger DB in
// managed mode whose commit timestamps are checkpoint ids.
type BadgerVersioned struct {
	db     *badger.DB
	dir    string
	syncFn SyncFunc // syncs the DB; wrapped by VersionedOptions.WrapSync
	space  *Space   // nil: no free-space checks
	// next is the next id NextID hands out.
	next atomic.Uint64
	// mu orders writes against DropPrefix and Close: Badger rejects writes
	// with ErrBlockedWrites while a DropPrefix runs, so writers hold mu.RLock
	// and DropPrefix/Close hold mu.Lock.
	mu     sync.RWMutex
	closed atomic.Bool
	// blobs holds large values (blobs.go); discard is the last
	// SetDiscardTs, below which no reader looks.
	blobs   *blobs
	discard atomic.Uint64
	// prevDiscard is the discard timestamp the last CollectGarbage saw
	// (under mu's write lock); readers are the versions reads are in
	// progress at.
	prevDiscard uint64
	readersMu   sync.Mutex
	readers     map[uint64]int
	// writes and markers group concurrent Writes and CommitMarkers (see
	// group): one Badger commit, which syncs its write-ahead log, per
	// group of Writes; one sync, commit and sync per group of markers.
	writes, markers group[versionedWrite]
}

// versionedWrite is one caller's entries at version id (meta: each one's
// UserMeta, or nil), for a group commit.
type versionedWrite struct {
	id   uint64
	kvs  []KV
	meta []byte
}

var _ Versioned = (*BadgerVersioned)(nil)

// VersionedOptions configures OpenVersionedWith.
type VersionedOptions struct {
	// WrapSync, when set, wraps the function that syncs the state DB.
	// CommitMarker's two syncs (of the state written before the marker, and
	// of the marker) go through it, so a test wrapper can fail syncs or
	// record what was visible around them.
	WrapSync func(SyncFunc) SyncFunc
	// Space, when set, guards the file system's free space: writes are
	// refused (ErrDiskFull, nothing written) once they would leave less
	// than half its reserve free (space.go).
	Space *Space
}

// OpenVersioned opens (creating if needed) the managed-mode Badger DB in dir.
// Ids handed out by NextID start above the largest version stored in it.
func OpenVersioned(dir string) (*BadgerVersioned, error) {
	return OpenVersionedWith(dir, VersionedOptions{})
}

// OpenVersionedWith is OpenVersioned with options.
func OpenVersionedWith(dir string, opts VersionedOptions) (*BadgerVersioned, error) {
	if err := removeEmptyLogFiles(dir); err != nil {
		return nil, fmt.Errorf("open state db %s: %w", dir, err)
	}
	db, err := badger.OpenManaged(badgerOptions(dir, "state").WithBaseLevelSize(256 << 20).WithBaseTableSize(16 << 20).WithNumLevelZeroTables(8).WithNumLevelZeroTablesStall(16))
	if err != nil {
		return nil, fmt.Errorf("open state db %s: %w", dir, err)
	}
	bl, err := openBlobs(filepath.Join(dir, "blobs"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open state db %s: blobs: %w", dir, err)
	}
	v := &BadgerVersioned{db: db, dir: dir, blobs: bl, space: opts.Space, readers: map[uint64]int{}}
	v.writes.run = v.commitGroup
	v.markers.run = v.commitMarkers
	v.syncFn = func() error { return db.Sync() }
	if opts.WrapSync != nil {
		v.syncFn = opts.WrapSync(v.syncFn)
	}
	v.next.Store(db.MaxVersion() + 1)
	return v, nil
}

// NextID returns a new id, larger than every version stored when the DB was
// opened, every id handed out since and every id passed to Write. An id that
// was handed out but never written may be handed out again after a restart:
// nothing durable refers to it.
func (v *BadgerVersioned) NextID() uint64 {
	return v.next.Add(1) - 1
}

// bump makes sure NextID returns ids above id from now on.
func (v *BadgerVersioned) bump(id uint64) {
	for {
		n := v.next.Load()
		if n > id || v.next.CompareAndSwap(n, id+1) {
			return
		}
	}
}

// Write stores kvs at version id, in as many Badger transactions as needed,
// shared with concurrent Writes (group commit: an error fails every Write
// of the group). It is not atomic: a crash may leave any subset of kvs
// written.
func (v *BadgerVersioned) Write(id uint64, kvs []KV) error {
	if id == 0 {
		return errors.New("state write: id 0 is not a valid version")
	}
	v.bump(id)
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.closed.Load() {
		return fmt.Errorf("state write at %d: %w", id, ErrClosed)
	}
	release, err := v.space.claimState(v.dir, kvBytes(kvs))
	if err != nil {
		return fmt.Errorf("state write at %d: %w", id, err)
	}
	defer release()
	kvs, meta, err := v.spill(kvs)
	if err != nil {
		return fmt.Errorf("state write at %d: %w", id, err)
	}
	if fault.Armed("state.partial_write") && len(kvs) > 1 {
		// What a crash between two of writeLocked's transactions leaves.
		h := len(kvs) / 2
		var m []byte
		if meta != nil {
			m, meta = meta[:h], meta[h:]
		}
		if err := v.writeLocked(id, kvs[:h], m); err != nil {
			return fmt.Errorf("state write at %d: %w", id, err)
		}
		fault.Point("state.partial_write")
		kvs = kvs[h:]
	}
	if err := v.writes.do(versionedWrite{id: id, kvs: kvs, meta: meta}); err != nil {
		return fmt.Errorf("state write at %d: %w", id, err)
	}
	return nil
}

// commitGroup commits the writes of a group: a single one in its own
// transactions (writeLocked), several in one batch whose entries carry
// their own versions, so that Badger syncs its log once for all of them.
// The callers hold v.mu's read lock.
func (v *BadgerVersioned) commitGroup(ws []versionedWrite) error {
	if len(ws) == 1 {
		return v.writeLocked(ws[0].id, ws[0].kvs, ws[0].meta)
	}
	wb := v.db.NewManagedWriteBatch()
	defer wb.Cancel()
	for _, w := range ws {
		for i := range w.kvs {
			kv := &w.kvs[i]
			var err error
			switch {
			case kv.Delete:
				err = wb.DeleteAt(kv.Key, w.id)
			case w.meta != nil && w.meta[i] != 0:
				err = wb.SetEntryAt(badger.NewEntry(kv.Key, kv.Value).WithMeta(w.meta[i]), w.id)
			default:
				err = wb.SetEntryAt(badger.NewEntry(kv.Key, kv.Value), w.id)
			}
			if err != nil {
				return fmt.Errorf("key %q at %d: %w", kv.Key, w.id, err)
			}
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("commit %d writes: %w", len(ws), err)
	}
	return nil
}

// spill moves the large values of kvs into a blob file and returns the
// entries to commit: kvs with those values replaced by references, and
// per entry its UserMeta (nil when none is a reference). kvs is not
// modified: a caller may retry it.
func (v *BadgerVersioned) spill(kvs []KV) ([]KV, []byte, error) {
	var big [][]byte
	for _, kv := range kvs {
		if !kv.Delete && len(kv.Value) >= blobThreshold {
			big = append(big, kv.Value)
		}
	}
	if len(big) == 0 {
		return kvs, nil, nil
	}
	refs, err := v.blobs.put(big)
	if err != nil {
		return nil, nil, err
	}
	out := make([]KV, len(kvs))
	meta := make([]byte, len(kvs))
	j := 0
	for i, kv := range kvs {
		out[i] = kv
		if !kv.Delete && len(kv.Value) >= blobThreshold {
			out[i].Value, meta[i] = refs[j], metaBlob
			j++
		}
	}
	return out, meta, nil
}

// value returns an item's value, read from its blob file when it points
// into one. The result is the caller's.
func (v *BadgerVersioned) value(item *badger.Item) ([]byte, error) {
	val, err := item.ValueCopy(nil)
	if err != nil || item.UserMeta()&metaBlob == 0 {
		return val, err
	}
	return v.blobs.read(val)
}

// writeLocked commits kvs at version id; meta, when not nil, is each
// entry's UserMeta.
func (v *BadgerVersioned) writeLocked(id uint64, kvs []KV, meta []byte) error {
	w := txnWriter{
		begin:  func() *badger.Txn { return v.db.NewTransactionAt(math.MaxUint64, true) },
		commit: func(txn *badger.Txn) error { return txn.CommitAt(id, nil) },
	}
	defer w.discard()
	for i := range kvs {
		kv := &kvs[i]
		var err error
		switch {
		case kv.Delete:
			err = w.delete(kv.Key)
		case meta != nil && meta[i] != 0:
			err = w.set(badger.NewEntry(kv.Key, kv.Value).WithMeta(meta[i]))
		default:
			err = w.set(badger.NewEntry(kv.Key, kv.Value))
		}
		if err != nil {
			return fmt.Errorf("key %q: %w", kv.Key, err)
		}
	}
	return w.flush()
}

// sync syncs the DB (through VersionedOptions.WrapSync), with context.
func (v *BadgerVersioned) sync() error {
	if err := v.syncFn(); err != nil {
		return fmt.Errorf("sync state db: %w", err)
	}
	return nil
}

// CommitMarker syncs, commits markerKey=value at version id, and syncs again.
// When the first sync fails, the marker is not written and the previous one
// stays the last. When the second fails, the marker is committed (LastMarker
// returns it) but may not be durable: the caller must treat the checkpoint as
// failed, and recovery after a restart decides from what is on disk.
// Concurrent calls (other queries' checkpoints) share the syncs and the
// commit (group commit): each marker is still committed only after a sync
// that began after its call did, and its call returns only after the sync
// that followed its commit; an error fails every marker of the group.
func (v *BadgerVersioned) CommitMarker(markerKey []byte, id uint64, value []byte) error {
	if id == 0 {
		return errors.New("state commit marker: id 0 is not a valid version")
	}
	v.bump(id)
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.closed.Load() {
		return fmt.Errorf("state commit marker %q at %d: %w", markerKey, id, ErrClosed)
	}
	release, err := v.space.claim(v.dir, smallWrite, false)
	if err != nil {
		return fmt.Errorf("state commit marker %q at %d: %w", markerKey, id, err)
	}
	defer release()
	if err := v.markers.do(versionedWrite{id: id, kvs: []KV{{Key: markerKey, Value: value}}}); err != nil {
		return fmt.Errorf("state commit marker %q at %d: %w", markerKey, id, err)
	}
	return nil
}

// commitMarkers commits a group of markers between two syncs: the first
// makes the state written before them durable, the second the markers.
func (v *BadgerVersioned) commitMarkers(ws []versionedWrite) error {
	if err := v.sync(); err != nil {
		return err
	}
	if err := v.commitGroup(ws); err != nil {
		return err
	}
	return v.sync()
}

// LastMarker returns the newest version of markerKey and its value.
func (v *BadgerVersioned) LastMarker(markerKey []byte) (uint64, []byte, bool, error) {
	if v.closed.Load() {
		return 0, nil, false, fmt.Errorf("state last marker %q: %w", markerKey, ErrClosed)
	}
	txn := v.db.NewTransactionAt(math.MaxUint64, false)
	defer txn.Discard()
	item, err := txn.Get(markerKey)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("state last marker %q: %w", markerKey, err)
	}
	val, err := v.value(item)
	if err != nil {
		return 0, nil, false, fmt.Errorf("state last marker %q: %w", markerKey, err)
	}
	return item.Version(), val, true, nil
}

// Get reads key as of version at. It returns ErrNotFound when the key has no
// live version at or below at.
func (v *BadgerVersioned) Get(key []byte, at uint64) ([]byte, error) {
	if v.closed.Load() {
		return nil, fmt.Errorf("state get %q at %d: %w", key, at, ErrClosed)
	}
	defer v.reading(at)()
	txn := v.db.NewTransactionAt(at, false)
	defer txn.Discard()
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("state get %q at %d: %w", key, at, err)
	}
	val, err := v.value(item)
	if err != nil {
		return nil, fmt.Errorf("state get %q at %d: %w", key, at, err)
	}
	return val, nil
}

// Scan calls fn for each live key under prefix as of version at, in key
// order. k and v are only valid during the call. An error from fn stops the
// scan and is returned as is.
func (v *BadgerVersioned) Scan(prefix []byte, at uint64, fn func(k, v []byte) error) error {
	if v.closed.Load() {
		return fmt.Errorf("state scan %q at %d: %w", prefix, at, ErrClosed)
	}
	defer v.reading(at)()
	txn := v.db.NewTransactionAt(at, false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	skipReserved := bytes.HasPrefix(idFloorKey, prefix)
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if skipReserved && bytes.Equal(k, idFloorKey) {
			continue
		}
		if item.UserMeta()&metaBlob != 0 {
			val, err := v.value(item)
			if err != nil {
				return fmt.Errorf("state scan %q at %d: key %q: %w", prefix, at, k, err)
			}
			if err := fn(k, val); err != nil {
				return err
			}
			continue
		}
		var fnErr error
		err := item.Value(func(val []byte) error {
			fnErr = fn(k, val)
			return fnErr
		})
		if fnErr != nil {
			return fnErr
		}
		if err != nil {
			return fmt.Errorf("state scan %q at %d: key %q: %w", prefix, at, k, err)
		}
	}
	return nil
}

// Repair rewrites every key under prefix whose newest version is above at,
// at a fresh id, with its value as of at (or a delete). It returns that id,
// or 0 when nothing needed repair.
func (v *BadgerVersioned) Repair(prefix []byte, at uint64) (uint64, error) {
	if v.closed.Load() {
		return 0, fmt.Errorf("state repair %q to %d: %w", prefix, at, ErrClosed)
	}
	fixes, meta, err := v.collectRepairs(prefix, at)
	if err != nil {
		return 0, fmt.Errorf("state repair %q to %d: %w", prefix, at, err)
	}
	if len(fixes) == 0 {
		return 0, nil
	}
	release, err := v.space.claim(v.dir, kvBytes(fixes), false)
	if err != nil {
		return 0, fmt.Errorf("state repair %q to %d: %w", prefix, at, err)
	}
	defer release()
	id := v.NextID()
	v.bump(id)
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.closed.Load() {
		return 0, fmt.Errorf("state repair %q to %d: %w", prefix, at, ErrClosed)
	}
	// The values as of at are rewritten as stored: a blob reference stays
	// one (its file is live while a version points into it).
	if err := v.writeLocked(id, fixes, meta); err != nil {
		return 0, fmt.Errorf("state repair %q to %d: %w", prefix, at, err)
	}
	return id, nil
}

// collectRepairs lists the writes that make prefix read as of at again,
// with each one's UserMeta.
func (v *BadgerVersioned) collectRepairs(prefix []byte, at uint64) ([]KV, []byte, error) {
	txn := v.db.NewTransactionAt(math.MaxUint64, false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	opts.AllVersions = true
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()

	var fixes []KV
	var meta []byte
	var cur []byte // key being examined
	state := 0     // 0: newest version not seen; 1: needs fix, older version not found; 2: done with key
	finish := func() {
		if state == 1 {
			fixes, meta = append(fixes, KV{Key: cur, Delete: true}), append(meta, 0)
		}
	}
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if cur == nil || !bytes.Equal(item.Key(), cur) {
			finish()
			cur = item.KeyCopy(nil)
			state = 0
			if bytes.Equal(cur, idFloorKey) {
				state = 2
				continue
			}
		}
		switch state {
		case 0: // newest version of cur
			if item.Version() <= at {
				state = 2
				continue
			}
			state = 1
		case 1: // looking for the newest version at or below at
			if item.Version() > at {
				continue
			}
			if item.IsDeletedOrExpired() {
				fixes, meta = append(fixes, KV{Key: cur, Delete: true}), append(meta, 0)
			} else {
				val, err := item.ValueCopy(nil)
				if err != nil {
					return nil, nil, fmt.Errorf("key %q version %d: %w", cur, item.Version(), err)
				}
				fixes, meta = append(fixes, KV{Key: cur, Value: val}), append(meta, item.UserMeta())
			}
			state = 2
		}
	}
	finish()
	return fixes, meta, nil
}

// DropPrefix removes every version of every key under prefix. It blocks
// writes to the whole DB while it runs.
func (v *BadgerVersioned) DropPrefix(prefix []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed.Load() {
		return fmt.Errorf("state drop prefix %q: %w", prefix, ErrClosed)
	}
	// DropPrefix flushes the memtable.
	release, err := v.space.claim(v.dir, memTableSize, false)
	if err != nil {
		return fmt.Errorf("state drop prefix %q: %w", prefix, err)
	}
	defer release()
	// Badger only drops a prefix that has a live key at the newest version;
	// a sentinel makes sure prefixes holding only deletes go too. The id floor
	// keeps MaxVersion (and NextID after a restart) from going backwards.
	id := v.NextID()
	floor := KV{Key: idFloorKey, Value: binary.BigEndian.AppendUint64(nil, id)}
	kvs := []KV{floor}
	if len(prefix) > 0 {
		kvs = append(kvs, KV{Key: prefix})
	}
	floorDropped := bytes.HasPrefix(idFloorKey, prefix)
	if err := v.writeLocked(id, kvs, nil); err != nil {
		return fmt.Errorf("state drop prefix %q: %w", prefix, err)
	}
	if err := v.db.DropPrefix(prefix); err != nil {
		return fmt.Errorf("state drop prefix %q: %w", prefix, err)
	}
	if floorDropped {
		id := v.NextID()
		floor.Value = binary.BigEndian.AppendUint64(nil, id)
		if err := v.writeLocked(id, []KV{floor}, nil); err != nil {
			return fmt.Errorf("state drop prefix %q: %w", prefix, err)
		}
	}
	return nil
}

// SetDiscardTs lets Badger garbage-collect versions below ts, DB-wide.
func (v *BadgerVersioned) SetDiscardTs(ts uint64) {
	v.db.SetDiscardTs(ts)
	for {
		old := v.discard.Load()
		if ts <= old || v.discard.CompareAndSwap(old, ts) {
			return
		}
	}
}

// reading records a read at version at until the returned func is called.
func (v *BadgerVersioned) reading(at uint64) func() {
	v.readersMu.Lock()
	v.readers[at]++
	v.readersMu.Unlock()
	return func() {
		v.readersMu.Lock()
		if v.readers[at]--; v.readers[at] == 0 {
			delete(v.readers, at)
		}
		v.readersMu.Unlock()
	}
}

// CollectGarbage deletes the blob files no readable version points into.
// A reader reads at a version at or above the discard timestamp, so of a
// key's versions only those above it and the newest at or below it are
// readable; older ones are dead whether or not Badger has compacted them
// away yet. It holds the write lock, so no write is between putting a blob
// and committing the references to it.
func (v *BadgerVersioned) CollectGarbage() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed.Load() {
		return ErrClosed
	}
	// Files dead as of the previous collection's discard timestamp, and of
	// every read in progress: a read that took its version before the last
	// SetDiscardTs is not cut short.
	discard := v.prevDiscard
	v.prevDiscard = v.discard.Load()
	v.readersMu.Lock()
	for at := range v.readers {
		discard = min(discard, at)
	}
	v.readersMu.Unlock()
	below := v.blobs.next.Load()
	ids, err := v.blobs.list()
	if err != nil {
		return fmt.Errorf("state blob gc: %w", err)
	}
	if !slices.ContainsFunc(ids, func(id uint64) bool { return id < below }) {
		// No file to collect (small states, whose values stay in the
		// tree): no scan of every version under the write lock.
		return nil
	}
	live := map[uint64]bool{}
	txn := v.db.NewTransactionAt(math.MaxUint64, false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.AllVersions = true
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	var cur []byte
	done := false // the key's readable versions are all seen
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if cur == nil || !bytes.Equal(item.Key(), cur) {
			cur, done = item.KeyCopy(cur[:0]), false
		}
		if done {
			continue
		}
		if item.Version() <= discard {
			done = true // the newest at or below discard: readable, older ones not
		}
		if item.IsDeletedOrExpired() || item.UserMeta()&metaBlob == 0 {
			continue
		}
		ref, err := item.ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("state blob gc: key %q: %w", cur, err)
		}
		id, _, _, err := parseBlobRef(ref)
		if err != nil {
			return fmt.Errorf("state blob gc: key %q: %w", cur, err)
		}
		live[id] = true
	}
	if _, err := v.blobs.remove(live, below); err != nil {
		return fmt.Errorf("state blob gc: %w", err)
	}
	return nil
}

// Close closes the DB. Later calls return ErrClosed.
func (v *BadgerVersioned) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed.Swap(true) {
		return nil
	}
	if err := v.db.Close(); err != nil {
		return fmt.Errorf("close state db %s: %w", v.dir, err)
	}
	return nil
}

// txnWriter writes entries into Badger transactions, committing and starting
// a new one whenever the current one would exceed Badger's size limit
// (ErrTxnTooBig). It is not atomic across transactions.
type txnWriter struct {
	begin  func() *badger.Txn
	commit func(*badger.Txn) error
	txn    *badger.Txn
	n      int // entries in txn
}

func (w *txnWriter) apply(op func(*badger.Txn) error) error {
	if w.txn == nil {
		w.txn = w.begin()
	}
	err := op(w.txn)
	if errors.Is(err, badger.ErrTxnTooBig) && w.n > 0 {
		if err := w.flush(); err != nil {
			return err
		}
		w.txn = w.begin()
		err = op(w.txn)
	}
	if err != nil {
		return err
	}
	w.n++
	return nil
}

func (w *txnWriter) set(e *badger.Entry) error {
	return w.apply(func(txn *badger.Txn) error { return txn.SetEntry(e) })
}

func (w *txnWriter) delete(key []byte) error {
	return w.apply(func(txn *badger.Txn) error { return txn.Delete(key) })
}

// flush commits the current transaction, if any.
func (w *txnWriter) flush() error {
	txn := w.txn
	w.txn, w.n = nil, 0
	if txn == nil {
		return nil
	}
	defer txn.Discard()
	if err := w.commit(txn); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// discard drops an uncommitted transaction.
func (w *txnWriter) discard() {
	if w.txn != nil {
		w.txn.Discard()
		w.txn = nil
	}
}
