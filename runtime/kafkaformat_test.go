package runtime

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/op"
	kafkasrc "github.com/streamsql/streamsql/runtime/source/kafka"
	"github.com/streamsql/streamsql/window"
)

// TestKafkaReaderHoldsUnavailable: a record whose schema registry cannot
// be asked is neither a row nor a bad record: it and the records after it
// wait, the position stays before them, the problem is shown, and they
// are read in order once the registry answers.
func TestKafkaReaderHoldsUnavailable(t *testing.T) {
	down := true
	decode := func(b []byte) (plan.Row, error) {
		if s, ok := strings.CutPrefix(string(b), "w:"); ok {
			if down {
				return nil, &format.Unavailable{URL: "http://127.0.0.1:1", Err: errors.New("connection refused")}
			}
			b = []byte(s)
		}
		return decodeTest(b)
	}
	fc := &fakeConsumer{parts: map[int32][]kafkasrc.Record{
		0: {rec(0, 0, "1,1000"), rec(0, 1, "w:5,1500"), rec(0, 2, "2,2000"), rec(0, 3, "bad")},
		1: {rec(1, 0, "3,3000")},
	}}
	r := newKafkaReader(kafkaTestSource(), fc, decode, map[int32]kafkaPartPos{})
	var b op.Batch
	values := func() string {
		var out []string
		for _, row := range b.Rows {
			out = append(out, fmt.Sprint(row[0].I))
		}
		b = op.Batch{}
		return strings.Join(out, " ")
	}
	now := int64(10_000)
	if n, _ := r.Poll(now, 100, &b); n != 1 || values() != "1" {
		t.Fatalf("first poll: %d rows", n)
	}
	want := map[int32]kafkaPartPos{0: {Offset: 1, MaxEventTime: 1000}, 1: {Offset: 0, MaxEventTime: window.NoWatermark}}
	if got := r.Positions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("positions while held: %v, want %v", got, want)
	}
	if err := r.Problem(); err == nil || !strings.Contains(err.Error(), "schema registry http://127.0.0.1:1 is unavailable") {
		t.Fatalf("problem: %v", err)
	}
	if n, _ := r.Poll(now+10, 100, &b); n != 0 {
		t.Fatalf("retried before its time: %d rows", n)
	}
	if n, _ := r.Poll(now+heldRetry, 100, &b); n != 0 || r.Problem() == nil {
		t.Fatalf("still down: %d rows, problem %v", n, r.Problem())
	}
	down = false
	if n, _ := r.Poll(now+2*heldRetry, 100, &b); n != 3 || values() != "5 2 3" {
		t.Fatalf("registry back: %d rows", n)
	}
	if bad, _ := r.TakeBad(); bad != 1 || r.Problem() != nil {
		t.Fatalf("bad %d, problem %v", bad, r.Problem())
	}
	want = map[int32]kafkaPartPos{0: {Offset: 4, MaxEventTime: 2000}, 1: {Offset: 1, MaxEventTime: 3000}}
	if got := r.Positions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("positions after: %v, want %v", got, want)
	}
}
