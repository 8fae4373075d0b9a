package kafka

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

func TestNewDefaults(t *testing.T) {
	spec := testSpec("127.0.0.1:9092, 127.0.0.2:9093", "x", true)
	delete(spec.Attrs, "topic")
	p, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.topic != "kafka_out" || p.progress != "kafka_out.streamsql-progress" || p.parts != -1 ||
		p.txTimeout != 60*time.Second || p.txID != "streamsql-inst/7/x" ||
		strings.Join(p.brokers, " ") != "127.0.0.1:9092 127.0.0.2:9093" {
		t.Fatalf("defaults: topic %q progress %q parts %d timeout %s txid %q brokers %q", p.topic, p.progress, p.parts, p.txTimeout, p.txID, p.brokers)
	}
	p, err = New(testSpec("h:1", "t", true, "progress_topic", "p", "partitions", "6", "transaction_timeout", "90s"))
	if err != nil {
		t.Fatal(err)
	}
	if p.topic != "t" || p.progress != "p" || p.parts != 6 || p.txTimeout != 90*time.Second {
		t.Fatalf("settings: topic %q progress %q parts %d timeout %s", p.topic, p.progress, p.parts, p.txTimeout)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	type edit func(*sink.Spec)
	attr := func(k, v string) edit { return func(s *sink.Spec) { s.Attrs[k] = v } }
	conn := func(c string) edit { return func(s *sink.Spec) { s.Connection = c } }
	for _, c := range []struct {
		name string
		edit edit
		want string
	}{
		{"no brokers", conn(""), "bad CONNECTION"},
		{"no port", conn("localhost"), "bad CONNECTION"},
		{"bad port", conn("a:1,b:x"), `"b:x" is not host:port`},
		{"port 0", conn("a:0"), "bad CONNECTION"},
		{"a URL", conn("kafka://a:1"), "bad CONNECTION"},
		{"empty topic", attr("topic", ""), `"topic" "": empty`},
		{"bad topic", attr("topic", "a b"), `' ' is not allowed`},
		{"dot topic", attr("topic", ".."), "not a valid topic name"},
		{"long topic", attr("topic", strings.Repeat("t", 250)), "longer than 249"},
		{"bad progress topic", attr("progress_topic", "p/q"), `"progress_topic"`},
		{"progress is the topic", attr("progress_topic", "out"), "needs a topic of its own"},
		{"zero partitions", attr("partitions", "0"), `"partitions" is "0"`},
		{"bad partitions", attr("partitions", "many"), "want a positive integer"},
		{"bad timeout", attr("transaction_timeout", "soon"), `want a duration`},
		{"short timeout", attr("transaction_timeout", "500ms"), "from 1s"},
		{"negative timeout", attr("transaction_timeout", "-5s"), "from 1s"},
		{"sub-millisecond timeout", attr("transaction_timeout", "1.0005s"), "whole milliseconds"},
		{"no primary key", func(s *sink.Spec) { s.PrimaryKey = nil }, "no PRIMARY KEY"},
		{"bad primary key", func(s *sink.Spec) { s.PrimaryKey = []int{9} }, "bad primary key column index 9"},
		{"no sink id", func(s *sink.Spec) { s.SinkID = "" }, "needs a sink id"},
		{"no columns", func(s *sink.Spec) { s.Columns = nil }, "has no columns"},
		{"unwritable type", func(s *sink.Spec) { s.Columns = plan.Schema{{Name: "id", Type: plan.TypeNull}} }, "cannot write"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := testSpec("127.0.0.1:9092", "out", true)
			c.edit(&spec)
			_, err := New(spec)
			if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "sink table kafka_out") {
				t.Fatalf("New: %v; want a permanent error naming the sink table and containing %q", err, c.want)
			}
		})
	}
}

