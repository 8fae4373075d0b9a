package state

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/streamsql/streamsql/internal/fault"
)

// MaxRowBytes is the largest row Log.Append accepts.
const MaxRowBytes = 128 << 20

// maxGroup caps how many Append requests one group commit takes, which keeps
// the final transaction (end offset plus idempotency keys) small.
const maxGroup = 1024

// ErrTruncated is returned (wrapped) by Log.Read from an offset below
// Log.Start: those rows were deleted by Truncate.
var ErrTruncated = errors.New("state: log truncated")

// truncateChunk is how many keys Truncate deletes per transaction.
const truncateChunk = 4096

// AppendResult is the answer to Log.Append. Offsets are inclusive; for zero
// rows First is the end offset at the time and Last = First-1.
type AppendResult struct {
	Accepted  int
	First     int64
	Last      int64
	Duplicate bool // the idempotency key was seen: nothing was appended, this is the first answer
}

// IdempotencyConflictError is the answer to an Append whose idempotency key
// was first used for other rows (a different digest of the encoded rows):
// nothing was appended.
type IdempotencyConflictError struct {
	Key   string       // the Idempotency-Key as sent
	First AppendResult // the first request's answer
}

func (e *IdempotencyConflictError) Error() string {
	return fmt.Sprintf("Idempotency-Key %q was first used for a request with other rows (it appended %d rows at offsets %d to %d); nothing of this request was appended: send new rows with a new key",
		e.Key, e.First.Accepted, e.First.First, e.First.Last)
}

// LostRange is a range of offsets whose rows the log lost: found missing
// when the log was opened (or checked against a query's checkpoint),
// never reused, skipped by Read.
type LostRange struct {
	From     int64     `json:"from"` // first lost offset
	To       int64     `json:"to"`   // the offset after the last lost one
	Detected time.Time `json:"detected"`
	Cause    string    `json:"cause"`
}

// lossState is a log's lost ranges as recorded (one per detection) and
// merged into sorted, disjoint gaps for Read.
type lossState struct {
	recs []LostRange
	gaps [][2]int64
}

func newLossState(recs []LostRange) *lossState {
	ls := &lossState{recs: recs}
	for _, r := range recs {
		ls.gaps = append(ls.gaps, [2]int64{r.From, r.To})
	}
	slices.SortFunc(ls.gaps, func(a, b [2]int64) int { return int(min(max(a[0]-b[0], -1), 1)) })
	merged := ls.gaps[:0]
	for _, g := range ls.gaps {
		if n := len(merged); n > 0 && g[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], g[1])
			continue
		}
		merged = append(merged, g)
	}
	ls.gaps = merged
	return ls
}

// gapAt returns the end of the gap holding off (or off), and the start of
// the next gap after off (math.MaxInt64 when none).
func (ls *lossState) gapAt(off int64) (skipTo, nextGap int64) {
	skipTo, nextGap = off, math.MaxInt64
	for _, g := range ls.gaps {
		switch {
		case off >= g[0] && off < g[1]:
			skipTo = g[1]
		case g[0] > skipTo:
			return skipTo, g[0]
		}
	}
	return skipTo, nextGap
}

// Log is the durable append-only ingest log of one HTTP table, stored in the
// meta DB. Rows get consecutive offsets from 0. One appender goroutine
// group-commits concurrent Appends: their rows, idempotency keys and the new
// end offset are committed, then the DB is synced once for the group, and only
// then is End advanced and are callers answered. The persisted end offset is
// what makes rows visible: rows above it (left by a crash or failed group)
// are ignored and overwritten later.
//
// After a failed commit of the end offset or a failed sync the log refuses
// further appends (its on-disk state is no longer known); reopening the Meta
// recovers from what is on disk.
//
// Offsets are never reused, even when the meta DB loses the tail of its
// write-ahead log (Badger truncates a memtable's WAL at its first corrupt
// entry when it opens, silently). Each group that appends rows also writes
// the log's high-water file (highwater.go): "every row below first is
// acknowledged, the group ends at next", fdatasync'ed concurrently with
// Badger's commit and sync, and once both are done, before the callers are
// answered, "acknowledged below next" (written, not synced: it survives a
// process crash; after a power failure the synced record still bounds
// what could have been acknowledged). At open, an end offset below the
// acknowledged mark means acknowledged rows were lost: the range from the
// end to the group's end is recorded as lost (durably, Lost), the end
// moves past it, and Read skips it. CheckAcked does the same for an offset
// a query's checkpoint proves was readable.
//
// Retention: each group commit that appends rows also records, with the end
// offset, an append-time index entry (the millisecond of the commit -> the
// group's first offset; only the first group of a millisecond gets one).
// OffsetBefore reads it. Truncate deletes a prefix of the log: it persists
// the new Start first, then deletes rows below it in chunks, so a crash part
// way leaves rows below Start, which are never read and are deleted by the
// next Truncate.
type Log struct {
	m          *Meta
	id         uint64
	endKey     []byte
	startKey   []byte
	rowPrefix  []byte
	idemPrefix []byte
	timePrefix []byte
	lostKey    []byte

	reqs      chan *appendReq // buffered (maxGroup): the queue of requests handed over
	quit      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool

	end     atomic.Int64
	start   atomic.Int64 // first retained offset; only grows, persisted before it is stored
	mu      sync.Mutex   // guards changed
	changed chan struct{}

	truncMu sync.Mutex // serialises Truncate, and Drop against it
	// Guarded by truncMu: chunks below cleared (the first chunk kept), and
	// index entries before indexFrom, were deleted by this process by a
	// Truncate to clearedFor (a chunk straddling it stays until wholly
	// below a later Start).
	cleared    int64
	clearedFor int64
	indexFrom  []byte

	// groupMu is held by the appender for each group and by CheckAcked:
	// a loss is declared between groups.
	groupMu sync.Mutex
	// mark is the log's high-water file; markRec its newest record at open.
	mark    *markFile
	markRec markRecord
	loss    atomic.Pointer[lossState]
	// openProblem is a high-water file that could not be read at open
	// (reported by OpenProblem).
	openProblem error

	// readHook, when set (by tests, before any Read), runs in Read between
	// its first check of Start and taking its snapshot.
	readHook func()

	// Owned by the appender goroutine (set at open before it starts):
	failed error // set after an unrecoverable error
	lastMs int64 // millisecond of the newest append-time index entry, -1 when none
}

