package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	kafkasrc "github.com/streamsql/streamsql/runtime/source/kafka"
	"github.com/streamsql/streamsql/window"
)

// fakeConsumer is a topic in memory: records per partition, read from
// the offsets Start was given.
type fakeConsumer struct {
	parts   map[int32][]kafkasrc.Record
	pos     map[int32]int64
	lookErr error
	started map[int32]int64
}

func (f *fakeConsumer) Partitions(context.Context) ([]int32, error) {
	if f.lookErr != nil {
		return nil, f.lookErr
	}
	var ps []int32
	for p := range f.parts {
		ps = append(ps, p)
	}
	return ps, nil
}

func (f *fakeConsumer) StartOffsets(_ context.Context, latest bool) (map[int32]int64, error) {
	out := map[int32]int64{}
	for p, recs := range f.parts {
		if latest {
			out[p] = int64(len(recs))
		}
	}
	return out, nil
}

func (f *fakeConsumer) Start(from map[int32]int64) error {
	f.started, f.pos = from, map[int32]int64{}
	for p, o := range from {
		f.pos[p] = o
	}
	return nil
}

// Poll hands out records partition by partition, in partition order.
func (f *fakeConsumer) Poll(max int, fn func(*kafkasrc.Record)) int {
	n := 0
	for p := int32(0); p < int32(len(f.parts)); p++ {
		for n < max && f.pos[p] < int64(len(f.parts[p])) {
			r := f.parts[p][f.pos[p]]
			f.pos[p]++
			fn(&r)
			n++
		}
	}
	return n
}

func (f *fakeConsumer) Position() map[int32]int64 {
	out := map[int32]int64{}
	for p, o := range f.pos {
		out[p] = o
	}
	return out
}
func (f *fakeConsumer) Ready() <-chan struct{} { return nil }
func (f *fakeConsumer) EndOffsets(context.Context) (map[int32]int64, error) {
	out := map[int32]int64{}
	for p, recs := range f.parts {
		out[p] = int64(len(recs))
	}
	return out, nil
}
func (f *fakeConsumer) Problem() error { return nil }
func (f *fakeConsumer) Close()         {}

func kafkaTestSource() *plan.Source {
	return &plan.Source{Table: "t", Engine: "kafka", EventTime: 1, WatermarkDelay: 100, IdleTimeout: 1000,
		Schema: plan.Schema{{Name: "v", Type: plan.TypeBigint}, {Name: "ts", Type: plan.TypeTimestamp},
			{Name: "_partition", Type: plan.TypeBigint}, {Name: "_offset", Type: plan.TypeBigint}, {Name: "_key", Type: plan.TypeVarchar}},
		Attrs: map[string]string{"topic": "t"}, Connection: "127.0.0.1:1"}
}

// decodeTest decodes "v,ts" values; anything else is a bad record.
func decodeTest(b []byte) (plan.Row, error) {
	f := strings.Split(string(b), ",")
	if len(f) != 2 {
		return nil, errors.New("not v,ts")
	}
	v, err1 := strconv.ParseInt(f[0], 10, 64)
	ts, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, errors.New("not numbers")
	}
	return plan.Row{plan.Int(v), plan.Time(ts), plan.Null, plan.Null, plan.Null}, nil
}

func rec(p int32, off int64, v string) kafkasrc.Record {
	return kafkasrc.Record{Partition: p, Offset: off, Key: []byte(fmt.Sprintf("k%d", off)), Value: []byte(v), Timestamp: 5}
}

