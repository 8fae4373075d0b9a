package e2e

// The bids in Protobuf for TestKafkaFormatCrash (kafkaFormats): records as
// Confluent's Protobuf serializer writes them (byte 0, the schema id, the
// message-index list [0] as the single byte 0, the message), made with
// protocompile and dynamicpb from the .proto text registered in srfake,
// not with the engine's code.

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// v1 without channel, v2 adding it as a proto3 optional field (absent is
// NULL); ts a google.protobuf.Timestamp.
const (
	protoBidsV1 = `syntax = "proto3";
package e2e;
import "google/protobuf/timestamp.proto";
message Bid {
  google.protobuf.Timestamp ts = 1;
  int64 auction = 2;
  int64 price = 3;
  int64 bidder = 4;
}
`
	protoBidsV2 = `syntax = "proto3";
package e2e;
import "google/protobuf/timestamp.proto";
message Bid {
  google.protobuf.Timestamp ts = 1;
  int64 auction = 2;
  int64 price = 3;
  int64 bidder = 4;
  optional string channel = 5;
}
`
)

type protoCodec struct {
	reg     *srfake.Registry
	subject string
	id      int
	bid     protoreflect.MessageDescriptor
}

// startProtoCodec starts a registry for the calling test with v1 of the
// bids schema under topic's value subject.
func startProtoCodec(t *testing.T, topic string) formatCodec {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	t.Cleanup(reg.Close)
	c := &protoCodec{reg: reg, subject: topic + "-value"}
	c.register(t, protoBidsV1)
	return c
}

func (c *protoCodec) register(t testing.TB, text string) {
	t.Helper()
	id, _, err := c.reg.RegisterSchema(c.subject, sr.Schema{Schema: text, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatalf("registering %s: %v", c.subject, err)
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"bid.proto": text}),
	})}
	files, err := comp.Compile(context.Background(), "bid.proto")
	if err != nil {
		t.Fatalf("compiling the bids schema: %v", err)
	}
	c.id, c.bid = id, files[0].Messages().ByName("Bid")
}

func (c *protoCodec) attrs() string {
	return `"format": "protobuf", "schema_registry": "` + c.reg.URL() + `"`
}

func (c *protoCodec) evolve(t testing.TB) { c.register(t, protoBidsV2) }

func (c *protoCodec) encode(t testing.TB, row Row) ([]byte, Row) {
	t.Helper()
	read := Row{}
	for k, v := range row {
		read[k] = v
	}
	m := dynamicpb.NewMessage(c.bid)
	fields := c.bid.Fields()
	tsf := fields.ByName("ts")
	ts := dynamicpb.NewMessage(tsf.Message())
	ms := tsOf(row)
	ts.Set(tsf.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(floorDivMs(ms)))
	ts.Set(tsf.Message().Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32((ms-floorDivMs(ms)*1000)*1_000_000)))
	m.Set(tsf, protoreflect.ValueOfMessage(ts))
	for _, name := range []protoreflect.Name{"auction", "price", "bidder"} {
		m.Set(fields.ByName(name), protoreflect.ValueOfInt64(row[string(name)].(int64)))
	}
	if ch := fields.ByName("channel"); ch == nil {
		read["channel"] = nil
	} else if s, ok := row["channel"].(string); ok {
		m.Set(ch, protoreflect.ValueOfString(s))
	}
	body, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("encoding %v in Protobuf: %v", row, err)
	}
	return append(append(binary.BigEndian.AppendUint32([]byte{0}, uint32(c.id)), 0), body...), read
}

// floorDivMs is the whole seconds of ms (rounded down, as a Timestamp's).
func floorDivMs(ms int64) int64 {
	s := ms / 1000
	if ms%1000 < 0 {
		s--
	}
	return s
}

func (c *protoCodec) bad(t testing.TB, sample []byte) []badValue {
	t.Helper()
	if len(sample) < 7 || sample[0] != 0 || sample[5] != 0 {
		t.Fatalf("test bug: %x is not a wire-format Protobuf value", sample)
	}
	header := sample[:5]
	return []badValue{
		{"an unknown schema id", append(binary.BigEndian.AppendUint32([]byte{0}, 4242), sample[5:]...), "schema id 4242 is not in the schema registry"},
		// Field 9 (unknown), length-delimited, 127 bytes long, none there.
		{"a truncated Protobuf payload", append(append([]byte{}, header...), 0, 0x4a, 0x7f), "not a valid protobuf message"},
		// A count of -5 (zigzag 9) for the message-index list.
		{"a bad message-index list", append(append([]byte{}, header...), 0x09), "message-index list"},
		{"a JSON value", []byte(`{"auction": 1, "bidder": 2, "price": 3, "ts": 1}`), "not the Schema Registry magic byte 0"},
	}
}