type appendReq struct {
	ctx     context.Context
	rows    [][]byte
	idemKey []byte // nil without an idempotency key
	key     string // the idempotency key as given
	digest  [sha256.Size]byte
	done    chan appendResp
}

type appendResp struct {
	res AppendResult
	err error
}

func tableKey(space byte, tableID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{space}, tableID)
}

func openLog(m *Meta, id uint64) (*Log, error) {
	l := &Log{
		m:          m,
		id:         id,
		endKey:     tableKey(metaEnd, id),
		startKey:   tableKey(metaStart, id),
		rowPrefix:  tableKey(metaRow, id),
		idemPrefix: tableKey(metaIdem, id),
		timePrefix: tableKey(metaTime, id),
		lostKey:    tableKey(metaLost, id),
		lastMs:     -1,
		reqs:       make(chan *appendReq, maxGroup),
		quit:       make(chan struct{}),
		stopped:    make(chan struct{}),
		changed:    make(chan struct{}),
	}
	txn := m.db.NewTransaction(false)
	defer txn.Discard()
	end, err := getBE8(txn, l.endKey)
	if err != nil {
		return nil, fmt.Errorf("log %d open: end offset: %w", id, err)
	}
	start, err := getBE8(txn, l.startKey)
	if err != nil {
		return nil, fmt.Errorf("log %d open: start offset: %w", id, err)
	}
	if end > math.MaxInt64 || start > math.MaxInt64 {
		return nil, fmt.Errorf("log %d open: start %d or end %d out of range", id, start, end)
	}
	lost, err := readLost(txn, l.lostKey)
	if err != nil {
		return nil, fmt.Errorf("log %d open: lost ranges: %w", id, err)
	}
	l.loss.Store(newLossState(lost))
	l.end.Store(int64(end))
	l.start.Store(min(int64(start), int64(end)))
	// The newest append-time index entry.
	opts := badger.DefaultIteratorOptions
	opts.Prefix = l.timePrefix
	opts.Reverse = true
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	it.Seek(append(append([]byte(nil), l.timePrefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	if it.Valid() {
		if k := it.Item().Key(); len(k) == len(l.timePrefix)+8 {
			l.lastMs = int64(binary.BigEndian.Uint64(k[len(l.timePrefix):]))
		}
	}
	it.Close()
	txn.Discard()
	if err := l.migrateRowsV1(l.start.Load(), int64(end)); err != nil {
		return nil, fmt.Errorf("log %d open: %w", id, err)
	}
	// Chunks at or above the end offset were left by a crash or a failed
	// group: invisible, and deleted so that a chunk written later at
	// another first offset is never shadowed by one of them.
	if stale, err := l.chunkKeysFrom(int64(end)); err != nil {
		return nil, fmt.Errorf("log %d open: %w", id, err)
	} else if len(stale) > 0 {
		if err := l.deleteKeys(stale); err != nil {
			return nil, fmt.Errorf("log %d open: delete %d chunks above the end offset %d: %w", id, len(stale), end, err)
		}
	}
	if err := l.openMark(); err != nil {
		return nil, fmt.Errorf("log %d open: %w", id, err)
	}
	go l.appender()
	return l, nil
}

// openMark opens the log's high-water file and compares it with the end
// offset read from the DB (caller: openLog, holding m.mu).
func (l *Log) openMark() error {
	path := filepath.Join(l.m.dir, highwaterDir, logMarkName(l.id))
	mf, rec, found, bad, err := openMark(path)
	if err != nil {
		return err
	}
	l.mark, l.openProblem = mf, bad
	end := l.end.Load()
	switch {
	case found && int64(rec.acked) > end:
		l.markRec = rec
		cause := fmt.Sprintf("the meta store's ingest log ends at offset %d, but %s records rows acknowledged up to offset %d: the store lost the tail of its write-ahead log (Badger truncates a memtable's log at its first corrupt entry when it opens)", end, path, rec.acked)
		return l.declareLoss(int64(rec.acked), cause, l.m.write)
	case found:
		l.markRec = rec
		if end > int64(rec.inflight) {
			return mf.write(markRecord{uint64(end), uint64(end)}, true)
		}
		return nil
	default:
		// A new log, or one written before high-water files existed (or
		// whose file is unreadable): what the DB says is all there is.
		l.markRec = markRecord{uint64(end), uint64(end)}
		return mf.write(l.markRec, true)
	}
}

// declareLoss records that the rows from End up to at least acked are
// lost (up to the end of the group that was in flight, if later), moves
// End past them, and records it in the high-water file first, so a crash
// part way declares the same loss again.
func (l *Log) declareLoss(acked int64, cause string, write func(func(*badger.Txn) error) error) error {
	from := l.end.Load()
	to := max(acked, int64(l.markRec.inflight))
	if err := l.mark.write(markRecord{uint64(to), uint64(to)}, true); err != nil {
		return err
	}
	r := LostRange{From: from, To: to, Detected: l.m.now().UTC().Truncate(time.Millisecond), Cause: cause}
	recs := append(slices.Clone(l.loss.Load().recs), r)
	b, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	err = write(func(txn *badger.Txn) error {
		if err := txn.Set(l.lostKey, b); err != nil {
			return err
		}
		return txn.Set(l.endKey, binary.BigEndian.AppendUint64(nil, uint64(to)))
	})
	if err != nil {
		return fmt.Errorf("record lost rows [%d, %d): %w", from, to, err)
	}
	l.markRec = markRecord{uint64(to), uint64(to)}
	l.loss.Store(newLossState(recs))
	l.advance(to)
	return nil
}

// readLost reads a log's recorded lost ranges (none when absent).
func readLost(txn *badger.Txn, key []byte) ([]LostRange, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []LostRange
	err = item.Value(func(v []byte) error { return json.Unmarshal(v, &recs) })
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.From < 0 || r.To < r.From {
			return nil, fmt.Errorf("corrupt lost range [%d, %d)", r.From, r.To)
		}
	}
	return recs, nil
}

// LostRows is how many offsets the lost ranges cover (overlapping
// detections counted once).
func (l *Log) LostRows() int64 {
	var n int64
	for _, g := range l.loss.Load().gaps {
		n += g[1] - g[0]
	}
	return n
}

// Lost returns the ranges of offsets this log lost, as recorded, oldest
// first (nil when none).
func (l *Log) Lost() []LostRange { return slices.Clone(l.loss.Load().recs) }

// OpenProblem is the error met reading the log's high-water file at open
// (nil when it was fine): without it a loss cannot be detected at that
// open; the file was written again.
func (l *Log) OpenProblem() error { return l.openProblem }

// CheckAcked declares the rows in [End, acked) lost when acked > End:
// something outside the meta DB (a query's checkpoint that read up to
// acked) proves those offsets were readable, so acknowledged. cause says
// what proved it. It reports whether it declared a loss. Call it before
// rows are appended after the open (it is safe with appends, but a loss is
// only meaningful against the end offset found at open).
func (l *Log) CheckAcked(acked int64, cause string) (bool, error) {
	l.groupMu.Lock()
	defer l.groupMu.Unlock()
	if acked <= l.end.Load() {
		return false, nil
	}
	if l.closed.Load() {
		return false, fmt.Errorf("log %d: %w", l.id, ErrClosed)
	}
	if err := l.declareLoss(acked, cause, l.m.update); err != nil {
		return false, fmt.Errorf("log %d: %w", l.id, err)
	}
	return true, nil
}

// getBE8 reads a big-endian uint64 value; a missing key reads as 0.
func getBE8(txn *badger.Txn, key []byte) (uint64, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var v uint64
	err = item.Value(func(b []byte) error {
		if len(b) != 8 {
			return fmt.Errorf("corrupt value of %d bytes", len(b))
		}
		v = binary.BigEndian.Uint64(b)
		return nil
	})
	return v, err
}

// ID returns the table id of the log.
func (l *Log) ID() uint64 { return l.id }

// End returns the next offset to be assigned: the number of durable rows
// ever appended (truncation does not lower it).
func (l *Log) End() int64 { return l.end.Load() }

// Start returns the first retained offset: 0 until Truncate, then the
// highest offset truncated below. Rows in [Start, End) can be read.
func (l *Log) Start() int64 { return l.start.Load() }

// Changed returns a channel that is closed when End next advances, or when
// the log is closed. To wait without missing an advance, take the channel
// before checking End:
//
//	ch := l.Changed()
//	if l.End() <= next { <-ch }
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Append appends rows (all or nothing) and returns once they are durable.
// With a non-empty idemKey seen for this table within the idempotency
// window, it appends nothing and returns the first answer with Duplicate set.
// The rows' backing arrays must not change until Append returns. ctx only
// cancels waiting for the appender: a request taken into a group commit is
// finished and answered.
func (l *Log) Append(ctx context.Context, rows [][]byte, idemKey string) (AppendResult, error) {
	for i, r := range rows {
		if len(r) > MaxRowBytes {
			return AppendResult{}, fmt.Errorf("log %d append: row %d has %d bytes, more than %d", l.id, i, len(r), MaxRowBytes)
		}
	}
	req := &appendReq{ctx: ctx, rows: rows, done: make(chan appendResp, 1)}
	if idemKey != "" {
		h := sha256.Sum256([]byte(idemKey))
		req.idemKey = append(append([]byte(nil), l.idemPrefix...), h[:]...)
		req.key, req.digest = idemKey, rowsDigest(rows)
	}
	select {
	case l.reqs <- req:
	case <-l.quit:
		return AppendResult{}, fmt.Errorf("log %d append: %w", l.id, ErrClosed)
	case <-ctx.Done():
		return AppendResult{}, fmt.Errorf("log %d append: %w", l.id, ctx.Err())
	}
	// Once handed over, the request is part of a group that runs to the end
	// (bounded by one commit and sync), so its outcome is always known —
	// unless the log closed with it still queued: then it was never written.
	var resp appendResp
	select {
	case resp = <-req.done:
	case <-l.stopped:
		select {
		case resp = <-req.done: // answered by the appender's last group
		default:
			return AppendResult{}, fmt.Errorf("log %d append: %w", l.id, ErrClosed)
		}
	}
	if resp.err != nil {
		return AppendResult{}, fmt.Errorf("log %d append: %w", l.id, resp.err)
	}
	return resp.res, nil
}

// rowsDigest is the SHA-256 of rows, each preceded by its length: the
// identity of a request's content for its idempotency key. It is taken
// over the encoded rows, not the body, so the same rows sent again in
// another form (gzip, NDJSON or a JSON array, other spacing or member
// order, a timestamp as epoch milliseconds) are the same request.
func rowsDigest(rows [][]byte) [sha256.Size]byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, r := range rows {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(r)))])
		h.Write(r)
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// appender is the log's one writer goroutine.
func (l *Log) appender() {
	defer close(l.stopped)
	for {
		select {
		case <-l.quit:
			return
		case req := <-l.reqs:
			group := []*appendReq{req}
		drain:
			for len(group) < maxGroup {
				select {
				case req := <-l.reqs:
					group = append(group, req)
				default:
					break drain
				}
			}
			l.commitGroup(group)
		}
	}
}

