package runtime

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/state"
)

// faultStore wraps a Versioned store and fails writes or marker commits on
// demand, recording what reached the store.
type faultStore struct {
	state.Versioned
	failWrite, failMarker atomic.Bool
	// full: every write, marker and repair is refused as the disk-space
	// guard refuses them.
	full    atomic.Bool
	markers atomic.Int64
}

var errInjected = errors.New("injected fault")

var errFull = &state.DiskFullError{Dir: "/data/state", Free: 1 << 20, Need: 4 << 10, Keep: 8 << 20}

func (f *faultStore) Write(id uint64, kvs []state.KV) error {
	if f.full.Load() {
		return errFull
	}
	if f.failWrite.Load() {
		return errInjected
	}
	return f.Versioned.Write(id, kvs)
}

func (f *faultStore) CommitMarker(k []byte, id uint64, v []byte) error {
	if f.full.Load() {
		return errFull
	}
	if f.failMarker.Load() {
		// The sync before the marker failed: no marker is written.
		return errInjected
	}
	f.markers.Add(1)
	return f.Versioned.CommitMarker(k, id, v)
}

func (f *faultStore) Repair(prefix []byte, at uint64) (uint64, error) {
	if f.full.Load() {
		return 0, errFull
	}
	return f.Versioned.Repair(prefix, at)
}

// TestFailedCheckpointsGoOn: a checkpoint whose state write fails, or whose
// marker (its sync) fails, is reported failed and leaves the committed
// results where they were; the query keeps running, the next checkpoint
// succeeds and carries what the failed one could not write, so a restart
// from it equals a naive evaluation.
func TestFailedCheckpointsGoOn(t *testing.T) {
	const events = 12000
	win := plan.WindowSpec{Kind: plan.Session, Gap: 40}
	want := naive(events, win)
	all := bidRows(events)
	n := len(all)
	fs := &faultStore{Versioned: state.NewMemVersioned()}
	start := func(par int) (*Job, *memReader, *Results) {
		g := bidGraph(events, win, plan.EmitChanges, par)
		// Only the checkpoints taken here: a periodic one between them
		// would commit while no fault is armed, or fail while one is.
		g.Options.CheckpointInterval = 3_600_000
		job, res, rd := startMem(t, fs, g)
		return job, rd, res
	}
	ctx := context.Background()
	job, rd, res := start(2)
	rd.add(all[:n/4]...)
	first, err := job.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := res.Rows(true)

	fs.failWrite.Store(true)
	rd.add(all[n/4 : n/2]...)
	if _, err := job.Checkpoint(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("checkpoint with failing writes: err %v", err)
	}
	fs.failWrite.Store(false)
	fs.failMarker.Store(true)
	rd.add(all[n/2 : 3*n/4]...)
	if _, err := job.Checkpoint(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("checkpoint with failing marker: err %v", err)
	}
	if res.Committed() != first {
		t.Fatalf("committed moved to %d after failed checkpoints, want %d", res.Committed(), first)
	}
	if after, _ := res.Rows(true); len(after) != len(before) {
		t.Fatalf("committed results changed after failed checkpoints: %d rows, had %d", len(after), len(before))
	}
	fs.failMarker.Store(false)
	if _, err := job.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint after the faults: %v", err)
	}
	statuses := ""
	for _, h := range job.History() {
		statuses += h.Status[:1]
	}
	if statuses != "cffc" {
		t.Fatalf("history %q, want completed, failed, failed, completed", statuses)
	}
	job.Stop()

	// Restart at another parallelism from the last checkpoint and finish.
	job, rd, res = start(1)
	defer job.Stop()
	rd.add(all...) // the reader starts at the restored offset
	if _, err := job.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	checkNaive(t, res, want)
	if st := job.Status(); st.RowsIn != int64(n) {
		t.Fatalf("rows_in %d, want %d", st.RowsIn, n)
	}
}

// TestDiskFullRetrying: checkpoints refused for lack of disk space fail
// with the error and the query reports retrying (not failed) until one
// completes; a restart whose repair is refused retries it, reporting
// retrying, and recovers once space is back. Results equal a naive
// evaluation at the end.
func TestDiskFullRetrying(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const events = 6000
		win := plan.WindowSpec{Kind: plan.Tumble, Size: 50, Slide: 50}
		want := naive(events, win)
		all := bidRows(events)
		n := len(all)
		fs := &faultStore{Versioned: state.NewMemVersioned()}
		start := func() (*Job, *memReader, *Results) {
			job, res, rd := startMem(t, fs, bidGraph(events, win, plan.EmitChanges, 2))
			return job, rd, res
		}
		ctx := context.Background()
		job, rd, _ := start()
		rd.add(all[:n/3]...)
		if _, err := job.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}

		fs.full.Store(true)
		rd.add(all[n/3 : n/2]...)
		if _, err := job.Checkpoint(ctx); !state.IsDiskFull(err) {
			t.Fatalf("checkpoint on a full disk: %v", err)
		}
		st := job.Status()
		if st.State != StateRetrying || st.Err == nil || !strings.Contains(st.Err.Error(), "disk full") {
			t.Fatalf("on a full disk: state %q, error %v; want retrying with the disk-full error", st.State, st.Err)
		}
		if h := job.History(); h[len(h)-1].Status != "failed" || !strings.Contains(h[len(h)-1].Error, "disk full") {
			t.Fatalf("history %+v", h[len(h)-1])
		}
		fs.full.Store(false)
		if _, err := job.Checkpoint(ctx); err != nil {
			t.Fatalf("checkpoint once space is back: %v", err)
		}
		if st := job.Status(); st.State != StateRunning {
			t.Fatalf("state %q once a checkpoint completed", st.State)
		}
		// A checkpoint whose writes landed but whose marker did not: the
		// restart must repair them.
		rd.add(all[n/2 : 2*n/3]...)
		fs.failMarker.Store(true)
		if _, err := job.Checkpoint(ctx); !errors.Is(err, errInjected) {
			t.Fatalf("checkpoint with a failing marker: %v", err)
		}
		fs.failMarker.Store(false)
		job.Stop()

		fs.full.Store(true)
		job, rd, res := start()
		defer job.Stop()
		synctest.Wait()
		if st := job.Status(); st.State != StateRetrying || !state.IsDiskFull(st.Err) {
			t.Fatalf("restart on a full disk: state %q, error %v; want retrying", st.State, st.Err)
		}
		time.Sleep(time.Minute) // fake time: recovery keeps retrying
		synctest.Wait()
		if st := job.Status(); st.State != StateRetrying {
			t.Fatalf("restart on a full disk, a minute later: state %q, error %v", st.State, st.Err)
		}
		fs.full.Store(false)
		time.Sleep(10 * time.Second) // past the longest backoff
		synctest.Wait()
		if st := job.Status(); st.State != StateRunning {
			t.Fatalf("once space is back: state %q, error %v", st.State, st.Err)
		}
		rd.add(all...)
		if _, err := job.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		checkNaive(t, res, want)
	})
}
