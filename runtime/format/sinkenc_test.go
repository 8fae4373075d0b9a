package format

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/streamsql/streamsql/planner/plan"
)

var encCols = plan.Schema{
	{Name: "id", Type: plan.TypeBigint, NotNull: true},
	{Name: "name", Type: plan.TypeVarchar},
	{Name: "price", Type: plan.TypeDouble},
	{Name: "ts", Type: plan.TypeTimestamp},
	{Name: "ok", Type: plan.TypeBoolean},
	{Name: "qty", Type: plan.TypeBigint, NotNull: true},
	{Name: "at", Type: plan.TypeTimestamp, NotNull: true},
}

// encRows are rows of encCols with edge values: zeros, negatives, NULLs,
// non-finite and negative-zero doubles, timestamps before 1970 and at
// the ends of the range, strings that need escaping.
var encRows = []plan.Row{
	{plan.Int(1), plan.Str("a"), plan.Float(0.5), plan.Time(1704067210123), plan.Bool(true), plan.Int(7), plan.Time(0)},
	{plan.Int(0), plan.Null, plan.Null, plan.Null, plan.Null, plan.Int(0), plan.Time(-1)},
	{plan.Int(math.MinInt64), plan.Str(""), plan.Float(math.NaN()), plan.Time(plan.MinTime), plan.Bool(false), plan.Int(-1), plan.Time(plan.MaxTime)},
	{plan.Int(math.MaxInt64), plan.Str("é \"<&>\" \x00"), plan.Float(math.Inf(-1)), plan.Time(-1999), plan.Bool(true), plan.Int(math.MinInt64), plan.Time(999)},
	{plan.Int(-5), plan.Str("x"), plan.Float(math.Copysign(0, -1)), plan.Time(1), plan.Null, plan.Int(1 << 40), plan.Time(-86400001)},
	{plan.Int(2), plan.Str("y"), plan.Float(0), plan.Time(0), plan.Bool(false), plan.Int(3), plan.Time(1000)},
}

