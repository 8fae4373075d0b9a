package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Key spaces of the meta DB (first byte).
const (
	metaSeq     = 's' // s<name> -> BE8 last value handed out
	metaCatalog = 'c' // c<key> -> catalog value
	metaEnd     = 'e' // e<table BE8> -> BE8 end offset of the table's log
	metaRow     = 'r' // r<table BE8><first offset BE8> -> chunk: uvarint row count, then each row as uvarint length + bytes (log.go)
	metaRowV1   = 'l' // l<table BE8><offset BE8> -> one row: the layout before chunks (layout 1), rewritten as chunks at open
	metaIdem    = 'i' // i<table BE8><sha256(idempotency key)> -> BE8 accepted, first, last (TTL)
	metaStart   = 'b' // b<table BE8> -> BE8 first retained offset of the table's log (absent: 0)
	metaTime    = 't' // t<table BE8><unix ms BE8> -> BE8 first offset appended in that millisecond (append-time index)
	metaLost    = 'x' // x<table BE8> -> JSON [LostRange]: offsets whose rows the log lost (absent: none)
)

// metaValueThreshold sends values at least this long — ingest rows, in
// practice — to Badger's value log instead of its LSM tree. A log row is
// written once and read a few times; in the tree it was copied into the
// memtable's WAL and skiplist, flushed, then rewritten and recompressed by
// each compaction on its way down, which was most of durable ingest's CPU
// time. In the value log it is written once (and synced with the commit)
// and the tree holds a pointer. The price: the space of truncated and
// dropped rows comes back only through value-log GC (Meta.CollectGarbage).
const metaValueThreshold = 64

// DefaultIdempotencyWindow is how long ingest idempotency keys are
// remembered when MetaOptions.IdempotencyWindow is zero.
const DefaultIdempotencyWindow = 24 * time.Hour

// SyncFunc makes everything committed to a DB so far durable.
type SyncFunc func() error

// MetaOptions configures OpenMeta.
type MetaOptions struct {
	// IdempotencyWindow is how long an ingest Idempotency-Key is remembered
	// per table (DefaultIdempotencyWindow when zero).
	IdempotencyWindow time.Duration
	// WrapSync, when set, wraps the function that syncs the meta DB. Every
	// durability point (ingest group commits, sequences, catalog writes) goes
	// through it, so a fault-injecting wrapper can fail syncs or record what
	// was acknowledged before a sync.
	WrapSync func(SyncFunc) SyncFunc
	// Space, when set, guards the file system's free space: appends are
	// refused (ErrDiskFull, nothing written) once they would leave less
	// than its reserve free, other writes at half of it (space.go).
	Space *Space
}

// Meta is the normal-mode Badger DB holding the catalog, id sequences and the
// per-table HTTP ingest logs with their idempotency keys.
type Meta struct {
	db     *badger.DB
	dir    string
	window time.Duration
	sync   SyncFunc
	space  *Space // nil: no free-space checks
	// now is the clock of the append-time index (time.Now; tests replace it
	// before opening logs).
	now func() time.Time

	// writeMu orders writes against Badger's DropPrefix (used by Log.Drop),
	// which makes concurrent writes fail with ErrBlockedWrites: writers hold
	// the read lock, DropPrefix the write lock.
	writeMu sync.RWMutex

	seqMu    sync.Mutex           // serialises NextSeq's read-modify-write; guards seqMarks
	seqMarks map[string]*markFile // high-water files of sequences, opened on first use

	mu   sync.Mutex // guards logs and the setting of closed
	logs map[uint64]*Log
	// closed is read without mu (isClosed): writers holding writeMu check
	// it, and a log opening under mu writes (a lost range), so mu must not
	// be taken under writeMu.
	closed atomic.Bool
}

