package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// Large values of the versioned store live in blob files beside the Badger
// DB, not in its LSM tree. Checkpoints write state and results as blocks of
// up to a few hundred KiB (runtime/statelog.go); in the tree each block was
// copied into the memtable's WAL and skiplist, flushed, then rewritten (and
// msync'ed) by every compaction on its way down, which was most of a
// checkpoint's CPU time. Badger's own value log would avoid that, but it
// only reclaims space by discard statistics that flushes and compactions
// gather, which a tree of small pointers rarely has; here the store knows
// which files are referenced and deletes the others.
//
// A Write puts its large values into one new file, synced (with its
// directory) before the entries pointing into it are committed, so a
// committed pointer always finds its bytes. An entry pointing into a blob
// has metaBlob in its UserMeta and a blobRef as its value. A file that no
// version a reader can still see points into is deleted by CollectGarbage.

const (
	// blobThreshold: values at least this long go to a blob file.
	blobThreshold = 4 << 10
	// metaBlob marks (in Badger's UserMeta) an entry whose value is a blobRef.
	metaBlob   byte = 1
	blobRefLen      = 8 + 8 + 4
	blobSuffix      = ".blob"
)

// blobs is the directory of blob files, named by a hexadecimal id that
// never repeats (the next is above every existing one at open).
type blobs struct {
	dir  string
	next atomic.Uint64
}

func openBlobs(dir string) (*blobs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b := &blobs{dir: dir}
	ids, err := b.list()
	if err != nil {
		return nil, err
	}
	var top uint64
	for _, id := range ids {
		top = max(top, id)
	}
	b.next.Store(top + 1)
	return b, nil
}

func (b *blobs) path(id uint64) string {
	return filepath.Join(b.dir, fmt.Sprintf("%016x%s", id, blobSuffix))
}

// list returns the ids of the blob files.
func (b *blobs) list() ([]uint64, error) {
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, blobSuffix) {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSuffix(name, blobSuffix), 16, 64)
		if err != nil {
			continue // not ours
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// put writes vals into a new file, syncs it and the directory, and returns
// a blobRef per value.
func (b *blobs) put(vals [][]byte) ([][]byte, error) {
	id := b.next.Add(1) - 1
	f, err := os.OpenFile(b.path(id), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("blob %x: %w", id, err)
	}
	refs := make([][]byte, len(vals))
	var off uint64
	for i, v := range vals {
		if _, err := f.Write(v); err != nil {
			// No reference to it is committed: give the space back now
			// (ENOSPC) rather than at the next collection.
			f.Close()
			os.Remove(b.path(id))
			return nil, fmt.Errorf("blob %x: %w", id, err)
		}
		ref := binary.BigEndian.AppendUint64(make([]byte, 0, blobRefLen), id)
		ref = binary.BigEndian.AppendUint64(ref, off)
		refs[i] = binary.BigEndian.AppendUint32(ref, uint32(len(v)))
		off += uint64(len(v))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("blob %x: sync: %w", id, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("blob %x: %w", id, err)
	}
	if err := syncDir(b.dir); err != nil {
		return nil, fmt.Errorf("blob %x: sync directory: %w", id, err)
	}
	return refs, nil
}

// read returns the bytes a blobRef points to.
func (b *blobs) read(ref []byte) ([]byte, error) {
	id, off, n, err := parseBlobRef(ref)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(b.path(id))
	if err != nil {
		return nil, fmt.Errorf("blob %x: %w", id, err)
	}
	defer f.Close()
	// The reference is checked against the file before it sizes a buffer.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("blob %x: %w", id, err)
	}
	if size := uint64(fi.Size()); off > size || uint64(n) > size-off {
		return nil, fmt.Errorf("blob %x: %d bytes at %d are past its end (%d bytes)", id, n, off, size)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("blob %x at %d: %w", id, off, err)
	}
	return buf, nil
}

func parseBlobRef(ref []byte) (id, off uint64, n uint32, err error) {
	if len(ref) != blobRefLen {
		return 0, 0, 0, errors.New("blob reference: bad length")
	}
	return binary.BigEndian.Uint64(ref), binary.BigEndian.Uint64(ref[8:]), binary.BigEndian.Uint32(ref[16:]), nil
}

// remove deletes the files below id that are not live.
func (b *blobs) remove(live map[uint64]bool, below uint64) (int, error) {
	ids, err := b.list()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if id < below && !live[id] {
			if err := os.Remove(b.path(id)); err != nil && !os.IsNotExist(err) {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