// commitGroup appends a group of requests with one sync and answers them.
func (l *Log) commitGroup(group []*appendReq) {
	l.groupMu.Lock()
	defer l.groupMu.Unlock()
	if l.failed != nil {
		for _, r := range group {
			r.done <- appendResp{err: fmt.Errorf("log failed earlier: %w", l.failed)}
		}
		return
	}
	l.m.writeMu.RLock()
	defer l.m.writeMu.RUnlock()

	const (
		kindWrite = iota
		kindAnswered
		kindDupInGroup
	)
	kinds := make([]int, len(group))
	dupOf := make([]int, len(group))
	results := make([]AppendResult, len(group))
	seen := make(map[string]int)
	first := l.end.Load()
	next := first
	var writes []int
	needCommit := false

	rtxn := l.m.db.NewTransaction(false)
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			kinds[i] = kindAnswered
			r.done <- appendResp{err: err}
			continue
		}
		if r.idemKey != nil {
			if j, ok := seen[string(r.idemKey)]; ok {
				kinds[i], dupOf[i] = kindDupInGroup, j
				continue
			}
			res, digest, ok, err := lookupIdem(rtxn, r.idemKey)
			if err == nil && ok && digest != nil && [sha256.Size]byte(digest) != r.digest {
				err = &IdempotencyConflictError{Key: r.key, First: res}
			}
			if err != nil || ok {
				kinds[i] = kindAnswered
				r.done <- appendResp{res: res, err: err}
				continue
			}
			seen[string(r.idemKey)] = i
			needCommit = true
		}
		n := len(r.rows)
		results[i] = AppendResult{Accepted: n, First: next, Last: next + int64(n) - 1}
		next += int64(n)
		if n > 0 {
			needCommit = true
		}
		writes = append(writes, i)
	}
	rtxn.Discard()

	var err error
	if needCommit {
		// The append-time index entry: the first group of a millisecond
		// records its first offset; later groups of that millisecond (or of
		// an earlier one, should the clock step back) are covered by it.
		var idx *badger.Entry
		ms := max(l.m.now().UnixMilli(), 0)
		if next > first && ms > l.lastMs {
			k := binary.BigEndian.AppendUint64(append([]byte(nil), l.timePrefix...), uint64(ms))
			idx = badger.NewEntry(k, binary.BigEndian.AppendUint64(nil, uint64(first)))
		}
		// Room first: a refused group writes nothing (and the log goes on).
		var release func()
		release, err = l.m.space.claim(l.m.dir, groupBytes(group, writes), true)
		var markDone chan error
		if err == nil && next > first {
			// The high-water file, synced while Badger commits and syncs.
			markDone = make(chan error, 1)
			go func() { markDone <- l.mark.write(markRecord{uint64(first), uint64(next)}, true) }()
		}
		if err == nil {
			err = l.writeGroup(group, writes, results, next, idx)
			release()
		}
		if err == nil {
			if idx != nil {
				l.lastMs = ms
			}
			fault.Point("ingest.after_write")
			if err = l.m.sync(); err != nil {
				err = fmt.Errorf("sync: %w", err)
				l.failed = err
			}
		}
		if markDone != nil {
			if markErr := <-markDone; err == nil && markErr != nil {
				err, l.failed = markErr, markErr
			}
		}
		if err == nil && next > first {
			// Acknowledged below next from now on: written before the
			// answers, so a process crash after them cannot hide them.
			if err = l.mark.write(markRecord{uint64(next), uint64(next)}, false); err != nil {
				l.failed = err
			}
		}
		if err == nil {
			fault.Point("ingest.after_sync")
			l.advance(next)
		}
	}
	for i, r := range group {
		switch kinds[i] {
		case kindWrite:
			r.done <- appendResp{res: results[i], err: err}
		case kindDupInGroup:
			res := results[dupOf[i]]
			res.Duplicate = true
			if err == nil && r.digest != group[dupOf[i]].digest {
				r.done <- appendResp{err: &IdempotencyConflictError{Key: r.key, First: res}}
				continue
			}
			r.done <- appendResp{res: res, err: err}
		}
	}
}

