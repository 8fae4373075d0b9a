package state

import (
	"bytes"
	"fmt"
	"testing"
)

func bigValue(tag byte, n int) []byte { return bytes.Repeat([]byte{tag}, n) }

func blobFiles(t *testing.T, v *BadgerVersioned) int {
	t.Helper()
	ids, err := v.blobs.list()
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

// TestBlobValues: large values go to blob files and read back through Get,
// Scan and LastMarker at their versions, also after a reopen; small ones
// stay inline.
func TestBlobValues(t *testing.T) {
	dir := t.TempDir()
	v, err := OpenVersioned(dir)
	if err != nil {
		t.Fatal(err)
	}
	id1, id2 := v.NextID(), v.NextID()
	write := func(id uint64, kvs ...KV) {
		t.Helper()
		if err := v.Write(id, kvs); err != nil {
			t.Fatal(err)
		}
	}
	write(id1, KV{Key: []byte("p/a"), Value: bigValue('a', 100_000)}, KV{Key: []byte("p/b"), Value: []byte("small")},
		KV{Key: []byte("p/c"), Value: bigValue('c', blobThreshold)})
	write(id2, KV{Key: []byte("p/a"), Value: bigValue('A', 5000)}, KV{Key: []byte("p/c"), Delete: true})
	if n := blobFiles(t, v); n != 2 {
		t.Fatalf("%d blob files, want one per write with large values (2)", n)
	}
	check := func(v *BadgerVersioned) {
		t.Helper()
		for _, c := range []struct {
			at   uint64
			want string
		}{{id1, "p/a=a*100000 p/b=small p/c=c*4096 "}, {id2, "p/a=A*5000 p/b=small "}} {
			var got string
			err := v.Scan([]byte("p/"), c.at, func(k, val []byte) error {
				got += fmt.Sprintf("%s=", k)
				if len(val) > 100 {
					got += fmt.Sprintf("%c*%d ", val[0], len(val))
				} else {
					got += string(val) + " "
				}
				if !bytes.Equal(val, bytes.Repeat(val[:1], len(val))) && len(val) > 100 {
					t.Errorf("%s at %d: corrupt value", k, c.at)
				}
				return nil
			})
			if err != nil || got != c.want {
				t.Errorf("scan at %d: %q (%v), want %q", c.at, got, err, c.want)
			}
		}
		if got, err := v.Get([]byte("p/a"), id1); err != nil || !bytes.Equal(got, bigValue('a', 100_000)) {
			t.Errorf("get p/a at %d: %d bytes, %v", id1, len(got), err)
		}
	}
	check(v)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	v, err = OpenVersioned(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	check(v)
	// A new write after the reopen gets a new file, never an old name.
	write(v.NextID(), KV{Key: []byte("q/x"), Value: bigValue('x', 9000)})
	if n := blobFiles(t, v); n != 3 {
		t.Fatalf("%d blob files after a reopen and a write, want 3", n)
	}
}

// TestBlobRepairAndGC: Repair keeps blob references (and their files); GC
// deletes exactly the files no readable version points into.
func TestBlobRepairAndGC(t *testing.T) {
	v, err := OpenVersioned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var ids []uint64
	for i := range 4 {
		id := v.NextID()
		ids = append(ids, id)
		if err := v.Write(id, []KV{{Key: []byte("q/s"), Value: bigValue(byte('a'+i), 10_000)}}); err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			if err := v.CommitMarker([]byte("q/m"), id, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Version 4 is above the marker (3): repair rewrites q/s as of 3.
	rid, err := v.Repair([]byte("q/"), ids[2])
	if err != nil || rid == 0 {
		t.Fatalf("repair: %d, %v", rid, err)
	}
	if got, err := v.Get([]byte("q/s"), rid); err != nil || !bytes.Equal(got, bigValue('c', 10_000)) {
		t.Fatalf("after repair: %q..., %v", got[:min(len(got), 4)], err)
	}
	// Nothing is collectable before a discard timestamp.
	if err := v.CollectGarbage(); err != nil || blobFiles(t, v) != 4 {
		t.Fatalf("gc without discard: %d files left, %v", blobFiles(t, v), err)
	}
	// Readers at or above ids[2]: versions 1 and 2 are dead, 3 is the newest
	// at or below it, 4 is above it (but repaired over), the repair's points
	// at 3's file.
	v.SetDiscardTs(ids[2])
	// A collection works with the discard timestamp the previous one saw
	// (reads that took their version earlier are not cut short): the
	// first after SetDiscardTs deletes nothing yet.
	if err := v.CollectGarbage(); err != nil || blobFiles(t, v) != 4 {
		t.Fatalf("first gc after SetDiscardTs: %d files left, %v", blobFiles(t, v), err)
	}
	if err := v.CollectGarbage(); err != nil {
		t.Fatal(err)
	}
	if n := blobFiles(t, v); n != 2 {
		t.Fatalf("after gc at %d: %d files, want 2 (versions 3 and 4)", ids[2], n)
	}
	v.SetDiscardTs(rid)
	// A read in progress at ids[2] keeps what it can see.
	done := v.reading(ids[2])
	for range 2 {
		if err := v.CollectGarbage(); err != nil {
			t.Fatal(err)
		}
	}
	if n := blobFiles(t, v); n != 2 {
		t.Fatalf("gc with a read at %d in progress: %d files, want 2", ids[2], n)
	}
	done()
	if err := v.CollectGarbage(); err != nil {
		t.Fatal(err)
	}
	if n := blobFiles(t, v); n != 1 {
		t.Fatalf("after gc at the repair: %d files, want 1 (version 3's, which the repair points into)", n)
	}
	if got, err := v.Get([]byte("q/s"), rid); err != nil || !bytes.Equal(got, bigValue('c', 10_000)) {
		t.Fatalf("after gc: %v", err)
	}
	// A dropped prefix frees its files.
	if err := v.DropPrefix([]byte("q/")); err != nil {
		t.Fatal(err)
	}
	if err := v.CollectGarbage(); err != nil || blobFiles(t, v) != 0 {
		t.Fatalf("after drop: %d files, %v", blobFiles(t, v), err)
	}
}
