package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/runtime/sink"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// The fuzz targets of this file feed the decoders of what the runtime
// reads back from the store (rows, state log blocks, operator state,
// results, sink journals, source positions) with real encodings, which
// must round-trip, and with mutations of them, which must fail with an
// error: never a panic, an index out of range, or an allocation sized by
// a corrupt length.

// stateBlock encodes records (value nil: a delete) as a state log block.
func stateBlock(recs [][2][]byte) []byte {
	w := newStateWriter(true)
	for _, r := range recs {
		if r[1] == nil {
			w.Delete(r[0])
		} else {
			w.Put(r[0], r[1])
		}
	}
	b := slices.Concat(w.Close()...)
	putBlocks(w.Blocks())
	return b
}

// blockRecords decodes a block's records.
func blockRecords(b []byte) ([][2][]byte, error) {
	var out [][2][]byte
	err := op.LogRecords(b, func(put bool, k, v []byte) error {
		if put && v == nil {
			v = []byte{}
		}
		out = append(out, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	return out, err
}

// FuzzStateLog: a state log block's records round-trip; any block, and any
// block key, reads back as records or fails naming the block.
func FuzzStateLog(f *testing.F) {
	f.Add(stateBlock(nil), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'b', 0, 0, 0, 0})
	f.Add(stateBlock([][2][]byte{{[]byte("k1"), []byte("v1")}, {[]byte("k2"), nil}, {[]byte{}, []byte{}}}), []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 'd', 0, 0, 0, 7})
	f.Add(stateBlock([][2][]byte{{bytes.Repeat([]byte("k"), 200), bytes.Repeat([]byte("v"), 300)}}), []byte{1})
	f.Fuzz(func(t *testing.T, block, keySuffix []byte) {
		recs, err := blockRecords(block)
		if err == nil {
			again, err := blockRecords(stateBlock(recs))
			if err != nil || !reflect.DeepEqual(again, recs) {
				t.Fatalf("records %q re-encoded read as %q, %v", recs, again, err)
			}
		}
		store := state.NewMemVersioned()
		prefix := []byte("q/op/")
		key := append(append(bytes.Clone(prefix), 'L'), keySuffix...)
		if err := store.Write(1, []state.KV{{Key: key, Value: block}}); err != nil {
			t.Fatal(err)
		}
		keys, vals, _, rerr := readStateLog(store, prefix, 1)
		if rerr != nil {
			if !strings.Contains(rerr.Error(), "state block") {
				t.Fatalf("error does not name the block: %v", rerr)
			}
			return
		}
		for _, k := range keys {
			if _, ok := vals[k]; !ok {
				t.Fatalf("key %q without value", k)
			}
		}
	})
}

// FuzzResults reads an append-only results block and an updating
// query's result log block (both as the only block of checkpoint 1) back
// the ways the API does: every row read has the query's width, or the
// read fails naming what is corrupt.
func FuzzResults(f *testing.F) {
	rows := []plan.Row{{plan.Int(1), plan.Str("a"), plan.Float(2.5)}, {plan.Null, plan.Str(""), plan.Float(-1)}}
	var bb blockBuilder
	bb.target = 1 << 10
	for i, r := range rows {
		bb.add(string(value.AppendValue(nil, plan.Int(int64(i)))), r)
	}
	f.Add(true, slices.Concat(bb.take()...))
	var recs [][2][]byte
	for _, r := range rows {
		recs = append(recs, [2][]byte{value.EncodeKey(nil, r, []int{1}), value.AppendRow(nil, r)})
	}
	f.Add(false, stateBlock(recs))
	f.Add(false, stateBlock([][2][]byte{{[]byte("k"), value.AppendRow(nil, plan.Row{plan.Int(1)})}}))
	f.Fuzz(func(t *testing.T, appendOnly bool, block []byte) {
		const width = 3
		store := state.NewMemVersioned()
		res := NewResults(store, 1)
		res.setWidth(width)
		var key []byte
		if appendOnly {
			res.setAppendOnly()
			key = blockKey(res.blocks, 0, 1, 0)
		} else {
			res.shard(2, plan.KeyGroup)
			key = (&stateLog{prefix: res.prefix}).blockKey(1, kindBase, 0)
		}
		if err := store.Write(1, []state.KV{{Key: key, Value: block}}); err != nil {
			t.Fatal(err)
		}
		res.restoring(1)
		check := func(what string, rows []plan.Row, err error) {
			t.Helper()
			if err != nil {
				if !strings.Contains(err.Error(), "result") {
					t.Fatalf("%s: error does not name the results: %v", what, err)
				}
				return
			}
			for _, r := range rows {
				if len(r) != width {
					t.Fatalf("%s: row %v", what, r)
				}
			}
		}
		got, err := res.Rows(true)
		check("committed rows", got, err)
		if err := res.Load(1); err != nil {
			if !strings.Contains(err.Error(), "load results") {
				t.Fatalf("load: error does not name the results: %v", err)
			}
			return
		}
		got, err = res.Rows(false)
		check("latest rows", got, err)
		keyed, err := res.Snapshot(1)
		got = nil
		for _, k := range keyed {
			got = append(got, k.Row)
		}
		check("snapshot", got, err)
		if !appendOnly {
			_, keyed, err = res.Subscribe(0, false, true)
			got = nil
			for _, k := range keyed {
				got = append(got, k.Row)
			}
			check("subscribe", got, err)
		}
	})
}

// FuzzSinkJournal reads an exactly_once sink's journal block (epoch 1) and
// an at_least_once sink's write-ahead log entry: changes of the sink
// table's width and key, or an error naming the block or entry.
func FuzzSinkJournal(f *testing.F) {
	row := plan.Row{plan.Time(10), plan.Int(7), plan.Float(1.5)}
	key := string(value.EncodeKey(nil, row, []int{0, 1}))
	f.Add(stateBlock([][2][]byte{{[]byte(key), value.AppendRow(nil, row)}, {[]byte(key + "x"), nil}, {value.AppendValue(nil, plan.Int(3)), nil}}),
		append(make([]byte, 8), 3, 'a', 'b', 'c', 0))
	f.Add(stateBlock([][2][]byte{{[]byte(key), value.AppendRow(nil, row[:2])}}), []byte{0, 0, 0, 0, 0, 0, 0, 1, 9})
	ext := &plan.ExternalSink{Table: "out", Columns: plan.Schema{{Name: "ts", Type: plan.TypeTimestamp}, {Name: "id", Type: plan.TypeBigint}, {Name: "x", Type: plan.TypeDouble}},
		PrimaryKey: []int{1, 0}, KeyValues: []int{1, 0}, RowID: -1, ExactlyOnce: true}
	f.Fuzz(func(t *testing.T, block, wal []byte) {
		store := state.NewMemVersioned()
		c := &committer{ext: ext, store: store, prefix: journalPrefix(1), pending: map[uint64]int64{}}
		if err := store.Write(1, []state.KV{{Key: journalKey(c.prefix, 1, 0, 0), Value: block}}); err != nil {
			t.Fatal(err)
		}
		epoch, changes, _, err := c.nextEpoch(1)
		if err != nil {
			if !strings.Contains(err.Error(), "journal block") || !sink.IsPermanent(err) {
				t.Fatalf("error: %v", err)
			}
		} else {
			if epoch != 1 {
				t.Fatalf("epoch %d", epoch)
			}
			for _, ch := range changes {
				if len(ch.Key) != 2 || ch.Row != nil && len(ch.Row) != 3 {
					t.Fatalf("change %+v", ch)
				}
			}
		}
		kv := memCatalog{}
		w := &sinkWAL{kv: kv, prefix: SinkWALPrefix(1)}
		kv.PutCatalog(fmt.Sprintf("%s%016x", w.prefix, 1), wal)
		keys, err := w.since(0)
		if err != nil {
			if !strings.Contains(err.Error(), "sink write-ahead log entry") {
				t.Fatalf("error: %v", err)
			}
			return
		}
		for _, k := range keys {
			c.toChange(k, nil)
		}
	})
}

// FuzzSourcePos reads a source task's checkpointed position: accepted
// positions have no negative offset and round-trip.
func FuzzSourcePos(f *testing.F) {
	def := sourcePos{Offset: 3, MaxEventTime: window.NoWatermark, Floor: window.NoWatermark}
	for _, p := range []sourcePos{def, {Offset: 1 << 40, MaxEventTime: 99, Floor: -5, Partitions: map[int32]kafkaPartPos{0: {Offset: 7, MaxEventTime: 1}, 3: {}}}} {
		b, _ := json.Marshal(p)
		f.Add(b)
	}
	f.Add([]byte(`{"offset": -1}`))
	f.Add([]byte(`{"partitions": {"-2": {"offset": 1}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := decodeSourcePos(raw, def)
		if err != nil {
			if !reflect.DeepEqual(p, def) {
				t.Fatalf("failed decode returned %+v", p)
			}
			return
		}
		if p.Offset < 0 {
			t.Fatalf("offset %d", p.Offset)
		}
		for part, pp := range p.Partitions {
			if part < 0 || pp.Offset < 0 {
				t.Fatalf("partition %d at %d", part, pp.Offset)
			}
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeSourcePos(b, sourcePos{})
		if err != nil || !reflect.DeepEqual(again, p) && !(len(again.Partitions) == 0 && len(p.Partitions) == 0) {
			t.Fatalf("round trip of %+v: %+v, %v", p, again, err)
		}
	})
}
