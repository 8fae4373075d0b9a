package state

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// Disk space. Badger writes its memtable WAL, value log and tables through
// mmap'ed files that it grows with ftruncate, which reserves nothing: on a
// full file system the first store into an unbacked page raises SIGBUS and
// the process dies (dgraph-io/badger#1801), before any error could be
// returned. So the stores never let Badger get there: every write asks a
// Space for room first and is refused with a DiskFullError, writing
// nothing, once the file system's free space would fall below a reserve.
//
// Ingest (new data arriving) stops at the reserve; checkpoints, markers,
// catalog writes, repairs and truncation may go on until half of it is
// left, so queries keep checkpointing (and logs keep being truncated)
// after ingest is refused. The other half is headroom for what Badger
// writes by itself (memtable flushes, compactions), which cannot be asked
// for. Once space is freed, writes are accepted again: a refused write
// changed nothing.
//
// A state write refused for room (a checkpoint's, retried with the query's
// next checkpoint) makes ingest leave that much more free for a while
// (stateWaitFor): rows arriving as soon as space is freed must not take the
// room the checkpoint waits for, or it would wait as long as ingest goes
// on (and the ingest log, which is truncated only behind checkpoints,
// would never shrink).

// DefaultDiskReserve is the free space ingest leaves on the data
// directory's file system when no other reserve is configured.
const DefaultDiskReserve = 256 << 20

// ErrDiskFull is wrapped by every error of a write refused for lack of
// disk space (DiskFullError). IsDiskFull also recognises ENOSPC.
var ErrDiskFull = errors.New("disk full")

// IsDiskFull reports whether err is (or wraps) a refusal for lack of disk
// space or the operating system's ENOSPC.
func IsDiskFull(err error) bool {
	return errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC)
}

// DiskFullError is a write refused because the file system holding Dir
// has too little free space.
type DiskFullError struct {
	Dir string
	// Free is what the file system had available (less other writes in
	// progress), Need what this write needed, Keep what must stay free
	// after it.
	Free, Need, Keep int64
	// Ingest: the write was an ingest append (it stops at the whole
	// reserve; other writes at half of it). Open: the stores were not
	// opened (CheckOpen).
	Ingest, Open bool
	// Waiting: of Keep, the room ingest leaves for a refused state write.
	Waiting int64
}

func (e *DiskFullError) Error() string {
	if e.Open {
		return fmt.Sprintf("disk full: the file system of %s has %s free, and the stores are not opened with less than %s free (--disk-reserve: Badger writes as it opens them); free space to start",
			e.Dir, formatBytes(e.Free), formatBytes(e.Keep))
	}
	what, why := "checkpoint and catalog writes stop", "--disk-reserve"
	if e.Ingest {
		what = "ingest stops"
	}
	if e.Waiting > 0 {
		why = fmt.Sprintf("--disk-reserve, and %s for a checkpoint waiting to be written", formatBytes(e.Waiting))
	}
	return fmt.Sprintf("disk full: the file system of %s has %s free, this write needs %s, and %s with less than %s free (%s); free space to resume",
		e.Dir, formatBytes(e.Free), formatBytes(e.Need), what, formatBytes(e.Keep), why)
}

func (e *DiskFullError) Is(target error) bool { return target == ErrDiskFull }

// formatBytes renders n as B, KiB, MiB or GiB with one decimal.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 || n <= -1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 || n <= -1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 || n <= -1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Space guards the free space of the file system under the data
// directory. A nil *Space checks nothing. Safe for concurrent use; both
// stores of a data directory share one.
type Space struct {
	reserve int64
	// free returns the bytes available to this process on dir's file
	// system (statfs; tests replace it).
	free func(dir string) (int64, error)

	mu sync.Mutex
	// claimed is what writes in progress have claimed and may not have
	// written yet: concurrent writers cannot each take the same room.
	claimed int64
	// waiting is the largest state write refused within stateWaitFor
	// (until waitUntil): ingest leaves it free too (claimState).
	waiting   int64
	waitUntil time.Time
	now       func() time.Time
}

