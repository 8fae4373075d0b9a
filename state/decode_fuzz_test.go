package state

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// FuzzBlobRead reads any blob reference against a directory of real blob
// files: the bytes it names, or an error (never a buffer sized by a
// reference past the file's end).
func FuzzBlobRead(f *testing.F) {
	b, err := openBlobs(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	vals := [][]byte{[]byte("hello"), bytes.Repeat([]byte{7}, 5000), {}}
	refs, err := b.put(vals)
	if err != nil {
		f.Fatal(err)
	}
	file := bytes.Join(vals, nil)
	for _, r := range refs {
		f.Add(r)
	}
	f.Add([]byte{})
	f.Add(append(bytes.Clone(refs[1][:16]), 0xff, 0xff, 0xff, 0xff)) // 4 GiB at offset 5
	f.Fuzz(func(t *testing.T, ref []byte) {
		got, err := b.read(ref)
		id, off, n, perr := parseBlobRef(ref)
		if err != nil {
			size := uint64(len(file))
			if perr == nil && id == 1 && (off > size || uint64(n) > size-off) && !strings.Contains(err.Error(), "past its end") {
				t.Fatalf("ref %x past the end of the file: %v", ref, err)
			}
			return
		}
		if id != 1 || off+uint64(n) > uint64(len(file)) || !bytes.Equal(got, file[off:off+uint64(n)]) {
			t.Fatalf("ref %x (blob %d, %d bytes at %d) read %d bytes", ref, id, n, off, len(got))
		}
	})
}

// FuzzLogEntries opens an ingest log over corrupt entries (end and start
// offsets, rows and row keys, an idempotency record, an append-time index
// entry) and uses it: reads, appends, look-ups and truncation fail with
// errors naming the log, or work; nothing panics.
func FuzzLogEntries(f *testing.F) {
	m, err := OpenMeta(f.TempDir(), MetaOptions{WrapSync: func(SyncFunc) SyncFunc { return func() error { return nil } }})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { m.Close() })
	be8 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	idem := append(append(be8(1), be8(0)...), be8(0)...)
	f.Add(uint8(0xff), be8(2), be8(0), []byte("row"), be8(5), idem, be8(0))
	f.Add(uint8(0x1f), be8(2), be8(1), []byte{}, []byte{1}, []byte{1, 2}, []byte{})
	f.Add(uint8(0x01), be8(1<<63), be8(1<<63+5), []byte("x"), []byte{}, []byte{}, []byte{})
	f.Add(uint8(0x0d), be8(3), be8(0), []byte("r"), []byte{1}, []byte{}, []byte{}) // a row key of 1 byte after rows 0 and 1
	var next uint64
	f.Fuzz(func(t *testing.T, present uint8, end, start, row, rowKey, idemVal, index []byte) {
		next++
		id := next
		var kvs [][2][]byte
		put := func(bit uint8, k, v []byte) {
			if present&bit != 0 {
				kvs = append(kvs, [2][]byte{k, v})
			}
		}
		put(1, tableKey(metaEnd, id), end)
		put(2, tableKey(metaStart, id), start)
		put(4, append(tableKey(metaRow, id), be8(0)...), row)
		put(4, append(tableKey(metaRow, id), be8(1)...), row)
		put(8, append(tableKey(metaRow, id), rowKey...), row)
		h := sha256.Sum256([]byte("key"))
		put(16, append(tableKey(metaIdem, id), h[:]...), idemVal)
		put(32, append(tableKey(metaTime, id), be8(1000)...), index)
		put(64, append(tableKey(metaTime, id), rowKey...), index)
		err := m.db.Update(func(txn *badger.Txn) error {
			for _, kv := range kvs {
				if err := txn.Set(kv[0], kv[1]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Skip(err) // a key or value Badger refuses
		}
		named := func(err error) {
			t.Helper()
			if err != nil && !strings.HasPrefix(err.Error(), "log ") {
				t.Fatalf("error does not name the log: %v", err)
			}
		}
		l, err := m.Log(id)
		if err != nil {
			named(err)
			return
		}
		defer l.Close()
		if l.Start() < 0 || l.Start() > l.End() {
			t.Fatalf("start %d, end %d", l.Start(), l.End())
		}
		_, err = l.Read(l.Start(), 4, func(int64, []byte) error { return nil })
		named(err)
		l.OffsetBefore(time.UnixMilli(999))
		l.OffsetBefore(time.UnixMilli(1001))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = l.Append(ctx, [][]byte{[]byte("new")}, "key")
		named(err)
		named(l.Truncate(1))
		_, err = l.Read(l.Start(), 4, func(int64, []byte) error { return nil })
		named(err)
	})
}
