package format

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/streamsql/streamsql/planner/plan"
)

// avroSink writes a Kafka sink's records in Avro (format avro).
type avroSink struct{}

func (avroSink) srType() sr.SchemaType { return sr.TypeAvro }

// generate is the record schema of cols: BIGINT long, DOUBLE double,
// VARCHAR string, BOOLEAN boolean, TIMESTAMP long with logicalType
// timestamp-millis; a nullable column is the union ["null", T] with
// default null.
func (avroSink) generate(name string, cols plan.Schema) (string, error) {
	fields := make([]json.RawMessage, len(cols))
	for i, c := range cols {
		if !plan.IsFieldName(c.Name) {
			return "", fmt.Errorf("column %s: an Avro field name is letters, digits and '_', not starting with a digit", c.Name)
		}
		var t any
		switch c.Type {
		case plan.TypeBigint:
			t = "long"
		case plan.TypeDouble:
			t = "double"
		case plan.TypeVarchar:
			t = "string"
		case plan.TypeBoolean:
			t = "boolean"
		case plan.TypeTimestamp:
			t = map[string]string{"type": "long", "logicalType": "timestamp-millis"}
		default:
			return "", fmt.Errorf("column %s: type %s has no Avro mapping", c.Name, c.Type)
		}
		f := map[string]any{"name": c.Name, "type": t}
		if !c.NotNull {
			f["type"] = []any{"null", t}
			f["default"] = nil
		}
		b, err := json.Marshal(f)
		if err != nil {
			return "", err
		}
		fields[i] = b
	}
	b, err := json.Marshal(map[string]any{"type": "record", "name": name, "namespace": "streamsql", "fields": fields})
	return string(b), err
}

// sinkAvroOp is how one field is written.
type sinkAvroOp uint8

const (
	saLong sinkAvroOp = iota
	saInt
	saDouble
	saFloat
	saString
	saBool
	saMillis
	saMicros
	saConst // a field without a column: its default's bytes
)

// sinkAvroStep writes one field of the record.
type sinkAvroStep struct {
	col      int // index in the encoder's columns
	op       sinkAvroOp
	nullable bool  // a union with null: the branch index first
	nullIdx  int64 // branch of null
	valIdx   int64 // branch of the value
	konst    []byte
}

// sinkAvroEncoder writes records of its columns in one record schema with
// hamba/avro's Writer: a walk over steps, no map per record.
type sinkAvroEncoder struct {
	hdr   []byte
	cols  plan.Schema
	steps []sinkAvroStep
	w     *avro.Writer
}

// encoder plans writing cols in the record schema text: each field from
// the column of its name (a nullable column needs a nullable field);
// a field without a column is written as its default, or null.
func (avroSink) encoder(text string, id int, cols plan.Schema, _ func([]byte, plan.Row) ([]byte, error)) (Encoder, error) {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("not a valid Avro schema: %v", err)
	}
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("an Avro %s, not a record", s.Type())
	}
	byName := map[string]int{}
	for i, c := range cols {
		byName[plan.NameKey(c.Name)] = i
	}
	e := &sinkAvroEncoder{cols: cols, w: avro.NewWriter(nil, 256)}
	e.hdr = AppendHeader(nil, id)
	used := make([]bool, len(cols))
	for _, f := range rec.Fields() {
		ci, ok := byName[plan.NameKey(f.Name())]
		if !ok {
			st := sinkAvroStep{op: saConst}
			switch {
			case f.HasDefault():
				b, err := avro.Marshal(f.Type(), f.Default())
				if err != nil {
					return nil, fmt.Errorf("field %s has no column in the sink, and its default cannot be written: %v", f.Name(), err)
				}
				st.konst = b
			case sinkAvroNullable(f.Type()):
				u := f.Type().(*avro.UnionSchema)
				n, _ := u.Indices()
				w := avro.NewWriter(nil, 8)
				w.WriteLong(int64(n))
				st.konst = append([]byte(nil), w.Buffer()...)
			default:
				return nil, fmt.Errorf("field %s (%s) has no column in the sink and no default", f.Name(), avroType(f.Type()))
			}
			e.steps = append(e.steps, st)
			continue
		}
		c := cols[ci]
		used[ci] = true
		st := sinkAvroStep{col: ci}
		ft := f.Type()
		if u, ok := ft.(*avro.UnionSchema); ok {
			if !u.Nullable() {
				return nil, fmt.Errorf("field %s is the union %s; a column writes a type or [\"null\", type]", f.Name(), avroType(ft))
			}
			n, v := u.Indices()
			st.nullable, st.nullIdx, st.valIdx = true, int64(n), int64(v)
			ft = u.Types()[v]
		}
		op, ok := sinkAvroOpFor(ft, c.Type)
		if !ok {
			return nil, fmt.Errorf("field %s is %s, which column %s (%s) cannot be written as", f.Name(), avroType(f.Type()), c.Name, c.Type)
		}
		if !st.nullable && !c.NotNull {
			return nil, fmt.Errorf("field %s (%s) is not nullable, and column %s may be NULL", f.Name(), avroType(ft), c.Name)
		}
		st.op = op
		e.steps = append(e.steps, st)
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("column %s has no field in the schema (record %s)", cols[i].Name, rec.FullName())
		}
	}
	return e, nil
}

