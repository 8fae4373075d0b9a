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

// removeEmptyLogFiles deletes the zero-length memtable (*.mem) and value
// log (*.vlog) files in dir, before Badger opens it. Badger makes either
// by creating the file empty and sizing it afterwards (and deletes a
// flushed memtable by truncating it first): a crash in that window
// leaves an empty file, and the next Open fails ("Open existing file:
// ...: Create a new file": Badger v4.9.6 takes its own "new file" signal
// for an error). An empty file holds no data and nothing points into it,
// so removing it loses nothing; Badger makes the next one under the same
// number. The torture harness found the value log's case (a SIGKILL while
// the meta store's value log rotated left the data directory unopenable).
func removeEmptyLogFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".mem") && !strings.HasSuffix(e.Name(), ".vlog") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if info.Size() == 0 {
			path := filepath.Join(dir, e.Name())
			if err := os.Remove(path); err != nil {
				return err
			}
			slog.Warn("removed an empty log file left by a crash while Badger made it", "file", path)
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
