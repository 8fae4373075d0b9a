package runtime

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
)

// testRow is a result row with values of every kind, some long enough
// that a record is larger than a small block target.
func testRow(i int) plan.Row {
	return plan.Row{plan.Int(int64(i)), plan.Str(strings.Repeat("x", i%40)), plan.Float(float64(i) / 3),
		plan.Time(int64(1000 * i)), plan.Bool(i%2 == 0), plan.Null}
}

// TestBlockRoundTrip: rows encoded into blocks decode to the same keys and
// rows in the same order; blocks are closed as soon as they reach the
// target, so no record spans two blocks.
func TestBlockRoundTrip(t *testing.T) {
	const target = 200
	b := blockBuilder{target: target}
	var keys []string
	var rows []plan.Row
	for i := range 100 {
		k := string(value.AppendValue(nil, plan.Int(int64(i))))
		if i%7 == 0 {
			k = fmt.Sprintf("join-id-%d", i) // a RowMeta.ID
		}
		keys, rows = append(keys, k), append(rows, testRow(i))
		b.add(k, rows[i])
	}
	blocks := b.take()
	if len(blocks) < 2 {
		t.Fatalf("%d blocks, want several (target %d)", len(blocks), target)
	}
	var gotKeys []string
	var gotRows []plan.Row
	for i, blk := range blocks {
		n, last := 0, 0
		err := decodeBlock(blk, func(key []byte, row plan.Row) error {
			gotKeys, gotRows = append(gotKeys, string(key)), append(gotRows, row)
			n++
			return nil
		})
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		// The block without its last record was below the target.
		last = len(blk) - recordLen(keys[len(gotKeys)-1], gotRows[len(gotRows)-1])
		if i < len(blocks)-1 && (len(blk) < target || last >= target) {
			t.Fatalf("block %d: %d bytes (%d before its last record), target %d", i, len(blk), last, target)
		}
		if n == 0 {
			t.Fatalf("block %d is empty", i)
		}
	}
	if !slices.Equal(gotKeys, keys) || !reflect.DeepEqual(gotRows, rows) {
		t.Fatalf("round trip differs:\n got %q\nwant %q", gotKeys, keys)
	}
	if again := b.take(); len(again) != 0 {
		t.Fatalf("take after take: %d blocks", len(again))
	}
	// A cut block is an error, not a short read.
	if err := decodeBlock(blocks[0][:len(blocks[0])-1], func([]byte, plan.Row) error { return nil }); err == nil {
		t.Fatal("truncated block decoded without error")
	}
}

func recordLen(key string, row plan.Row) int {
	enc := value.AppendRow(nil, row)
	return op.UvarintLen(len(key)) + len(key) + op.UvarintLen(len(enc)) + len(enc)
}

// partialStore writes the first entry of a write, then fails it, when
// failNext is set: a write that broke off half way.
type partialStore struct {
	state.Versioned
	failNext bool
}

func (p *partialStore) Write(id uint64, kvs []state.KV) error {
	if p.failNext {
		p.failNext = false
		if err := p.Versioned.Write(id, kvs[:1]); err != nil {
			return err
		}
		return errInjected
	}
	return p.Versioned.Write(id, kvs)
}

