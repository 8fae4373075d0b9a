package state

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// impls lists the Versioned implementations under test; every one must pass
// the same conformance suite.
var impls = []struct {
	name string
	open func(t *testing.T) Versioned
}{
	{"badger", func(t *testing.T) Versioned {
		v, err := OpenVersioned(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = v.Close() })
		return v
	}},
	{"mem", func(t *testing.T) Versioned {
		v := NewMemVersioned()
		t.Cleanup(func() { _ = v.Close() })
		return v
	}},
}

func TestVersionedConformance(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			t.Run("ReadsAtVersions", func(t *testing.T) { testReadsAtVersions(t, impl.open(t)) })
			t.Run("Markers", func(t *testing.T) { testMarkers(t, impl.open(t)) })
			t.Run("Repair", func(t *testing.T) { testRepair(t, impl.open(t)) })
			t.Run("NextID", func(t *testing.T) { testNextID(t, impl.open(t)) })
			t.Run("LargeWrite", func(t *testing.T) { testLargeWrite(t, impl.open(t)) })
			t.Run("DropPrefix", func(t *testing.T) { testDropPrefix(t, impl.open(t)) })
			t.Run("DiscardTs", func(t *testing.T) { testDiscardTs(t, impl.open(t)) })
			t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, impl.open(t)) })
		})
	}
}

func mustWrite(t *testing.T, v Versioned, id uint64, kvs ...KV) {
	t.Helper()
	if err := v.Write(id, kvs); err != nil {
		t.Fatal(err)
	}
}

func put(k, val string) KV { return KV{Key: []byte(k), Value: []byte(val)} }
func del(k string) KV      { return KV{Key: []byte(k), Delete: true} }

// wantGet checks the value of key at version at; want "" means not found.
func wantGet(t *testing.T, v Versioned, key string, at uint64, want string) {
	t.Helper()
	got, err := v.Get([]byte(key), at)
	if want == "" {
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q, %d) = %q, %v; want ErrNotFound", key, at, got, err)
		}
		return
	}
	if err != nil || string(got) != want {
		t.Fatalf("Get(%q, %d) = %q, %v; want %q", key, at, got, err, want)
	}
}