// TestKafkaReaderWatermarkAndPositions: the watermark is the minimum over
// partitions (each max event time - delay), stamped per row before it;
// an idle partition stops holding it back; undecodable records are
// counted and skipped; positions restore exactly.
func TestKafkaReaderWatermarkAndPositions(t *testing.T) {
	fc := &fakeConsumer{parts: map[int32][]kafkasrc.Record{
		0: {rec(0, 0, "1,1000"), rec(0, 1, "2,5000"), rec(0, 2, "garbage")},
		1: {rec(1, 0, "3,2000")},
	}}
	r := newKafkaReader(kafkaTestSource(), fc, decodeTest, nil)
	b := &op.Batch{}
	n, err := r.Poll(0, 100, b)
	if err != nil || n != 3 {
		t.Fatalf("poll: %d rows, %v", n, err)
	}
	// Partition 1 has no rows yet when partition 0's are read: it holds
	// the watermark at NoWatermark.
	for i, want := range []int64{window.NoWatermark, window.NoWatermark, window.NoWatermark} {
		if b.Meta[i].WM != want {
			t.Errorf("row %d: watermark %d, want %d", i, b.Meta[i].WM, want)
		}
	}
	if got := r.Watermark(0); got != 1900 {
		t.Fatalf("watermark %d, want min(5000, 2000) - 100 = 1900", got)
	}
	// Metadata columns and the row id.
	if b.Rows[2][2] != plan.Int(1) || b.Rows[2][3] != plan.Int(0) || b.Rows[2][4] != plan.Str("k0") || b.Meta[2].Offset != 1<<48 {
		t.Fatalf("metadata of partition 1's row: %v, row id %d", b.Rows[2], b.Meta[2].Offset)
	}
	if n, samples := r.TakeBad(); n != 1 || len(samples) != 1 || samples[0].Partition != 0 || samples[0].Offset != 2 {
		t.Fatalf("bad records: %d %v", n, samples)
	}
	// Partition 1 idle for its timeout: partition 0 alone.
	if got := r.Watermark(1000); got != 4900 {
		t.Fatalf("watermark with partition 1 idle: %d, want 4900", got)
	}
	pos := r.Positions()
	if pos[0].Offset != 3 || pos[1].Offset != 1 || pos[0].MaxEventTime != 5000 || pos[1].MaxEventTime != 2000 {
		t.Fatalf("positions %v", pos)
	}

	// Restored at those positions: new records only, watermark restored.
	fc.parts[1] = append(fc.parts[1], rec(1, 1, "4,3000"))
	r2 := newKafkaReader(kafkaTestSource(), fc, decodeTest, pos)
	if got := r2.Watermark(0); got != 1900 {
		t.Fatalf("restored watermark before the topic is read: %d, want 1900", got)
	}
	b = &op.Batch{}
	if n, _ := r2.Poll(0, 100, b); n != 1 || b.Rows[0][0] != plan.Int(4) {
		t.Fatalf("after restore: %d rows %v", n, b.Rows)
	}
	if fc.started[0] != 3 || fc.started[1] != 1 {
		t.Fatalf("consumer started at %v", fc.started)
	}
	if b.Meta[0].WM != 1900 || r2.Watermark(0) != 2900 {
		t.Fatalf("row watermark %d, after %d", b.Meta[0].WM, r2.Watermark(0))
	}
}

// TestKafkaReaderRetries: until the topic can be looked up the reader
// reads nothing, reports why, and keeps its restored position.
func TestKafkaReaderRetries(t *testing.T) {
	fc := &fakeConsumer{parts: map[int32][]kafkasrc.Record{0: {rec(0, 0, "1,1000"), rec(0, 1, "2,2000")}}, lookErr: kafkasrc.ErrUnknownTopic}
	if fc.lookErr == nil {
		fc.lookErr = errors.New("unknown topic")
	}
	from := map[int32]kafkaPartPos{0: {Offset: 1, MaxEventTime: 1000}}
	r := newKafkaReader(kafkaTestSource(), fc, decodeTest, from)
	if n, err := r.Poll(0, 10, &op.Batch{}); n != 0 || err != nil {
		t.Fatalf("poll without a topic: %d, %v", n, err)
	}
	if err := r.Problem(); err == nil || !strings.Contains(err.Error(), "Kafka topic t at 127.0.0.1:1") {
		t.Fatalf("problem: %v", err)
	}
	if p := r.Positions(); p[0].Offset != 1 {
		t.Fatalf("positions while waiting: %v", p)
	}
	fc.lookErr = nil
	if n, _ := r.Poll(500, 10, &op.Batch{}); n != 0 {
		t.Fatal("retried before a second had passed")
	}
	b := &op.Batch{}
	if n, _ := r.Poll(1000, 10, b); n != 1 || b.Rows[0][0] != plan.Int(2) || r.Problem() != nil {
		t.Fatalf("after the topic appeared: %d rows, problem %v", n, r.Problem())
	}
}

// TestKafkaRecordTimestampRange: a record whose timestamp (the producer's
// to set) is outside the TIMESTAMP range is a bad record, with the reason,
// when the table has a _timestamp column (issue 15 item 5); the others
// are read.
func TestKafkaRecordTimestampRange(t *testing.T) {
	src := kafkaTestSource()
	src.Schema = append(src.Schema, plan.Column{Name: "_timestamp", Type: plan.TypeTimestamp})
	decode := func(b []byte) (plan.Row, error) {
		row, err := decodeTest(b)
		return append(row, plan.Null), err
	}
	good, far := rec(0, 0, "1,1000"), rec(0, 1, "2,2000")
	far.Timestamp = math.MaxInt64
	fc := &fakeConsumer{parts: map[int32][]kafkasrc.Record{0: {good, far}}}
	r := newKafkaReader(src, fc, decode, nil)
	b := &op.Batch{}
	if n, err := r.Poll(0, 100, b); err != nil || n != 1 || b.Rows[0][5] != plan.Time(5) {
		t.Fatalf("poll: %d rows %v, %v", n, b.Rows, err)
	}
	n, samples := r.TakeBad()
	if n != 1 || len(samples) != 1 || samples[0].Offset != 1 ||
		samples[0].Error != "column _timestamp, the record's timestamp: epoch milliseconds 9223372036854775807 are outside the TIMESTAMP range, 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (-62135596800000 to 253402300799999)" {
		t.Fatalf("bad records: %d %+v", n, samples)
	}
}