// stateWaitFor is how long a refused state write keeps ingest from the
// room it needs: more than a checkpoint interval, so its retry finds the
// room, short enough that a query dropped meanwhile does not hold it long.
const stateWaitFor = time.Minute

// NewSpace returns a guard that keeps reserve bytes free for everything but
// ingest (see above); nil when reserve <= 0 (no checks).
func NewSpace(reserve int64) *Space {
	if reserve <= 0 {
		return nil
	}
	return &Space{reserve: reserve, free: freeBytes, now: time.Now}
}

// Reserve is the configured reserve (0 for a nil Space).
func (s *Space) Reserve() int64 {
	if s == nil {
		return 0
	}
	return s.reserve
}

// Free returns the free bytes on dir's file system (-1 when unknown or
// unchecked).
func (s *Space) Free(dir string) int64 {
	if s == nil {
		return -1
	}
	n, err := s.free(dir)
	if err != nil {
		return -1
	}
	return n
}

// CheckOpen refuses (DiskFullError) when dir's file system has less than
// half the reserve free. Opening a Badger DB replays its memtables and may
// flush them, through mmap'ed files: on a full file system that is a
// SIGBUS, so the server does not start rather than die in there.
func (s *Space) CheckOpen(dir string) error {
	if s == nil {
		return nil
	}
	free, err := s.free(dir)
	if err != nil || free >= s.reserve/2 {
		return nil
	}
	return &DiskFullError{Dir: dir, Free: free, Keep: s.reserve / 2, Open: true}
}

// claim asks for need bytes on dir's file system. An ingest write must
// leave the whole reserve free, any other half of it. On success the
// returned func gives the claim back; call it once the bytes are written
// (or not). The check costs one statfs.
func (s *Space) claim(dir string, need int64, ingest bool) (func(), error) {
	if s == nil {
		return func() {}, nil
	}
	keep := s.reserve / 2
	free, err := s.free(dir)
	if err != nil {
		return func() {}, nil // unknown: let the write try
	}
	s.mu.Lock()
	var waiting int64
	if ingest {
		if s.waiting > 0 && s.now().Before(s.waitUntil) {
			waiting = s.waiting
		}
		keep = s.reserve + waiting
	}
	avail := free - s.claimed
	if avail-need < keep {
		s.mu.Unlock()
		return nil, &DiskFullError{Dir: dir, Free: max(avail, 0), Need: need, Keep: keep, Ingest: ingest, Waiting: waiting}
	}
	s.claimed += need
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.claimed -= need
		s.mu.Unlock()
	}, nil
}

// claimState is claim for a state write (a checkpoint's). Refused, it
// makes ingest leave need bytes more free for stateWaitFor; a state write
// at least as large as the one waiting ends the wait.
func (s *Space) claimState(dir string, need int64) (func(), error) {
	release, err := s.claim(dir, need, false)
	if s == nil {
		return release, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case IsDiskFull(err):
		if !s.now().Before(s.waitUntil) {
			s.waiting = 0
		}
		s.waiting = max(s.waiting, need)
		s.waitUntil = s.now().Add(stateWaitFor)
	case err == nil && need >= s.waiting:
		s.waiting = 0
	}
	return release, err
}

// kvBytes estimates what writing kvs costs on disk: keys and values plus
// Badger's per-entry overhead (WAL header, skiplist node, checksum).
func kvBytes(kvs []KV) int64 {
	n := int64(0)
	for _, kv := range kvs {
		n += int64(len(kv.Key)+len(kv.Value)) + entryOverhead
	}
	return n
}

// entryOverhead is a generous estimate of what Badger adds per entry.
const entryOverhead = 64

// smallWrite is what a catalog, sequence or marker write claims.
const smallWrite = 64 << 10
