package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/internal/fault"
)

// TestBadgerCommitMarkerSyncs checks through the sync seam that a marker
// becomes readable only after a sync of the state written before it has
// returned, and that a failed sync leaves the previous marker the last.
func TestBadgerCommitMarkerSyncs(t *testing.T) {
	rec := &SyncRecorder{}
	v, err := OpenVersionedWith(t.TempDir(), VersionedOptions{WrapSync: rec.WrapNamed("state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	mk := []byte("m/q1")
	lastMarker := func() string {
		id, val, ok, err := v.LastMarker(mk)
		switch {
		case err != nil:
			return err.Error()
		case !ok:
			return "none"
		}
		return fmt.Sprintf("%d=%s", id, val)
	}
	rec.SetProbe(lastMarker)
	events := func(from int) []string { return eventStrings(rec.Events()[from:]) }
	check := func(from int, want ...string) {
		t.Helper()
		if got := events(from); !slices.Equal(got, want) {
			t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	// A successful checkpoint: the first sync (of the state) returns before
	// the marker is readable.
	id1 := v.NextID()
	mustWrite(t, v, id1, put("q1/k", "a"))
	rec.Note("state written")
	if err := v.CommitMarker(mk, id1, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	rec.Note("committed")
	check(0,
		"note state written",
		"state sync 1 start [none]",
		"state sync 1 done [none]",
		fmt.Sprintf("state sync 2 start [%d=v1]", id1),
		fmt.Sprintf("state sync 2 done [%d=v1]", id1),
		"note committed",
	)

	// The sync of the state fails: error, no marker written.
	boom := errors.New("injected fsync failure")
	id2 := v.NextID()
	mustWrite(t, v, id2, put("q1/k", "b"))
	n := len(rec.Events())
	rec.FailNext(boom)
	if err := v.CommitMarker(mk, id2, []byte("v2")); !errors.Is(err, boom) {
		t.Fatalf("CommitMarker with a failing sync: %v", err)
	}
	check(n,
		fmt.Sprintf("state sync 3 start [%d=v1]", id1),
		fmt.Sprintf("state sync 3 failed [%d=v1]: %v", id1, boom),
	)
	if got := lastMarker(); got != fmt.Sprintf("%d=v1", id1) {
		t.Fatalf("LastMarker after a failed CommitMarker = %s", got)
	}
	wantGet(t, v, "q1/k", id1, "a")

	// The store is not poisoned: the same checkpoint can be retried.
	n = len(rec.Events())
	if err := v.CommitMarker(mk, id2, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	check(n,
		fmt.Sprintf("state sync 4 start [%d=v1]", id1),
		fmt.Sprintf("state sync 4 done [%d=v1]", id1),
		fmt.Sprintf("state sync 5 start [%d=v2]", id2),
		fmt.Sprintf("state sync 5 done [%d=v2]", id2),
	)

	// The sync of the marker fails: the caller gets the error. The marker is
	// committed by then (readable, maybe not durable); the caller must treat
	// the checkpoint as failed.
	id3 := v.NextID()
	mustWrite(t, v, id3, put("q1/k", "c"))
	started, release := rec.HoldNext()
	done := make(chan error, 1)
	go func() { done <- v.CommitMarker(mk, id3, []byte("v3")) }()
	<-started
	rec.FailNext(boom)
	release()
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("CommitMarker with a failing marker sync: %v", err)
	}
	if got := lastMarker(); got != fmt.Sprintf("%d=v3", id3) {
		t.Fatalf("LastMarker after a failed marker sync = %s", got)
	}
}

// TestSyncRecorder checks the recorder itself: numbering, notes, names,
// one-shot failures and holds.
func TestSyncRecorder(t *testing.T) {
	rec := &SyncRecorder{}
	calls := 0
	real := func() error { calls++; return nil }
	a, b := rec.WrapNamed("a")(real), rec.Wrap(real)
	boom := errors.New("boom")
	if err := a(); err != nil {
		t.Fatal(err)
	}
	rec.FailNext(boom)
	if err := b(); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	rec.Note("x")
	started, release := rec.HoldNext()
	done := make(chan error, 1)
	go func() { done <- b() }()
	<-started
	select {
	case <-done:
		t.Fatal("held sync returned")
	default:
	}
	release()
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a sync 1 start []", "a sync 1 done []",
		"sync 2 start []", "sync 2 failed []: boom",
		"note x",
		"sync 3 start []", "sync 3 done []",
	}
	if got := eventStrings(rec.Events()); !slices.Equal(got, want) {
		t.Fatalf("events %q", got)
	}
	if calls != 2 || rec.Count() != 3 {
		t.Fatalf("%d real syncs, %d counted", calls, rec.Count())
	}
}

// TestLogFaultPoints runs appends in a child process (this test binary)
// with an ingest fault point armed for the second group commit, and checks
// that the child died before answering it and what survived on disk.
func TestLogFaultPoints(t *testing.T) {
	if dir := os.Getenv("STREAMSQL_STATE_FAULT_DIR"); dir != "" {
		fault.ArmFromEnv() // as cmd/streamsql does at its start
		m, err := OpenMeta(dir, MetaOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.Log(1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := l.Append(context.Background(), rowsOf(fmt.Sprint(i)), ""); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("answered %d\n", i)
		}
		return
	}
	for _, c := range []struct {
		point   string
		minRows int64 // rows that must have survived
	}{
		{"ingest.after_write@2", 1}, // the second group is committed, not synced: either way
		{"ingest.after_sync@2", 2},  // the second group is synced
	} {
		t.Run(c.point, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestLogFaultPoints$", "-test.count=1")
			cmd.Env = append(os.Environ(), "STREAMSQL_FAULT="+c.point, "STREAMSQL_STATE_FAULT_DIR="+dir)
			out, err := cmd.Output()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Exited() {
				t.Fatalf("child was not killed: %v\n%s", err, out)
			}
			if got := string(out); got != "answered 0\n" {
				t.Fatalf("child answered %q", got)
			}
			m := openMeta(t, dir, MetaOptions{})
			l := openLogT(t, m, 1)
			if l.End() < c.minRows || l.End() > 2 {
				t.Fatalf("End after the crash = %d", l.End())
			}
		})
	}
}