// OpenMeta opens (creating if needed) the meta DB in dir.
func OpenMeta(dir string, opts MetaOptions) (*Meta, error) {
	if err := removeEmptyLogFiles(dir); err != nil {
		return nil, fmt.Errorf("open meta db %s: %w", dir, err)
	}
	db, err := badger.Open(badgerOptions(dir, "meta").WithValueThreshold(metaValueThreshold))
	if err != nil {
		return nil, fmt.Errorf("open meta db %s: %w", dir, err)
	}
	m := &Meta{db: db, dir: dir, window: opts.IdempotencyWindow, space: opts.Space, now: time.Now, logs: make(map[uint64]*Log), seqMarks: map[string]*markFile{}}
	if m.window <= 0 {
		m.window = DefaultIdempotencyWindow
	}
	m.sync = func() error { return db.Sync() }
	if opts.WrapSync != nil {
		m.sync = opts.WrapSync(m.sync)
	}
	return m, nil
}

// Close closes every open Log, then the DB.
func (m *Meta) Close() error {
	m.mu.Lock()
	if m.closed.Swap(true) {
		m.mu.Unlock()
		return nil
	}
	logs := m.logs
	m.logs = nil
	m.mu.Unlock()
	for _, l := range logs {
		l.Close()
	}
	m.seqMu.Lock()
	for _, mf := range m.seqMarks {
		mf.close()
	}
	m.seqMu.Unlock()
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	if err := m.db.Close(); err != nil {
		return fmt.Errorf("close meta db %s: %w", m.dir, err)
	}
	return nil
}

func (m *Meta) isClosed() bool { return m.closed.Load() }

// CollectGarbage reclaims value-log space held by deleted values
// (truncated or dropped ingest rows, expired idempotency keys): while some
// value-log file is at least half garbage, per the discard statistics that
// compactions keep, it moves that file's live values to the head of the log
// and deletes the file. The engine calls it from its maintenance loop.
func (m *Meta) CollectGarbage() error {
	for {
		err := m.collectOne()
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil // nothing (more) worth rewriting, or a GC already running
		}
		if err != nil {
			return fmt.Errorf("meta value log gc: %w", err)
		}
	}
}

// collectOne runs one value-log GC round. It holds the write lock's read
// side, as writers do: the rewrite writes, and DropPrefix blocks writes.
func (m *Meta) collectOne() error {
	m.writeMu.RLock()
	defer m.writeMu.RUnlock()
	if m.isClosed() {
		return ErrClosed
	}
	// A rewrite moves up to half a file's values (the rest is garbage).
	release, err := m.space.claim(m.dir, valueLogFileSize/2, false)
	if err != nil {
		return badger.ErrNoRewrite // not now: nothing is written
	}
	defer release()
	return m.db.RunValueLogGC(0.5)
}

// update runs fn in one read-write transaction, commits it and syncs.
func (m *Meta) update(fn func(txn *badger.Txn) error) error {
	m.writeMu.RLock()
	defer m.writeMu.RUnlock()
	if m.isClosed() {
		return ErrClosed
	}
	return m.writeLocked(fn)
}

// write is update for a caller holding m.mu (so m cannot close meanwhile).
func (m *Meta) write(fn func(txn *badger.Txn) error) error {
	m.writeMu.RLock()
	defer m.writeMu.RUnlock()
	return m.writeLocked(fn)
}