// TestAvroEncoderBytes: the Avro encoder writes, for the generated
// schema, the bytes hamba/avro's Marshal writes for the same row as a map.
func TestAvroEncoderBytes(t *testing.T) {
	text, err := avroSink{}.generate("t_value", encCols)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := avroSink{}.encoder(text, 77, encCols, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch := avro.MustParse(text)
	for i, r := range encRows {
		m := map[string]any{}
		for j, c := range encCols {
			var v any
			switch v0 := r[j]; {
			case v0.IsNull():
			case c.Type == plan.TypeDouble:
				v = v0.F()
			case c.Type == plan.TypeVarchar:
				v = v0.S
			case c.Type == plan.TypeBoolean:
				v = v0.I != 0
			default:
				v = v0.I
			}
			if !c.NotNull && v != nil {
				v = map[string]any{map[plan.Type]string{plan.TypeDouble: "double", plan.TypeVarchar: "string", plan.TypeBoolean: "boolean", plan.TypeBigint: "long", plan.TypeTimestamp: "long.timestamp-millis"}[c.Type]: v}
			}
			m[c.Name] = v
		}
		want, err := avro.Marshal(sch, m)
		if err != nil {
			t.Fatalf("row %d: avro.Marshal: %v", i, err)
		}
		got, err := enc.Append([]byte("prefix"), r)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if !bytes.Equal(got, append([]byte("prefix\x00\x00\x00\x00\x4d"), want...)) {
			t.Fatalf("row %d:\ngot  %x\nwant prefix 00 0000004d %x", i, got, want)
		}
	}
	if _, err := enc.Append(nil, encRows[0][:3]); err == nil {
		t.Fatal("a short row encoded")
	}
	bad := append(plan.Row(nil), encRows[0]...)
	bad[0] = plan.Null
	if _, err := enc.Append(nil, bad); err == nil || !strings.Contains(err.Error(), "column id: NULL") {
		t.Fatalf("NULL for a NOT NULL column: %v", err)
	}
}

// TestAvroEncoderForeignSchema: a registered schema with an int, a
// float, timestamp-micros, [T, "null"] unions and fields without columns
// (a default, a nullable) decodes, with hamba/avro, to the row.
func TestAvroEncoderForeignSchema(t *testing.T) {
	text := `{"type":"record","name":"R","fields":[
		{"name":"extra","type":{"type":"map","values":"long"},"default":{"a":1}},
		{"name":"QTY","type":"int"},{"name":"id","type":"long"},
		{"name":"name","type":["string","null"]},{"name":"price","type":["null","float"]},
		{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
		{"name":"ok","type":["null","boolean"]},{"name":"gone","type":["null","string"]},
		{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	enc, err := avroSink{}.encoder(text, 5, encCols, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Row{plan.Int(9), plan.Str("n"), plan.Float(1.5), plan.Time(-1234), plan.Bool(true), plan.Int(-70000), plan.Time(42)}
	b, err := enc.Append(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Extra map[string]int64 `avro:"extra"`
		QTY   int32            `avro:"QTY"`
		ID    int64            `avro:"id"`
		Name  *string          `avro:"name"`
		Price *float32         `avro:"price"`
		TS    *int64           `avro:"ts"`
		OK    *bool            `avro:"ok"`
		Gone  *string          `avro:"gone"`
		At    int64            `avro:"at"`
	}
	if err := avro.Unmarshal(avro.MustParse(text), b[5:], &got); err != nil {
		t.Fatal(err)
	}
	if got.Extra["a"] != 1 || got.QTY != -70000 || got.ID != 9 || *got.Name != "n" || *got.Price != 1.5 || *got.TS != -1234000 || !*got.OK || got.Gone != nil {
		t.Fatalf("decoded %+v", got)
	}
	r[5] = plan.Int(1 << 31)
	if _, err := enc.Append(nil, r); err == nil || !strings.Contains(err.Error(), "does not fit the field's Avro int") {
		t.Fatalf("an int out of range: %v", err)
	}
}

// TestProtoEncoderBytes: the Protobuf encoder writes, for the generated
// schema, the bytes proto.Marshal (deterministic) writes for a dynamicpb
// message of the descriptor protocompile builds from the same text; and
// proto.Unmarshal reads them back to the row.
func TestProtoEncoderBytes(t *testing.T) {
	text, err := protoSink{}.generate("t_value", encCols)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := protoSink{}.encoder(text, 300, encCols, nil)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := parseSinkProto(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().Get(0)
	for i, r := range encRows {
		msg := dynamicpb.NewMessage(md)
		for j, c := range encCols {
			v := r[j]
			if v.IsNull() {
				continue
			}
			f := md.Fields().ByName(protoreflect.Name(c.Name))
			var pv protoreflect.Value
			switch c.Type {
			case plan.TypeBigint:
				pv = protoreflect.ValueOfInt64(v.I)
			case plan.TypeDouble:
				pv = protoreflect.ValueOfFloat64(v.F())
			case plan.TypeVarchar:
				pv = protoreflect.ValueOfString(v.S)
			case plan.TypeBoolean:
				pv = protoreflect.ValueOfBool(v.I != 0)
			case plan.TypeTimestamp:
				sec, ms := v.I/1000, v.I%1000
				if ms < 0 {
					sec, ms = sec-1, ms+1000
				}
				ts := dynamicpb.NewMessage(f.Message())
				tb, _ := proto.Marshal(&timestamppb.Timestamp{Seconds: sec, Nanos: int32(ms * 1e6)})
				if err := proto.Unmarshal(tb, ts); err != nil {
					t.Fatal(err)
				}
				pv = protoreflect.ValueOfMessage(ts)
			}
			msg.Set(f, pv)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := enc.Append(nil, r)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		hdr := []byte{0, 0, 0, 0x01, 0x2c, 0} // magic, id 300, message indexes [0]
		if !bytes.Equal(got, append(hdr, want...)) {
			t.Fatalf("row %d:\ngot  %x\nwant %x %x", i, got, hdr, want)
		}
		back := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(got[len(hdr):], back); err != nil || !proto.Equal(back, msg) {
			t.Fatalf("row %d: read back %v (%v), want %v", i, back, err, msg)
		}
	}
}

// TestProtoEncoderForeignSchema: a registered message with other integer
// kinds, a float and fields without columns; a proto2 required field
// without a column is refused.
func TestProtoEncoderForeignSchema(t *testing.T) {
	text := `syntax = "proto3";
import "google/protobuf/timestamp.proto";
message R {
  sint64 id = 10; optional string name = 3; optional float price = 4;
  google.protobuf.Timestamp ts = 5; optional bool ok = 6; sfixed32 qty = 7;
  google.protobuf.Timestamp at = 8; repeated string unused = 9;
}
message Other { int64 x = 1; }`
	enc, err := protoSink{}.encoder(text, 1, encCols, nil)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := parseSinkProto(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().Get(0)
	r := plan.Row{plan.Int(-3), plan.Null, plan.Float(2.5), plan.Time(-1), plan.Bool(false), plan.Int(-9), plan.Time(5)}
	b, err := enc.Append(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	msg := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b[6:], msg); err != nil {
		t.Fatal(err)
	}
	get := func(n string) protoreflect.Value { return msg.Get(md.Fields().ByName(protoreflect.Name(n))) }
	ts := get("ts").Message()
	if get("id").Int() != -3 || msg.Has(md.Fields().ByName("name")) || get("price").Float() != 2.5 ||
		!msg.Has(md.Fields().ByName("ok")) || get("ok").Bool() || get("qty").Int() != -9 ||
		ts.Get(ts.Descriptor().Fields().ByName("seconds")).Int() != -1 || ts.Get(ts.Descriptor().Fields().ByName("nanos")).Int() != 999e6 {
		t.Fatalf("decoded %v", msg)
	}
	r[5] = plan.Int(math.MaxInt32 + 1)
	if _, err := enc.Append(nil, r); err == nil || !strings.Contains(err.Error(), "does not fit the field's 32-bit integer") {
		t.Fatalf("out of range: %v", err)
	}
	_, err = protoSink{}.encoder("syntax = \"proto2\";\nmessage R { required int64 id = 1; required string must = 2; optional string name = 3; optional double price = 4; optional int64 qty = 5; optional bool ok = 6; }", 1,
		plan.Schema{encCols[0], encCols[1], encCols[2], encCols[4], encCols[5]}, nil)
	if err == nil || !strings.Contains(err.Error(), "field must of message R is required and has no column") {
		t.Fatalf("a required field without a column: %v", err)
	}
}

// TestJSONSchemaCheck: which registered JSON Schemas take the sink's
// JSON (register false).
func TestJSONSchemaSinkCheck(t *testing.T) {
	cols := plan.Schema{{Name: "id", Type: plan.TypeBigint, NotNull: true}, {Name: "v", Type: plan.TypeDouble}}
	body := func(dst []byte, _ plan.Row) ([]byte, error) { return append(dst, "{}"...), nil }
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object"}`, ""},
		{`{"type":"object","properties":{"id":{"type":"number"},"v":{"type":["number","null"]}}}`, ""},
		{`{"type":"object","properties":{"id":{"type":"integer"},"v":{"anyOf":[{"type":"number"},{"type":"null"}]}},"additionalProperties":false}`, ""},
		{`{"type":"array"}`, "not object"},
		{`{"type":"object","properties":{"id":{"type":"integer"}},"additionalProperties":false}`, "column v has no property"},
		{`{"type":"object","properties":{"id":{"type":"string"}}}`, "property id allows [string], and column id is BIGINT"},
		{`{"type":"object","properties":{"v":{"type":"number"}}}`, "property v allows [number], not null, and column v may be NULL"},
		{`{"type":"object","required":["id","w"]}`, "property w is required, and the sink has no column w"},
		{`{`, "not a JSON Schema object"},
	} {
		enc, err := jsonSchemaSink{}.encoder(c.schema, 3, cols, body)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.schema, err)
				continue
			}
			b, _ := enc.Append(nil, nil)
			if string(b) != "\x00\x00\x00\x00\x03{}" {
				t.Errorf("%s: record %q", c.schema, b)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.schema, err, c.want)
		}
	}
}
