package state

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// ErrClosed is returned by operations on a closed store, Meta or Log.
var ErrClosed = errors.New("state: closed")

// removeEmptyMemtables deletes zero-length memtable files (*.mem) in dir.
// Badger creates a memtable file empty and sizes it afterwards, and deletes
// a flushed one by truncating it first: a crash in either window leaves an
// empty file that makes the next Open fail ("Create a new file"). An empty
// memtable file holds no data, so removing it loses nothing.
func removeEmptyMemtables(dir string) error {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".mem") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if info.Size() == 0 {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Sizes of both Badger databases' memtables and value-log files. A
// DropPrefix flushes a memtable, and a value-log GC may rewrite half a
// file: the space guard (space.go) asks for that much room first.
const (
	memTableSize     = 16 << 20
	valueLogFileSize = 128 << 20
)

// badgerOptions are the options shared by both Badger databases.
//
// SyncWrites is on on purpose: DB.Sync only syncs the write-ahead log of the
// active memtable, so writes that sit in a memtable rotated out since the last
// commit (not yet flushed to an SST) would not be made durable by Sync. With
// SyncWrites every commit is durable when it returns, and Badger groups
// concurrent commits into one fsync. The explicit Sync calls remain as the
// documented durability point (and fault-injection seam).
func badgerOptions(dir, name string) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(slogLogger{db: name, dir: dir}).
		WithSyncWrites(true).
		WithMemTableSize(memTableSize).
		WithNumMemtables(3).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithValueLogFileSize(valueLogFileSize).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithMetricsEnabled(false).
		WithDetectConflicts(false)
}

// slogLogger forwards Badger's errors to log/slog and drops everything else.
type slogLogger struct{ db, dir string }

func (l slogLogger) Errorf(format string, args ...any) {
	slog.Error(strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "badger", "db", l.db, "dir", l.dir)
}
func (slogLogger) Warningf(string, ...any) {}
func (slogLogger) Infof(string, ...any)    {}
func (slogLogger) Debugf(string, ...any)   {}
