package format

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/streamsql/streamsql/planner/plan"
)

// The three versions of the protobuf evolution test: v2 adds an optional
// bidder, v3 removes note. Each file's first message is Other and Bid is
// nested in Envelope (message index [1, 0]), so the index is read.
const (
	pbBidV1 = `syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
message Other { string name = 1; int64 auction = 2; }
message Envelope {
  message Bid {
    int64 auction = 1;
    double price = 2;
    google.protobuf.Timestamp ts = 3;
    string note = 4;
  }
}`
	pbBidV2 = `syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
message Other { string name = 1; int64 auction = 2; }
message Envelope {
  message Bid {
    int64 auction = 1;
    double price = 2;
    google.protobuf.Timestamp ts = 3;
    string note = 4;
    optional string bidder = 5;
  }
}`
	pbBidV3 = `syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
message Other { string name = 1; int64 auction = 2; }
message Envelope {
  message Bid {
    reserved 4;
    int64 auction = 1;
    double price = 2;
    google.protobuf.Timestamp ts = 3;
    optional string bidder = 5;
  }
}`
)

// pbCompile compiles .proto text (with the files it imports) as a
// producer would, with protocompile.
func pbCompile(t testing.TB, text string, imports map[string]string) protoreflect.FileDescriptor {
	t.Helper()
	files := map[string]string{"test.proto": text}
	for k, v := range imports {
		files[k] = v
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(files)})}
	fs, err := c.Compile(context.Background(), "test.proto")
	if err != nil {
		t.Fatal(err)
	}
	return fs[0]
}

// pbMsg is a dynamic message of md with fields set by name; a value of
// map[string]any is a message field.
func pbMsg(t testing.TB, md protoreflect.MessageDescriptor, fields map[string]any) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	for name, v := range fields {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("no field %s in %s", name, md.FullName())
		}
		switch v := v.(type) {
		case map[string]any:
			sub := pbMsg(t, fd.Message(), v)
			m.Set(fd, protoreflect.ValueOfMessage(sub))
		case string:
			if fd.Kind() == protoreflect.EnumKind {
				m.Set(fd, protoreflect.ValueOfEnum(fd.Enum().Values().ByName(protoreflect.Name(v)).Number()))
			} else {
				m.Set(fd, protoreflect.ValueOf(v))
			}
		case []string:
			l := m.Mutable(fd).List()
			for _, s := range v {
				l.Append(protoreflect.ValueOf(s))
			}
		default:
			m.Set(fd, protoreflect.ValueOf(v))
		}
	}
	return m
}

// pbFrame is m behind the Confluent header of id and message index idx,
// written with franz-go's serde header (not this package's).
func pbFrame(t testing.TB, id int, idx []int, m proto.Message) []byte {
	t.Helper()
	b, err := (&sr.ConfluentHeader{}).AppendEncode(nil, id, idx)
	if err != nil {
		t.Fatal(err)
	}
	body, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, body...)
}

func registerProto(t testing.TB, reg *srfake.Registry, subject, text string, refs ...sr.SchemaReference) int {
	t.Helper()
	id, _, err := reg.RegisterSchema(subject, sr.Schema{Schema: text, Type: sr.TypeProtobuf, References: refs})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestMessageIndex(t *testing.T) {
	for _, idx := range [][]int{{0}, {1}, {1, 0}, {3, 2, 70000}} {
		v, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, 1, idx)
		v = append(v[5:], 0xAA)
		list, rest, err := SplitMessageIndex(v)
		if err != nil || !bytes.Equal(rest, []byte{0xAA}) || fmt.Sprint(messageIndex(list)) != fmt.Sprint(idx) {
			t.Errorf("%v: list % x rest % x %v", idx, list, rest, err)
		}
		if !bytes.Equal(AppendMessageIndex(nil, idx...), v[:len(v)-1]) {
			t.Errorf("%v: AppendMessageIndex % x, franz-go % x", idx, AppendMessageIndex(nil, idx...), v[:len(v)-1])
		}
	}
	for _, c := range []struct {
		v    []byte
		want string
	}{
		{nil, "truncated"},
		{[]byte{0x01}, "count of -1"},
		{[]byte{0x04, 0x02}, "truncated"},
		{[]byte{0x02, 0x01}, "index -1"},
		{[]byte{0x80}, "truncated"},
		{binary64(100), "count of 100"},
	} {
		if _, _, err := SplitMessageIndex(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("% x: %v, want %q", c.v, err, c.want)
		}
	}
}

