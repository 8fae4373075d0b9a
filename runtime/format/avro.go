package format

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// metaColumns are the Kafka source columns the reader fills from a
// record's metadata (value.KafkaMetaColumns): never read from the value.
var metaColumns = map[string]bool{"_partition": true, "_offset": true, "_key": true, "_timestamp": true}

// Decoder turns a record value into a row of its table's columns.
type Decoder interface {
	Decode(v []byte) (plan.Row, error)
}

// Table is what a decoder reads into: a Kafka source's columns and
// attributes.
type Table struct {
	Name      string
	Columns   plan.Schema
	EventTime int // -1: none
	Attrs     map[string]string
	Upsert    bool
	Key       []string // the PRIMARY KEY (Upsert)
	// own: columns not read from the value besides the metadata columns
	// (a change format's envelope columns); nil: none.
	own []bool
}

// isOwn reports whether column i is not read from the value.
func (t Table) isOwn(i int) bool {
	return metaColumns[strings.ToLower(t.Columns[i].Name)] || (t.own != nil && t.own[i])
}

// SourceTable is the Table of src.
func SourceTable(src *plan.Source) Table {
	return Table{Name: src.Table, Columns: src.Schema, EventTime: src.EventTime, Attrs: src.Attrs, Upsert: src.Upsert, Key: src.Key}
}

// Subject is the registry subject a table reads: "subject", else
// <topic>-value (the topic name strategy).
func (t Table) Subject() string {
	if s := t.Attrs["subject"]; s != "" {
		return s
	}
	return t.Attrs["topic"] + "-value"
}

// Uses reports whether table attributes attrs name a format of this
// package (a Decoder from NewDecoder; else value.RecordDecoder's JSON).
func Uses(attrs map[string]string) bool {
	switch attrs["format"] {
	case "avro", "protobuf", "json_schema":
		return true
	}
	return false
}

// NewDecoder is t's Decoder (no I/O: a registry is asked on the first
// record of each schema id).
func NewDecoder(t Table) (Decoder, error) {
	if t.Upsert {
		return nil, fmt.Errorf("table %s: format %s reads sources without a PRIMARY KEY (a PRIMARY KEY source reads a change format: %s)", t.Name, t.Attrs["format"], value.ChangeFormats())
	}
	switch t.Attrs["format"] {
	case "protobuf":
		return newProtoDecoder(t)
	case "json_schema":
		return newJSONSchemaDecoder(t)
	}
	d := &avroDecoder{t: t, r: avro.NewReader(nil, 0), plans: map[int]*readPlan{}}
	if s := t.Attrs["avro_schema"]; s != "" {
		ws, err := avro.ParseWithCache(s, "", &avro.SchemaCache{})
		if err != nil {
			return nil, fmt.Errorf("table %s: avro_schema is not a valid Avro schema: %v", t.Name, err)
		}
		d.inline = newPlan(t, ws, "avro_schema")
		return d, nil
	}
	reg, err := NewRegistry(t.Attrs["schema_registry"])
	if err != nil {
		return nil, err
	}
	d.reg = reg
	return d, nil
}

// Check reads the schema table t will be read with (the latest version of
// its subject, or its avro_schema) and refuses a column that does not fit
// it, naming the field or column; ctx bounds the registry request.
func Check(ctx context.Context, t Table) error {
	if UsesChanges(t.Attrs) {
		return checkChanges(ctx, t) // avrochanges.go
	}
	if t.Upsert {
		return fmt.Errorf("format %s reads sources without a PRIMARY KEY (a PRIMARY KEY source reads a change format: %s)", t.Attrs["format"], value.ChangeFormats())
	}
	if f := t.Attrs["format"]; f == "protobuf" || f == "json_schema" {
		reg, err := NewRegistry(t.Attrs["schema_registry"])
		if err != nil {
			return err
		}
		if f == "protobuf" {
			return checkProto(ctx, t, reg)
		}
		return checkJSONSchema(ctx, t, reg)
	}
	var ws avro.Schema
	var where string
	if s := t.Attrs["avro_schema"]; s != "" {
		var err error
		if ws, err = avro.ParseWithCache(s, "", &avro.SchemaCache{}); err != nil {
			return fmt.Errorf("avro_schema is not a valid Avro schema: %v", err)
		}
		where = "avro_schema"
	} else {
		reg, err := NewRegistry(t.Attrs["schema_registry"])
		if err != nil {
			return err
		}
		id, s, err := reg.Latest(ctx, t.Subject())
		if err != nil {
			return err
		}
		ws, where = s, fmt.Sprintf("subject %s (latest version, schema id %d)", t.Subject(), id)
	}
	p := newPlan(t, ws, where)
	if p.err != nil {
		return p.err
	}
	return nil
}

