package state

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// MaxRowBytes is the largest row Log.Append accepts.
const MaxRowBytes = 128 << 20

// maxGroup caps how many Append requests one group commit takes, which keeps
// the final transaction (end offset plus idempotency keys) small.
const maxGroup = 1024

// AppendResult is the answer to Log.Append. Offsets are inclusive; for zero
// rows First is the end offset at the time and Last = First-1.
type AppendResult struct {
	Accepted  int
	First     int64
	Last      int64
	Duplicate bool // the idempotency key was seen: nothing was appended, this is the first answer
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
type Log struct {
	m          *Meta
	id         uint64
	endKey     []byte
	rowPrefix  []byte
	idemPrefix []byte

	reqs      chan *appendReq // unbuffered: waiting senders are the queue
	quit      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool
	queued    atomic.Int64 // Appends waiting to hand their request to the appender

	end     atomic.Int64
	mu      sync.Mutex // guards changed
	changed chan struct{}

	failed error // set by the appender after an unrecoverable error
}

type appendReq struct {
	ctx     context.Context
	rows    [][]byte
	idemKey []byte // nil without an idempotency key
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
		rowPrefix:  tableKey(metaRow, id),
		idemPrefix: tableKey(metaIdem, id),
		reqs:       make(chan *appendReq),
		quit:       make(chan struct{}),
		stopped:    make(chan struct{}),
		changed:    make(chan struct{}),
	}
	txn := m.db.NewTransaction(false)
	defer txn.Discard()
	item, err := txn.Get(l.endKey)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return nil, fmt.Errorf("log %d open: %w", id, err)
	default:
		err := item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("corrupt end offset of %d bytes", len(v))
			}
			l.end.Store(int64(binary.BigEndian.Uint64(v)))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("log %d open: %w", id, err)
		}
	}
	go l.appender()
	return l, nil
}

// ID returns the table id of the log.
func (l *Log) ID() uint64 { return l.id }

// End returns the next offset to be assigned: the number of durable rows.
func (l *Log) End() int64 { return l.end.Load() }

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
	}
	l.queued.Add(1)
	select {
	case l.reqs <- req:
		l.queued.Add(-1)
	case <-l.quit:
		l.queued.Add(-1)
		return AppendResult{}, fmt.Errorf("log %d append: %w", l.id, ErrClosed)
	case <-ctx.Done():
		l.queued.Add(-1)
		return AppendResult{}, fmt.Errorf("log %d append: %w", l.id, ctx.Err())
	}
	// Once handed over, the request is part of a group that runs to the end
	// (bounded by one commit and sync), so its outcome is always known.
	resp := <-req.done
	if resp.err != nil {
		return AppendResult{}, fmt.Errorf("log %d append: %w", l.id, resp.err)
	}
	return resp.res, nil
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
	next := l.end.Load()
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
			res, ok, err := lookupIdem(rtxn, r.idemKey)
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
		err = l.writeGroup(group, writes, results, next)
		if err == nil {
			if err = l.m.sync(); err != nil {
				err = fmt.Errorf("sync: %w", err)
				l.failed = err
			}
		}
		if err == nil {
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
			r.done <- appendResp{res: res, err: err}
		}
	}
}

// lookupIdem returns the stored first answer for an idempotency key.
func lookupIdem(txn *badger.Txn, key []byte) (AppendResult, bool, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return AppendResult{}, false, nil
	}
	if err != nil {
		return AppendResult{}, false, fmt.Errorf("idempotency lookup: %w", err)
	}
	var res AppendResult
	err = item.Value(func(v []byte) error {
		if len(v) != 24 {
			return fmt.Errorf("corrupt idempotency record of %d bytes", len(v))
		}
		res = AppendResult{
			Accepted:  int(binary.BigEndian.Uint64(v)),
			First:     int64(binary.BigEndian.Uint64(v[8:])),
			Last:      int64(binary.BigEndian.Uint64(v[16:])),
			Duplicate: true,
		}
		return nil
	})
	if err != nil {
		return AppendResult{}, false, fmt.Errorf("idempotency lookup: %w", err)
	}
	return res, true, nil
}

