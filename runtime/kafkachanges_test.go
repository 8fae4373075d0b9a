package runtime

import (
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	kafkasrc "github.com/streamsql/streamsql/runtime/source/kafka"
	"github.com/streamsql/streamsql/value"
)

// TestKafkaChangeReader: a PRIMARY KEY source hands its records on as
// Upserts and Deletes (the delete flag taken off the row), fills the
// metadata columns, skips a Debezium tombstone without counting it, and
// counts a bad envelope with its position.
func TestKafkaChangeReader(t *testing.T) {
	src := &plan.Source{Table: "orders", Engine: "kafka", EventTime: 2, Upsert: true, Key: []string{"id"},
		Schema: plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "amount", Type: plan.TypeDouble},
			{Name: "_source_ts_ms", Type: plan.TypeTimestamp}, {Name: "_offset", Type: plan.TypeBigint}},
		Attrs: map[string]string{"topic": "orders", "format": value.FormatDebeziumJSON}, Connection: "127.0.0.1:1"}
	change, err := changeDecoder(src)
	if err != nil {
		t.Fatal(err)
	}
	r := func(off int64, key, val string) kafkasrc.Record {
		rec := kafkasrc.Record{Offset: off, Key: []byte(key), Value: []byte(val)}
		if val == "" {
			rec.Value = nil
		}
		return rec
	}
	fc := &fakeConsumer{parts: map[int32][]kafkasrc.Record{0: {
		r(0, `{"id":1}`, `{"op":"r","after":{"id":1,"amount":2.5},"source":{"ts_ms":10}}`),
		r(1, `{"id":1}`, `{"op":"u","before":null,"after":{"id":1,"amount":3},"source":{"ts_ms":20}}`),
		r(2, `{"id":1}`, `{"op":"d","before":{"id":1},"after":null,"source":{"ts_ms":30}}`),
		r(3, `{"id":1}`, ``),
		r(4, `{"id":2}`, `{"after":{"id":2,"amount":1}}`),
	}}}
	kr := newKafkaReader(src, fc, nil, nil)
	kr.change = change
	b := &op.Batch{}
	if n, err := kr.Poll(0, 100, b); err != nil || n != 3 {
		t.Fatalf("poll: %d rows, %v", n, err)
	}
	want := []struct {
		row plan.Row
		op  op.Op
	}{
		{plan.Row{plan.Int(1), plan.Float(2.5), plan.Time(10), plan.Int(0)}, op.Upsert},
		{plan.Row{plan.Int(1), plan.Float(3), plan.Time(20), plan.Int(1)}, op.Upsert},
		{plan.Row{plan.Int(1), plan.Null, plan.Time(30), plan.Int(2)}, op.Delete},
	}
	for i, w := range want {
		if got := b.Rows[i]; len(got) != len(w.row) || b.Meta[i].Op != w.op || b.Meta[i].Offset != int64(i) {
			t.Fatalf("row %d: %v op %d offset %d, want %v op %d", i, got, b.Meta[i].Op, b.Meta[i].Offset, w.row, w.op)
		}
		for k := range w.row {
			if b.Rows[i][k] != w.row[k] {
				t.Fatalf("row %d: %v, want %v", i, b.Rows[i], w.row)
			}
		}
	}
	n, samples := kr.TakeBad()
	if n != 1 || len(samples) != 1 || samples[0].Offset != 4 || samples[0].Error != "a Debezium envelope without op" {
		t.Fatalf("bad records: %d %+v", n, samples)
	}
	if pos := kr.Positions(); pos[0].Offset != 5 || pos[0].MaxEventTime != 30 {
		t.Fatalf("positions %v", pos)
	}
}