// groupBytes estimates what a group commit writes: its rows and their
// keys, its idempotency keys and the end offset, with Badger's overhead.
func groupBytes(group []*appendReq, writes []int) int64 {
	n := int64(smallWrite)
	for _, i := range writes {
		r := group[i]
		n += int64(len(r.idemKey)) + idemBytes + sha256.Size + entryOverhead
		for _, row := range r.rows {
			n += int64(len(row)) + 17 + entryOverhead
		}
	}
	return n
}

// lookupIdem returns the stored first answer for an idempotency key and
// the digest of its rows (nil for a key stored before digests were kept:
// its answer is given to any repeat, as it was then).
func lookupIdem(txn *badger.Txn, key []byte) (AppendResult, []byte, bool, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return AppendResult{}, nil, false, nil
	}
	if err != nil {
		return AppendResult{}, nil, false, fmt.Errorf("idempotency lookup: %w", err)
	}
	var res AppendResult
	var digest []byte
	err = item.Value(func(v []byte) error {
		if len(v) != idemBytes && len(v) != idemBytes+sha256.Size {
			return fmt.Errorf("corrupt idempotency record of %d bytes", len(v))
		}
		res = AppendResult{
			Accepted:  int(binary.BigEndian.Uint64(v)),
			First:     int64(binary.BigEndian.Uint64(v[8:])),
			Last:      int64(binary.BigEndian.Uint64(v[16:])),
			Duplicate: true,
		}
		if len(v) > idemBytes {
			digest = slices.Clone(v[idemBytes:])
		}
		return nil
	})
	if err != nil {
		return AppendResult{}, nil, false, fmt.Errorf("idempotency lookup: %w", err)
	}
	return res, digest, true, nil
}