func binary64(n int64) []byte { return protowire.AppendVarint(nil, protowire.EncodeZigZag(n)) }

var pbBidColumns = plan.Schema{
	{Name: "auction", Type: plan.TypeBigint, NotNull: true},
	{Name: "Price", Type: plan.TypeDouble},
	{Name: "ts", Type: plan.TypeTimestamp, NotNull: true},
	{Name: "note", Type: plan.TypeVarchar},
	{Name: "bidder", Type: plan.TypeVarchar},
	{Name: "_offset", Type: plan.TypeBigint},
}

func TestProtobufEvolution(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	fetches := countIDs(reg)
	texts := []string{pbBidV1, pbBidV2, pbBidV3}
	var ids []int
	var bids, others []protoreflect.MessageDescriptor
	for _, s := range texts {
		ids = append(ids, registerProto(t, reg, "bids-value", s))
		fd := pbCompile(t, s, nil)
		bids = append(bids, fd.Messages().ByName("Envelope").Messages().ByName("Bid"))
		others = append(others, fd.Messages().ByName("Other"))
	}
	tab := Table{Name: "bids", Columns: pbBidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "protobuf", "schema_registry": reg.URL(), "message": "shop.v1.Envelope.Bid"}}
	if err := Check(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		a, p, ms := int64(i%4), float64(i)*1.5, int64(1_700_000_000_000+i*1001)
		ts := map[string]any{"seconds": ms / 1000, "nanos": int32(ms%1000) * 1_000_000}
		v := i % 3
		fields := map[string]any{"auction": a, "price": p, "ts": ts}
		want := plan.Row{plan.Int(a), plan.Float(p), plan.Time(ms), plan.Null, plan.Null, plan.Null}
		if v < 2 {
			fields["note"] = fmt.Sprint("n", i)
			want[3] = plan.Str(fmt.Sprint("n", i))
			if i%2 == 0 {
				delete(fields, "note") // proto3: an empty string is not written, and reads as ""
				want[3] = plan.Str("")
			}
		}
		if v > 0 && i%4 != 1 {
			fields["bidder"] = "alice"
			want[4] = plan.Str("alice")
		}
		if i == 3 {
			delete(fields, "auction") // zero: not written
			want[0] = plan.Int(0)
		}
		row, err := d.Decode(pbFrame(t, ids[v], []int{1, 0}, pbMsg(t, bids[v], fields)))
		if err != nil {
			t.Fatalf("record %d (v%d): %v", i, v+1, err)
		}
		if fmt.Sprint(row) != fmt.Sprint(want) {
			t.Fatalf("record %d (v%d): %v, want %v", i, v+1, row, want)
		}
	}
	// The first message (index [0], written as the single byte 0): Other
	// has no ts, which the table's event time needs.
	_, err = d.Decode(pbFrame(t, ids[0], []int{0}, pbMsg(t, others[0], map[string]any{"name": "x", "auction": int64(1)})))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema id %d, message shop.v1.Other: no field for the NOT NULL column auction", ids[0])) &&
		!strings.Contains(err.Error(), "no field for the event-time column ts") {
		t.Fatalf("message Other: %v", err)
	}
	// Other into a table of its fields.
	d2, err := NewDecoder(Table{Name: "o", Columns: plan.Schema{{Name: "name", Type: plan.TypeVarchar}, {Name: "auction", Type: plan.TypeDouble}}, EventTime: -1, Attrs: tab.Attrs})
	if err != nil {
		t.Fatal(err)
	}
	row, err := d2.Decode(pbFrame(t, ids[2], []int{0}, pbMsg(t, others[2], map[string]any{"name": "x", "auction": int64(-3)})))
	if err != nil || fmt.Sprint(row) != fmt.Sprint(plan.Row{plan.Str("x"), plan.Float(-3)}) {
		t.Fatalf("message Other: %v %v", row, err)
	}
	// Check fetched the latest by subject; each decoder each id once.
	if n := fetches.Load(); n != 4 {
		t.Fatalf("%d schema-by-id fetches, want 4 (3 ids, and one for the second decoder)", n)
	}
}

const pbAll = `syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "common/color.proto";
message All {
  int32 i32 = 1; int64 i64 = 2; sint32 s32 = 3; sint64 s64 = 4; uint32 u32 = 5; uint64 u64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10;
  float fl = 11; double db = 12; string s = 13; common.Color e = 14; bool b = 15;
  google.protobuf.Timestamp ts = 16;
  google.protobuf.Int64Value wi = 17; google.protobuf.StringValue ws = 18;
  google.protobuf.DoubleValue wd = 19; google.protobuf.BoolValue wb = 20;
  optional int64 oi = 21;
  repeated string skip_list = 22; map<string, int64> skip_map = 23; All skip_msg = 24; bytes skip_bytes = 25;
  oneof choice { string c_str = 26; int64 c_int = 27; }
  int32 di = 28;
  google.protobuf.UInt32Value wu = 29;
}`

