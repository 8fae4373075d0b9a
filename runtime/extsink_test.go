package runtime

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/runtime/sink"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// TestCommitterReserve: a sink subtask's journal is counted pending only
// once it fits the bounds, so pending epochs and bytes never pass them; it
// waits while the committer can make room (an epoch at or below the last
// marker is pending) and goes over the bound only when waiting could never
// end: nothing committable pending (epochs of failed checkpoints), or an
// epoch larger than the bound on its own.
func TestCommitterReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &committer{limits: SinkLimits{MaxPendingEpochs: 3, MaxPendingBytes: 100}, ext: &plan.ExternalSink{Table: "out", ExactlyOnce: true}, pending: map[uint64]int64{}, changed: make(chan struct{})}
		ctx := context.Background()
		pending := func() (int, int64) {
			m := c.metrics(time.Now())
			return m.PendingEpochs, m.PendingBytes
		}
		// reserve runs in the background; done reports whether it returned.
		reserve := func(epoch uint64, n int64) func() bool {
			ch := make(chan struct{})
			go func() {
				if err := c.reserve(ctx, epoch, n); err != nil {
					t.Error(err)
				}
				close(ch)
			}()
			synctest.Wait()
			return func() bool {
				synctest.Wait()
				select {
				case <-ch:
					return true
				default:
					return false
				}
			}
		}
		c.marker.Store(2)
		if !reserve(1, 60)() || !reserve(2, 30)() {
			t.Fatal("room for 90 of 100 bytes")
		}
		third := reserve(3, 30)
		if third() {
			t.Fatal("120 of 100 bytes with epochs 1 and 2 committable: must wait")
		}
		if e, b := pending(); e != 2 || b != 90 {
			t.Fatalf("pending %d epochs %d bytes while waiting", e, b)
		}
		c.setCommitted(1, nil)
		if !third() {
			t.Fatal("epoch 1 committed: room for epoch 3")
		}
		if e, b := pending(); e != 2 || b != 60 {
			t.Fatalf("pending %d epochs %d bytes", e, b)
		}
		// A second subtask's part of epoch 3 fits the same epoch.
		if !reserve(3, 10)() {
			t.Fatal("70 of 100 bytes")
		}
		// The epoch bound: three pending, a fourth waits.
		c.marker.Store(3)
		if !reserve(4, 5)() {
			t.Fatal("75 bytes in 3 epochs")
		}
		fifth := reserve(5, 1)
		if fifth() {
			t.Fatal("a fourth pending epoch past the bound of 3")
		}
		c.setCommitted(3, nil)
		if !fifth() {
			t.Fatal("epochs 2 and 3 committed: room")
		}
		// Only epochs above the marker pending (their checkpoints failed):
		// no wait, even past the bound.
		c.setCommitted(5, nil)
		if !reserve(6, 80)() || !reserve(7, 80)() {
			t.Fatal("epochs above the marker cannot be committed before this checkpoint completes: no wait")
		}
		// An epoch larger than the bound goes in once nothing is pending.
		c.setCommitted(7, nil)
		if !reserve(8, 500)() {
			t.Fatal("an oversize epoch with nothing pending")
		}
	})
}

// memCatalog is the meta store's catalog (MetaKV) for the sink WAL, in memory.
type memCatalog map[string][]byte

func (m memCatalog) PutCatalog(key string, val []byte) error { m[key] = val; return nil }
func (m memCatalog) DeleteCatalogKeys(keys []string) error {
	for _, k := range keys {
		delete(m, k)
	}
	return nil
}
func (m memCatalog) ListCatalog(prefix string) ([]state.KV, error) {
	var kvs []state.KV
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			kvs = append(kvs, state.KV{Key: []byte(k), Value: v})
		}
	}
	sort.Slice(kvs, func(i, j int) bool { return string(kvs[i].Key) < string(kvs[j].Key) })
	return kvs, nil
}

// gatedPublisher applies changes only when its gate lets it.
type gatedPublisher struct {
	gate    chan struct{}
	applied [][]sink.Change
}