// idemBytes is the answer part of an idempotency record (accepted, first,
// last); the digest of the rows follows it.
const idemBytes = 24

// writeGroup commits the rows of the requests in writes, then their
// idempotency keys and the append-time index entry idx (when not nil)
// together with the new end offset. A small group goes in one transaction; a
// large one writes its rows in as many transactions as needed first. Sets
// l.failed when the final commit fails.
func (l *Log) writeGroup(group []*appendReq, writes []int, results []AppendResult, end int64, idx *badger.Entry) error {
	rowsEntries := func(yield func(*badger.Entry) error) error {
		for _, i := range writes {
			r := group[i]
			for j := 0; j < len(r.rows); {
				n, size := chunkRows(r.rows[j:])
				// One key and one value buffer per chunk, not per row.
				buf := make([]byte, 17, 17+size)
				copy(buf, l.rowPrefix)
				binary.BigEndian.PutUint64(buf[9:], uint64(results[i].First+int64(j)))
				v := binary.AppendUvarint(buf[17:], uint64(n))
				for _, row := range r.rows[j : j+n] {
					v = binary.AppendUvarint(v, uint64(len(row)))
					v = append(v, row...)
				}
				if err := yield(&badger.Entry{Key: buf[:17:17], Value: v}); err != nil {
					return err
				}
				j += n
			}
		}
		return nil
	}
	finalEntries := func(yield func(*badger.Entry) error) error {
		for _, i := range writes {
			r := group[i]
			if r.idemKey == nil {
				continue
			}
			v := make([]byte, idemBytes, idemBytes+sha256.Size)
			res := results[i]
			binary.BigEndian.PutUint64(v, uint64(res.Accepted))
			binary.BigEndian.PutUint64(v[8:], uint64(res.First))
			binary.BigEndian.PutUint64(v[16:], uint64(res.Last))
			v = append(v, r.digest[:]...)
			if err := yield(badger.NewEntry(r.idemKey, v).WithTTL(l.m.window)); err != nil {
				return err
			}
		}
		if idx != nil {
			if err := yield(idx); err != nil {
				return err
			}
		}
		return yield(badger.NewEntry(l.endKey, binary.BigEndian.AppendUint64(nil, uint64(end))))
	}

	// Small group: everything in one transaction.
	var rowBytes, rowCount int64
	for _, i := range writes {
		for _, row := range group[i].rows {
			rowBytes += int64(len(row)) + 32
			rowCount++
		}
	}
	if rowBytes < l.m.db.MaxBatchSize()/2 && rowCount < l.m.db.MaxBatchCount()/2 {
		txn := l.m.db.NewTransaction(true)
		set := func(e *badger.Entry) error { return txn.SetEntry(e) }
		err := rowsEntries(set)
		if err == nil {
			err = finalEntries(set)
		}
		if err == nil {
			if err = txn.Commit(); err != nil {
				err = fmt.Errorf("commit: %w", err)
				l.failed = err
			}
			return err
		}
		txn.Discard()
		if !errors.Is(err, badger.ErrTxnTooBig) {
			return err
		}
	}

	// Large group: rows first, in as many transactions as needed; they stay
	// invisible until the end offset is committed.
	w := txnWriter{
		begin:  func() *badger.Txn { return l.m.db.NewTransaction(true) },
		commit: func(txn *badger.Txn) error { return txn.Commit() },
	}
	err := rowsEntries(w.set)
	if err == nil {
		err = w.flush()
	}
	w.discard()
	if err != nil {
		// Some chunks may be on disk above the end offset: a later group
		// starting there could chunk its rows differently, so the log
		// refuses appends until reopened (which deletes them).
		err = fmt.Errorf("write rows: %w", err)
		l.failed = err
		return err
	}
	txn := l.m.db.NewTransaction(true)
	defer txn.Discard()
	if err := finalEntries(txn.SetEntry); err != nil {
		return fmt.Errorf("write end offset: %w", err)
	}
	if err := txn.Commit(); err != nil {
		err = fmt.Errorf("commit end offset: %w", err)
		l.failed = err
		return err
	}
	return nil
}

// advance publishes a new end offset and wakes waiting readers.
func (l *Log) advance(end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.end.Store(end)
	close(l.changed)
	l.changed = make(chan struct{})
}

// Read calls fn for up to max rows with offsets in [from, End()), in order,
// and returns the offset after the last row read. row is only valid during
// the call. An error from fn stops the read and is returned as is. From
// below Start() it fails with an error wrapping ErrTruncated.
func (l *Log) Read(from int64, max int, fn func(off int64, row []byte) error) (int64, error) {
	if l.closed.Load() || l.m.isClosed() {
		return from, fmt.Errorf("log %d read: %w", l.id, ErrClosed)
	}
	if from < 0 {
		return from, fmt.Errorf("log %d read: negative offset %d", l.id, from)
	}
	if start := l.Start(); from < start {
		return from, fmt.Errorf("log %d read from %d: start is %d: %w", l.id, from, start, ErrTruncated)
	}
	end := l.End()
	if from >= end || max <= 0 {
		return from, nil
	}
	if l.readHook != nil {
		l.readHook()
	}
	txn := l.m.db.NewTransaction(false)
	defer txn.Discard()
	// Truncate stores the new start before deleting any row below it, so a
	// start read after the snapshot was taken covers every row the snapshot
	// lacks.
	if start := l.Start(); from < start {
		return from, fmt.Errorf("log %d read from %d: start is %d: %w", l.id, from, start, ErrTruncated)
	}
	// Lost ranges hold no rows: skipped, not counted against max.
	loss := l.loss.Load()
	off := from
	for max > 0 && off < end {
		skipTo, nextGap := loss.gapAt(off)
		if off = skipTo; off >= end {
			break
		}
		limit := min(end, nextGap, off+int64(max))
		next, err := l.readRange(txn, off, limit, fn)
		max -= int(next - off)
		off = next
		if err != nil {
			return off, err
		}
	}
	if skipTo, _ := loss.gapAt(off); skipTo <= end {
		off = skipTo // never answer an offset inside a gap
	}
	return off, nil
}