// kind is how one value is read into a column.
type kind uint8

const (
	kSkip kind = iota // a field the table lacks
	kInt
	kLong
	kIntDouble
	kLongDouble
	kFloat
	kDouble
	kString
	kEnum
	kBool
	kMillis
	kMicros
	kNanos // io.debezium.time.NanoTimestamp
	kDays  // int days: logicalType date, io.debezium.time.Date
	kZoned // string: io.debezium.time.ZonedTimestamp
)

// step reads one field of the writer's record.
type step struct {
	col     int
	kind    kind
	sch     avro.Schema // the field's schema (for skipping)
	union   bool        // ["null", T]: a branch index first
	nullIdx int64
	symbols []string // kEnum
}

// readPlan reads records of one writer schema into the table.
type readPlan struct {
	steps []step
	// err: records of this schema cannot fit the table (each is a bad
	// record with this message).
	err error
}

// avroType names an Avro schema for messages.
func avroType(s avro.Schema) string {
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		return fmt.Sprintf("%s (%s)", s.Type(), l.Logical().Type())
	}
	if u, ok := s.(*avro.UnionSchema); ok {
		n := make([]string, len(u.Types()))
		for i, b := range u.Types() {
			n[i] = avroType(b)
		}
		return "[" + strings.Join(n, ", ") + "]"
	}
	return string(s.Type())
}

// mapType is how a (non-union) Avro value fits a column of type t.
func mapType(s avro.Schema, t plan.Type) (kind, []string, bool) {
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
		case s.Type() == avro.Int && logical == "":
			return kInt, nil, true
		case s.Type() == avro.Long && logical == "":
			return kLong, nil, true
		}
	case plan.TypeDouble:
		switch {
		case s.Type() == avro.Int && logical == "":
			return kIntDouble, nil, true
		case s.Type() == avro.Long && logical == "":
			return kLongDouble, nil, true
		case s.Type() == avro.Float:
			return kFloat, nil, true
		case s.Type() == avro.Double:
			return kDouble, nil, true
		}
	case plan.TypeVarchar:
		switch s.Type() {
		case avro.String:
			return kString, nil, true // uuid too: a string
		case avro.Enum:
			return kEnum, s.(*avro.EnumSchema).Symbols(), true
		}
	case plan.TypeBoolean:
		if s.Type() == avro.Boolean {
			return kBool, nil, true
		}
	case plan.TypeTimestamp:
		// Kafka Connect (Debezium) names its temporal types in a
		// "connect.name" property, with or without a logicalType.
		var connect string
		if p, ok := s.(interface{ Prop(string) any }); ok {
			connect, _ = p.Prop("connect.name").(string)
		}
		switch s.Type() {
		case avro.Long:
			switch {
			case logical == avro.TimestampMillis || logical == avro.LocalTimestampMillis:
				return kMillis, nil, true
			case logical == avro.TimestampMicros || logical == avro.LocalTimestampMicros:
				return kMicros, nil, true
			case logical != "":
			case connect == "io.debezium.time.Timestamp" || connect == "org.apache.kafka.connect.data.Timestamp":
				return kMillis, nil, true
			case connect == "io.debezium.time.MicroTimestamp":
				return kMicros, nil, true
			case connect == "io.debezium.time.NanoTimestamp":
				return kNanos, nil, true
			}
		case avro.Int:
			if logical == avro.Date || logical == "" && (connect == "io.debezium.time.Date" || connect == "org.apache.kafka.connect.data.Date") {
				return kDays, nil, true
			}
		case avro.String:
			if logical == "" && connect == "io.debezium.time.ZonedTimestamp" {
				return kZoned, nil, true
			}
		}
	}
	return kSkip, nil, false
}