const pbColor = `syntax = "proto3";
package common;
enum Color { RED = 0; GREEN = 1; BLUE = 2; }`

var pbAllColumns = plan.Schema{
	{Name: "i32", Type: plan.TypeBigint}, {Name: "i64", Type: plan.TypeBigint}, {Name: "s32", Type: plan.TypeBigint},
	{Name: "s64", Type: plan.TypeBigint}, {Name: "u32", Type: plan.TypeBigint}, {Name: "u64", Type: plan.TypeBigint},
	{Name: "f32", Type: plan.TypeBigint}, {Name: "f64", Type: plan.TypeBigint}, {Name: "sf32", Type: plan.TypeBigint},
	{Name: "sf64", Type: plan.TypeBigint}, {Name: "fl", Type: plan.TypeDouble}, {Name: "db", Type: plan.TypeDouble},
	{Name: "s", Type: plan.TypeVarchar}, {Name: "e", Type: plan.TypeVarchar}, {Name: "b", Type: plan.TypeBoolean},
	{Name: "ts", Type: plan.TypeTimestamp}, {Name: "wi", Type: plan.TypeBigint}, {Name: "ws", Type: plan.TypeVarchar},
	{Name: "wd", Type: plan.TypeDouble}, {Name: "wb", Type: plan.TypeBoolean}, {Name: "oi", Type: plan.TypeBigint},
	{Name: "c_str", Type: plan.TypeVarchar}, {Name: "c_int", Type: plan.TypeBigint}, {Name: "di", Type: plan.TypeDouble},
	{Name: "wu", Type: plan.TypeDouble}, {Name: "absent", Type: plan.TypeBigint},
}

// pbAllRegistry registers common/color.proto and pbAll referencing it.
func pbAllRegistry(t testing.TB, reg *srfake.Registry) (int, protoreflect.MessageDescriptor) {
	registerProto(t, reg, "color", pbColor)
	id := registerProto(t, reg, "all-value", pbAll, sr.SchemaReference{Name: "common/color.proto", Subject: "color", Version: 1})
	return id, pbCompile(t, pbAll, map[string]string{"common/color.proto": pbColor}).Messages().ByName("All")
}

