package format

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/streamsql/streamsql/planner/plan"
)

// protoSink writes a Kafka sink's records in Protobuf (format protobuf):
// the first message of the schema (message indexes [0]).
type protoSink struct{}

func (protoSink) srType() sr.SchemaType { return sr.TypeProtobuf }

// generate is a proto3 file with one message of cols, field numbers the
// columns' positions from 1: BIGINT int64, DOUBLE double, VARCHAR string,
// BOOLEAN bool, TIMESTAMP google.protobuf.Timestamp; a nullable scalar
// column is an optional field (explicit presence: NULL is an absent
// field), a Timestamp field is absent for NULL.
func (protoSink) generate(name string, cols plan.Schema) (string, error) {
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n\npackage streamsql;\n\n")
	for _, c := range cols {
		if c.Type == plan.TypeTimestamp {
			b.WriteString("import \"google/protobuf/timestamp.proto\";\n\n")
			break
		}
	}
	fmt.Fprintf(&b, "message %s {\n", name)
	for i, c := range cols {
		if !plan.IsFieldName(c.Name) {
			return "", fmt.Errorf("column %s: a protobuf field name is letters, digits and '_', not starting with a digit", c.Name)
		}
		var t string
		switch c.Type {
		case plan.TypeBigint:
			t = "int64"
		case plan.TypeDouble:
			t = "double"
		case plan.TypeVarchar:
			t = "string"
		case plan.TypeBoolean:
			t = "bool"
		case plan.TypeTimestamp:
			t = "google.protobuf.Timestamp"
		default:
			return "", fmt.Errorf("column %s: type %s has no protobuf mapping", c.Name, c.Type)
		}
		opt := ""
		if !c.NotNull && c.Type != plan.TypeTimestamp {
			opt = "optional "
		}
		fmt.Fprintf(&b, "  %s%s %s = %d;\n", opt, t, c.Name, i+1)
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// parseSinkProto compiles the .proto text of a registry schema (imports of
// the well-known types only) and returns its file's descriptor.
func parseSinkProto(ctx context.Context, text string) (protoreflect.FileDescriptor, error) {
	const name = "schema.proto"
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{name: text}),
	})}
	files, err := comp.Compile(ctx, name)
	if err != nil {
		return nil, err
	}
	return files[0], nil
}

// sinkProtoOp is how one field is written.
type sinkProtoOp uint8

const (
	spVarint sinkProtoOp = iota // int64, int32 (range-checked)
	spInt32
	spZigzag
	spSint32
	spFixed64
	spSfixed32
	spDouble
	spFloat
	spString
	spBool
	spTimestamp
)

type sinkProtoStep struct {
	col      int
	num      protowire.Number
	op       sinkProtoOp
	presence bool // written when set, even if zero
}

// sinkProtoEncoder writes messages of its columns with protowire, in field
// number order, straight into the record's bytes.
type sinkProtoEncoder struct {
	hdr   []byte
	cols  plan.Schema
	steps []sinkProtoStep
}

func (protoSink) encoder(text string, id int, cols plan.Schema, _ func([]byte, plan.Row) ([]byte, error)) (Encoder, error) {
	fd, err := parseSinkProto(context.Background(), text)
	if err != nil {
		return nil, fmt.Errorf("not a valid .proto schema: %v", err)
	}
	if fd.Messages().Len() == 0 {
		return nil, fmt.Errorf("the schema has no message")
	}
	md := fd.Messages().Get(0)
	byName := map[string]int{}
	for i, c := range cols {
		byName[plan.NameKey(c.Name)] = i
	}
	e := &sinkProtoEncoder{cols: cols}
	e.hdr, _ = (&sr.ConfluentHeader{}).AppendEncode(nil, id, []int{0})
	used := make([]bool, len(cols))
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		ci, ok := byName[plan.NameKey(string(f.Name()))]
		if !ok {
			if f.Cardinality() == protoreflect.Required {
				return nil, fmt.Errorf("field %s of message %s is required and has no column in the sink", f.Name(), md.FullName())
			}
			continue // absent
		}
		c := cols[ci]
		if f.Cardinality() == protoreflect.Repeated {
			return nil, fmt.Errorf("field %s of message %s is repeated; column %s is one %s", f.Name(), md.FullName(), c.Name, c.Type)
		}
		op, ok := sinkProtoOpFor(f, c.Type)
		if !ok {
			return nil, fmt.Errorf("field %s of message %s is %s, which column %s (%s) cannot be written as", f.Name(), md.FullName(), sinkProtoKind(f), c.Name, c.Type)
		}
		if !c.NotNull && !f.HasPresence() {
			return nil, fmt.Errorf("field %s of message %s (%s) has no presence (not optional), and column %s may be NULL", f.Name(), md.FullName(), sinkProtoKind(f), c.Name)
		}
		used[ci] = true
		e.steps = append(e.steps, sinkProtoStep{col: ci, num: f.Number(), op: op, presence: f.HasPresence()})
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("column %s has no field in message %s", cols[i].Name, md.FullName())
		}
	}
	sort.Slice(e.steps, func(i, j int) bool { return e.steps[i].num < e.steps[j].num })
	return e, nil
}