// readRange calls fn for the rows [from, limit), which must all be there:
// it seeks to the chunk holding from (the last chunk key at or below it)
// and yields sub-slices of each chunk's value.
func (l *Log) readRange(txn *badger.Txn, from, limit int64, fn func(off int64, row []byte) error) (int64, error) {
	seek := binary.BigEndian.AppendUint64(append([]byte(nil), l.rowPrefix...), uint64(from))
	ropts := badger.DefaultIteratorOptions
	ropts.Prefix = l.rowPrefix
	ropts.PrefetchValues = false
	ropts.Reverse = true
	rit := txn.NewIterator(ropts)
	rit.Seek(seek)
	if rit.Valid() {
		copy(seek[len(l.rowPrefix):], rit.Item().Key()[len(l.rowPrefix):])
	}
	rit.Close()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = l.rowPrefix
	// Values are read in order by this goroutine: prefetching starts a
	// goroutine per chunk, and every query over the table reads it.
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	off := from
	for it.Seek(seek); off < limit && it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if len(k) != len(l.rowPrefix)+8 {
			return off, fmt.Errorf("log %d read: chunk key %x: bad length", l.id, k)
		}
		first := int64(binary.BigEndian.Uint64(k[len(l.rowPrefix):]))
		if first > off {
			return off, fmt.Errorf("log %d read: row %d missing (next chunk starts at %d)", l.id, off, first)
		}
		var fnErr error
		err := item.Value(func(v []byte) error {
			next, err := yieldChunk(v, first, off, limit, func(o int64, row []byte) error {
				fnErr = fn(o, row)
				return fnErr
			})
			off = next
			return err
		})
		if fnErr != nil {
			return off, fnErr
		}
		if err != nil {
			return off, fmt.Errorf("log %d read chunk at %d: %w", l.id, first, err)
		}
	}
	if off < limit {
		return off, fmt.Errorf("log %d read: row %d missing", l.id, off)
	}
	return off, nil
}

// maxChunkBytes is where Append cuts a request's rows into another chunk.
const maxChunkBytes = 1 << 20

// chunkRows returns how many of rows (at least one) go in the next chunk
// and the bytes of its value.
func chunkRows(rows [][]byte) (n, size int) {
	size = binary.MaxVarintLen64
	for n < len(rows) && (n == 0 || size+len(rows[n]) <= maxChunkBytes) {
		size += len(rows[n]) + binary.MaxVarintLen64
		n++
	}
	return n, size
}

// yieldChunk calls fn for the rows of chunk value v (whose first row has
// offset first) with offsets in [from, limit), and returns the offset
// after the last one yielded (or after the chunk). row is a sub-slice of v.
func yieldChunk(v []byte, first, from, limit int64, fn func(off int64, row []byte) error) (int64, error) {
	count, n := binary.Uvarint(v)
	if n <= 0 || count > uint64(len(v)) {
		return from, fmt.Errorf("corrupt chunk header")
	}
	v = v[n:]
	off := first
	end := first + int64(count)
	for ; off < end && off < limit; off++ {
		size, n := binary.Uvarint(v)
		if n <= 0 || size > uint64(len(v)-n) {
			return max(off, from), fmt.Errorf("corrupt row %d in chunk", off)
		}
		row := v[n : n+int(size) : n+int(size)]
		v = v[n+int(size):]
		if off < from {
			continue
		}
		if err := fn(off, row); err != nil {
			return off, err
		}
	}
	return max(off, from), nil
}

// chunkCount reads the row count of a chunk value.
func chunkCount(v []byte) (int64, error) {
	count, n := binary.Uvarint(v)
	if n <= 0 || count > uint64(len(v)) {
		return 0, fmt.Errorf("corrupt chunk header")
	}
	return int64(count), nil
}

