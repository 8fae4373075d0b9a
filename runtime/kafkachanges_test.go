package runtime

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
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

// TestKafkaAvroChangeReaderHolds: an upsert_avro source whose registry
// cannot be asked for a new schema id holds that record and those after
// it (not bad records; its position stays before them) and, once the
// registry answers, hands them on in order: an upsert, then a delete.
func TestKafkaAvroChangeReaderHolds(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	var down atomic.Bool
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() && strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	registered := func(subject, schema string) (int, avro.Schema) {
		id, _, err := reg.RegisterSchema(subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		return id, avro.MustParse(schema)
	}
	keyID, ks := registered("orders-key", `"long"`)
	v1, s1 := registered("orders-value", `{"type":"record","name":"O","fields":[{"name":"amount","type":"double"}]}`)
	v2, s2 := registered("orders-value", `{"type":"record","name":"O","fields":[{"name":"amount","type":"double"},{"name":"note","type":["null","string"],"default":null}]}`)
	wire := func(id int, s avro.Schema, v any) []byte {
		b, err := avro.Marshal(s, v)
		if err != nil {
			t.Fatal(err)
		}
		return append(format.AppendHeader(nil, id), b...)
	}
	type o1 struct {
		Amount float64 `avro:"amount"`
	}
	type o2 struct {
		Amount float64 `avro:"amount"`
		Note   *string `avro:"note"`
	}
	src := &plan.Source{Table: "orders", Engine: "kafka", EventTime: -1, Upsert: true, Key: []string{"id"},
		Schema: plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "amount", Type: plan.TypeDouble}, {Name: "_offset", Type: plan.TypeBigint}},
		Attrs:  map[string]string{"topic": "orders", "format": value.FormatUpsertAvro, "schema_registry": reg.URL()}, Connection: "127.0.0.1:1"}
	change, err := changeDecoder(src)
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeConsumer{parts: map[int32][]kafkasrc.Record{0: {
		{Offset: 0, Key: wire(keyID, ks, int64(1)), Value: wire(v1, s1, o1{2.5})},
		{Offset: 1, Key: wire(keyID, ks, int64(2)), Value: wire(v2, s2, o2{Amount: 4})},
		{Offset: 2, Key: wire(keyID, ks, int64(1))},
	}}}
	kr := newKafkaReader(src, fc, nil, nil)
	kr.change = change
	var b op.Batch
	// The first record with the registry up (the key's and v1's schemas
	// fetched), then v2's cannot be.
	if n, err := kr.Poll(0, 1, &b); err != nil || n != 1 {
		t.Fatalf("first poll: %d rows, %v", n, err)
	}
	down.Store(true)
	if n, _ := kr.Poll(10, 100, &b); n != 0 || kr.Problem() == nil || !strings.Contains(kr.Problem().Error(), "is unavailable") {
		t.Fatalf("registry down: %d rows, problem %v", n, kr.Problem())
	}
	if bad, _ := kr.TakeBad(); bad != 0 {
		t.Fatalf("%d bad records while the registry is down", bad)
	}
	if pos := kr.Positions(); pos[0].Offset != 1 {
		t.Fatalf("position while held: %v", pos)
	}
	down.Store(false)
	if n, _ := kr.Poll(10+heldRetry, 100, &b); n != 2 || kr.Problem() != nil {
		t.Fatalf("registry back: %d rows, problem %v", n, kr.Problem())
	}
	want := []struct {
		row plan.Row
		op  op.Op
	}{
		{plan.Row{plan.Int(1), plan.Float(2.5), plan.Int(0)}, op.Upsert},
		{plan.Row{plan.Int(2), plan.Float(4), plan.Int(1)}, op.Upsert},
		{plan.Row{plan.Int(1), plan.Null, plan.Int(2)}, op.Delete},
	}
	if len(b.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(b.Rows), len(want))
	}
	for i, w := range want {
		if fmt.Sprint(b.Rows[i]) != fmt.Sprint(w.row) || b.Meta[i].Op != w.op {
			t.Errorf("row %d: %v op %d, want %v op %d", i, b.Rows[i], b.Meta[i].Op, w.row, w.op)
		}
	}
	if pos := kr.Positions(); pos[0].Offset != 3 {
		t.Fatalf("position after: %v", pos)
	}
}
