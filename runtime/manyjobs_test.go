package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/state"
)

// startSmallJobs starts n jobs of bidGraph (10 s tumbling windows, one
// task per stage) on store, each over the same few rows in memory, and
// returns them once each has completed a checkpoint over all the rows.
func startSmallJobs(t *testing.T, store state.Versioned, n int, rows []plan.Row) []*Job {
	t.Helper()
	jobs := make([]*Job, n)
	for i := range jobs {
		g := bidGraph(0, plan.WindowSpec{Kind: plan.Tumble, Size: 10_000, Slide: 10_000}, plan.EmitChanges, 1)
		g.Options.CheckpointInterval, g.Options.EmitInterval = 1000, 200
		g.Vertices[0].Ops[0].(*plan.Source).Engine = "mem"
		deps := Deps{Store: store, Reader: func(_ *plan.Source, at SourcePosition, _ []bool) (Reader, error) {
			return &memReader{rows: rows, off: at.Offset, ready: make(chan struct{})}, nil
		}}
		qid := uint64(100 + i)
		job, err := Start(g, deps, StartOptions{QueryID: qid, Name: fmt.Sprint("q", i), Results: NewResults(store, qid)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { job.Stop() })
		jobs[i] = job
	}
	checkpointAll(t, jobs)
	for _, j := range jobs {
		if st := j.Status(); st.RowsIn != int64(len(rows)) || st.LastCheckpoint == 0 {
			t.Fatalf("%s: %+v", j.Name, st)
		}
	}
	return jobs
}

// checkpointAll takes a checkpoint of every job at once.
func checkpointAll(t *testing.T, jobs []*Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { _, errs[i] = j.Checkpoint(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: checkpoint: %v", jobs[i].Name, err)
		}
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestSmallJobsMemory: a query with a handful of groups costs little
// memory. Many of them, each with its latest results, operator state and
// change log, checkpointed, add at most maxPerJob bytes of heap each (it
// was over 1.4 MiB: a 1 MiB first chunk of the results table, a 320 KiB
// snapshot block held by the results sink, a 1,024-ack queue).
func TestSmallJobsMemory(t *testing.T) {
	const n, maxPerJob = 100, 96 << 10
	rows := bidRows(2000)[:20]
	store := state.NewMemVersioned()
	before := liveHeap()
	jobs := startSmallJobs(t, store, n, rows)
	per := (liveHeap() - before) / n
	t.Logf("%d jobs: %d bytes of heap each", n, per)
	if per > maxPerJob {
		t.Errorf("each small job holds %d bytes of heap, more than %d", per, maxPerJob)
	}
	goruntime.KeepAlive(jobs)
}

// TestManyJobsCheckpointTogether: many small queries on the Badger store,
// checkpointed at once, all complete their checkpoints, and their markers
// share syncs (group commit): fewer than two syncs per checkpoint, where
// each marker took two of its own.
func TestManyJobsCheckpointTogether(t *testing.T) {
	const n = 200
	rec := &state.SyncRecorder{}
	store, err := state.OpenVersionedWith(t.TempDir(), state.VersionedOptions{WrapSync: rec.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() }) // after the jobs stop (cleanups run last first)
	jobs := startSmallJobs(t, store, n, bidRows(2000)[:20])
	before := make([]uint64, n)
	for i, j := range jobs {
		before[i] = j.Status().LastCheckpoint
	}
	syncs := rec.Count()
	checkpointAll(t, jobs)
	syncs = rec.Count() - syncs
	for i, j := range jobs {
		if after := j.Status().LastCheckpoint; after <= before[i] {
			t.Fatalf("%s: last checkpoint %d, was %d", j.Name, after, before[i])
		}
	}
	t.Logf("%d checkpoints: %d syncs", n, syncs)
	if syncs >= 3*n/2 {
		t.Errorf("%d checkpoints took %d syncs: their markers were not committed together", n, syncs)
	}
}