// chunkKeysFrom returns the keys of the chunks whose first offset is at
// least from.
func (l *Log) chunkKeysFrom(from int64) ([][]byte, error) {
	txn := l.m.db.NewTransaction(false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = l.rowPrefix
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	var keys [][]byte
	for it.Seek(binary.BigEndian.AppendUint64(append([]byte(nil), l.rowPrefix...), uint64(from))); it.Valid(); it.Next() {
		keys = append(keys, it.Item().KeyCopy(nil))
	}
	return keys, nil
}

// migrateRowsV1 rewrites the rows of a log stored one per key (layout 1,
// before chunks) as chunks of one row each, deleting the old keys (rows
// outside [start, end) are only deleted), in batches: a crash part way
// leaves rows in both layouts, and the next open finishes the job (a row
// written again is the same entry).
func (l *Log) migrateRowsV1(start, end int64) error {
	prefix := tableKey(metaRowV1, l.id)
	for {
		type old struct {
			key []byte
			off int64
			row []byte
		}
		var batch []old
		size := 0
		txn := l.m.db.NewTransaction(false)
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		var err error
		for it.Rewind(); it.Valid() && len(batch) < truncateChunk && size < 64<<20; it.Next() {
			item := it.Item()
			k := item.KeyCopy(nil)
			if len(k) != len(prefix)+8 {
				err = fmt.Errorf("row key %x: bad length", k)
				break
			}
			o := old{key: k, off: int64(binary.BigEndian.Uint64(k[len(prefix):]))}
			if o.off >= start && o.off < end {
				if o.row, err = item.ValueCopy(nil); err != nil {
					break
				}
			}
			size += len(o.row)
			batch = append(batch, o)
		}
		it.Close()
		txn.Discard()
		if err != nil {
			return fmt.Errorf("migrate rows of layout 1: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		w := txnWriter{
			begin:  func() *badger.Txn { return l.m.db.NewTransaction(true) },
			commit: func(txn *badger.Txn) error { return txn.Commit() },
		}
		for _, o := range batch {
			if o.off >= start && o.off < end {
				v := binary.AppendUvarint(make([]byte, 0, 2*binary.MaxVarintLen64+len(o.row)), 1)
				v = append(binary.AppendUvarint(v, uint64(len(o.row))), o.row...)
				k := binary.BigEndian.AppendUint64(append([]byte(nil), l.rowPrefix...), uint64(o.off))
				if err = w.set(&badger.Entry{Key: k, Value: v}); err != nil {
					break
				}
			}
			if err = w.delete(o.key); err != nil {
				break
			}
		}
		if err == nil {
			err = w.flush()
		}
		w.discard()
		if err != nil {
			return fmt.Errorf("migrate rows of layout 1 (offsets %d to %d): %w", batch[0].off, batch[len(batch)-1].off, err)
		}
	}
}

// Close stops the appender (answering any group in progress first). Appends
// waiting or arriving later fail with ErrClosed, and Changed's channel is
// closed. The rows stay on disk.
func (l *Log) Close() {
	l.closeOnce.Do(func() {
		close(l.quit)
		<-l.stopped
		l.closed.Store(true)
		l.mu.Lock()
		close(l.changed)
		l.mu.Unlock()
		l.mark.close()
		l.m.forget(l)
	})
}

// Drop stops the appender and deletes the table's rows, end and start
// offsets, append-time index, idempotency keys, lost ranges and
// high-water file. The table id must not be used again.
func (l *Log) Drop() error {
	// Room first (DropPrefix flushes the memtable): refused, the log stays
	// open.
	release, err := l.m.space.claim(l.m.dir, memTableSize, false)
	if err != nil {
		return fmt.Errorf("log %d drop: %w", l.id, err)
	}
	defer release()
	l.Close()
	l.truncMu.Lock() // let a Truncate in progress finish; later ones see the log closed
	defer l.truncMu.Unlock()
	return l.m.dropLogData(l.id)
}

// dropLogData deletes everything of table id's log (its Log, if it was
// open, is closed).
func (m *Meta) dropLogData(id uint64) error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	if m.isClosed() {
		return fmt.Errorf("log %d drop: %w", id, ErrClosed)
	}
	txn := m.db.NewTransaction(true)
	defer txn.Discard()
	for _, space := range []byte{metaEnd, metaStart, metaLost} {
		if err := txn.Delete(tableKey(space, id)); err != nil {
			return fmt.Errorf("log %d drop: %w", id, err)
		}
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("log %d drop: commit: %w", id, err)
	}
	if err := m.sync(); err != nil {
		return fmt.Errorf("log %d drop: sync: %w", id, err)
	}
	if err := m.db.DropPrefix(tableKey(metaRow, id), tableKey(metaIdem, id), tableKey(metaTime, id)); err != nil {
		return fmt.Errorf("log %d drop: %w", id, err)
	}
	if err := os.Remove(filepath.Join(m.dir, highwaterDir, logMarkName(id))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log %d drop: %w", id, err)
	}
	return nil
}

// Truncate deletes every row with offset below below (and the append-time
// index entries that only cover deleted rows) and sets Start to below,
// clamped to End; Start never moves backwards. The new Start is persisted
// and synced before any row is deleted. Rows left below Start by an earlier
// Truncate that did not finish (a crash, an error) are deleted by the next
// call, even one that does not move Start; a call that finds nothing to do
// costs nothing.
//
// Threading: safe to call while appends and reads run. Truncates of one log
// are serialised; a Read from below the new Start fails with ErrTruncated.
func (l *Log) Truncate(below int64) error {
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	if l.closed.Load() || l.m.isClosed() {
		return fmt.Errorf("log %d truncate: %w", l.id, ErrClosed)
	}
	below = min(below, l.End())
	if below > l.Start() {
		err := l.m.update(func(txn *badger.Txn) error {
			return txn.Set(l.startKey, binary.BigEndian.AppendUint64(nil, uint64(below)))
		})
		if err != nil {
			return fmt.Errorf("log %d truncate below %d: %w", l.id, below, err)
		}
		l.start.Store(below)
		fault.Point("ingest.truncate")
	}
	start := l.Start()
	if start <= l.clearedFor {
		return nil
	}
	// From 0 after an open, so that leftovers of an unfinished truncation go.
	kept, err := l.deleteRowsBelow(l.cleared, start)
	if err != nil {
		return fmt.Errorf("log %d truncate below %d: %w", l.id, start, err)
	}
	indexFrom, err := l.deleteIndexBelow(l.indexFrom, start)
	if err != nil {
		return fmt.Errorf("log %d truncate below %d: %w", l.id, start, err)
	}
	l.cleared, l.clearedFor, l.indexFrom = kept, start, indexFrom
	return nil
}

// deleteRowsBelow deletes the chunks from the one starting at from that
// lie wholly below start (a chunk ends where the next one starts, the last
// one after its row count), in batches. It returns the first offset of the
// first chunk kept (start when none straddles it): the next call starts
// there.
func (l *Log) deleteRowsBelow(from, start int64) (int64, error) {
	seek := binary.BigEndian.AppendUint64(append([]byte(nil), l.rowPrefix...), uint64(from))
	for {
		var keys [][]byte
		kept := start
		txn := l.m.db.NewTransaction(false)
		opts := badger.DefaultIteratorOptions
		opts.Prefix = l.rowPrefix
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		var pending []byte // a chunk below start whose end is not known yet
		done := false
		var err error
		for it.Seek(seek); it.Valid() && len(keys) < truncateChunk; it.Next() {
			first := int64(binary.BigEndian.Uint64(it.Item().Key()[len(l.rowPrefix):]))
			if pending != nil {
				if first > start {
					kept, pending, done = int64(binary.BigEndian.Uint64(pending[len(l.rowPrefix):])), nil, true
					break
				}
				keys, pending = append(keys, pending), nil
			}
			if first >= start {
				done = true
				break
			}
			pending = it.Item().KeyCopy(nil)
		}
		if pending != nil && len(keys) < truncateChunk {
			// The last chunk: its row count says where it ends.
			done = true
			var item *badger.Item
			if item, err = txn.Get(pending); err == nil {
				var count int64
				if err = item.Value(func(v []byte) (e error) { count, e = chunkCount(v); return }); err == nil {
					first := int64(binary.BigEndian.Uint64(pending[len(l.rowPrefix):]))
					if first+count <= start {
						keys = append(keys, pending)
					} else {
						kept = first
					}
				}
			}
		} else if pending == nil && !it.Valid() {
			done = true
		}
		it.Close()
		txn.Discard()
		if err != nil {
			return from, fmt.Errorf("read chunk: %w", err)
		}
		if len(keys) > 0 {
			if err := l.deleteKeys(keys); err != nil {
				return from, fmt.Errorf("delete chunks: %w", err)
			}
		}
		if done || len(keys) == 0 {
			return kept, nil
		}
		seek = append(keys[len(keys)-1], 0) // the next key after the last deleted
	}
}

// deleteIndexBelow deletes the append-time index entries that only cover
// offsets below start: each entry covers the offsets from its own up to the
// next entry's, so an entry goes when the next one's offset is at most start.
// The newest entry is never deleted. The scan starts at key from (nil: the
// first entry); it returns the key to start the next scan at (the first
// entry it kept).
func (l *Log) deleteIndexBelow(from []byte, start int64) ([]byte, error) {
	seek := from
	if seek == nil {
		seek = l.timePrefix
	}
	for {
		var dels [][]byte
		var resume []byte // where the next chunk starts; nil when done
		txn := l.m.db.NewTransaction(false)
		opts := badger.DefaultIteratorOptions
		opts.Prefix = l.timePrefix
		it := txn.NewIterator(opts)
		var prev []byte
		var err error
		for it.Seek(seek); it.Valid(); it.Next() {
			item := it.Item()
			var off int64
			err = item.Value(func(v []byte) error {
				if len(v) != 8 {
					return fmt.Errorf("corrupt index entry of %d bytes", len(v))
				}
				off = int64(binary.BigEndian.Uint64(v))
				return nil
			})
			if err != nil || off > start {
				break
			}
			if prev != nil {
				dels = append(dels, prev)
				if len(dels) == truncateChunk {
					resume = item.KeyCopy(nil)
					break
				}
			}
			prev = item.KeyCopy(nil)
		}
		it.Close()
		txn.Discard()
		if err != nil {
			return from, fmt.Errorf("read index: %w", err)
		}
		if len(dels) > 0 {
			if err := l.deleteKeys(dels); err != nil {
				return from, fmt.Errorf("delete index entries: %w", err)
			}
		}
		if resume == nil {
			if prev != nil {
				return prev, nil
			}
			return seek, nil
		}
		seek = resume
	}
}

// deleteKeys deletes keys in as many transactions as needed.
func (l *Log) deleteKeys(keys [][]byte) error {
	l.m.writeMu.RLock()
	defer l.m.writeMu.RUnlock()
	if l.m.isClosed() {
		return ErrClosed
	}
	need := int64(0)
	for _, k := range keys {
		need += int64(len(k)) + entryOverhead
	}
	release, err := l.m.space.claim(l.m.dir, need, false)
	if err != nil {
		return err
	}
	defer release()
	w := txnWriter{
		begin:  func() *badger.Txn { return l.m.db.NewTransaction(true) },
		commit: func(txn *badger.Txn) error { return txn.Commit() },
	}
	defer w.discard()
	for _, k := range keys {
		if err := w.delete(k); err != nil {
			return err
		}
	}
	return w.flush()
}

// OffsetBefore returns the first offset appended at or after t, per the
// append-time index, or End() when every row was appended before t: every
// row below the answer was appended before t. Times are kept to the
// millisecond (a group is stamped with the millisecond its commit began),
// and an answer may be below Start. On a read error it returns Start(),
// which makes a Truncate to it a no-op.
func (l *Log) OffsetBefore(t time.Time) int64 {
	// End first: every group below it committed its index entry before the
	// snapshot below is taken.
	end := l.End()
	if l.closed.Load() || l.m.isClosed() {
		return l.Start()
	}
	txn := l.m.db.NewTransaction(false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = l.timePrefix
	opts.PrefetchSize = 1
	it := txn.NewIterator(opts)
	defer it.Close()
	it.Seek(binary.BigEndian.AppendUint64(append([]byte(nil), l.timePrefix...), uint64(max(t.UnixMilli(), 0))))
	if !it.Valid() {
		return end
	}
	var off int64
	err := it.Item().Value(func(v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("corrupt index entry of %d bytes", len(v))
		}
		off = int64(binary.BigEndian.Uint64(v))
		return nil
	})
	if err != nil {
		return l.Start()
	}
	// An entry of a group committed after end was read is above end.
	return min(off, end)
}
