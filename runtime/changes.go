package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// A query's change log feeds GET /v1/queries/{name}/changes: every result
// change its sinks publish, its watermark as it advances and its completed
// checkpoints, numbered by seq, in a bounded ring. Subscribers read it at
// their own pace with a cursor; the query never waits for them: one that
// falls behind the ring's start is told it lagged. Nothing is kept until
// somebody subscribes, and logging stops once nobody has for
// changeLogLinger (a query nobody watches pays nothing).
//
// Seqs start at the wall clock in microseconds when the log is made, so
// they keep increasing across restarts of the server (a client resuming
// with a seq from before a restart is told it is gone, never given other
// changes under the same numbers).

// ChangeKind is what a change-log record is.
type ChangeKind uint8

const (
	ChangeUpsert ChangeKind = iota
	ChangeDelete
	ChangeWatermark
	ChangeCheckpoint
)

// ChangeRecord is one record of a change log.
type ChangeRecord struct {
	Seq  uint64
	Kind ChangeKind
	Key  string // the upsert key (encoded values) or an append-only row id
	Row  []byte // an upsert's row (AppendRow encoding)
	// Watermark (ChangeWatermark) or checkpoint id (ChangeCheckpoint).
	WM   int64
	Ckpt uint64
}

// DefaultChangeLogSize is how many records a change log keeps unless its
// Results are made WithChangeLogSize; changeLogLinger how long it keeps
// logging after the last reader.
const (
	DefaultChangeLogSize = 1 << 16
	changeLogLinger      = 10 * time.Minute
)

// ErrLagged: the subscriber's cursor fell behind the change log's start.
var ErrLagged = errors.New("the reader fell behind the change log")

// ErrGone: the seq asked for is no longer (or not yet) in the log.
var ErrGone = errors.New("seq not in the change log")

type changeLog struct {
	mu    sync.Mutex
	size  uint64         // records kept
	ring  []ChangeRecord // record seq at (seq-base) % size
	base  uint64         // seq of ring[0] when the ring was (re)started
	first uint64         // seq of the oldest record kept
	next  uint64         // seq of the next record
	// committed: records below it were published before the last
	// completed checkpoint.
	committed uint64
	wm        []int64 // per sink subtask
	lastWM    int64   // the last watermark logged
	active    bool    // logging (someone subscribed within the linger)
	lastSub   time.Time
	notify    chan struct{} // closed and replaced when records are added
}

// newChangeLog makes a change log of size records (0: DefaultChangeLogSize).
func newChangeLog(size int) *changeLog {
	if size <= 0 {
		size = DefaultChangeLogSize
	}
	now := uint64(time.Now().UnixMicro())
	return &changeLog{size: uint64(size), base: now, first: now, next: now, committed: now, lastWM: -1 << 63, notify: make(chan struct{})}
}

// logging reports whether records are kept now (caller holds mu).
func (l *changeLog) logging() bool {
	if l.active && time.Since(l.lastSub) > changeLogLinger {
		l.active = false
		l.reset()
	}
	return l.active
}

// reset empties the ring: it holds records from the next seq on.
func (l *changeLog) reset() {
	l.ring, l.base, l.first = nil, l.next, l.next
}

func (l *changeLog) add(rec ChangeRecord) {
	rec.Seq = l.next
	l.next++
	if uint64(len(l.ring)) < l.size {
		l.ring = append(l.ring, rec)
	} else {
		l.ring[(rec.Seq-l.base)%l.size] = rec
		l.first = rec.Seq - l.size + 1
	}
}

func (l *changeLog) wake() {
	close(l.notify)
	l.notify = make(chan struct{})
}

// record at seq (caller holds mu; first <= seq < next).
func (l *changeLog) at(seq uint64) ChangeRecord {
	return l.ring[(seq-l.base)%l.size]
}

// changes logs sink subtask task's published changes.
func (l *changeLog) changes(changes []keyedChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.logging() || len(changes) == 0 {
		return
	}
	for _, c := range changes {
		r := ChangeRecord{Key: c.key, Kind: ChangeUpsert}
		if c.del {
			r.Kind = ChangeDelete
		} else {
			r.Row = append([]byte(nil), c.enc...)
		}
		l.add(r)
	}
	l.wake()
}

// rows logs append-only rows (records of blocks: row id, row).
func (l *changeLog) rows(records [][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.logging() {
		return
	}
	for _, b := range records {
		decodeBlock(b, func(id []byte, row plan.Row) error {
			l.add(ChangeRecord{Key: string(id), Kind: ChangeUpsert, Row: value.AppendRow(nil, row)})
			return nil
		})
	}
	l.wake()
}

// watermark notes sink subtask task's watermark (of tasks); the query's
// is the minimum, logged when it advances.
func (l *changeLog) watermark(task, tasks int, wm int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.wm) != tasks {
		l.wm = make([]int64, tasks)
		for i := range l.wm {
			l.wm[i] = -1 << 63
		}
	}
	l.wm[task] = wm
	m := l.wm[0]
	for _, w := range l.wm {
		m = min(m, w)
	}
	if m > l.lastWM {
		l.lastWM = m
		if l.logging() {
			l.add(ChangeRecord{Kind: ChangeWatermark, WM: m})
			l.wake()
		}
	}
}

// checkpoint logs a completed checkpoint: everything before is committed.
func (l *changeLog) checkpoint(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logging() {
		l.add(ChangeRecord{Kind: ChangeCheckpoint, Ckpt: id})
	}
	l.committed = l.next
	l.wake()
}

// Subscription reads a change log from a cursor.
type Subscription struct {
	l         *changeLog
	cursor    uint64
	committed bool
}

// Cursor is the seq of the next record the subscription reads.
func (s *Subscription) Cursor() uint64 { return s.cursor }

// Next waits (until ctx ends or wait passes) for records at the cursor and
// returns up to max of them, moving the cursor past them; nil records when
// the wait passed. Committed subscriptions read only records published
// before the last completed checkpoint (and the checkpoint records).
func (s *Subscription) Next(ctx context.Context, max int, wait time.Duration) ([]ChangeRecord, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.l.mu.Lock()
		s.l.lastSub = time.Now()
		if s.cursor < s.l.first {
			s.l.mu.Unlock()
			return nil, ErrLagged
		}
		end := s.l.next
		if s.committed {
			end = min(end, s.l.committed)
		}
		var out []ChangeRecord
		for ; s.cursor < end && len(out) < max; s.cursor++ {
			out = append(out, s.l.at(s.cursor))
		}
		notify := s.l.notify
		s.l.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, nil
		case <-notify:
		}
	}
}

// subscribe starts logging (if it was not) and returns a subscription at
// seq from (0: from now). A committed subscription from now gets what the
// next completed checkpoint commits: records logged before it subscribed
// were published before the checkpoint records it will see, or not logged
// at all, so a committed snapshot is taken at the first checkpoint record
// it reads (see queries.Engine.Changes).
func (l *changeLog) subscribe(from uint64, committed bool) (*Subscription, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.logging() {
		l.active = true
		l.reset()
	}
	l.lastSub = time.Now()
	cursor := l.next
	if from != 0 {
		if from < l.first || from > l.next {
			return nil, ErrGone
		}
		cursor = from
	}
	return &Subscription{l: l, cursor: cursor, committed: committed}, nil
}