// sinkAvroNullable reports whether s is a union with null.
func sinkAvroNullable(s avro.Schema) bool {
	u, ok := s.(*avro.UnionSchema)
	return ok && u.Nullable()
}

// sinkAvroOpFor is how a column of type t is written as (non-union) s.
func sinkAvroOpFor(s avro.Schema, t plan.Type) (sinkAvroOp, bool) {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	var logical avro.LogicalType
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		logical = l.Logical().Type()
	}
	switch t {
	case plan.TypeBigint:
		switch {
		case s.Type() == avro.Long && logical == "":
			return saLong, true
		case s.Type() == avro.Int && logical == "":
			return saInt, true
		}
	case plan.TypeDouble:
		switch s.Type() {
		case avro.Double:
			return saDouble, true
		case avro.Float:
			return saFloat, true
		}
	case plan.TypeVarchar:
		if s.Type() == avro.String {
			return saString, true
		}
	case plan.TypeBoolean:
		if s.Type() == avro.Boolean {
			return saBool, true
		}
	case plan.TypeTimestamp:
		if s.Type() == avro.Long {
			switch logical {
			case avro.TimestampMillis:
				return saMillis, true
			case avro.TimestampMicros:
				return saMicros, true
			}
		}
	}
	return 0, false
}

func (e *sinkAvroEncoder) Append(dst []byte, vals plan.Row) ([]byte, error) {
	if len(vals) != len(e.cols) {
		return dst, fmt.Errorf("%d values for %d columns", len(vals), len(e.cols))
	}
	w := e.w
	w.Reset(nil)
	for i := range e.steps {
		st := &e.steps[i]
		if st.op == saConst {
			w.Write(st.konst)
			continue
		}
		v := vals[st.col]
		if v.IsNull() {
			if !st.nullable {
				return dst, sinkNullErr(e.cols[st.col])
			}
			w.WriteLong(st.nullIdx)
			continue
		}
		if st.nullable {
			w.WriteLong(st.valIdx)
		}
		c := e.cols[st.col]
		if v.K != c.Type && !(c.Type == plan.TypeDouble && v.K == plan.TypeBigint) {
			return dst, sinkValueErr(c, v)
		}
		switch st.op {
		case saLong, saMillis:
			w.WriteLong(v.I)
		case saInt:
			if v.I < math.MinInt32 || v.I > math.MaxInt32 {
				return dst, fmt.Errorf("column %s: %d does not fit the field's Avro int", c.Name, v.I)
			}
			w.WriteInt(int32(v.I))
		case saMicros:
			w.WriteLong(v.I * 1000)
		case saDouble:
			w.WriteDouble(v.F())
		case saFloat:
			w.WriteFloat(float32(v.F()))
		case saString:
			w.WriteString(v.S)
		case saBool:
			w.WriteBool(v.I != 0)
		}
	}
	if w.Error != nil {
		return dst, w.Error
	}
	dst = append(dst, e.hdr...)
	return append(dst, w.Buffer()...), nil
}
