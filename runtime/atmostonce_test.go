package runtime

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// amoRun is one run of an at_most_once results query in miniature: one
// source (vertex 0, subtask 0, table t) whose cuts are noted as a source
// task notes them, and two results sink subtasks sharing the query's
// amoLog, each with its gate, over one Results whose change log is read.
type amoRun struct {
	t     *testing.T
	kv    memCatalog
	amo   *amoLog
	cuts  *cutTable
	res   *Results
	sub   *Subscription
	sinks [2]sinkWriter
	epoch uint64
}

const amoQID = 41

func startAMORun(t *testing.T, kv memCatalog, upsert bool, start int64) *amoRun {
	t.Helper()
	r := &amoRun{t: t, kv: kv, cuts: newCutTable()}
	r.amo = &amoLog{kv: kv, key: AtMostOnceKey(amoQID), cuts: r.cuts}
	if err := r.amo.load(); err != nil {
		t.Fatal(err)
	}
	store := state.NewMemVersioned()
	r.res = NewResults(store, amoQID)
	r.res.setWidth(1)
	if upsert {
		r.res.shard(2, plan.KeyGroup)
	} else {
		r.res.setAppendOnly()
	}
	for i := range r.sinks {
		g := &resultsGate{g: r.amo.gate()}
		if upsert {
			s := newUpsertResults(r.res, store, amoQID, plan.KeyGroup, i, 2, &op.Counters{})
			s.gate = g
			r.sinks[i] = s
		} else {
			s := newAppendResults(r.res, store, amoQID, i, 2, &op.Counters{})
			s.gate = g
			r.sinks[i] = s
		}
	}
	var err error
	if r.sub, _, err = r.res.Subscribe(0, false, false); err != nil {
		t.Fatal(err)
	}
	r.cuts.note(0, 0, 0, map[string]int64{"t": start}) // the restored position
	return r
}

// amoKey is the key of row off: an append-only row's id (its offset), or
// a group key owned by sink subtask off%2 (resultOwner).
func amoKey(off int64, upsert bool) string {
	if !upsert {
		return string(value.AppendValue(nil, plan.Int(off)))
	}
	for g := int64(0); ; g++ {
		k := string(value.AppendValue(nil, plan.Int(off*1000+g)))
		if resultOwner(k, plan.KeyGroup, 2) == int(off%2) {
			return k
		}
	}
}

// rows hands the rows at offsets [from, to) to their sink subtask (off%2),
// as a producer would between two barriers; only to the subtasks named,
// when some are.
func (r *amoRun) rows(from, to int64, upsert bool, subtasks ...int) {
	r.t.Helper()
	for off := from; off < to; off++ {
		if len(subtasks) > 0 && !slices.Contains(subtasks, int(off%2)) {
			continue
		}
		b := &op.Batch{}
		m := op.RowMeta{Offset: off, Op: op.Insert}
		if upsert {
			m.Key, m.Op = amoKey(off, true), op.Upsert
		}
		b.Append(plan.Row{plan.Int(off)}, m)
		if err := r.sinks[off%2].Emit(b); err != nil {
			r.t.Fatal(err)
		}
	}
}

// cut notes the next barrier's cut (the source at offset at), as the
// source task does before it forwards the barrier.
func (r *amoRun) cut(at int64) uint64 {
	r.epoch++
	r.cuts.note(r.epoch, 0, 0, map[string]int64{"t": at})
	return r.epoch
}