// scanString renders a scan as "k=v k=v".
func scanString(t *testing.T, v Versioned, prefix string, at uint64) string {
	t.Helper()
	var parts []string
	err := v.Scan([]byte(prefix), at, func(k, val []byte) error {
		parts = append(parts, string(k)+"="+string(val))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(parts, " ")
}

func testReadsAtVersions(t *testing.T, v Versioned) {
	id1, id2, id3 := v.NextID(), v.NextID(), v.NextID()
	if !(id1 > 0 && id1 < id2 && id2 < id3) {
		t.Fatalf("ids not increasing: %d %d %d", id1, id2, id3)
	}
	mustWrite(t, v, id1, put("q/a", "a1"), put("q/b", "b1"), put("r/x", "x1"))
	mustWrite(t, v, id2, put("q/a", "a2"), del("q/b"), put("q/c", "c2"), put("q/c", "c2b")) // last write of a key wins
	mustWrite(t, v, id3, put("q/b", "b3"))

	wantGet(t, v, "q/a", id1-1, "")
	wantGet(t, v, "q/a", id1, "a1")
	wantGet(t, v, "q/a", id2, "a2")
	wantGet(t, v, "q/b", id1, "b1")
	wantGet(t, v, "q/b", id2, "")
	wantGet(t, v, "q/b", id3, "b3")
	wantGet(t, v, "q/c", id2, "c2b")
	wantGet(t, v, "nope", id3, "")

	for _, c := range []struct {
		prefix string
		at     uint64
		want   string
	}{
		{"q/", id1, "q/a=a1 q/b=b1"},
		{"q/", id2, "q/a=a2 q/c=c2b"},
		{"q/", id3, "q/a=a2 q/b=b3 q/c=c2b"},
		{"", id1, "q/a=a1 q/b=b1 r/x=x1"},
		{"r/", id3, "r/x=x1"},
		{"s/", id3, ""},
	} {
		if got := scanString(t, v, c.prefix, c.at); got != c.want {
			t.Errorf("Scan(%q, %d) = %q, want %q", c.prefix, c.at, got, c.want)
		}
	}

	stop := errors.New("stop")
	n := 0
	err := v.Scan([]byte("q/"), id3, func(k, val []byte) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("Scan with failing fn: err %v after %d calls", err, n)
	}
	if err := v.Write(0, []KV{put("q/z", "z")}); err == nil {
		t.Fatal("Write at id 0 succeeded")
	}
}

func testMarkers(t *testing.T, v Versioned) {
	marker := []byte("m/q1")
	if _, _, ok, err := v.LastMarker(marker); ok || err != nil {
		t.Fatalf("LastMarker on empty store: ok=%v err=%v", ok, err)
	}
	id1 := v.NextID()
	mustWrite(t, v, id1, put("q1/k", "v1"))
	if err := v.CommitMarker(marker, id1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	id2 := v.NextID()
	mustWrite(t, v, id2, put("q1/k", "v2"))
	if err := v.CommitMarker(marker, id2, []byte("two")); err != nil {
		t.Fatal(err)
	}
	id, val, ok, err := v.LastMarker(marker)
	if err != nil || !ok || id != id2 || string(val) != "two" {
		t.Fatalf("LastMarker = %d %q %v %v; want %d two", id, val, ok, err, id2)
	}
	// An unfinished checkpoint writes state above the marker; the marker
	// does not move.
	mustWrite(t, v, v.NextID(), put("q1/k", "v3"))
	if id, _, _, _ := v.LastMarker(marker); id != id2 {
		t.Fatalf("LastMarker moved to %d", id)
	}
	wantGet(t, v, "q1/k", id, "v2")
	if _, _, ok, _ := v.LastMarker([]byte("m/other")); ok {
		t.Fatal("LastMarker of another query found")
	}
}

func testRepair(t *testing.T, v Versioned) {
	marker := []byte("m/q")
	id1 := v.NextID()
	mustWrite(t, v, id1, put("q/same", "s1"), put("q/changed", "c1"), put("q/deleted", "d1"), put("q/gone", "g1"))
	id2 := v.NextID()
	mustWrite(t, v, id2, del("q/gone"), put("q/changed", "c2"))
	if err := v.CommitMarker(marker, id2, nil); err != nil {
		t.Fatal(err)
	}
	// Checkpoint id3 never completes; id4 neither.
	id3, id4 := v.NextID(), v.NextID()
	mustWrite(t, v, id3, put("q/changed", "c3"), del("q/deleted"), put("q/new", "n3"), put("q/gone", "g3"))
	mustWrite(t, v, id4, put("q/new", "n4"), put("q/changed", "c4"), put("other/x", "x4"))

	before := scanString(t, v, "q/", id2)
	if got := scanString(t, v, "q/", id4+100); got == before {
		t.Fatal("test setup: nothing visible above the marker")
	}
	at, _, ok, err := v.LastMarker(marker)
	if err != nil || !ok || at != id2 {
		t.Fatalf("LastMarker = %d %v %v", at, ok, err)
	}
	rid, err := v.Repair([]byte("q/"), at)
	if err != nil {
		t.Fatal(err)
	}
	if rid <= id4 {
		t.Fatalf("Repair wrote at %d, not above %d", rid, id4)
	}
	if err := v.CommitMarker(marker, rid, nil); err != nil {
		t.Fatal(err)
	}
	want := "q/changed=c2 q/deleted=d1 q/same=s1"
	if before != want {
		t.Fatalf("state at marker = %q, want %q", before, want)
	}
	for _, ts := range []uint64{rid, rid + 1000} {
		if got := scanString(t, v, "q/", ts); got != want {
			t.Fatalf("after repair, scan at %d = %q, want %q", ts, got, want)
		}
	}
	wantGet(t, v, "q/new", rid, "")
	wantGet(t, v, "q/deleted", rid, "d1") // deleted above the marker: restored
	wantGet(t, v, "q/gone", rid, "")
	wantGet(t, v, "other/x", rid, "x4") // outside the prefix: untouched
	if n := v.NextID(); n <= rid {
		t.Fatalf("NextID %d after repair id %d", n, rid)
	}
	// Nothing left to repair.
	if again, err := v.Repair([]byte("q/"), rid); err != nil || again != 0 {
		t.Fatalf("second Repair = %d, %v; want 0", again, err)
	}
}

func testNextID(t *testing.T, v Versioned) {
	seen := map[uint64]bool{}
	var last uint64
	for range 100 {
		id := v.NextID()
		if seen[id] || id <= last {
			t.Fatalf("NextID %d after %d", id, last)
		}
		seen[id], last = true, id
	}
	// Writing at an id ahead of the counter moves the counter past it.
	mustWrite(t, v, last+50, put("k", "v"))
	if id := v.NextID(); id <= last+50 {
		t.Fatalf("NextID %d not above written id %d", id, last+50)
	}
	if err := v.CommitMarker([]byte("m"), last+80, nil); err != nil {
		t.Fatal(err)
	}
	if id := v.NextID(); id <= last+80 {
		t.Fatalf("NextID %d not above marker id %d", id, last+80)
	}
}

func testLargeWrite(t *testing.T, v Versioned) {
	// More than one Badger transaction can hold (about 2.4 MB at a 16 MB
	// memtable), in both big values and many small entries.
	rng := rand.NewChaCha8([32]byte{1, 2})
	var kvs []KV
	big := make(map[string][]byte)
	for i := range 24 {
		val := make([]byte, 512<<10)
		_, _ = rng.Read(val)
		k := fmt.Sprintf("big/%03d", i)
		big[k] = val
		kvs = append(kvs, KV{Key: []byte(k), Value: val})
	}
	// A value above Badger's value-log threshold.
	huge := bytes.Repeat([]byte("h"), 3<<20)
	kvs = append(kvs, KV{Key: []byte("big/huge"), Value: huge})
	const small = 60000
	for i := range small {
		kvs = append(kvs, put(fmt.Sprintf("small/%06d", i), fmt.Sprintf("value-%d", i)))
	}
	if bv, ok := v.(*BadgerVersioned); ok {
		if limit := bv.db.MaxBatchSize(); 24*512<<10 < 2*limit || int64(small) < 2*bv.db.MaxBatchCount() {
			t.Fatalf("test too small to split: batch limits %d bytes, %d entries", limit, bv.db.MaxBatchCount())
		}
	}
	id := v.NextID()
	mustWrite(t, v, id, kvs...)

	n := 0
	err := v.Scan([]byte("big/"), id, func(k, val []byte) error {
		n++
		want := big[string(k)]
		if string(k) == "big/huge" {
			want = huge
		}
		if !bytes.Equal(val, want) {
			return fmt.Errorf("value of %s differs (%d bytes)", k, len(val))
		}
		return nil
	})
	if err != nil || n != 25 {
		t.Fatalf("scan big: %d keys, %v", n, err)
	}
	n = 0
	err = v.Scan([]byte("small/"), id, func(k, val []byte) error {
		if want := fmt.Sprintf("small/%06d=value-%d", n, n); string(k)+"="+string(val) != want {
			return fmt.Errorf("got %s=%s, want %s", k, val, want)
		}
		n++
		return nil
	})
	if err != nil || n != small {
		t.Fatalf("scan small: %d keys, %v", n, err)
	}
}

func testDropPrefix(t *testing.T, v Versioned) {
	id1, id2 := v.NextID(), v.NextID()
	mustWrite(t, v, id1, put("q1/a", "1"), put("q1/b", "1"), put("q2/a", "1"), put("q3/a", "1"))
	mustWrite(t, v, id2, put("q1/a", "2"), del("q3/a"))
	if err := v.DropPrefix([]byte("q1/")); err != nil {
		t.Fatal(err)
	}
	// A prefix whose newest versions are all deletes goes too.
	if err := v.DropPrefix([]byte("q3/")); err != nil {
		t.Fatal(err)
	}
	for _, at := range []uint64{id1, id2, id2 + 10} {
		if got := scanString(t, v, "q1/", at); got != "" {
			t.Fatalf("q1 after drop at %d: %q", at, got)
		}
		if got := scanString(t, v, "q3/", at); got != "" {
			t.Fatalf("q3 after drop at %d: %q", at, got)
		}
	}
	wantGet(t, v, "q2/a", id2, "1")
	if got := scanString(t, v, "", v.NextID()); got != "q2/a=1" {
		t.Fatalf("whole store after drops: %q", got)
	}
	// The prefix can be used again.
	id3 := v.NextID()
	mustWrite(t, v, id3, put("q1/a", "3"))
	wantGet(t, v, "q1/a", id3, "3")
}

func testDiscardTs(t *testing.T, v Versioned) {
	var ids []uint64
	for i := range 5 {
		id := v.NextID()
		ids = append(ids, id)
		mustWrite(t, v, id, put("k", fmt.Sprint(i)), put(fmt.Sprintf("d%d", i), "x"))
		if i > 0 {
			mustWrite(t, v, id, del(fmt.Sprintf("d%d", i-1)))
		}
	}
	v.SetDiscardTs(ids[3])
	mustWrite(t, v, v.NextID(), put("other", "o"))
	// Reads at or above the discard timestamp are unaffected.
	wantGet(t, v, "k", ids[3], "3")
	wantGet(t, v, "k", ids[4], "4")
	if got := scanString(t, v, "d", ids[3]); got != "d3=x" {
		t.Fatalf("scan at discard ts: %q", got)
	}
	if got := scanString(t, v, "d", ids[4]); got != "d4=x" {
		t.Fatalf("scan above discard ts: %q", got)
	}
}

func testConcurrent(t *testing.T, v Versioned) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				id := v.NextID()
				key := fmt.Sprintf("c%d/%d", w, i%5)
				if err := v.Write(id, []KV{put(key, fmt.Sprint(id))}); err != nil {
					errs <- err
					return
				}
				got, err := v.Get([]byte(key), id)
				if err != nil || string(got) != fmt.Sprint(id) {
					errs <- fmt.Errorf("Get(%s, %d) = %q, %v", key, id, got, err)
					return
				}
				if err := v.Scan([]byte(fmt.Sprintf("c%d/", w)), id, func(k, v []byte) error { return nil }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 3 {
			if err := v.DropPrefix([]byte("unused/")); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestVersionedDifferential runs the same random operations against both
// implementations and compares every read.
func TestVersionedDifferential(t *testing.T) {
	b := impls[0].open(t)
	m := impls[1].open(t)
	rng := rand.New(rand.NewPCG(7, 11))
	var ids []uint64
	var marker uint64
	for step := range 600 {
		var id uint64
		switch {
		case len(ids) == 0 || rng.IntN(3) > 0:
			bid, mid := b.NextID(), m.NextID()
			id = max(bid, mid)
			ids = append(ids, id)
		default:
			id = ids[rng.IntN(len(ids))]
		}
		var kvs []KV
		for range 1 + rng.IntN(4) {
			k := fmt.Sprintf("p%d/k%d", rng.IntN(3), rng.IntN(12))
			if rng.IntN(4) == 0 {
				kvs = append(kvs, del(k))
			} else {
				kvs = append(kvs, put(k, fmt.Sprintf("v%d", step)))
			}
		}
		for _, v := range []Versioned{b, m} {
			mustWrite(t, v, id, kvs...)
		}
		switch rng.IntN(40) {
		case 0:
			marker = ids[len(ids)-1]
		case 1:
			if marker > 0 {
				p := []byte(fmt.Sprintf("p%d/", rng.IntN(3)))
				rb, err1 := b.Repair(p, marker)
				rm, err2 := m.Repair(p, marker)
				if err1 != nil || err2 != nil || (rb == 0) != (rm == 0) {
					t.Fatalf("Repair: %d %v / %d %v", rb, err1, rm, err2)
				}
				if rb != 0 {
					// Both must now read as of the marker for that prefix.
					for _, v := range []Versioned{b, m} {
						if got, want := scanString(t, v, string(p), max(rb, rm)+1), scanString(t, v, string(p), marker); got != want {
							t.Fatalf("after repair: %q, want %q", got, want)
						}
					}
					ids = append(ids, max(rb, rm))
				}
			}
		case 2:
			p := []byte(fmt.Sprintf("p%d/", rng.IntN(3)))
			for _, v := range []Versioned{b, m} {
				if err := v.DropPrefix(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		at := ids[rng.IntN(len(ids))]
		for _, p := range []string{"", "p0/", "p1/", "p2/"} {
			if gb, gm := scanString(t, b, p, at), scanString(t, m, p, at); gb != gm {
				t.Fatalf("step %d: Scan(%q, %d): badger %q, mem %q", step, p, at, gb, gm)
			}
		}
	}
}

func TestBadgerNextIDAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	v, err := OpenVersioned(dir)
	if err != nil {
		t.Fatal(err)
	}
	var maxWritten uint64
	for range 5 {
		id := v.NextID()
		mustWrite(t, v, id, put("q1/k", fmt.Sprint(id)))
		maxWritten = id
	}
	if err := v.CommitMarker([]byte("m/q1"), maxWritten, nil); err != nil {
		t.Fatal(err)
	}
	// q2 holds the newest versions, then is dropped: ids must still not go
	// backwards after a restart.
	for range 5 {
		id := v.NextID()
		mustWrite(t, v, id, put("q2/k", fmt.Sprint(id)))
		maxWritten = id
	}
	if err := v.DropPrefix([]byte("q2/")); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := v.Write(v.NextID(), []KV{put("x", "y")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}

	for round := range 2 {
		v, err = OpenVersioned(dir)
		if err != nil {
			t.Fatal(err)
		}
		id := v.NextID()
		if id <= maxWritten {
			t.Fatalf("round %d: NextID %d after reopen, written up to %d", round, id, maxWritten)
		}
		mustWrite(t, v, id, put("q1/k", "after"))
		maxWritten = id
		at, _, ok, err := v.LastMarker([]byte("m/q1"))
		if err != nil || !ok {
			t.Fatalf("LastMarker after reopen: %v %v", ok, err)
		}
		wantGet(t, v, "q1/k", at, fmt.Sprint(at))
		if got := scanString(t, v, "q2/", id); got != "" {
			t.Fatalf("dropped prefix back after reopen: %q", got)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