// TestProtobufTypes reads every mapped type (the enum from a referenced
// file), skipping fields of every kind the table lacks; absent fields
// read as their zero value, or NULL where they have presence.
func TestProtobufTypes(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	id, md := pbAllRegistry(t, reg)
	tab := Table{Name: "all", Columns: pbAllColumns, EventTime: -1, Attrs: map[string]string{"topic": "all", "format": "protobuf", "schema_registry": reg.URL()}}
	if err := Check(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	full := map[string]any{
		"i32": int32(-5), "i64": int64(math.MinInt64), "s32": int32(-7), "s64": int64(-8), "u32": uint32(math.MaxUint32), "u64": uint64(math.MaxInt64),
		"f32": uint32(10), "f64": uint64(11), "sf32": int32(-12), "sf64": int64(-13), "fl": float32(0.5), "db": math.Pi, "s": "héllo",
		"e": "BLUE", "b": true, "ts": map[string]any{"seconds": int64(-1), "nanos": int32(999_000_000)},
		"wi": map[string]any{"value": int64(42)}, "ws": map[string]any{}, "wd": map[string]any{"value": 2.5}, "wb": map[string]any{"value": true},
		"oi": int64(0), "skip_list": []string{"a", "b"}, "skip_msg": map[string]any{"s": "inner", "i64": int64(3)}, "skip_bytes": []byte("zz"),
		"c_str": "chosen", "di": int32(-9), "wu": map[string]any{"value": uint32(7)},
	}
	m := pbMsg(t, md, full)
	m.Mutable(md.Fields().ByName("skip_map")).Map().Set(protoreflect.ValueOf("k").MapKey(), protoreflect.ValueOf(int64(1)))
	row, err := d.Decode(pbFrame(t, id, []int{0}, m))
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Row{plan.Int(-5), plan.Int(math.MinInt64), plan.Int(-7), plan.Int(-8), plan.Int(math.MaxUint32), plan.Int(math.MaxInt64),
		plan.Int(10), plan.Int(11), plan.Int(-12), plan.Int(-13), plan.Float(0.5), plan.Float(math.Pi), plan.Str("héllo"),
		plan.Str("BLUE"), plan.Bool(true), plan.Time(-1), plan.Int(42), plan.Str(""), plan.Float(2.5), plan.Bool(true),
		plan.Int(0), plan.Str("chosen"), plan.Null, plan.Float(-9), plan.Float(7), plan.Null}
	if fmt.Sprint(row) != fmt.Sprint(want) {
		t.Fatalf("row %v\nwant %v", row, want)
	}
	// Nothing set: proto3 has no presence for its plain scalars (their
	// zero, the enum's first value); optional, message and oneof fields
	// absent are NULL.
	row, err = d.Decode(pbFrame(t, id, []int{0}, dynamicpb.NewMessage(md)))
	if err != nil {
		t.Fatal(err)
	}
	want = plan.Row{plan.Int(0), plan.Int(0), plan.Int(0), plan.Int(0), plan.Int(0), plan.Int(0), plan.Int(0), plan.Int(0), plan.Int(0), plan.Int(0),
		plan.Float(0), plan.Float(0), plan.Str(""), plan.Str("RED"), plan.Bool(false), plan.Null, plan.Null, plan.Null, plan.Null, plan.Null,
		plan.Null, plan.Null, plan.Null, plan.Float(0), plan.Null, plan.Null}
	if fmt.Sprint(row) != fmt.Sprint(want) {
		t.Fatalf("empty message: row %v\nwant %v", row, want)
	}
	// Two messages concatenated are one merged message (as protobuf
	// reads them): a later oneof member clears the earlier, a Timestamp's
	// fields merge, a scalar's last value wins. Checked against
	// proto.Unmarshal into a dynamic message.
	a := pbFrame(t, id, []int{0}, pbMsg(t, md, map[string]any{"c_str": "first", "ts": map[string]any{"seconds": int64(5)}, "i64": int64(1), "e": "GREEN"}))
	b, _ := proto.Marshal(pbMsg(t, md, map[string]any{"c_int": int64(9), "ts": map[string]any{"nanos": int32(7_000_000)}, "i64": int64(2)}))
	merged := append(a, b...)
	oracle := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(merged[6:], oracle); err != nil {
		t.Fatal(err)
	}
	row, err = d.Decode(merged)
	if err != nil {
		t.Fatal(err)
	}
	ts := oracle.Get(md.Fields().ByName("ts")).Message()
	wantMS := ts.Get(ts.Descriptor().Fields().ByName("seconds")).Int()*1000 + ts.Get(ts.Descriptor().Fields().ByName("nanos")).Int()/1_000_000
	if row[15] != plan.Time(wantMS) || wantMS != 5007 || row[1] != plan.Int(oracle.Get(md.Fields().ByName("i64")).Int()) ||
		oracle.Has(md.Fields().ByName("c_str")) || row[21] != plan.Null || row[22] != plan.Int(9) || row[13] != plan.Str("GREEN") {
		t.Fatalf("merged: %v", row)
	}
	// An enum number the schema does not name reads as the number.
	v := pbFrame(t, id, []int{0}, dynamicpb.NewMessage(md))
	v = protowire.AppendVarint(protowire.AppendTag(v, 14, protowire.VarintType), 77)
	if row, err = d.Decode(v); err != nil || row[13] != plan.Str("77") {
		t.Fatalf("unknown enum number: %v %v", row, err)
	}
	// A known field with another wire type is an unknown field, skipped
	// (as protobuf does): i64 as a fixed32.
	v = pbFrame(t, id, []int{0}, pbMsg(t, md, map[string]any{"i64": int64(4)}))
	v = protowire.AppendFixed32(protowire.AppendTag(v, 2, protowire.Fixed32Type), 99)
	if row, err = d.Decode(v); err != nil || row[1] != plan.Int(4) {
		t.Fatalf("wire type mismatch: %v %v", row, err)
	}
}

// TestProtobufProto2: proto2 fields have presence (absent: NULL, their
// defaults not applied); a number its closed enum lacks reads as the
// number, as proto.Unmarshal keeps it.
func TestProtobufProto2(t *testing.T) {
	const text = `syntax = "proto2";
package p2;
enum Size { SMALL = 1; LARGE = 2; }
message M { optional int64 n = 1 [default = 5]; required string s = 2; optional Size size = 3; }`
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	id := registerProto(t, reg, "m-value", text)
	md := pbCompile(t, text, nil).Messages().ByName("M")
	tab := Table{Name: "m", Columns: plan.Schema{{Name: "n", Type: plan.TypeBigint}, {Name: "s", Type: plan.TypeVarchar}, {Name: "size", Type: plan.TypeVarchar}},
		EventTime: -1, Attrs: map[string]string{"topic": "m", "format": "protobuf", "schema_registry": reg.URL()}}
	if err := Check(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	v := pbFrame(t, id, []int{0}, pbMsg(t, md, map[string]any{"s": "x", "size": "LARGE"}))
	if row, err := d.Decode(v); err != nil || fmt.Sprint(row) != fmt.Sprint(plan.Row{plan.Null, plan.Str("x"), plan.Str("LARGE")}) {
		t.Fatalf("%v %v", row, err)
	}
	v = protowire.AppendVarint(protowire.AppendTag(v, 3, protowire.VarintType), 9)
	oracle := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(v[6:], oracle); err != nil {
		t.Fatal(err)
	}
	if row, err := d.Decode(v); err != nil || row[2] != plan.Str(fmt.Sprint(int32(oracle.Get(md.Fields().ByName("size")).Enum()))) || row[2] != plan.Str("9") {
		t.Fatalf("closed enum: %v %v", row, err)
	}
	// An empty message (its required s missing, which proto.Marshal would
	// refuse to write): every column NULL.
	if row, err := d.Decode(AppendMessageIndex(AppendHeader(nil, id), 0)); err != nil || fmt.Sprint(row) != fmt.Sprint(plan.Row{plan.Null, plan.Null, plan.Null}) {
		t.Fatalf("empty: %v %v", row, err)
	}
}

func TestProtobufCheck(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	pbAllRegistry(t, reg)
	registerProto(t, reg, "bids-value", pbBidV3)
	if _, _, err := reg.RegisterSchema("avro-value", sr.Schema{Schema: bidV1, Type: sr.TypeAvro}); err != nil {
		t.Fatal(err)
	}
	registerProto(t, reg, "broken-value", `syntax = "proto3"; message X { int64 a = 1 }`)
	registerProto(t, reg, "noref-value", pbAll)
	attrs := func(topic, message string) map[string]string {
		return map[string]string{"topic": topic, "format": "protobuf", "schema_registry": reg.URL(), "message": message}
	}
	col := func(name string, typ plan.Type, notNull bool) plan.Column {
		return plan.Column{Name: name, Type: typ, NotNull: notNull}
	}
	for _, c := range []struct {
		cols  plan.Schema
		et    int
		attrs map[string]string
		want  string
	}{
		{plan.Schema{col("i64", plan.TypeVarchar, false)}, -1, attrs("all", ""),
			"subject all-value (latest version, schema id 2), message t.All: field i64 is protobuf int64, which does not fit column i64 VARCHAR (it takes string, an enum or google.protobuf.StringValue)"},
		{plan.Schema{col("skip_list", plan.TypeVarchar, false)}, -1, attrs("all", ""), "field skip_list is protobuf repeated string, which does not fit column skip_list VARCHAR (it takes string, an enum or google.protobuf.StringValue): repeated and map fields are not read into columns"},
		{plan.Schema{col("skip_map", plan.TypeBigint, false)}, -1, attrs("all", ""), "field skip_map is protobuf map<string, int64>, which does not fit"},
		{plan.Schema{col("skip_msg", plan.TypeVarchar, false)}, -1, attrs("all", ""), "field skip_msg is protobuf t.All, which does not fit column skip_msg VARCHAR"},
		{plan.Schema{col("skip_bytes", plan.TypeVarchar, false)}, -1, attrs("all", ""), "field skip_bytes is protobuf bytes, which does not fit"},
		{plan.Schema{col("ts", plan.TypeBigint, false)}, -1, attrs("all", ""), "field ts is protobuf google.protobuf.Timestamp, which does not fit column ts BIGINT"},
		{plan.Schema{col("wi", plan.TypeVarchar, false)}, -1, attrs("all", ""), "field wi is protobuf google.protobuf.Int64Value, which does not fit column wi VARCHAR"},
		{plan.Schema{col("db", plan.TypeBigint, false)}, -1, attrs("all", ""), "field db is protobuf double, which does not fit column db BIGINT"},
		{plan.Schema{col("e", plan.TypeBigint, false)}, -1, attrs("all", ""), "field e is protobuf enum common.Color, which does not fit column e BIGINT"},
		{plan.Schema{col("price", plan.TypeDouble, true)}, -1, attrs("bids", ""), "message shop.v1.Other: no field for the NOT NULL column price"},
		{plan.Schema{col("name", plan.TypeVarchar, false), col("when", plan.TypeTimestamp, false)}, 1, attrs("bids", "Other"), "message shop.v1.Other: no field for the event-time column when (fields: name, auction)"},
		{plan.Schema{col("note", plan.TypeVarchar, true)}, -1, attrs("bids", "shop.v1.Envelope.Bid"), "message shop.v1.Envelope.Bid: no field for the NOT NULL column note (fields: auction, price, ts, bidder)"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, attrs("bids", "Nope"), "no message Nope in the schema (messages: shop.v1.Other, shop.v1.Envelope, shop.v1.Envelope.Bid)"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, attrs("other", ""), "subject other-value is not in the schema registry"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, attrs("avro", ""), "a AVRO schema, not PROTOBUF (format protobuf)"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, attrs("broken", ""), "not a valid .proto schema"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, attrs("noref", ""), "common/color.proto"},
	} {
		err := Check(context.Background(), Table{Name: "t", Columns: c.cols, EventTime: c.et, Attrs: c.attrs})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.cols, err, c.want)
		}
	}
	// A nullable column the message lacks is NULL until a writer has it.
	if err := Check(context.Background(), Table{Name: "t", Columns: plan.Schema{col("auction", plan.TypeBigint, true), col("later", plan.TypeVarchar, false)}, EventTime: -1, Attrs: attrs("bids", "shop.v1.Envelope.Bid")}); err != nil {
		t.Fatal(err)
	}
}