// pass runs barrier epoch through the sink subtasks named.
func (r *amoRun) pass(epoch uint64, subtasks ...int) {
	r.t.Helper()
	for _, i := range subtasks {
		if err := r.sinks[i].Barrier(op.Barrier{Epoch: epoch}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// published is the offsets of the rows the change log got since the last
// call, in order.
func (r *amoRun) published() []int64 {
	r.t.Helper()
	var out []int64
	for {
		recs, err := r.sub.Next(context.Background(), 1000, 0)
		if err != nil {
			r.t.Fatal(err)
		}
		if len(recs) == 0 {
			return out
		}
		for _, rec := range recs {
			if rec.Kind != ChangeUpsert {
				continue
			}
			row, err := value.DecodeRow(rec.Row)
			if err != nil {
				r.t.Fatal(err)
			}
			out = append(out, row[0].I)
		}
	}
}

// recorded is the cut the catalog holds for the query.
func (r *amoRun) recorded() map[string]int64 {
	r.t.Helper()
	var c map[string]int64
	if v, ok := r.kv[AtMostOnceKey(amoQID)]; ok {
		if err := json.Unmarshal(v, &c); err != nil {
			r.t.Fatal(err)
		}
	}
	return c
}

func offsets(from, to int64, subtask int64) []int64 {
	var out []int64
	for off := from; off < to; off++ {
		if subtask < 0 || off%2 == subtask {
			out = append(out, off)
		}
	}
	return out
}

// TestAtMostOnceResults: two results sink subtasks (append-only, then
// upsert) share one query's at_most_once record. Run 1 publishes and
// records each barrier's cut before it publishes, the record only
// growing; it crashes with its checkpoint at offset 10 and offset 30
// recorded. Run 2 replays from 10: each subtask drops its batches that
// start below 30 (counted: skipped_changes), including a batch of
// subtask 1 that comes after subtask 0 has passed the cut and recorded a
// later one; the first batch of each that starts at 30 is published,
// and what the change log got over both runs has no row twice.
func TestAtMostOnceResults(t *testing.T) {
	for _, upsert := range []bool{false, true} {
		t.Run(map[bool]string{false: "append", true: "upsert"}[upsert], func(t *testing.T) {
			kv := memCatalog{}
			key := "0/0/t"
			// Run 1: from the start.
			r := startAMORun(t, kv, upsert, 0)
			r.rows(0, 10, upsert)
			e1 := r.cut(10)
			r.pass(e1, 0, 1)
			if got := r.recorded(); !maps.Equal(got, map[string]int64{key: 10}) {
				t.Fatalf("run 1, barrier 1: recorded %v, want %s=10", got, key)
			}
			e2, e3 := r.cut(20), r.cut(30)
			// Subtask 1 is behind: subtask 0 passes barrier 3 first.
			r.rows(10, 20, upsert, 0)
			r.pass(e2, 0)
			r.rows(20, 30, upsert, 0)
			r.pass(e3, 0)
			if got := r.recorded(); !maps.Equal(got, map[string]int64{key: 30}) {
				t.Fatalf("run 1, barrier 3 of subtask 0: recorded %v, want %s=30", got, key)
			}
			r.rows(10, 20, upsert, 1)
			r.pass(e2, 1) // covered: nothing recorded, the record does not go back
			if got := r.recorded(); !maps.Equal(got, map[string]int64{key: 30}) {
				t.Fatalf("run 1, barrier 2 of subtask 1 after barrier 3 of subtask 0: recorded %v, want %s=30 (it only grows)", got, key)
			}
			r.rows(20, 30, upsert, 1)
			r.pass(e3, 1)
			seen := r.published()
			if want := offsets(0, 30, -1); !sameSet(seen, want) {
				t.Fatalf("run 1 published %v, want %v", seen, want)
			}
			r.rows(30, 36, upsert) // not published: the crash comes first
			if r.amo.skipped.Load() != 0 {
				t.Fatalf("run 1 skipped %d changes", r.amo.skipped.Load())
			}

			// Run 2: restored at offset 10 (its checkpoint), the record at 30.
			r = startAMORun(t, kv, upsert, 10)
			if !r.amo.replaying() {
				t.Fatal("run 2 does not see the recorded cut")
			}
			if h, ok := r.cuts.hold(0, 0, "t"); !ok || h != 30 {
				t.Fatalf("run 2: the source holds at %d (%v), want 30", h, ok)
			}
			skipped := int64(0)
			r.rows(10, 18, upsert)
			e1 = r.cut(18)
			r.pass(e1, 0, 1) // from 10: both skip
			skipped += 8
			e2, e3 = r.cut(30), r.cut(40) // the source held at 30
			// Subtask 0 skips (18..30), then passes the cut (30..40) and
			// records 40, while subtask 1 is still behind.
			r.rows(18, 30, upsert, 0)
			r.pass(e2, 0)
			skipped += int64(len(offsets(18, 30, 0)))
			if got := r.amo.skipped.Load(); got != skipped {
				t.Fatalf("run 2: %d skipped, want %d", got, skipped)
			}
			r.rows(30, 40, upsert, 0)
			r.pass(e3, 0)
			if got := r.recorded(); !maps.Equal(got, map[string]int64{key: 40}) {
				t.Fatalf("run 2, barrier 3 of subtask 0: recorded %v, want %s=40", got, key)
			}
			// Subtask 1's batch from 18 still starts below the last run's
			// cut: dropped, although subtask 0 no longer skips.
			r.rows(18, 30, upsert, 1)
			r.pass(e2, 1)
			skipped += int64(len(offsets(18, 30, 1)))
			r.rows(30, 40, upsert, 1)
			r.pass(e3, 1)
			if got := r.amo.skipped.Load(); got != skipped {
				t.Fatalf("run 2: %d skipped, want %d (every replayed row below offset 30)", got, skipped)
			}
			again := r.published()
			if want := offsets(30, 40, -1); !sameSet(again, want) {
				t.Fatalf("run 2 published %v, want %v: the rows from offset 30 on, nothing below", again, want)
			}
			// The latest results have them, and none of the dropped ones.
			rows, err := r.res.Rows(false)
			if err != nil {
				t.Fatal(err)
			}
			var latest []int64
			for _, row := range rows {
				latest = append(latest, row[0].I)
			}
			if want := offsets(30, 40, -1); !sameSet(latest, want) {
				t.Fatalf("run 2 latest rows %v, want %v", latest, want)
			}
			// Over both runs: no row published twice; lost: 30..35, in
			// flight at the crash, and published again from 30 on by the
			// replay (30..35 were never published before the crash).
			all := append(seen, again...)
			slices.Sort(all)
			if d := slices.Compact(slices.Clone(all)); len(d) != len(all) {
				t.Fatalf("a row published twice: %v", all)
			}
			// Later barriers: nothing more is skipped, each batch covered
			// by the record grown at the barrier.
			r.rows(40, 44, upsert)
			e4 := r.cut(44)
			r.pass(e4, 0, 1)
			if got := r.amo.skipped.Load(); got != skipped {
				t.Fatalf("after the cut: %d skipped, want still %d", got, skipped)
			}
			if got := r.published(); !sameSet(got, offsets(40, 44, -1)) {
				t.Fatalf("barrier 4 published %v", got)
			}
			if got := r.recorded(); !maps.Equal(got, map[string]int64{key: 44}) {
				t.Fatalf("barrier 4: recorded %v, want %s=44", got, key)
			}
		})
	}
}

func sameSet(a, b []int64) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestAtMostOnceAppendDrop: dropping an append-only sink's unpublished
// rows keeps every published record and the blocks' bytes as they were
// (the latest view shares them), also when the block holding the
// published end was closed since; the checkpoint then writes exactly the
// published rows.
func TestAtMostOnceAppendDrop(t *testing.T) {
	store := state.NewMemVersioned()
	res := NewResults(store, amoQID)
	res.setWidth(1)
	res.setAppendOnly()
	s := newAppendResults(res, store, amoQID, 0, 1, &op.Counters{})
	s.blocks.target = 64 // a few rows per block
	s.gate = &resultsGate{g: &amoGate{l: &amoLog{cuts: newCutTable()}}}
	emit := func(from, to int64) {
		for off := from; off < to; off++ {
			b := &op.Batch{}
			b.Append(plan.Row{plan.Int(off)}, op.RowMeta{Offset: off})
			if err := s.Emit(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want []int64
	for round, c := range []struct {
		from, to int64
		keep     bool
	}{{0, 3, true}, {3, 20, false}, {20, 22, true}, {22, 23, false}, {23, 40, true}, {40, 41, false}} {
		emit(c.from, c.to)
		if c.keep {
			s.publish()
			want = append(want, offsets(c.from, c.to, -1)...)
		} else {
			s.drop()
		}
		rows, err := res.Rows(false)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, r := range rows {
			got = append(got, r[0].I)
		}
		if !sameSet(got, want) {
			t.Fatalf("round %d: latest %v, want %v", round, got, want)
		}
	}
	var stored []int64
	for _, kv := range s.snapshot(1).kvs {
		if err := decodeBlock(kv.Value, func(_ []byte, row plan.Row) error { stored = append(stored, row[0].I); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if !sameSet(stored, want) {
		t.Fatalf("the checkpoint writes %v, want %v", stored, want)
	}
}