// wantFor says which Avro types a column of type t takes, for messages.
func wantFor(t plan.Type) string {
	switch t {
	case plan.TypeBigint:
		return "int or long"
	case plan.TypeDouble:
		return "float, double, int or long"
	case plan.TypeVarchar:
		return "string or enum"
	case plan.TypeBoolean:
		return "boolean"
	case plan.TypeTimestamp:
		return "long with logicalType timestamp-millis, timestamp-micros, local-timestamp-millis or local-timestamp-micros, or with connect.name io.debezium.time.Timestamp, MicroTimestamp or NanoTimestamp; int with logicalType date or connect.name io.debezium.time.Date; string with connect.name io.debezium.time.ZonedTimestamp"
	}
	return "?"
}

// newPlan resolves writer schema ws (named where, for messages) against
// table t: fields by name (as column names match, ASCII case-insensitive),
// a field the table lacks skipped, a column the writer lacks NULL.
func newPlan(t Table, ws avro.Schema, where string) *readPlan {
	p := &readPlan{}
	rec, ok := ws.(*avro.RecordSchema)
	if !ok {
		p.err = fmt.Errorf("%s: the schema is %s, not a record (a table reads a record's fields as its columns)", where, avroType(ws))
		return p
	}
	cols := map[string]int{}
	for i, c := range t.Columns {
		if !t.isOwn(i) {
			cols[plan.NameKey(c.Name)] = i
		}
	}
	has := make([]bool, len(t.Columns))
	for _, f := range rec.Fields() {
		st := step{col: -1, sch: f.Type()}
		i, ok := cols[plan.NameKey(f.Name())]
		if ok && !has[i] {
			c := t.Columns[i]
			ft := f.Type()
			if u, isU := ft.(*avro.UnionSchema); isU {
				ni, vi := u.Indices()
				if !u.Nullable() || len(u.Types()) != 2 {
					p.err = fmt.Errorf("%s: field %s is %s, which does not fit column %s %s: unions must be [\"null\", T]", where, f.Name(), avroType(ft), c.Name, c.Type)
					return p
				}
				st.union, st.nullIdx, ft = true, int64(ni), u.Types()[vi]
			}
			k, syms, fits := mapType(ft, c.Type)
			if !fits {
				p.err = fmt.Errorf("%s: field %s is Avro %s, which does not fit column %s %s (it takes %s)", where, f.Name(), avroType(f.Type()), c.Name, c.Type, wantFor(c.Type))
				return p
			}
			st.col, st.kind, st.symbols = i, k, syms
			has[i] = true
		}
		p.steps = append(p.steps, st)
	}
	for i, c := range t.Columns {
		if has[i] || t.isOwn(i) {
			continue
		}
		if c.NotNull || i == t.EventTime {
			what := "NOT NULL column"
			if i == t.EventTime {
				what = "event-time column"
			}
			p.err = fmt.Errorf("%s: no field for the %s %s (fields: %s)", where, what, c.Name, fieldList(rec))
			return p
		}
	}
	return p
}

func fieldList(rec *avro.RecordSchema) string {
	n := make([]string, len(rec.Fields()))
	for i, f := range rec.Fields() {
		n[i] = f.Name()
	}
	return strings.Join(n, ", ")
}

// avroDecoder reads Avro record values: registry-framed (reg) or plain
// binary of one inline schema (inline).
type avroDecoder struct {
	t      Table
	r      *avro.Reader
	reg    *Registry
	inline *readPlan
	plans  map[int]*readPlan // by schema id
}

