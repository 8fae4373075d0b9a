package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// High-water files live beside the meta DB, in <meta dir>/highwater/, so
// that losing the tail of the DB's memtable write-ahead log (Badger
// truncates it at the first bad entry when it opens, without a word) does
// not also lose the record of what had been handed out:
//
//	log-<table id>    an ingest log: the end offset every acknowledged row
//	                  is below, and the end of the group being committed
//	seq-<name>        a sequence (NextSeq): the last value handed out
//	drop-<kind>-<id>  a tombstone: a DROP of that table or query started
//	                  (Meta.MarkDropped); its leftovers are removed at start
//
// A high-water file is three 64-byte slots written in turn (pwrite in
// place, the file never changes size): each holds a record numbered by a
// write counter, its two values and a CRC. Reading takes the valid slot
// with the highest counter. A torn write spoils only the slot written, and
// three slots keep the last fdatasync'ed record intact while the two
// writes after it (a confirmation that is not synced, then the next
// record) go to the other two.
const (
	highwaterDir  = "highwater"
	markSlots     = 3
	markSlotBytes = 64
	markMagic     = 0x53514857 // "SQHW"
)

var markCRC = crc32.MakeTable(crc32.Castagnoli)

// markRecord is what a high-water file holds. For an ingest log, acked is
// the end offset below which every row was acknowledged (or is known
// durable), inflight the end offset of the group being committed (>=
// acked); for a sequence both are its last value.
type markRecord struct {
	acked, inflight uint64
}

// markFile is one open high-water file. Threading: safe for concurrent
// use (writes are serialised).
type markFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	n    uint64 // write counter of the last record written
	last uint64 // sequences: the value last written (Meta.seqMu)
}

// openMark opens (creating when missing) the high-water file at path and
// returns its newest valid record; found is false for a new file or one
// with no valid slot (corrupt: bad says so).
func openMark(path string) (mf *markFile, rec markRecord, found bool, bad error, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, rec, false, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		created = true
	}
	if err != nil {
		return nil, rec, false, nil, err
	}
	mf = &markFile{path: path, f: f}
	if created {
		// Full size now, so later writes never change the file's size
		// (fdatasync then syncs data only), and durable with its name.
		if err := f.Truncate(markSlots * markSlotBytes); err != nil {
			f.Close()
			return nil, rec, false, nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, rec, false, nil, err
		}
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, rec, false, nil, err
		}
		return mf, rec, false, nil, nil
	}
	buf := make([]byte, markSlots*markSlotBytes)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n < len(buf) && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, rec, false, nil, err
	}
	var bestN uint64
	for i := 0; i < markSlots; i++ {
		s := buf[i*markSlotBytes : (i+1)*markSlotBytes]
		if n < (i+1)*markSlotBytes || binary.BigEndian.Uint32(s) != markMagic || crc32.Checksum(s[:28], markCRC) != binary.BigEndian.Uint32(s[28:]) {
			continue
		}
		if c := binary.BigEndian.Uint64(s[4:]); !found || c > bestN {
			found, bestN = true, c
			rec = markRecord{acked: binary.BigEndian.Uint64(s[12:]), inflight: binary.BigEndian.Uint64(s[20:])}
		}
	}
	mf.n, mf.last = bestN, rec.acked
	if !found && !allZero(buf[:n]) {
		bad = fmt.Errorf("high-water file %s: no valid record in its %d slots", path, markSlots)
	}
	return mf, rec, found, bad, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// write stores rec in the next slot; with sync it is fdatasync'ed before
// write returns.
func (mf *markFile) write(rec markRecord, sync bool) error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.f == nil {
		return fmt.Errorf("high-water file %s: %w", mf.path, ErrClosed)
	}
	mf.n++
	var s [markSlotBytes]byte
	binary.BigEndian.PutUint32(s[:], markMagic)
	binary.BigEndian.PutUint64(s[4:], mf.n)
	binary.BigEndian.PutUint64(s[12:], rec.acked)
	binary.BigEndian.PutUint64(s[20:], rec.inflight)
	binary.BigEndian.PutUint32(s[28:], crc32.Checksum(s[:28], markCRC))
	if _, err := mf.f.WriteAt(s[:], int64(mf.n%markSlots)*markSlotBytes); err != nil {
		return fmt.Errorf("high-water file %s: %w", mf.path, err)
	}
	if sync {
		if err := fdatasync(mf.f); err != nil {
			return fmt.Errorf("high-water file %s: sync: %w", mf.path, err)
		}
	}
	return nil
}

// close closes the file (idempotent).
func (mf *markFile) close() {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.f != nil {
		mf.f.Close()
		mf.f = nil
	}
}

// Names of the high-water files.
func logMarkName(tableID uint64) string { return "log-" + strconv.FormatUint(tableID, 10) }
func seqMarkName(name string) string {
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "seq-x" + fmt.Sprintf("%x", name)
		}
	}
	return "seq-" + name
}

// Tombstone kinds (MarkDropped).
const (
	DroppedTable = "table"
	DroppedQuery = "query"
)

func dropMarkName(kind string, id uint64) string {
	return "drop-" + kind + "-" + strconv.FormatUint(id, 10)
}

// parseIDName parses "<prefix><decimal id>".
func parseIDName(name, prefix string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return 0, false
	}
	id, err := strconv.ParseUint(rest, 10, 64)
	return id, err == nil
}