func (p *gatedPublisher) Open(context.Context) error                { return nil }
func (p *gatedPublisher) Committed(context.Context) (uint64, error) { return 0, nil }
func (p *gatedPublisher) CommitEpoch(context.Context, uint64, []sink.Change) error {
	return errors.New("at_least_once")
}
func (p *gatedPublisher) Close() {}
func (p *gatedPublisher) Apply(ctx context.Context, changes []sink.Change) error {
	select {
	case <-p.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.applied = append(p.applied, changes)
	return nil
}

// TestUndoBeforeCheckpoint: after a restart, an at_least_once sink's
// first checkpoint does not complete before the keys the last run wrote
// after the restored checkpoint are deleted, even when nothing new was
// handed over. Otherwise a crash after that checkpoint and before the
// undo restarts from it, and the undo, which reads the WAL from the
// restored checkpoint on, never deletes those keys: stale rows (the
// torture harness found them: sessions merged away, groups that left
// HAVING).
func TestUndoBeforeCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ext := &plan.ExternalSink{Table: "out", PrimaryKey: []int{0}, KeyValues: []int{0}}
		pub := &gatedPublisher{gate: make(chan struct{})}
		cat := memCatalog{}
		key := string(value.AppendValue(nil, plan.Int(7)))
		// The last run restored checkpoint 5 and wrote key 7 after it.
		if err := (&sinkWAL{kv: cat, prefix: SinkWALPrefix(1)}).put(5, []string{key}); err != nil {
			t.Fatal(err)
		}
		c := &committer{pub: pub, ext: ext, restored: 5, wal: &sinkWAL{kv: cat, prefix: SinkWALPrefix(1)},
			poke: make(chan struct{}, 1), batches: make(chan alBatch, alBatches), pending: map[uint64]int64{},
			changed: make(chan struct{}), undone: make(chan struct{}), logger: slog.New(slog.DiscardHandler)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go c.run(ctx)
		s := &journalWriter{c: c, ext: ext, ctx: ctx, prev: 5}
		done := make(chan error, 1)
		go func() { done <- s.awaitRoom(ctx, op.Barrier{CheckpointID: 8}) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("checkpoint 8 passed the sink (%v) before the undo was applied", err)
		default:
		}
		close(pub.gate)
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(pub.applied) != 1 || len(pub.applied[0]) != 1 || pub.applied[0][0].Row != nil || pub.applied[0][0].Key[0] != plan.Int(7) {
			t.Fatalf("applied %v, want the delete of key 7", pub.applied)
		}
	})
}

// TestRestoredCheckpointAfterRepair: a marker a repair rewrote at a newer
// id names the checkpoint whose state it holds; the at_least_once key log
// compares with that one (the torture harness found stale rows when a run
// that started after a repair was killed: its batches, tagged with the
// repaired checkpoint, were older than the rewritten marker and not
// undone).
func TestRestoredCheckpointAfterRepair(t *testing.T) {
	for _, c := range []struct {
		id   uint64
		m    markerValue
		want uint64
	}{
		{0, markerValue{}, 0},
		{7920, markerValue{ID: 7920}, 7920},
		{7944, markerValue{ID: 7920}, 7920}, // rewritten by a repair
		{7944, markerValue{}, 7944},         // a marker without its id
	} {
		if got := restoredCheckpoint(c.id, c.m); got != c.want {
			t.Errorf("restoredCheckpoint(%d, id %d) = %d, want %d", c.id, c.m.ID, got, c.want)
		}
	}
}

// flakyPublisher fails the Apply calls its fail count says, after
// recording them, as a write that broke part-way would.
type flakyPublisher struct {
	gatedPublisher
	fail     int
	attempts [][]sink.Change
}

func (p *flakyPublisher) Apply(ctx context.Context, changes []sink.Change) error {
	p.attempts = append(p.attempts, changes)
	if p.fail > 0 {
		p.fail--
		return errors.New("connection reset in the middle of the write")
	}
	p.applied = append(p.applied, changes)
	return nil
}

// TestAtMostOnceFailedWriteDropped: an at_most_once batch whose write
// failed is not written again (the failed write may have written part of
// it); it is counted as dropped, and the next batch is written.
func TestAtMostOnceFailedWriteDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ext := &plan.ExternalSink{Table: "out", PrimaryKey: []int{0}, KeyValues: []int{0}, AtMostOnce: true}
		pub := &flakyPublisher{fail: 1}
		cuts := newCutTable()
		amo := &amoLog{kv: memCatalog{}, key: AtMostOnceKey(1), cuts: cuts}
		if err := amo.load(); err != nil {
			t.Fatal(err)
		}
		c := &committer{pub: pub, ext: ext, amo: amo,
			poke: make(chan struct{}, 1), batches: make(chan alBatch, alBatches), pending: map[uint64]int64{},
			changed: make(chan struct{}), undone: make(chan struct{}), logger: slog.New(slog.DiscardHandler)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go c.run(ctx)
		for e := range uint64(3) {
			cuts.note(e, 0, 0, map[string]int64{"t": int64(10 * e)})
		}
		change := func(k int64) []sink.Change {
			return []sink.Change{{Key: plan.Row{plan.Int(k)}, Row: plan.Row{plan.Int(k)}}}
		}
		for i, e := range []uint64{1, 2} {
			done, err := c.enqueue(ctx, alBatch{changes: change(int64(i)), from: e - 1, to: e})
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			time.Sleep(time.Minute) // past every backoff
			synctest.Wait()
			select {
			case <-done:
			default:
				t.Fatalf("batch %d not done", i)
			}
		}
		if len(pub.attempts) != 2 || len(pub.applied) != 1 || pub.applied[0][0].Key[0] != plan.Int(1) {
			t.Fatalf("attempts %v, applied %v: want the failed batch tried once, the next one written", pub.attempts, pub.applied)
		}
		if n := amo.dropped.Load(); n != 1 {
			t.Fatalf("dropped %d, want 1", n)
		}
		if st := c.status(); st.DroppedChanges != 1 {
			t.Fatalf("status %+v, want dropped_changes 1", st)
		}
	})
}