func (d *avroDecoder) Decode(v []byte) (plan.Row, error) {
	p, payload := d.inline, v
	if p == nil {
		id, rest, err := SplitHeader(v)
		if err != nil {
			return nil, err
		}
		payload = rest
		if p, err = planByID(d.reg, d.plans, id, func(ws avro.Schema) *readPlan {
			return newPlan(d.t, ws, fmt.Sprintf("schema id %d", id))
		}, errPlan); err != nil {
			return nil, err
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return d.read(p, payload)
}

// planByID is plans[id], made by mk from the writer schema of registry
// id id (fetched, bounded by FetchTimeout) when absent. An error the
// registry may get over (it is unavailable; it does not know the id yet,
// remembered only for unknownTTL) is returned and not cached; any other
// is cached as bad(err), the plan every record of the id fails with.
func planByID[P any](reg *Registry, plans map[int]P, id int, mk func(avro.Schema) P, bad func(error) P) (P, error) {
	if p, ok := plans[id]; ok {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	ws, err := reg.Schema(ctx, id)
	cancel()
	var p P
	switch {
	case err != nil && (IsRetryable(err) || isUnknownID(err)):
		return p, err
	case err != nil:
		p = bad(err)
	default:
		p = mk(ws)
	}
	plans[id] = p
	return p, nil
}

// errPlan is the plan of a schema that cannot be read: err.
func errPlan(err error) *readPlan { return &readPlan{err: err} }

// read decodes payload by p.
func (d *avroDecoder) read(p *readPlan, payload []byte) (plan.Row, error) {
	r := d.r.Reset(payload)
	r.Error = nil
	row := make(plan.Row, len(d.t.Columns))
	budget := maxSkipItems
	if err := readFields(r, p, d.t, row, &budget); err != nil {
		return nil, err
	}
	if err := readEnd(r); err != nil {
		return nil, err
	}
	return row, nil
}

// readEnd checks r read its whole payload.
func readEnd(r *avro.Reader) error {
	if r.Peek(); r.Error == nil {
		return errors.New("not a valid Avro record of its schema: bytes left after the record")
	}
	r.Error = nil
	return nil
}

// readFields reads one record of p's schema from r into row (t's
// columns); budget is the array and map items it may still skip.
func readFields(r *avro.Reader, p *readPlan, t Table, row plan.Row, budget *int) error {
	for k := range p.steps {
		st := &p.steps[k]
		if st.col < 0 {
			skip(r, st.sch, 0, budget)
			if r.Error != nil {
				break
			}
			continue
		}
		c := t.Columns[st.col]
		if st.union {
			b := r.ReadLong()
			if r.Error != nil {
				break
			}
			if b == st.nullIdx {
				if c.NotNull || st.col == t.EventTime {
					return fmt.Errorf("column %s: null for a NOT NULL column", c.Name)
				}
				continue
			}
			if b != 1-st.nullIdx {
				return fmt.Errorf("column %s: union branch %d of a 2-branch union", c.Name, b)
			}
		}
		var v plan.Value
		switch st.kind {
		case kInt:
			v = plan.Int(int64(r.ReadInt()))
		case kLong:
			v = plan.Int(r.ReadLong())
		case kIntDouble:
			v = plan.Float(float64(r.ReadInt()))
		case kLongDouble:
			v = plan.Float(float64(r.ReadLong()))
		case kFloat:
			v = plan.Float(float64(r.ReadFloat()))
		case kDouble:
			v = plan.Float(r.ReadDouble())
		case kString:
			// ReadString's string aliases the record's bytes (the fetch
			// buffer): a row kept in state would keep the buffer alive.
			v = plan.Str(strings.Clone(r.ReadString()))
		case kEnum:
			i := r.ReadInt()
			if r.Error == nil && (i < 0 || int(i) >= len(st.symbols)) {
				return fmt.Errorf("column %s: enum index %d out of its %d symbols", c.Name, i, len(st.symbols))
			}
			if r.Error == nil {
				v = plan.Str(st.symbols[i])
			}
		case kBool:
			v = plan.Bool(r.ReadBool())
		case kMillis, kMicros, kNanos, kDays:
			var n int64
			if st.kind == kDays {
				n = int64(r.ReadInt())
			} else {
				n = r.ReadLong()
			}
			ms := toMillis(st.kind, n)
			if r.Error == nil {
				if err := plan.CheckTime(ms); err != nil {
					return fmt.Errorf("column %s: %w", c.Name, err)
				}
			}
			v = plan.Time(ms)
		case kZoned:
			str := r.ReadString()
			if r.Error == nil {
				ms, ok := value.ParseTime(str)
				if !ok {
					return fmt.Errorf("column %s: %q is not an ISO 8601 timestamp (io.debezium.time.ZonedTimestamp)", c.Name, clip(str))
				}
				if err := plan.CheckTime(ms); err != nil {
					return fmt.Errorf("column %s: %w", c.Name, err)
				}
				v = plan.Time(ms)
			}
		}
		if r.Error != nil {
			break
		}
		row[st.col] = v
	}
	if r.Error != nil {
		return fmt.Errorf("not a valid Avro record of its schema: %v", readErr(r.Error))
	}
	return nil
}

// toMillis is time n of kind k in epoch milliseconds (days are an int:
// no overflow).
func toMillis(k kind, n int64) int64 {
	switch k {
	case kMicros:
		return floorDiv(n, 1000)
	case kNanos:
		return floorDiv(n, 1000000)
	case kDays:
		return n * 86400000
	}
	return n
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("truncated")
	}
	return err
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// maxSkipDepth bounds the nesting of a skipped value's schema walk (a
// recursive record type recurses only as deep as its data), and
// maxSkipItems the array and map items skipped in one record: an item of
// nulls takes no bytes, so a block's count alone could spin for 2^63.
const (
	maxSkipDepth = 64
	maxSkipItems = 1 << 20
)

// skip reads past one value of schema s; budget is the items it may still
// skip.
func skip(r *avro.Reader, s avro.Schema, depth int, budget *int) {
	if depth > maxSkipDepth {
		r.ReportError("skip", "value nested too deep")
		return
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		skip(r, s.Schema(), depth+1, budget)
	case *avro.NullSchema:
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Boolean:
			r.SkipBool()
		case avro.Int:
			r.SkipInt()
		case avro.Long:
			r.SkipLong()
		case avro.Float:
			r.SkipFloat()
		case avro.Double:
			r.SkipDouble()
		case avro.String:
			r.SkipString()
		case avro.Bytes:
			r.SkipBytes()
		}
	case *avro.EnumSchema:
		r.SkipInt()
	case *avro.FixedSchema:
		r.SkipNBytes(s.Size())
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			if skip(r, f.Type(), depth+1, budget); r.Error != nil {
				return
			}
		}
	case *avro.UnionSchema:
		b := r.ReadLong()
		if r.Error != nil {
			return
		}
		if b < 0 || int(b) >= len(s.Types()) {
			r.ReportError("skip", fmt.Sprintf("union branch %d of %d", b, len(s.Types())))
			return
		}
		skip(r, s.Types()[b], depth+1, budget)
	case *avro.ArraySchema:
		skipBlocks(r, budget, func() { skip(r, s.Items(), depth+1, budget) })
	case *avro.MapSchema:
		skipBlocks(r, budget, func() { r.SkipString(); skip(r, s.Values(), depth+1, budget) })
	default:
		r.ReportError("skip", "unsupported schema "+string(s.Type()))
	}
}

// skipBlocks reads past the blocks of an array or map, each item by item.
func skipBlocks(r *avro.Reader, budget *int, item func()) {
	for r.Error == nil {
		n, size := r.ReadBlockHeader()
		if r.Error != nil || n == 0 {
			return
		}
		if n < 0 || size < 0 {
			r.ReportError("skip", "invalid block header")
			return
		}
		if size > 0 {
			r.SkipNBytes(int(size))
			continue
		}
		if n > int64(*budget) {
			r.ReportError("skip", fmt.Sprintf("more than %d array or map items in one record", maxSkipItems))
			return
		}
		*budget -= int(n)
		for ; n > 0 && r.Error == nil; n-- {
			item()
		}
	}
}
