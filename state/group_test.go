package state

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
)

// TestGroupCommitsQueuedTogether: requests that queue while a group runs go
// together into the next one, each gets its group's error, and a group
// whose run panics still answers its other requests and hands over.
func TestGroupCommitsQueuedTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		boom := errors.New("boom")
		hold := make(chan struct{})
		var batches [][]int
		g := &group[int]{run: func(reqs []int) error {
			batches = append(batches, slices.Sorted(slices.Values(reqs)))
			switch len(batches) {
			case 1:
				<-hold
				return nil
			case 2:
				return boom
			}
			if reqs[0] == -1 {
				panic("run panicked")
			}
			return nil
		}}
		errs := make([]error, n)
		var wg sync.WaitGroup
		wg.Go(func() { errs[0] = g.do(0) })
		synctest.Wait() // 0 runs the first group, alone, and is held
		for i := 1; i < n; i++ {
			wg.Go(func() { errs[i] = g.do(i) })
		}
		synctest.Wait() // the others are queued
		close(hold)
		wg.Wait()
		want := [][]int{{0}, make([]int, 0, n-1)}
		for i := 1; i < n; i++ {
			want[1] = append(want[1], i)
		}
		if !slices.EqualFunc(batches, want, slices.Equal) {
			t.Fatalf("groups %v, want %v", batches, want)
		}
		if errs[0] != nil {
			t.Fatalf("request 0: %v", errs[0])
		}
		for i := 1; i < n; i++ {
			if !errors.Is(errs[i], boom) {
				t.Fatalf("request %d: %v, want its group's error", i, errs[i])
			}
		}

		// A panic: the caller that ran the group panics, the others of its
		// group get an error, and the next group runs.
		hold = make(chan struct{})
		g.run = func(reqs []int) error {
			switch {
			case slices.Contains(reqs, 100):
				<-hold
			case slices.Contains(reqs, -1):
				panic("run panicked")
			}
			return nil
		}
		var panics [2]any
		doRecover := func(k, req int) {
			defer func() { panics[k] = recover() }()
			errs[k] = g.do(req)
		}
		wg.Go(func() { g.do(100) })
		synctest.Wait()
		wg.Go(func() { doRecover(0, -1) })
		wg.Go(func() { doRecover(1, 1) })
		synctest.Wait()
		close(hold)
		wg.Wait()
		for k := range 2 {
			// One of the two ran the group and panicked; the other got the
			// error.
			if (panics[k] == nil) == (panics[1-k] == nil) || panics[k] == nil && !errors.Is(errs[k], errGroupPanicked) {
				t.Fatalf("panics %v, errors %v", panics, errs[:2])
			}
		}
		if err := g.do(2); err != nil {
			t.Fatalf("after a panic: %v", err)
		}
	})
}

// TestBadgerMarkersGroupCommit: markers of many queries committed at once
// share their syncs (two syncs for the group behind a running one, not two
// each), each is readable at its own checkpoint id, and none is readable
// before the group's first sync returned.
func TestBadgerMarkersGroupCommit(t *testing.T) {
	const n = 32
	rec := &SyncRecorder{}
	v, err := OpenVersionedWith(t.TempDir(), VersionedOptions{WrapSync: rec.WrapNamed("state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	queued := make(chan int, n)
	v.markers.queued = func(k int) { queued <- k }
	key := func(i int) []byte { return fmt.Appendf(nil, "q/%d/m", i) }
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = v.NextID()
		mustWrite(t, v, ids[i], put(fmt.Sprintf("q/%d/s", i), "state"))
	}
	started, release := rec.HoldNext()
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = v.CommitMarker(key(0), ids[0], []byte("m0")) })
	<-started // marker 0's group is in its first sync
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = v.CommitMarker(key(i), ids[i], fmt.Appendf(nil, "m%d", i)) })
	}
	for range n - 1 {
		<-queued
	}
	for i := 1; i < n; i++ {
		if _, _, ok, _ := v.LastMarker(key(i)); ok {
			t.Fatalf("marker %d readable before its group's first sync", i)
		}
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("marker %d: %v", i, err)
		}
		id, val, ok, err := v.LastMarker(key(i))
		if err != nil || !ok || id != ids[i] || !bytes.Equal(val, fmt.Appendf(nil, "m%d", i)) {
			t.Fatalf("marker %d: %d %q %v %v, want %d", i, id, val, ok, err, ids[i])
		}
	}
	if got := rec.Count(); got != 4 {
		t.Fatalf("%d markers took %d syncs, want 4 (two groups of sync, commit, sync)", n, got)
	}
}

// TestBadgerWriteGroup: a group of writes at different versions, with
// deletes and blob references, reads as the same writes made one by one.
func TestBadgerWriteGroup(t *testing.T) {
	v, err := OpenVersioned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	big := string(bytes.Repeat([]byte("x"), blobThreshold+10))
	mustWrite(t, v, 1, put("k", "old"), put("gone", "g"))
	var ws []versionedWrite
	for _, w := range []struct {
		id  uint64
		kvs []KV
	}{
		{5, []KV{put("k", "a"), del("gone")}},
		{7, []KV{put("k", "b"), put("blob", big)}},
		{6, []KV{put("other", "o")}},
	} {
		kvs, meta, err := v.spill(w.kvs)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, versionedWrite{id: w.id, kvs: kvs, meta: meta})
	}
	v.bump(7)
	if err := v.commitGroup(ws); err != nil {
		t.Fatal(err)
	}
	wantGet(t, v, "k", 4, "old")
	wantGet(t, v, "k", 5, "a")
	wantGet(t, v, "k", 6, "a")
	wantGet(t, v, "k", 7, "b")
	wantGet(t, v, "gone", 4, "g")
	wantGet(t, v, "gone", 5, "")
	wantGet(t, v, "other", 5, "")
	wantGet(t, v, "other", 6, "o")
	wantGet(t, v, "blob", 6, "")
	wantGet(t, v, "blob", 7, big)
}