func TestProtobufBadRecords(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	fetches := countIDs(reg)
	id := registerProto(t, reg, "bids-value", pbBidV3)
	// A later version changes price to a string: its records do not fit.
	strText := strings.Replace(pbBidV3, "double price", "string price", 1)
	idStr := registerProto(t, reg, "bids-value", strText)
	u64Text := strings.Replace(pbBidV3, "int64 auction = 1;", "uint64 auction = 1;", 1)
	optText := strings.Replace(pbBidV3, "int64 auction = 1;", "optional int64 auction = 1;", 1)
	idU64 := registerProto(t, reg, "bids-value", u64Text)
	idOpt := registerProto(t, reg, "bids-value", optText)
	idBad := registerProto(t, reg, "bids-value", "syntax = \"proto3\"; message {")
	tab := Table{Name: "bids", Columns: pbBidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "protobuf", "schema_registry": reg.URL()}}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	md := func(text string) protoreflect.MessageDescriptor {
		return pbCompile(t, text, nil).Messages().ByName("Envelope").Messages().ByName("Bid")
	}
	ts := map[string]any{"seconds": int64(1_700_000_000)}
	good := pbFrame(t, id, []int{1, 0}, pbMsg(t, md(pbBidV3), map[string]any{"auction": int64(1), "price": 2.0, "ts": ts, "bidder": "b"}))
	withIndex := func(list []byte) []byte { return append(append(AppendHeader(nil, id), list...), good[8:]...) }
	for _, c := range []struct {
		v    []byte
		want string
	}{
		{[]byte(`{"auction": 1}`), "not the Schema Registry magic byte 0"},
		{good[:3], "shorter than the 5-byte Schema Registry header"},
		{append(AppendMessageIndex(AppendHeader(nil, id), 1, 0), 0x2a, 0x05, 'a', 'b'), "not a valid protobuf message of its schema: unexpected EOF"},
		{append(AppendHeader(nil, 999), good[5:]...), fmt.Sprintf("schema id 999 is not in the schema registry %s", reg.URL())},
		{withIndex([]byte{0x04, 0x02, 0x06}), fmt.Sprintf("schema id %d: message index [1 3] names no message of the schema (index 3 of 1)", id)},
		{withIndex([]byte{0x02, 0x0a}), fmt.Sprintf("schema id %d: message index [5] names no message of the schema (index 5 of 2)", id)},
		{withIndex([]byte{0x03}), fmt.Sprintf("schema id %d: the message-index list has a count of -2", id)},
		{AppendHeader(nil, id), fmt.Sprintf("schema id %d: the message-index list is truncated", id)},
		{pbFrame(t, idStr, []int{1, 0}, pbMsg(t, md(strText), map[string]any{"price": "x", "ts": ts})),
			fmt.Sprintf("schema id %d, message shop.v1.Envelope.Bid: field price is protobuf string, which does not fit column Price DOUBLE", idStr)},
		{pbFrame(t, idU64, []int{1, 0}, pbMsg(t, md(u64Text), map[string]any{"auction": uint64(math.MaxUint64), "ts": ts})),
			"column auction: 18446744073709551615 is beyond BIGINT's range"},
		{pbFrame(t, idOpt, []int{1, 0}, pbMsg(t, md(optText), map[string]any{"ts": ts})),
			"column auction: field auction is absent, for a NOT NULL column"},
		{pbFrame(t, id, []int{1, 0}, pbMsg(t, md(pbBidV3), map[string]any{"auction": int64(1), "ts": map[string]any{"seconds": int64(math.MaxInt64)}})),
			"column ts: a Timestamp of 9223372036854775807 seconds is out of the range of TIMESTAMP"},
		{pbFrame(t, id, []int{1, 0}, pbMsg(t, md(pbBidV3), map[string]any{"auction": int64(1)})), "column ts: field ts is absent, for a NOT NULL column"},
		{append(good[:len(good):len(good)], 0x2a, 0x02, 0xff, 0xfe), "column bidder: a string that is not valid UTF-8"},
		{append(good[:len(good):len(good)], 0x00), "not a valid protobuf message of its schema: invalid field number"},
		{append(AppendHeader(nil, idBad), 0), fmt.Sprintf("schema id %d: not a valid .proto schema", idBad)},
	} {
		if _, err := d.Decode(c.v); err == nil || !strings.Contains(err.Error(), c.want) || IsRetryable(err) {
			t.Errorf("% x: %v, want %q", c.v, err, c.want)
		}
	}
	if row, err := d.Decode(good); err != nil || row[0] != plan.Int(1) || row[4] != plan.Str("b") {
		t.Fatal(row, err)
	}
	// Each id asked once, the unknown one remembered for a while.
	before := fetches.Load()
	if _, err := d.Decode(append(AppendHeader(nil, 999), good[5:]...)); err == nil {
		t.Fatal("unknown id decoded")
	}
	if n := fetches.Load(); n != before || n != 6 {
		t.Fatalf("%d then %d schema fetches, want 6 (5 ids and the unknown one)", before, n)
	}

	// The registry unavailable for the schema or for its reference:
	// retryable, not a bad record; once it answers, the record decodes.
	down := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer down.Close()
	allID, allMD := pbAllRegistry(t, down)
	var failing atomic.Value // the path prefix answered 503
	failing.Store("")
	down.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if p := failing.Load().(string); p != "" && strings.HasPrefix(r.URL.Path, p) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	d3, err := NewDecoder(Table{Name: "all", Columns: pbAllColumns, EventTime: -1, Attrs: map[string]string{"topic": "all", "format": "protobuf", "schema_registry": down.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	v := pbFrame(t, allID, []int{0}, pbMsg(t, allMD, map[string]any{"e": "GREEN"}))
	for _, c := range []struct{ path, want string }{
		{"/schemas/ids/", fmt.Sprintf("is unavailable: schema id %d: ", allID)},
		{"/subjects/color/", "reference common/color.proto: schema registry " + down.URL() + " is unavailable: subject color version 1: "},
	} {
		failing.Store(c.path)
		if _, err := d3.Decode(v); !IsRetryable(err) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("registry failing %s: %v, want %q", c.path, err, c.want)
		}
	}
	failing.Store("")
	if row, err := d3.Decode(v); err != nil || row[13] != plan.Str("GREEN") {
		t.Fatalf("registry back: %v %v", row, err)
	}
}

// BenchmarkProtobufDecode: one registry-framed Bid (five fields, a
// string and a Timestamp among them) into a row, walked with protowire;
// BenchmarkProtobufDynamicpb is the same record through proto.Unmarshal
// into one reused dynamicpb message, without even making the row.
func BenchmarkProtobufDecode(b *testing.B) {
	reg := srfake.New()
	defer reg.Close()
	id := registerProto(b, reg, "bids-value", pbBidV2)
	d, err := NewDecoder(Table{Name: "bids", Columns: pbBidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "protobuf", "schema_registry": reg.URL()}})
	if err != nil {
		b.Fatal(err)
	}
	v := benchBid(b, id)
	if _, err := d.Decode(v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBid(b *testing.B, id int) []byte {
	md := pbCompile(b, pbBidV2, nil).Messages().ByName("Envelope").Messages().ByName("Bid")
	return pbFrame(b, id, []int{1, 0}, pbMsg(b, md, map[string]any{"auction": int64(7), "price": 1.5, "ts": map[string]any{"seconds": int64(1_700_000_000), "nanos": int32(5_000_000)}, "note": "a note", "bidder": "someone"}))
}

func BenchmarkProtobufDynamicpb(b *testing.B) {
	md := pbCompile(b, pbBidV2, nil).Messages().ByName("Envelope").Messages().ByName("Bid")
	v := benchBid(b, 1)[8:]
	m := dynamicpb.NewMessage(md)
	b.ReportAllocs()
	for b.Loop() {
		m.Reset()
		if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(v, m); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzProtobufDecode: any bytes after the header are a row or an error,
// never a panic; and when proto.Unmarshal reads them as the message, the
// row is what that message holds (except a uint64 beyond BIGINT, which is
// an error here).
func FuzzProtobufDecode(f *testing.F) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	id, md := pbAllRegistry(f, reg)
	cols := plan.Schema{{Name: "i32", Type: plan.TypeBigint}, {Name: "s64", Type: plan.TypeBigint}, {Name: "u64", Type: plan.TypeBigint},
		{Name: "fl", Type: plan.TypeDouble}, {Name: "s", Type: plan.TypeVarchar}, {Name: "e", Type: plan.TypeVarchar},
		{Name: "ts", Type: plan.TypeTimestamp}, {Name: "wi", Type: plan.TypeBigint}, {Name: "oi", Type: plan.TypeBigint},
		{Name: "c_str", Type: plan.TypeVarchar}, {Name: "c_int", Type: plan.TypeBigint}}
	d, err := NewDecoder(Table{Name: "t", Columns: cols, EventTime: -1, Attrs: map[string]string{"topic": "all", "format": "protobuf", "schema_registry": reg.URL()}})
	if err != nil {
		f.Fatal(err)
	}
	seed := pbMsg(f, md, map[string]any{"i32": int32(-1), "s64": int64(-2), "u64": uint64(3), "fl": float32(1.5), "s": "x", "e": "GREEN",
		"ts": map[string]any{"seconds": int64(100), "nanos": int32(-1)}, "wi": map[string]any{"value": int64(4)}, "oi": int64(5), "c_int": int64(6),
		"skip_list": []string{"a"}, "skip_msg": map[string]any{"s": "y"}})
	sb, _ := proto.Marshal(seed)
	f.Add(sb)
	f.Add([]byte{0x0b, 0x0c}) // a group
	f.Add([]byte{0xd2, 0x01, 0x01, 'a', 0xd8, 0x01, 0x05})
	header := append(AppendHeader(nil, id), 0)
	f.Fuzz(func(t *testing.T, msg []byte) {
		row, err := d.Decode(append(header[:len(header):len(header)], msg...))
		oracle := dynamicpb.NewMessage(md)
		uerr := proto.Unmarshal(msg, oracle)
		if err != nil {
			if uerr == nil && !strings.Contains(err.Error(), "beyond BIGINT") && !strings.Contains(err.Error(), "TIMESTAMP") && !strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("decode: %v, but proto.Unmarshal reads it", err)
			}
			return
		}
		if len(row) != len(cols) {
			t.Fatalf("row %v", row)
		}
		if uerr != nil {
			return
		}
		for i, c := range cols {
			fd := md.Fields().ByName(protoreflect.Name(c.Name))
			var want plan.Value
			if fd.HasPresence() && !oracle.Has(fd) {
				want = plan.Null
			} else {
				v := oracle.Get(fd)
				switch c.Name {
				case "i32", "s64", "oi", "c_int":
					want = plan.Int(v.Int())
				case "u64":
					want = plan.Int(int64(v.Uint()))
				case "fl":
					want = plan.Float(v.Float())
				case "s", "c_str":
					want = plan.Str(v.String())
				case "e":
					if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
						want = plan.Str(string(ev.Name()))
					} else {
						want = plan.Str(fmt.Sprint(int32(v.Enum())))
					}
				case "ts":
					m := v.Message()
					s, n := m.Get(m.Descriptor().Fields().ByNumber(1)).Int(), m.Get(m.Descriptor().Fields().ByNumber(2)).Int()
					want = plan.Time(s*1000 + floorDiv(n, 1_000_000))
				case "wi":
					m := v.Message()
					want = plan.Int(m.Get(m.Descriptor().Fields().ByNumber(1)).Int())
				}
			}
			if fmt.Sprint(row[i]) != fmt.Sprint(want) {
				t.Fatalf("column %s: %v, proto.Unmarshal %v (row %v)", c.Name, row[i], want, row)
			}
		}
	})
}
