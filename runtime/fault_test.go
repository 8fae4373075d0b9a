package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/state"
)

// faultStore wraps a Versioned store and fails writes or marker commits on
// demand, recording what reached the store.
type faultStore struct {
	state.Versioned
	failWrite, failMarker atomic.Bool
	markers               atomic.Int64
}

var errInjected = errors.New("injected fault")

func (f *faultStore) Write(id uint64, kvs []state.KV) error {
	if f.failWrite.Load() {
		return errInjected
	}
	return f.Versioned.Write(id, kvs)
}

func (f *faultStore) CommitMarker(k []byte, id uint64, v []byte) error {
	if f.failMarker.Load() {
		// The sync before the marker failed: no marker is written.
		return errInjected
	}
	f.markers.Add(1)
	return f.Versioned.CommitMarker(k, id, v)
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
	g0 := nexmark.New(nexmark.Config{})
	n := int(nexmark.Count(nexmark.Bid, events))
	all := make([]plan.Row, n)
	for i := range all {
		all[i] = g0.Fill(nexmark.Bid, uint64(i), nil, nil)
	}
	fs := &faultStore{Versioned: state.NewMemVersioned()}
	start := func(par int) (*Job, *memReader, *Results) {
		g := bidGraph(events, win, plan.EmitChanges, par)
		g.Vertices[0].Ops[0].(*plan.Source).Engine = "mem"
		var rd *memReader
		deps := Deps{Store: fs, openReader: func(_ *plan.Source, from int64) (reader, error) {
			rd = &memReader{ready: make(chan struct{}), off: from}
			return rd, nil
		}}
		res := NewResults(fs, 5)
		job, err := Start(g, deps, StartOptions{QueryID: 5, Name: "t", Results: res})
		if err != nil {
			t.Fatal(err)
		}
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