// sinkProtoKind names a field's type for messages.
func sinkProtoKind(f protoreflect.FieldDescriptor) string {
	if f.Kind() == protoreflect.MessageKind {
		return string(f.Message().FullName())
	}
	return f.Kind().String()
}

// sinkProtoOpFor is how a column of type t is written as field f.
func sinkProtoOpFor(f protoreflect.FieldDescriptor, t plan.Type) (sinkProtoOp, bool) {
	k := f.Kind()
	switch t {
	case plan.TypeBigint:
		switch k {
		case protoreflect.Int64Kind:
			return spVarint, true
		case protoreflect.Int32Kind:
			return spInt32, true
		case protoreflect.Sint64Kind:
			return spZigzag, true
		case protoreflect.Sint32Kind:
			return spSint32, true
		case protoreflect.Sfixed64Kind:
			return spFixed64, true
		case protoreflect.Sfixed32Kind:
			return spSfixed32, true
		}
	case plan.TypeDouble:
		switch k {
		case protoreflect.DoubleKind:
			return spDouble, true
		case protoreflect.FloatKind:
			return spFloat, true
		}
	case plan.TypeVarchar:
		if k == protoreflect.StringKind {
			return spString, true
		}
	case plan.TypeBoolean:
		if k == protoreflect.BoolKind {
			return spBool, true
		}
	case plan.TypeTimestamp:
		if k == protoreflect.MessageKind && f.Message().FullName() == "google.protobuf.Timestamp" {
			return spTimestamp, true
		}
	}
	return 0, false
}

func (e *sinkProtoEncoder) Append(dst []byte, vals plan.Row) ([]byte, error) {
	if len(vals) != len(e.cols) {
		return dst, fmt.Errorf("%d values for %d columns", len(vals), len(e.cols))
	}
	b := append(dst, e.hdr...)
	for i := range e.steps {
		st := &e.steps[i]
		v := vals[st.col]
		c := e.cols[st.col]
		if v.IsNull() {
			if !st.presence {
				return dst, sinkNullErr(c)
			}
			continue
		}
		if v.K != c.Type && !(c.Type == plan.TypeDouble && v.K == plan.TypeBigint) {
			return dst, sinkValueErr(c, v)
		}
		// Implicit presence: a zero value is not written (as proto.Marshal).
		if !st.presence && v.I == 0 && v.S == "" {
			continue
		}
		switch st.op {
		case spVarint:
			b = protowire.AppendTag(b, st.num, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(v.I))
		case spInt32, spSint32, spSfixed32:
			if v.I < math.MinInt32 || v.I > math.MaxInt32 {
				return dst, fmt.Errorf("column %s: %d does not fit the field's 32-bit integer", c.Name, v.I)
			}
			switch st.op {
			case spInt32:
				b = protowire.AppendTag(b, st.num, protowire.VarintType)
				b = protowire.AppendVarint(b, uint64(v.I))
			case spSint32:
				b = protowire.AppendTag(b, st.num, protowire.VarintType)
				b = protowire.AppendVarint(b, protowire.EncodeZigZag(v.I))
			default:
				b = protowire.AppendTag(b, st.num, protowire.Fixed32Type)
				b = protowire.AppendFixed32(b, uint32(int32(v.I)))
			}
		case spZigzag:
			b = protowire.AppendTag(b, st.num, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(v.I))
		case spFixed64:
			b = protowire.AppendTag(b, st.num, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, uint64(v.I))
		case spDouble:
			b = protowire.AppendTag(b, st.num, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, math.Float64bits(v.F()))
		case spFloat:
			b = protowire.AppendTag(b, st.num, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, math.Float32bits(float32(v.F())))
		case spString:
			b = protowire.AppendTag(b, st.num, protowire.BytesType)
			b = protowire.AppendString(b, v.S)
		case spBool:
			b = protowire.AppendTag(b, st.num, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeBool(v.I != 0))
		case spTimestamp:
			// google.protobuf.Timestamp{seconds = 1, nanos = 2}, nanos in [0, 1e9).
			sec, ms := v.I/1000, v.I%1000
			if ms < 0 {
				sec, ms = sec-1, ms+1000
			}
			nanos := uint64(ms * 1e6)
			n := 0
			if sec != 0 {
				n += protowire.SizeTag(1) + protowire.SizeVarint(uint64(sec))
			}
			if nanos != 0 {
				n += protowire.SizeTag(2) + protowire.SizeVarint(nanos)
			}
			b = protowire.AppendTag(b, st.num, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(n))
			if sec != 0 {
				b = protowire.AppendTag(b, 1, protowire.VarintType)
				b = protowire.AppendVarint(b, uint64(sec))
			}
			if nanos != 0 {
				b = protowire.AppendTag(b, 2, protowire.VarintType)
				b = protowire.AppendVarint(b, nanos)
			}
		}
	}
	return b, nil
}