// writeGroup commits the rows of the requests in writes, then their
// idempotency keys together with the new end offset. A small group goes in
// one transaction; a large one writes its rows in as many transactions as
// needed first. Sets l.failed when the final commit fails.
func (l *Log) writeGroup(group []*appendReq, writes []int, results []AppendResult, end int64) error {
	rowsEntries := func(yield func(*badger.Entry) error) error {
		for _, i := range writes {
			r := group[i]
			keys := make([]byte, len(r.rows)*17)
			for j, row := range r.rows {
				k := keys[j*17 : j*17+17 : j*17+17]
				copy(k, l.rowPrefix)
				binary.BigEndian.PutUint64(k[9:], uint64(results[i].First+int64(j)))
				if err := yield(badger.NewEntry(k, row)); err != nil {
					return err
				}
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
			v := make([]byte, 24)
			res := results[i]
			binary.BigEndian.PutUint64(v, uint64(res.Accepted))
			binary.BigEndian.PutUint64(v[8:], uint64(res.First))
			binary.BigEndian.PutUint64(v[16:], uint64(res.Last))
			if err := yield(badger.NewEntry(r.idemKey, v).WithTTL(l.m.window)); err != nil {
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
		return fmt.Errorf("write rows: %w", err)
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
// the call. An error from fn stops the read and is returned as is.
func (l *Log) Read(from int64, max int, fn func(off int64, row []byte) error) (int64, error) {
	if l.closed.Load() || l.m.isClosed() {
		return from, fmt.Errorf("log %d read: %w", l.id, ErrClosed)
	}
	if from < 0 {
		return from, fmt.Errorf("log %d read: negative offset %d", l.id, from)
	}
	end := l.End()
	if from >= end || max <= 0 {
		return from, nil
	}
	limit := end
	if int64(max) < end-from {
		limit = from + int64(max)
	}
	txn := l.m.db.NewTransaction(false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = l.rowPrefix
	opts.PrefetchSize = int(min(limit-from, 100))
	it := txn.NewIterator(opts)
	defer it.Close()
	off := from
	for it.Seek(binary.BigEndian.AppendUint64(append([]byte(nil), l.rowPrefix...), uint64(from))); off < limit && it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if got := int64(binary.BigEndian.Uint64(k[len(l.rowPrefix):])); got != off {
			return off, fmt.Errorf("log %d read: row %d missing (found %d)", l.id, off, got)
		}
		var fnErr error
		err := item.Value(func(v []byte) error {
			fnErr = fn(off, v)
			return fnErr
		})
		if fnErr != nil {
			return off, fnErr
		}
		if err != nil {
			return off, fmt.Errorf("log %d read row %d: %w", l.id, off, err)
		}
		off++
	}
	if off < limit {
		return off, fmt.Errorf("log %d read: row %d missing", l.id, off)
	}
	return off, nil
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
		l.m.forget(l)
	})
}

// Drop stops the appender and deletes the table's rows, end offset and
// idempotency keys. The table id must not be used again.
func (l *Log) Drop() error {
	l.Close()
	m := l.m
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	if m.isClosed() {
		return fmt.Errorf("log %d drop: %w", l.id, ErrClosed)
	}
	txn := m.db.NewTransaction(true)
	defer txn.Discard()
	if err := txn.Delete(l.endKey); err != nil {
		return fmt.Errorf("log %d drop: %w", l.id, err)
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("log %d drop: commit: %w", l.id, err)
	}
	if err := m.sync(); err != nil {
		return fmt.Errorf("log %d drop: sync: %w", l.id, err)
	}
	if err := m.db.DropPrefix(l.rowPrefix, l.idemPrefix); err != nil {
		return fmt.Errorf("log %d drop: %w", l.id, err)
	}
	return nil
}