// TestAppendOnlyResults: two sinks of one append-only query write blocks at
// checkpoints; committed reads see exactly the rows of completed
// checkpoints (not those written at a checkpoint without its marker yet),
// latest reads add the rows published since, both in key order; a failed
// write is carried by the next checkpoint without storing a row twice; a
// stopped query's results read the same from the store alone.
func TestAppendOnlyResults(t *testing.T) {
	const qid = 11
	store := &partialStore{Versioned: state.NewMemVersioned()}
	res := NewResults(store, qid)
	res.setAppendOnly()
	var sinks [2]*appendResults
	for i := range sinks {
		sinks[i] = newAppendResults(res, store, qid, i, len(sinks), &op.Counters{})
		sinks[i].blocks.target = 300 // several blocks per checkpoint
	}
	var all []keyedTestRow // every row emitted
	next := 0
	emit := func(n int) {
		for range n {
			i := next
			next++
			b := &op.Batch{}
			m := op.RowMeta{Offset: int64(1000 - i)} // keys out of emit order
			if i%5 == 0 {
				// A join's row id: (left offset, right offset).
				m.ID = string(value.AppendValue(value.AppendValue(nil, plan.Int(int64(i))), plan.Int(int64(-i))))
			}
			b.Append(testRow(i), m)
			if err := sinks[i%2].Emit(b); err != nil {
				t.Fatal(err)
			}
			k := m.ID
			if k == "" {
				k = string(value.AppendValue(nil, plan.Int(m.Offset)))
			}
			all = append(all, keyedTestRow{k, testRow(i)})
		}
	}
	// What a task does at a barrier: the sink publishes and, at a
	// checkpoint, its snapshot goes through the task's writer.
	writers := [len(sinks)]ckptWriter{{store: store}, {store: store}}
	written := 0
	barrier := func(id uint64) error {
		var first error
		for i, s := range sinks {
			s.Barrier(op.Barrier{CheckpointID: id})
			if id == 0 {
				continue
			}
			w := s.snapshot(id)
			written += w.size()
			if _, err := writers[i].write(id, nil, w.kvs); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	commit := func(id uint64) {
		if err := store.CommitMarker(markerKey(qid), id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		res.setCommitted(id)
	}
	check := func(what string, r *Results, committed bool, n int) {
		t.Helper()
		got, err := r.Rows(committed)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want := sortedRows(all[:n])
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %d rows, want %d (the first %d emitted, in key order)", what, len(got), len(want), n)
		}
	}

	emit(30)
	check("before any barrier: committed", res, true, 0)
	check("before any barrier: latest", res, false, 0)
	if err := barrier(0); err != nil {
		t.Fatal(err)
	}
	check("published: latest", res, false, 30)
	check("published: committed", res, true, 0)

	id1 := store.NextID()
	if err := barrier(id1); err != nil {
		t.Fatal(err)
	}
	check("written, no marker yet: committed", res, true, 0)
	commit(id1)
	check("checkpoint 1: committed", res, true, 30)
	check("checkpoint 1: latest", res, false, 30)

	emit(25)
	if err := barrier(0); err != nil {
		t.Fatal(err)
	}
	check("after checkpoint 1: committed", res, true, 30)
	check("after checkpoint 1: latest", res, false, 55)
	id2 := store.NextID()
	if err := barrier(id2); err != nil {
		t.Fatal(err)
	}
	check("checkpoint 2 written, no marker: committed", res, true, 30)
	check("checkpoint 2 written, no marker: latest", res, false, 55)
	commit(id2)
	check("checkpoint 2: committed", res, true, 55)
	check("checkpoint 2: latest", res, false, 55)
	if len(res.recent) != 0 {
		t.Fatalf("%d recent records after the checkpoint", len(res.recent))
	}

	// A write that breaks off half way fails the checkpoint (no marker);
	// the next one carries its blocks under the same keys.
	emit(20)
	store.failNext = true
	id3 := store.NextID()
	if err := barrier(id3); err == nil {
		t.Fatal("checkpoint 3: the failed write was not reported")
	}
	emit(10)
	id4 := store.NextID()
	if err := barrier(id4); err != nil {
		t.Fatal(err)
	}
	commit(id4)
	check("checkpoint 4: committed", res, true, 85)
	check("checkpoint 4: latest", res, false, 85)
	stored := 0
	err := store.Scan(blockPrefix(qid), id4, func(_, v []byte) error {
		return decodeBlock(v, func([]byte, plan.Row) error { stored++; return nil })
	})
	if err != nil || stored != 85 {
		t.Fatalf("%d records stored (err %v), want each of the 85 rows once", stored, err)
	}
	if written == 0 {
		t.Fatal("no bytes written reported")
	}

	// A stopped query: the results as of its last marker, from the store.
	g := &plan.Graph{Vertices: []*plan.Vertex{{Ops: []plan.Op{&plan.Sink{Kind: plan.SinkResults, Key: plan.KeyRowID}}}}}
	opened, err := OpenResults(store, qid, g)
	if err != nil {
		t.Fatal(err)
	}
	check("opened: committed", opened, true, 85)
	check("opened: latest", opened, false, 85)

	// Append-only results never take deletes.
	b := &op.Batch{}
	b.Append(nil, op.RowMeta{Key: "k", Op: op.Delete})
	if err := sinks[0].Emit(b); err == nil {
		t.Fatal("a delete into append-only results was accepted")
	}
}

type keyedTestRow struct {
	key string
	row plan.Row
}

func sortedRows(rs []keyedTestRow) []plan.Row {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b keyedTestRow) int { return value.CompareKeys([]byte(a.key), []byte(b.key), true) })
	out := make([]plan.Row, len(rs))
	for i, r := range rs {
		out[i] = r.row
	}
	return out
}
