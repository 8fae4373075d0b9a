package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fakeSpace is a Space over a free-space figure the test sets.
func fakeSpace(reserve int64) (*Space, *atomic.Int64) {
	free := new(atomic.Int64)
	s := NewSpace(reserve)
	s.free = func(string) (int64, error) { return free.Load(), nil }
	return s, free
}

// TestSpaceRefusals: ingest stops at the reserve, writing nothing, while
// state writes and markers go on down to half of it; below that they are
// refused too. Every refusal is ErrDiskFull, and once space is back the
// log and the store take writes again (a refusal changed nothing).
func TestSpaceRefusals(t *testing.T) {
	const reserve = 100 << 20
	sp, free := fakeSpace(reserve)
	dir := t.TempDir()
	m := openMeta(t, filepath.Join(dir, "meta"), MetaOptions{Space: sp})
	v, err := OpenVersionedWith(filepath.Join(dir, "state"), VersionedOptions{Space: sp})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	l := openLogT(t, m, 1)
	ctx := context.Background()

	free.Store(1 << 30)
	mustAppend(t, l, rowsOf("a", "b"), "k1")

	// Between the reserve and half of it: ingest refused, checkpoints go on.
	free.Store(reserve - 1)
	_, err = l.Append(ctx, rowsOf("c", "d"), "k2")
	var dfe *DiskFullError
	if !errors.Is(err, ErrDiskFull) || !IsDiskFull(err) || !errors.As(err, &dfe) || !dfe.Ingest {
		t.Fatalf("append below the reserve: %v, want a DiskFullError of ingest", err)
	}
	if !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "--disk-reserve") {
		t.Fatalf("error text %q", err)
	}
	if l.End() != 2 || persistedEnd(m, 1) != 2 {
		t.Fatalf("end %d (persisted %d) after a refused append, want 2", l.End(), persistedEnd(m, 1))
	}
	id := v.NextID()
	if err := v.Write(id, []KV{{Key: []byte("x"), Value: []byte("1")}}); err != nil {
		t.Fatalf("state write above half the reserve: %v", err)
	}
	if err := v.CommitMarker([]byte("m"), id, []byte("v")); err != nil {
		t.Fatalf("marker above half the reserve: %v", err)
	}
	if _, err := m.NextSeq("q"); err != nil {
		t.Fatalf("sequence above half the reserve: %v", err)
	}

	// Below half: everything but reads refused.
	free.Store(reserve/2 - 1)
	id2 := v.NextID()
	if err := v.Write(id2, []KV{{Key: []byte("x"), Value: []byte("2")}}); !IsDiskFull(err) {
		t.Fatalf("state write below half the reserve: %v", err)
	}
	if err := v.CommitMarker([]byte("m"), id2, []byte("v2")); !IsDiskFull(err) {
		t.Fatalf("marker below half the reserve: %v", err)
	}
	if err := m.PutCatalog("c", []byte("v")); !IsDiskFull(err) {
		t.Fatalf("catalog write below half the reserve: %v", err)
	}
	if got, err := v.Get([]byte("x"), id2); err != nil || string(got) != "1" {
		t.Fatalf("read after a refused write: %q %v", got, err)
	}
	if last, _, _, _ := v.LastMarker([]byte("m")); last != id {
		t.Fatalf("last marker %d, want %d", last, id)
	}
	if err := m.CollectGarbage(); err != nil {
		t.Fatalf("value-log GC on a full disk must skip, not fail: %v", err)
	}

	// Space is back: the same request is appended, after the old rows.
	free.Store(1 << 30)
	res := mustAppend(t, l, rowsOf("c", "d"), "k2")
	if res.First != 2 || res.Duplicate {
		t.Fatalf("append once space is back: %+v", res)
	}
	if got := strings.Join(readAll(t, l, 0), ""); got != "abcd" {
		t.Fatalf("log holds %q", got)
	}
	if err := v.Write(id2, []KV{{Key: []byte("x"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
}

// TestSpaceClaims: room claimed by a write in progress is not handed out
// twice; given back, it is available again.
func TestSpaceClaims(t *testing.T) {
	sp, free := fakeSpace(10 << 20)
	free.Store(20 << 20)
	rel1, err := sp.claim("d", 8<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.claim("d", 8<<20, true); !IsDiskFull(err) {
		t.Fatalf("second claim of the same room: %v", err)
	}
	// Non-ingest writes may use half the reserve.
	rel2, err := sp.claim("d", 6<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	rel1()
	rel2()
	if _, err := sp.claim("d", 8<<20, true); err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	free.Store(5<<20 - 1)
	var dfe *DiskFullError
	if err := sp.CheckOpen("d"); !errors.As(err, &dfe) || !dfe.Open || !strings.Contains(err.Error(), "free space to start") {
		t.Fatalf("opening with less than half the reserve free: %v", err)
	}
	free.Store(5 << 20)
	if err := sp.CheckOpen("d"); err != nil {
		t.Fatalf("opening with half the reserve free: %v", err)
	}
	var nilSpace *Space
	if _, err := nilSpace.claim("d", 1<<40, true); err != nil {
		t.Fatalf("a nil Space checks nothing: %v", err)
	}
	if !IsDiskFull(fmt.Errorf("write: %w", syscall.ENOSPC)) {
		t.Fatal("ENOSPC is disk full")
	}
}

// TestSpaceStateWriteWaits: a state write refused for room makes ingest
// leave that room too, until a state write that large goes through or a
// minute has passed; otherwise rows arriving once space is freed take it
// again and the checkpoint waits as long as ingest goes on.
func TestSpaceStateWriteWaits(t *testing.T) {
	const mib = 1 << 20
	sp, free := fakeSpace(10 * mib)
	now := time.Unix(1000, 0)
	sp.now = func() time.Time { return now }
	ingest := func() error {
		rel, err := sp.claim("d", mib, true)
		if err == nil {
			rel()
		}
		return err
	}
	state := func(need int64) error {
		rel, err := sp.claimState("d", need)
		if err == nil {
			rel()
		}
		return err
	}
	free.Store(20 * mib)
	if err := state(16 * mib); !IsDiskFull(err) {
		t.Fatalf("a state write of 16 MiB with 20 MiB free and half of 10 MiB kept: %v", err)
	}
	err := ingest()
	var dfe *DiskFullError
	if !errors.As(err, &dfe) || !dfe.Ingest || dfe.Waiting != 16*mib || dfe.Keep != 26*mib ||
		!strings.Contains(err.Error(), "16.0 MiB for a checkpoint waiting to be written") {
		t.Fatalf("ingest while a state write waits: %v", err)
	}
	free.Store(30 * mib) // space freed: ingest leaves the checkpoint its room
	if err := ingest(); err != nil {
		t.Fatalf("ingest with room for the waiting write: %v", err)
	}
	free.Store(26*mib - 1)
	if err := ingest(); !IsDiskFull(err) {
		t.Fatalf("ingest into the waiting write's room: %v", err)
	}
	if err := state(16 * mib); err != nil {
		t.Fatalf("the state write again: %v", err)
	}
	if err := ingest(); err != nil {
		t.Fatalf("ingest once the state write went through: %v", err)
	}
	// A write that is not retried stops holding the room after a while.
	free.Store(20 * mib)
	if err := state(16 * mib); !IsDiskFull(err) {
		t.Fatal(err)
	}
	now = now.Add(stateWaitFor)
	if err := ingest(); err != nil {
		t.Fatalf("ingest a minute after the refused write: %v", err)
	}
}
