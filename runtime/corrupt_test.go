package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/state"
	"github.com/streamsql/streamsql/value"
	"github.com/streamsql/streamsql/window"
)

// wantErr fails unless err is an error containing every one of parts.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one containing %q", what, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error %q does not contain %q", what, err, p)
		}
	}
}

// TestCorruptRows: a row's column count larger than its bytes, or bytes
// after its last column, are errors.
func TestCorruptRows(t *testing.T) {
	good := value.AppendRow(nil, plan.Row{plan.Int(1), plan.Str("ab")})
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"count past the bytes", []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0}, "bad column count"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), "bytes after its 2 columns"},
		{"unknown kind", []byte{1, 9}, "unknown kind 9"},
		{"short string", good[:len(good)-1], "bad length"},
	} {
		_, err := value.DecodeRow(c.b)
		wantErr(t, "DecodeRow: "+c.name, err, c.want)
		_, err = value.RowWidth(c.b)
		wantErr(t, "RowWidth: "+c.name, err, c.want)
	}
	wantErr(t, "record kind", op.LogRecords([]byte{7, 0}, func(bool, []byte, []byte) error { return nil }), "bad record kind 7")
}

// TestCorruptJournal: a journaled row of the wrong width fails the epoch
// as a permanent sink error naming the block (the committer indexed the
// row by the table's key columns and panicked).
func TestCorruptJournal(t *testing.T) {
	ext := &plan.ExternalSink{Table: "out", Columns: plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "x", Type: plan.TypeDouble}},
		PrimaryKey: []int{0}, KeyValues: []int{0}, RowID: -1, ExactlyOnce: true}
	store := state.NewMemVersioned()
	c := &committer{ext: ext, store: store, prefix: journalPrefix(1), pending: map[uint64]int64{}}
	key := value.AppendValue(nil, plan.Int(1))
	block := stateBlock([][2][]byte{{key, value.AppendRow(nil, plan.Row{plan.Null})}})
	if err := store.Write(1, []state.KV{{Key: journalKey(c.prefix, 1, 0, 0), Value: block}}); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := c.nextEpoch(1)
	wantErr(t, "short row", err, "journal block", "epoch 1", "a row of 1 columns, table out has 2")
}

// TestCorruptResults: stored result rows of another width than the
// query's fail loading and reading (the API's row objects and pull
// queries indexed them and panicked).
func TestCorruptResults(t *testing.T) {
	store := state.NewMemVersioned()
	res := NewResults(store, 1)
	res.setWidth(2)
	key := (&stateLog{prefix: res.prefix}).blockKey(1, kindBase, 0)
	block := stateBlock([][2][]byte{{[]byte("a"), value.AppendRow(nil, plan.Row{plan.Int(1), plan.Int(2)})}, {[]byte("b"), value.AppendRow(nil, plan.Row{plan.Int(1)})}})
	if err := store.Write(1, []state.KV{{Key: key, Value: block}}); err != nil {
		t.Fatal(err)
	}
	res.restoring(1)
	_, err := res.Rows(true)
	wantErr(t, "committed rows", err, "read results at 1", "result 62", "a row of 1 columns, the query's have 2")
	wantErr(t, "load", res.Load(1), "load results at 1", "result 62")

	ao := NewResults(store, 2)
	ao.setWidth(2)
	ao.setAppendOnly()
	var bb blockBuilder
	bb.target = 1 << 10
	bb.add("r1", plan.Row{plan.Int(1), plan.Int(2), plan.Int(3)})
	if err := store.Write(2, []state.KV{{Key: blockKey(ao.blocks, 0, 2, 0), Value: bb.take()[0]}}); err != nil {
		t.Fatal(err)
	}
	ao.restoring(2)
	_, err = ao.Rows(true)
	wantErr(t, "append-only rows", err, "read results at 2", "result block", "a row of 3 columns, the query's have 2")
	_, err = ao.Snapshot(2)
	wantErr(t, "append-only snapshot", err, "read results at 2", "result block")
}

// TestCorruptSourcePos: a checkpointed source position with a negative
// offset fails (a Nexmark reader took it as a huge event index, a Kafka
// offset of -1 or -2 means latest or earliest to a client).
func TestCorruptSourcePos(t *testing.T) {
	def := sourcePos{Offset: 3, MaxEventTime: window.NoWatermark, Floor: window.NoWatermark}
	for raw, want := range map[string]string{
		`{"offset": -1}`:                        "negative offset -1",
		`{"partitions": {"2": {"offset": -2}}}`: "partition 2: offset -2",
		`{"partitions": {"-1": {"offset": 5}}}`: "partition -1",
		`{"offset": "x"}`:                       "cannot unmarshal",
	} {
		_, err := decodeSourcePos([]byte(raw), def)
		wantErr(t, raw, err, want)
	}
	p, err := decodeSourcePos([]byte(`{"max_event_time": 7}`), def)
	if err != nil || p.Offset != 3 || p.MaxEventTime != 7 || p.Floor != window.NoWatermark {
		t.Fatalf("a partial position over the default: %+v, %v", p, err)
	}
}

// TestCorruptLogRow: a row in an ingest log that is not a row of the
// table (Calc and the operators index rows by column) fails the read,
// naming its offset.
func TestCorruptLogRow(t *testing.T) {
	m, err := state.OpenMeta(t.TempDir(), state.MetaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.Log(1)
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]byte{value.AppendRow(nil, plan.Row{plan.Int(1), plan.Bool(false)}), value.AppendRow(nil, plan.Row{plan.Int(2)}), {1, 9}}
	if _, err := l.Append(context.Background(), rows, ""); err != nil {
		t.Fatal(err)
	}
	r := &logReader{log: l, upsert: true, width: 1}
	n, err := r.Poll(0, 10, &op.Batch{})
	wantErr(t, "short upsert row", err, "log offset 1", "a row of 1 values, the table's have 2")
	if n != 1 {
		t.Fatalf("read %d rows before the bad one, want 1", n)
	}
	r = &logReader{log: l, off: 2, width: 1}
	_, err = r.Poll(0, 10, &op.Batch{})
	wantErr(t, "undecodable row", err, "log offset 2", "unknown kind 9")
}