// writeLocked is update's transaction; the caller holds writeMu's read
// side.
func (m *Meta) writeLocked(fn func(txn *badger.Txn) error) error {
	release, err := m.space.claim(m.dir, smallWrite, false)
	if err != nil {
		return err
	}
	defer release()
	txn := m.db.NewTransaction(true)
	defer txn.Discard()
	if err := fn(txn); err != nil {
		return err
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := m.sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// NextSeq returns the next value of the named sequence: 1 first, then
// strictly increasing, durable before it returns, never repeated across
// restarts. The last value is also kept in a high-water file beside the
// DB (written and synced first), so a DB that lost the tail of its
// write-ahead log does not hand a value out again: the next value is
// above the larger of the two.
func (m *Meta) NextSeq(name string) (uint64, error) {
	return m.raiseSeq(name, 0, true)
}

// RaiseSeq makes the named sequence's next value larger than floor (a
// value handed out before, found elsewhere: a query id in the catalog). It
// reports whether the sequence was below floor.
func (m *Meta) RaiseSeq(name string, floor uint64) (bool, error) {
	m.seqMu.Lock()
	cur, _, err := m.seqValue(name)
	m.seqMu.Unlock()
	if err != nil || cur >= floor {
		return false, err
	}
	_, err = m.raiseSeq(name, floor, false)
	return err == nil, err
}

// LastSeq returns the named sequence's last value handed out (0: none).
func (m *Meta) LastSeq(name string) (uint64, error) {
	m.seqMu.Lock()
	defer m.seqMu.Unlock()
	v, _, err := m.seqValue(name)
	return v, err
}

// seqValue returns the sequence's last value (the larger of the DB's and
// the high-water file's) and its file (caller holds seqMu).
func (m *Meta) seqValue(name string) (uint64, *markFile, error) {
	mf, opened := m.seqMarks[name]
	if !opened {
		var bad, err error
		mf, _, _, bad, err = openMark(filepath.Join(m.dir, highwaterDir, seqMarkName(name)))
		if err != nil {
			return 0, nil, fmt.Errorf("meta seq %q: %w", name, err)
		}
		if bad != nil {
			slog.Error("sequence high-water file unreadable; the sequence continues from the meta store's value", "seq", name, "err", bad)
		}
		m.seqMarks[name] = mf
	}
	txn := m.db.NewTransaction(false)
	defer txn.Discard()
	v, err := getBE8(txn, append([]byte{metaSeq}, name...))
	if err != nil {
		return 0, nil, fmt.Errorf("meta seq %q: %w", name, err)
	}
	if mf.last > v {
		if !opened {
			slog.Error("sequence behind its high-water file: the meta store lost writes; continuing above the high-water mark, so no value repeats", "seq", name, "store", v, "high_water", mf.last)
		}
		v = mf.last
	}
	return v, mf, nil
}

// raiseSeq stores max(last value + 1, floor) (next: +1) as the sequence's
// value, the high-water file first, and returns it.
func (m *Meta) raiseSeq(name string, floor uint64, next bool) (uint64, error) {
	m.seqMu.Lock()
	defer m.seqMu.Unlock()
	if m.isClosed() {
		return 0, fmt.Errorf("meta next seq %q: %w", name, ErrClosed)
	}
	v, mf, err := m.seqValue(name)
	if err != nil {
		return 0, err
	}
	if next {
		v++
	}
	v = max(v, floor)
	if err := mf.write(markRecord{v, v}, true); err != nil {
		return 0, fmt.Errorf("meta next seq %q: %w", name, err)
	}
	mf.last = v
	err = m.update(func(txn *badger.Txn) error {
		return txn.Set(append([]byte{metaSeq}, name...), binary.BigEndian.AppendUint64(nil, v))
	})
	if err != nil {
		return 0, fmt.Errorf("meta next seq %q: %w", name, err)
	}
	return v, nil
}

// PutCatalog stores a catalog entry, durably.
func (m *Meta) PutCatalog(key string, val []byte) error {
	err := m.update(func(txn *badger.Txn) error {
		return txn.Set(append([]byte{metaCatalog}, key...), val)
	})
	if err != nil {
		return fmt.Errorf("meta put catalog %q: %w", key, err)
	}
	return nil
}

// DeleteCatalog removes a catalog entry, durably. Deleting a missing key is
// not an error.
func (m *Meta) DeleteCatalog(key string) error {
	err := m.update(func(txn *badger.Txn) error {
		return txn.Delete(append([]byte{metaCatalog}, key...))
	})
	if err != nil {
		return fmt.Errorf("meta delete catalog %q: %w", key, err)
	}
	return nil
}

// DeleteCatalogKeys removes catalog entries in one durable transaction.
func (m *Meta) DeleteCatalogKeys(keys []string) error {
	err := m.update(func(txn *badger.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(append([]byte{metaCatalog}, k...)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("meta delete %d catalog entries: %w", len(keys), err)
	}
	return nil
}

// ListCatalog returns the catalog entries whose key starts with prefix,
// sorted by key.
func (m *Meta) ListCatalog(prefix string) ([]KV, error) {
	if m.isClosed() {
		return nil, fmt.Errorf("meta list catalog %q: %w", prefix, ErrClosed)
	}
	txn := m.db.NewTransaction(false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = append([]byte{metaCatalog}, prefix...)
	it := txn.NewIterator(opts)
	defer it.Close()
	var out []KV
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		val, err := item.ValueCopy(nil)
		if err != nil {
			return nil, fmt.Errorf("meta list catalog %q: %w", prefix, err)
		}
		out = append(out, KV{Key: item.KeyCopy(nil)[1:], Value: val})
	}
	return out, nil
}

// Log returns the ingest log of table tableID, opening it (and starting its
// appender) on first use. Repeated calls return the same *Log until it is
// closed or dropped.
func (m *Meta) Log(tableID uint64) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return nil, fmt.Errorf("log %d open: %w", tableID, ErrClosed)
	}
	if l, ok := m.logs[tableID]; ok {
		return l, nil
	}
	l, err := openLog(m, tableID)
	if err != nil {
		return nil, err
	}
	m.logs[tableID] = l
	return l, nil
}

// forget removes l from the open logs (after Close or Drop).
func (m *Meta) forget(l *Log) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs[l.id] == l {
		delete(m.logs, l.id)
	}
}

// DropLog deletes table id's ingest log, open or not: rows, offsets,
// index, idempotency keys, lost ranges and high-water file (the orphans
// of a DROP TABLE that did not finish).
func (m *Meta) DropLog(id uint64) error {
	m.mu.Lock()
	l, open := m.logs[id]
	m.mu.Unlock()
	if open {
		return l.Drop()
	}
	release, err := m.space.claim(m.dir, memTableSize, false)
	if err != nil {
		return fmt.Errorf("log %d drop: %w", id, err)
	}
	defer release()
	return m.dropLogData(id)
}

// LogIDs returns the table ids that have an ingest log: an end or start
// offset in the DB, or a high-water file.
func (m *Meta) LogIDs() ([]uint64, error) {
	if m.isClosed() {
		return nil, fmt.Errorf("meta log ids: %w", ErrClosed)
	}
	ids := map[uint64]bool{}
	txn := m.db.NewTransaction(false)
	defer txn.Discard()
	for _, space := range []byte{metaEnd, metaStart} {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{space}
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); len(k) == 9 {
				ids[binary.BigEndian.Uint64(k[1:])] = true
			}
		}
		it.Close()
	}
	names, err := m.highwaterNames()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if id, ok := parseIDName(n, "log-"); ok {
			ids[id] = true
		}
	}
	out := make([]uint64, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// highwaterNames lists the files of the high-water directory.
func (m *Meta) highwaterNames() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(m.dir, highwaterDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta high-water files: %w", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// Tombstone is a DROP that was started (MarkDropped) and not finished
// (ClearDropped): kind is DroppedTable or DroppedQuery.
type Tombstone struct {
	Kind string
	ID   uint64
}

// MarkDropped records, durably and before anything of it is deleted, that
// table or query id is being dropped, so that a crash part way leaves a
// record of what to remove at the next start (Dropped). Deleting the
// catalog entry alone would not say it: a catalog entry can also be lost
// with the tail of the write-ahead log, and its data must then be kept.
func (m *Meta) MarkDropped(kind string, id uint64) error {
	dir := filepath.Join(m.dir, highwaterDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mark %s %d dropped: %w", kind, id, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, dropMarkName(kind, id)), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("mark %s %d dropped: %w", kind, id, err)
	}
	f.Close()
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("mark %s %d dropped: %w", kind, id, err)
	}
	return nil
}

// ClearDropped removes the tombstone of table or query id (the drop is
// finished, or it was refused before anything was deleted).
func (m *Meta) ClearDropped(kind string, id uint64) error {
	dir := filepath.Join(m.dir, highwaterDir)
	if err := os.Remove(filepath.Join(dir, dropMarkName(kind, id))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear %s %d tombstone: %w", kind, id, err)
	}
	return syncDir(dir)
}

// Dropped lists the tombstones left (by drops a crash interrupted).
func (m *Meta) Dropped() ([]Tombstone, error) {
	names, err := m.highwaterNames()
	if err != nil {
		return nil, err
	}
	var out []Tombstone
	for _, n := range names {
		for _, kind := range []string{DroppedTable, DroppedQuery} {
			if id, ok := parseIDName(n, "drop-"+kind+"-"); ok {
				out = append(out, Tombstone{Kind: kind, ID: id})
			}
		}
	}
	return out, nil
}
