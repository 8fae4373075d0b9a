package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Two versions of the protobuf bids: v2 adds an optional bidder. Bid is
// the file's second message (message index [1]).
const (
	protoBidV1 = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Header { string source = 1; }
message Bid {
  int64 auction = 1;
  double price = 2;
  google.protobuf.Timestamp ts = 3;
}`
	protoBidV2 = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Header { string source = 1; }
message Bid {
  int64 auction = 1;
  double price = 2;
  google.protobuf.Timestamp ts = 3;
  optional string bidder = 4;
}`
)

// kafkaRegistryCase is a registry-format source test: records written
// through a registry (two schema versions, and undecodable records) into
// a windowed view whose rows equal the counts and sums of the records
// the test produced; CREATE TABLE refuses columns that do not fit.
type kafkaRegistryCase struct {
	format, attrs string
	// frame writes one bid with schema version v (0, 1) and its id.
	frame func(v, id int, auction int64, price float64, ts int64, bidder *string) []byte
	// bad are undecodable records, and what each one's error says.
	bad      [][]byte
	badWants []string
	refused  []struct{ cols, want string }
}

func runKafkaRegistryCase(t *testing.T, addr string, reg *srfake.Registry, ids []int, c kafkaRegistryCase) {
	ctx := context.Background()
	want := map[[2]int64]bidAgg{} // (window start, auction)
	rng := rand.New(rand.NewSource(22))
	var values [][]byte
	names := []string{"ann", "bo"}
	for i := range 400 {
		a, p, ts := rng.Int63n(4), float64(rng.Int63n(1000))/4, 1_700_000_000_000+rng.Int63n(60_000)
		v := i % 2
		var bidder *string
		if v == 1 && i%3 != 0 {
			bidder = &names[i%2]
		}
		values = append(values, c.frame(v, ids[v], a, p, ts, bidder))
		k := [2]int64{ts / 10_000 * 10_000, a}
		g := want[k]
		g.n++
		g.sum += p
		if bidder != nil {
			g.withBidder++
		}
		want[k] = g
	}
	topic := "bids_" + c.format
	produce(t, addr, topic, "", true, values...)
	produce(t, addr, topic, "", true, c.bad...)

	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	attrs := fmt.Sprintf(`{"topic": %q, "format": %q, "schema_registry": %q, "subject": "bids-value", "event_time": "ts", "watermark_delay": "60s", "dead_letter_topic": "%s.dlq"%s}`,
		topic, c.format, reg.URL(), topic, c.attrs)
	create := func(cols string) error {
		_, err := e.Exec(ctx, fmt.Sprintf(`CREATE TABLE bids (%s) ENGINE=kafka CONNECTION='%s' ENGINE_ATTRIBUTE='%s'`, cols, addr, attrs))
		return err
	}
	for _, r := range c.refused {
		if err := create(r.cols); err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("CREATE TABLE bids (%s): %v, want %q", r.cols, err, r.want)
		}
	}
	if err := create("auction BIGINT NOT NULL, price DOUBLE, ts TIMESTAMP(3) NOT NULL, bidder VARCHAR(16), _partition BIGINT"); err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE VIEW v AS SELECT window_start, auction, COUNT(*) AS n, SUM(price) AS s, COUNT(bidder) AS nb FROM bids GROUP BY TUMBLE(ts, '10s'), auction`)
	checkBidAggs(t, e, want)
	q, err := e.Query("v")
	if err != nil {
		t.Fatal(err)
	}
	if q.Counters["bad_records"] != int64(len(c.bad)) || len(q.RecentBadRecords) != len(c.bad) {
		t.Fatalf("bad records: %d %v", q.Counters["bad_records"], q.RecentBadRecords)
	}
	var msgs []string
	for _, b := range q.RecentBadRecords {
		msgs = append(msgs, b.Error)
	}
	all := strings.Join(msgs, "\n")
	for _, w := range c.badWants {
		if !strings.Contains(all, w) {
			t.Errorf("bad records lack %q:\n%s", w, all)
		}
	}
	if dlq := readCommitted(t, addr, topic+".dlq"); len(dlq) != len(c.bad) {
		t.Fatalf("dead-letter topic: %d records", len(dlq))
	}
}

// TestKafkaProtobufSource: format protobuf, records written as a
// producer does (a dynamic message marshalled, behind the header and the
// message index of Bid).
func TestKafkaProtobufSource(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	var ids []int
	var mds []protoreflect.MessageDescriptor
	for _, s := range []string{protoBidV1, protoBidV2} {
		id, _, err := reg.RegisterSchema("bids-value", sr.Schema{Schema: s, Type: sr.TypeProtobuf})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"bid.proto": s})})}
		fs, err := comp.Compile(context.Background(), "bid.proto")
		if err != nil {
			t.Fatal(err)
		}
		mds = append(mds, fs[0].Messages().ByName("Bid"))
	}
	frame := func(v, id int, auction int64, price float64, ts int64, bidder *string) []byte {
		md := mds[v]
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("auction"), protoreflect.ValueOfInt64(auction))
		m.Set(md.Fields().ByName("price"), protoreflect.ValueOfFloat64(price))
		m.Set(md.Fields().ByName("ts"), protoreflect.ValueOfMessage(timestamppb.New(time.UnixMilli(ts)).ProtoReflect()))
		if bidder != nil {
			m.Set(md.Fields().ByName("bidder"), protoreflect.ValueOfString(*bidder))
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, id, []int{1})
		return append(h, b...)
	}
	good := frame(0, ids[0], 1, 2, 1_700_000_000_000, nil)
	runKafkaRegistryCase(t, c.ListenAddrs()[0], reg, ids, kafkaRegistryCase{
		format: "protobuf", attrs: `, "message": "shop.Bid"`, frame: frame,
		bad: [][]byte{
			[]byte(`{"auction": 1}`),                         // JSON: no magic byte
			append([]byte{0, 0, 0, 0x10, 0x92}, good[5:]...), // an id the registry does not know
			good[:len(good)-3],                               // truncated
			append(append([]byte{}, good[:5]...), append([]byte{0x04, 0x02, 0x08}, good[7:]...)...), // message index [1, 4]
		},
		badWants: []string{"not the Schema Registry magic byte 0", "schema id 4242 is not in the schema registry", "not a valid protobuf message of its schema: unexpected EOF",
			"message index [1 4] names no message of the schema"},
		refused: []struct{ cols, want string }{
			{"auction VARCHAR(16), ts TIMESTAMP(3)", "CREATE TABLE bids: subject bids-value (latest version, schema id 2), message shop.Bid: field auction is protobuf int64, which does not fit column auction VARCHAR"},
			{"auction BIGINT, ts TIMESTAMP(3), price VARCHAR(8)", "field price is protobuf double, which does not fit column price VARCHAR"},
		},
	})
}

// Two versions of the JSON Schema bids: v2 adds a nullable bidder.
const (
	jsonBidV1 = `{"type": "object", "properties": {"auction": {"type": "integer"}, "price": {"type": "number"},
		"ts": {"type": "string", "format": "date-time"}}, "required": ["auction", "price", "ts"]}`
	jsonBidV2 = `{"type": "object", "properties": {"auction": {"type": "integer"}, "price": {"type": "number"},
		"ts": {"type": "string", "format": "date-time"}, "bidder": {"type": ["null", "string"]}}, "required": ["auction", "price", "ts"]}`
)

// TestKafkaJSONSchemaSource: format json_schema, validated, records
// written as Confluent's serializer writes them (JSON behind the header).
func TestKafkaJSONSchemaSource(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	var ids []int
	for _, s := range []string{jsonBidV1, jsonBidV2} {
		id, _, err := reg.RegisterSchema("bids-value", sr.Schema{Schema: s, Type: sr.TypeJSON})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	frame := func(v, id int, auction int64, price float64, ts int64, bidder *string) []byte {
		m := map[string]any{"auction": auction, "price": price, "ts": time.UnixMilli(ts).UTC().Format(time.RFC3339Nano)}
		if v == 1 {
			m["bidder"] = bidder
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, id, nil)
		return append(h, b...)
	}
	good := frame(0, ids[0], 1, 2, 1_700_000_000_000, nil)
	h, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, ids[0], nil)
	runKafkaRegistryCase(t, c.ListenAddrs()[0], reg, ids, kafkaRegistryCase{
		format: "json_schema", attrs: `, "validate": "true"`, frame: frame,
		bad: [][]byte{
			[]byte(`{"auction": 1}`),                                                   // JSON: no magic byte
			append([]byte{0, 0, 0, 0x10, 0x92}, good[5:]...),                           // an id the registry does not know
			good[:len(good)-3],                                                         // truncated
			append(h, `{"auction": 1, "ts": "2023-11-14T22:13:20Z"}`...),               // no price: invalid
			append(h, `{"auction": "x", "price": 1, "ts": "2023-11-14T22:13:20Z"}`...), // wrong type
		},
		badWants: []string{"not the Schema Registry magic byte 0", "schema id 4242 is not in the schema registry", "not a JSON value",
			fmt.Sprintf("does not match schema id %d", ids[0])},
		refused: []struct{ cols, want string }{
			{"auction VARCHAR(16), ts TIMESTAMP(3)", "CREATE TABLE bids: subject bids-value (latest version, schema id 2): property auction is JSON Schema integer, which does not fit column auction VARCHAR"},
			{"auction BIGINT, ts TIMESTAMP(3), bidder BIGINT", "property bidder is JSON Schema null or string, which does not fit column bidder BIGINT"},
		},
	})
}