// TestRecordBytes checks the records' keys and values byte for byte:
// every type, NULLs, doubles JSON cannot write, a composite key in
// primary key order, names that need escaping, tombstones.
func TestRecordBytes(t *testing.T) {
	spec := sink.Spec{
		Table: "k", Connection: "h:1", Attrs: map[string]string{"topic": "t"},
		Columns: plan.Schema{
			{Name: "a", Type: plan.TypeVarchar},
			{Name: "b", Type: plan.TypeTimestamp},
			{Name: "c", Type: plan.TypeBigint},
			{Name: `d"x`, Type: plan.TypeDouble},
			{Name: "e", Type: plan.TypeBoolean},
		},
		PrimaryKey: []int{2, 0}, // c, a
	}
	p, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	r1 := plan.Row{plan.Str(`q "<&>" é`), plan.Time(1704067210000), plan.Int(-9), plan.Float(0.1), plan.Bool(true)}
	r2 := plan.Row{plan.Str(""), plan.Null, plan.Int(math.MaxInt64), plan.Float(math.NaN()), plan.Null}
	r3 := plan.Row{plan.Str("x"), plan.Time(-1), plan.Int(0), plan.Float(math.Inf(-1)), plan.Bool(false)}
	r4 := plan.Row{plan.Str("y"), plan.Time(0), plan.Int(1), plan.Float(1e21), plan.Null}
	changes := []sink.Change{
		{Key: plan.Row{r1[2], r1[0]}, Row: r1},
		{Key: plan.Row{r2[2], r2[0]}, Row: r2},
		{Key: plan.Row{plan.Int(5), plan.Str("gone")}}, // a delete
		{Key: plan.Row{r3[2], r3[0]}, Row: r3},
		{Key: plan.Row{r4[2], r4[0]}, Row: r4},
	}
	recs, err := p.records(changes)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ key, value string }{
		{`{"c":-9,"a":"q \"<&>\" é"}`, `{"a":"q \"<&>\" é","b":"2024-01-01T00:00:10.000Z","c":-9,"d\"x":0.1,"e":true}`},
		// Non-finite DOUBLEs as strings, distinct from NULL (issue 15 item 11).
		{`{"c":9223372036854775807,"a":""}`, `{"a":"","b":null,"c":9223372036854775807,"d\"x":"NaN","e":null}`},
		{`{"c":5,"a":"gone"}`, ""},
		{`{"c":0,"a":"x"}`, `{"a":"x","b":"1969-12-31T23:59:59.999Z","c":0,"d\"x":"-Infinity","e":false}`},
		{`{"c":1,"a":"y"}`, `{"a":"y","b":"1970-01-01T00:00:00.000Z","c":1,"d\"x":1e+21,"e":null}`},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if r.Topic != "t" || string(r.Key) != want[i].key {
			t.Errorf("record %d: topic %q key %s, want t %s", i, r.Topic, r.Key, want[i].key)
		}
		if want[i].value == "" {
			if r.Value != nil {
				t.Errorf("record %d: value %s, want a tombstone (nil)", i, r.Value)
			}
		} else if string(r.Value) != want[i].value {
			t.Errorf("record %d: value\n%s\nwant\n%s", i, r.Value, want[i].value)
		}
		// Appending to one record's bytes must not touch the next's.
		_ = append(r.Key, 'X')
		_ = append(r.Value, 'X')
	}
	for i, r := range recs {
		if string(r.Key) != want[i].key {
			t.Errorf("record %d: key changed to %s", i, r.Key)
		}
	}

	// Changes of the wrong shape are the caller's mistake.
	for _, bad := range []sink.Change{
		{Key: plan.Row{plan.Int(1)}, Row: r1},
		{Key: plan.Row{plan.Int(1), plan.Str("a")}, Row: r1[:3]},
	} {
		if _, err := p.records([]sink.Change{bad}); err == nil || !sink.IsPermanent(err) {
			t.Errorf("records(%v): %v, want a permanent error", bad, err)
		}
	}
}

func TestClassify(t *testing.T) {
	p, err := New(testSpec("h:1", "out", true))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err       error
		permanent bool
	}{
		{kerr.InvalidTransactionTimeout, true},
		{kerr.MessageTooLarge, true},
		{kerr.TopicAuthorizationFailed, true},
		{kerr.TransactionalIDAuthorizationFailed, true},
		{kerr.NotLeaderForPartition, false},
		{kerr.ProducerFenced, false},
		{kerr.RequestTimedOut, false},
		{fmt.Errorf("dial tcp: connection refused"), false},
	} {
		got := p.classify(fmt.Errorf("wrapped: %w", c.err))
		if sink.IsPermanent(got) != c.permanent {
			t.Errorf("%v: permanent %v, want %v", c.err, sink.IsPermanent(got), c.permanent)
		}
	}
}
