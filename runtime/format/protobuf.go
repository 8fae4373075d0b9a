package format

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/streamsql/streamsql/planner/plan"
)

// Protobuf (format protobuf): the registry holds .proto text (schema type
// PROTOBUF), with references to other subjects for its imports (the
// well-known google/protobuf/*.proto need none); protocompile parses it
// with its references into a protoreflect.FileDescriptor, once per schema
// id. A record is the 5-byte header, the message-index list naming the
// message of the file it holds, and the message in the protobuf binary
// encoding, read with protowire into the table's columns by field name
// (docs/connectors.md, "Formats").

// maxIndexDepth bounds a message-index list (its nesting of messages).
const maxIndexDepth = 32

// maxProtoRefs bounds the files one schema's references may bring in.
const maxProtoRefs = 256

// SplitMessageIndex reads the Confluent protobuf wire format's
// message-index list at the start of payload (after the 5-byte header):
// a zigzag varint count, then that many zigzag varint indexes, the first
// into the file's top-level messages, each next into the nested messages
// of the one before; the single byte 0 is the list [0], the file's first
// message. It returns the list's bytes (a cache key), and the message
// after them; index decodes them.
func SplitMessageIndex(payload []byte) (list, rest []byte, err error) {
	n, k := binary.Varint(payload)
	if k <= 0 {
		return nil, nil, errors.New("the message-index list is truncated or not a varint")
	}
	if n == 0 {
		return payload[:k], payload[k:], nil
	}
	if n < 0 || n > maxIndexDepth {
		return nil, nil, fmt.Errorf("the message-index list has a count of %d (0 to %d)", n, maxIndexDepth)
	}
	at := k
	for range n {
		i, k := binary.Varint(payload[at:])
		if k <= 0 {
			return nil, nil, errors.New("the message-index list is truncated or not a varint")
		}
		if i < 0 || i > math.MaxInt32 {
			return nil, nil, fmt.Errorf("the message-index list holds the index %d", i)
		}
		at += k
	}
	return payload[:at], payload[at:], nil
}

// messageIndex decodes a list SplitMessageIndex returned.
func messageIndex(list []byte) []int {
	n, k := binary.Varint(list)
	if n == 0 {
		return []int{0}
	}
	idx := make([]int, n)
	for i := range idx {
		v, m := binary.Varint(list[k:])
		idx[i], k = int(v), k+m
	}
	return idx
}

// AppendMessageIndex appends the message-index list of idx to b (the
// single byte 0 for [0], as Confluent's serializers write it).
func AppendMessageIndex(b []byte, idx ...int) []byte {
	if len(idx) == 0 || len(idx) == 1 && idx[0] == 0 {
		return append(b, 0)
	}
	b = binary.AppendVarint(b, int64(len(idx)))
	for _, i := range idx {
		b = binary.AppendVarint(b, int64(i))
	}
	return b
}

// protoFile parses registry schema ss (of id, for its file name) with its
// references into a file descriptor.
func (r *Registry) protoFile(ctx context.Context, ss sr.Schema, id int) (protoreflect.FileDescriptor, error) {
	if ss.Type != sr.TypeProtobuf {
		t := ss.Type.String()
		if ss.Type == sr.TypeAvro {
			t = "AVRO"
		}
		return nil, fmt.Errorf("a %s schema, not PROTOBUF (format protobuf)", t)
	}
	name := fmt.Sprintf("streamsql-schema-%d.proto", id)
	files := map[string]string{name: ss.Schema}
	if err := r.protoRefs(ctx, ss.References, files); err != nil {
		return nil, err
	}
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(files)}),
		MaxParallelism: 1,
	}
	fs, err := c.Compile(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("not a valid .proto schema: %v", strings.ReplaceAll(err.Error(), name+":", ""))
	}
	return fs[0], nil
}

// protoRefs adds the files of refs, and of theirs, to files.
func (r *Registry) protoRefs(ctx context.Context, refs []sr.SchemaReference, files map[string]string) error {
	for _, ref := range refs {
		if _, ok := files[ref.Name]; ok {
			continue
		}
		if len(files) > maxProtoRefs {
			return fmt.Errorf("the schema's references bring in more than %d files", maxProtoRefs)
		}
		ss, err := r.version(ctx, ref.Subject, ref.Version)
		if err != nil {
			return fmt.Errorf("reference %s: %w", ref.Name, err)
		}
		if ss.Type != sr.TypeProtobuf {
			return fmt.Errorf("reference %s (subject %s version %d) is not a PROTOBUF schema", ref.Name, ref.Subject, ref.Version)
		}
		files[ref.Name] = ss.Schema
		if err := r.protoRefs(ctx, ss.References, files); err != nil {
			return err
		}
	}
	return nil
}

// protoMessage is the message of fd that idx names.
func protoMessage(fd protoreflect.FileDescriptor, idx []int) (protoreflect.MessageDescriptor, error) {
	ms := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i >= ms.Len() {
			return nil, fmt.Errorf("message index %v names no message of the schema (index %d of %d)", idx, i, ms.Len())
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("the schema has no message")
	}
	return md, nil
}

// protoNamed is the message called name (package-qualified, or not when
// the file has one such) in fd, else its first.
func protoNamed(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	if name == "" {
		return protoMessage(fd, []int{0})
	}
	var found protoreflect.MessageDescriptor
	var all []string
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			all = append(all, string(m.FullName()))
			if found == nil && (string(m.FullName()) == name || string(m.FullName()) == string(fd.Package())+"."+name) {
				found = m
			}
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	if found == nil {
		return nil, fmt.Errorf("no message %s in the schema (messages: %s)", name, strings.Join(all, ", "))
	}
	return found, nil
}

// pbStep reads one field of the message into a column.
type pbStep struct {
	col      int // -1: a oneof member the table lacks (it clears the others)
	name     string
	kind     protoreflect.Kind // the scalar's, or a wrapper's value's
	wt       protowire.Type
	ts       bool // google.protobuf.Timestamp
	wrap     bool // a wrapper message (google.protobuf.Int64Value, ...)
	toDouble bool // an integer into a DOUBLE column
	presence bool // absent: NULL; else absent is zero
	zero     plan.Value
	enum     protoreflect.EnumValueDescriptors
	oneof    int // -1: none
}

// pbPlan reads one message type into the table.
type pbPlan struct {
	steps  []pbStep
	byNum  map[protowire.Number]int // field number -> step
	dense  []int8                   // the same for numbers below denseMax: step+1, 0 for none
	oneofs int
	err    error
}

// denseMax bounds the field numbers a plan finds by a slice, not a map.
const denseMax = 128

// step is the step of field number num.
func (p *pbPlan) step(num protowire.Number) (int, bool) {
	if num < protowire.Number(len(p.dense)) {
		i := int(p.dense[num]) - 1
		return i, i >= 0
	}
	i, ok := p.byNum[num]
	return i, ok
}

// pbSchema is one schema id's file and its plans by message-index list.
type pbSchema struct {
	fd    protoreflect.FileDescriptor
	plans map[string]*pbPlan
	err   error
}

// wrapperKinds are the wrapper messages a column takes: nullable values.
var wrapperKinds = map[protoreflect.FullName]protoreflect.Kind{
	"google.protobuf.DoubleValue": protoreflect.DoubleKind, "google.protobuf.FloatValue": protoreflect.FloatKind,
	"google.protobuf.Int64Value": protoreflect.Int64Kind, "google.protobuf.UInt64Value": protoreflect.Uint64Kind,
	"google.protobuf.Int32Value": protoreflect.Int32Kind, "google.protobuf.UInt32Value": protoreflect.Uint32Kind,
	"google.protobuf.BoolValue": protoreflect.BoolKind, "google.protobuf.StringValue": protoreflect.StringKind,
}

const timestampName = "google.protobuf.Timestamp"

// protoType names a field's type for messages.
func protoType(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return fmt.Sprintf("map<%s, %s>", protoType(fd.MapKey()), protoType(fd.MapValue()))
	case fd.IsList():
		return "repeated " + protoSingular(fd)
	}
	return protoSingular(fd)
}

func protoSingular(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return "enum " + string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

func isInteger(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		return true
	}
	return false
}

// protoFits reports whether a value of kind k fits a column of type t,
// and whether it is an integer read as a double.
func protoFits(k protoreflect.Kind, t plan.Type) (fits, toDouble bool) {
	switch t {
	case plan.TypeBigint:
		return isInteger(k), false
	case plan.TypeDouble:
		return k == protoreflect.DoubleKind || k == protoreflect.FloatKind || isInteger(k), isInteger(k)
	case plan.TypeVarchar:
		return k == protoreflect.StringKind || k == protoreflect.EnumKind, false
	case plan.TypeBoolean:
		return k == protoreflect.BoolKind, false
	}
	return false, false
}

func protoWant(t plan.Type) string {
	switch t {
	case plan.TypeBigint:
		return "an integer (int32, int64, sint*, uint32, uint64, fixed*, sfixed*) or its wrapper"
	case plan.TypeDouble:
		return "double, float, an integer or their wrappers"
	case plan.TypeVarchar:
		return "string, an enum or google.protobuf.StringValue"
	case plan.TypeBoolean:
		return "bool or google.protobuf.BoolValue"
	case plan.TypeTimestamp:
		return timestampName
	}
	return "?"
}

// wireType is the wire type of a scalar of kind k.
func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return protowire.Fixed64Type
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return protowire.Fixed32Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

// newProtoPlan resolves message md (named where, for messages) against
// table t, as newPlan does an Avro record.
func newProtoPlan(t Table, md protoreflect.MessageDescriptor, where string) *pbPlan {
	p := &pbPlan{byNum: map[protowire.Number]int{}}
	where = fmt.Sprintf("%s, message %s", where, md.FullName())
	cols := map[string]int{}
	for i, c := range t.Columns {
		if !metaColumns[strings.ToLower(c.Name)] {
			cols[plan.NameKey(c.Name)] = i
		}
	}
	has := make([]bool, len(t.Columns))
	oneofs := map[protoreflect.FullName]int{}
	fields := md.Fields()
	var names []string
	for i := range fields.Len() {
		fd := fields.Get(i)
		names = append(names, string(fd.Name()))
		oneof := -1
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			n, ok := oneofs[o.FullName()]
			if !ok {
				n = len(oneofs)
				oneofs[o.FullName()] = n
			}
			oneof = n
		}
		ci, ok := cols[plan.NameKey(string(fd.Name()))]
		if !ok || has[ci] {
			if oneof >= 0 {
				p.byNum[fd.Number()] = len(p.steps)
				p.steps = append(p.steps, pbStep{col: -1, name: string(fd.Name()), kind: fd.Kind(), wt: wireType(fd.Kind()), oneof: oneof, presence: true})
			}
			continue
		}
		c := t.Columns[ci]
		refuse := func(why string) *pbPlan {
			p.err = fmt.Errorf("%s: field %s is protobuf %s, which does not fit column %s %s (it takes %s)%s", where, fd.Name(), protoType(fd), c.Name, c.Type, protoWant(c.Type), why)
			return p
		}
		if fd.IsList() || fd.IsMap() {
			return refuse(": repeated and map fields are not read into columns")
		}
		st := pbStep{col: ci, name: string(fd.Name()), kind: fd.Kind(), wt: wireType(fd.Kind()), presence: fd.HasPresence(), oneof: oneof}
		switch fd.Kind() {
		case protoreflect.MessageKind:
			fn := fd.Message().FullName()
			if wk, ok := wrapperKinds[fn]; ok {
				fits, toD := protoFits(wk, c.Type)
				if !fits {
					return refuse("")
				}
				st.wrap, st.kind, st.toDouble = true, wk, toD
			} else if fn == timestampName && c.Type == plan.TypeTimestamp {
				st.ts = true
			} else {
				return refuse("")
			}
		case protoreflect.GroupKind, protoreflect.BytesKind:
			return refuse("")
		default:
			fits, toD := protoFits(fd.Kind(), c.Type)
			if !fits {
				return refuse("")
			}
			st.toDouble = toD
			if fd.Kind() == protoreflect.EnumKind {
				st.enum = fd.Enum().Values()
			}
			if !st.presence {
				st.zero = protoZero(fd, st.toDouble)
			}
		}
		has[ci] = true
		p.byNum[fd.Number()] = len(p.steps)
		p.steps = append(p.steps, st)
	}
	p.oneofs = len(oneofs)
	if len(p.steps) < 127 {
		p.dense = make([]int8, denseMax)
		for num, i := range p.byNum {
			if num < denseMax {
				p.dense[num] = int8(i + 1)
			}
		}
	}
	for i, c := range t.Columns {
		if has[i] || metaColumns[strings.ToLower(c.Name)] {
			continue
		}
		if c.NotNull || i == t.EventTime {
			what := "NOT NULL column"
			if i == t.EventTime {
				what = "event-time column"
			}
			p.err = fmt.Errorf("%s: no field for the %s %s (fields: %s)", where, what, c.Name, strings.Join(names, ", "))
			return p
		}
	}
	return p
}

// protoZero is the value an absent field without presence reads as: its
// default (proto3: zero, an enum's first value).
func protoZero(fd protoreflect.FieldDescriptor, toDouble bool) plan.Value {
	v := fd.Default()
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return plan.Bool(v.Bool())
	case protoreflect.StringKind:
		return plan.Str(v.String())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return plan.Str(string(ev.Name()))
		}
		return plan.Str(strconv.Itoa(int(v.Enum())))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return plan.Float(v.Float())
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		if toDouble {
			return plan.Float(float64(v.Uint()))
		}
		return plan.Int(int64(v.Uint()))
	}
	if toDouble {
		return plan.Float(float64(v.Int()))
	}
	return plan.Int(v.Int())
}

// protoDecoder reads registry-framed protobuf record values.
type protoDecoder struct {
	t       Table
	reg     *Registry
	schemas map[int]*pbSchema
	// per record, by step: set; a Timestamp's seconds and nanos (merged
	// as protobuf merges a message field that occurs twice); by oneof,
	// the step of the member last set.
	set   []bool
	secs  []int64
	nanos []int64
	last  []int
}

func newProtoDecoder(t Table) (Decoder, error) {
	reg, err := NewRegistry(t.Attrs["schema_registry"])
	if err != nil {
		return nil, err
	}
	return &protoDecoder{t: t, reg: reg, schemas: map[int]*pbSchema{}}, nil
}

// checkProto checks t's columns against the message its "message" names
// (else the first) in its subject's latest schema.
func checkProto(ctx context.Context, t Table, reg *Registry) error {
	ss, err := reg.latest(ctx, t.Subject())
	if err != nil {
		return err
	}
	where := fmt.Sprintf("subject %s (latest version, schema id %d)", t.Subject(), ss.ID)
	fd, err := reg.protoFile(ctx, ss.Schema, ss.ID)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	md, err := protoNamed(fd, t.Attrs["message"])
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return newProtoPlan(t, md, where).err
}

// schema is id's file, fetched and parsed once (a retryable error, or an
// unknown id, is not kept).
func (d *protoDecoder) schema(id int) (*pbSchema, error) {
	if s := d.schemas[id]; s != nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	defer cancel()
	ss, err := d.reg.fetch(ctx, id)
	if err != nil {
		return nil, err
	}
	s := &pbSchema{plans: map[string]*pbPlan{}}
	if s.fd, err = d.reg.protoFile(ctx, ss, id); err != nil {
		if IsRetryable(err) {
			return nil, err
		}
		s.err = fmt.Errorf("schema id %d: %w", id, err)
	}
	d.schemas[id] = s
	return s, nil
}

func (d *protoDecoder) Decode(v []byte) (plan.Row, error) {
	id, payload, err := SplitHeader(v)
	if err != nil {
		return nil, err
	}
	s, err := d.schema(id)
	if err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	list, msg, err := SplitMessageIndex(payload)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	p := s.plans[string(list)]
	if p == nil {
		if len(s.plans) >= 64 {
			clear(s.plans) // a bound on what bad records may keep
		}
		md, err := protoMessage(s.fd, messageIndex(list))
		if err != nil {
			return nil, fmt.Errorf("schema id %d: %w", id, err)
		}
		p = newProtoPlan(d.t, md, fmt.Sprintf("schema id %d", id))
		s.plans[string(list)] = p
	}
	if p.err != nil {
		return nil, p.err
	}
	return d.read(p, msg)
}

func protoErr(n int) error {
	return fmt.Errorf("not a valid protobuf message of its schema: %s", protoMsg(protowire.ParseError(n)))
}

// protoMsg is err's message without the "proto:" prefix (which
// google.golang.org/protobuf writes with a space or a no-break space, at
// random, so that nobody matches it).
func protoMsg(err error) string {
	m := err.Error()
	if r := strings.TrimPrefix(m, "proto:"); r != m {
		return strings.TrimLeft(r, " \u00a0")
	}
	return m
}

// read decodes message b by p.
func (d *protoDecoder) read(p *pbPlan, b []byte) (plan.Row, error) {
	row := make(plan.Row, len(d.t.Columns))
	ns := len(p.steps)
	d.set = resize(d.set, ns)
	d.secs = resize(d.secs, ns)
	d.nanos = resize(d.nanos, ns)
	d.last = resize(d.last, p.oneofs)
	for i := range d.last {
		d.last[i] = -1
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protoErr(n)
		}
		b = b[n:]
		si, ok := p.step(num)
		if !ok || p.steps[si].wt != typ {
			// An unknown field, or one of another wire type (protobuf
			// keeps it as an unknown field too): skipped.
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, protoErr(n)
			}
			b = b[n:]
			continue
		}
		st := &p.steps[si]
		if st.oneof >= 0 {
			if o := d.last[st.oneof]; o >= 0 && o != si {
				d.unset(p, row, o) // setting a oneof member clears the others
			}
			d.last[st.oneof] = si
		}
		if st.col < 0 {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, protoErr(n)
			}
			b = b[n:]
			continue
		}
		var err error
		switch {
		case st.ts:
			var m []byte
			if m, n = protowire.ConsumeBytes(b); n < 0 {
				return nil, protoErr(n)
			}
			if err = d.timestamp(si, m); err != nil {
				return nil, fmt.Errorf("column %s: %w", d.t.Columns[st.col].Name, err)
			}
		case st.wrap:
			var m []byte
			if m, n = protowire.ConsumeBytes(b); n < 0 {
				return nil, protoErr(n)
			}
			if !d.set[si] {
				row[st.col] = scalarZero(st)
			}
			if err = wrapper(st, m, &row[st.col]); err != nil {
				return nil, fmt.Errorf("column %s: %w", d.t.Columns[st.col].Name, err)
			}
		default:
			if n, err = scalar(st, b, &row[st.col]); err != nil {
				return nil, fmt.Errorf("column %s: %w", d.t.Columns[st.col].Name, err)
			}
		}
		b = b[n:]
		d.set[si] = true
	}
	for si := range p.steps {
		st := &p.steps[si]
		if st.col < 0 {
			continue
		}
		c := d.t.Columns[st.col]
		switch {
		case d.set[si] && st.ts:
			s, ns := d.secs[si], d.nanos[si]
			if s < plan.MinTime/1000-1 || s > plan.MaxTime/1000+1 {
				return nil, fmt.Errorf("column %s: a Timestamp of %d seconds is out of the range of TIMESTAMP", c.Name, s)
			}
			ms := s*1000 + floorDiv(ns, 1_000_000)
			if err := plan.CheckTime(ms); err != nil {
				return nil, fmt.Errorf("column %s: %w", c.Name, err)
			}
			row[st.col] = plan.Time(ms)
		case d.set[si]:
		case !st.presence:
			row[st.col] = st.zero
		case c.NotNull || st.col == d.t.EventTime:
			return nil, fmt.Errorf("column %s: field %s is absent, for a NOT NULL column", c.Name, st.name)
		}
	}
	return row, nil
}

// unset forgets step si's value (a oneof member another one replaced).
func (d *protoDecoder) unset(p *pbPlan, row plan.Row, si int) {
	d.set[si], d.secs[si], d.nanos[si] = false, 0, 0
	if c := p.steps[si].col; c >= 0 {
		row[c] = plan.Null
	}
}

// timestamp merges a google.protobuf.Timestamp's fields into step si's.
func (d *protoDecoder) timestamp(si int, m []byte) error {
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return protoErr(n)
		}
		m = m[n:]
		if (num == 1 || num == 2) && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(m)
			if n < 0 {
				return protoErr(n)
			}
			m = m[n:]
			if num == 1 {
				d.secs[si] = int64(v)
			} else {
				d.nanos[si] = int64(int32(v))
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, m); n < 0 {
			return protoErr(n)
		}
		m = m[n:]
	}
	return nil
}

// wrapper reads a wrapper message's value (field 1) into *v.
func wrapper(st *pbStep, m []byte, v *plan.Value) error {
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return protoErr(n)
		}
		m = m[n:]
		if num == 1 && typ == wireType(st.kind) {
			n, err := scalar(st, m, v)
			if err != nil {
				return err
			}
			m = m[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, m); n < 0 {
			return protoErr(n)
		}
		m = m[n:]
	}
	return nil
}

// scalarZero is a wrapper's value when its field 1 is absent.
func scalarZero(st *pbStep) plan.Value {
	switch st.kind {
	case protoreflect.BoolKind:
		return plan.Bool(false)
	case protoreflect.StringKind:
		return plan.Str("")
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return plan.Float(0)
	}
	if st.toDouble {
		return plan.Float(0)
	}
	return plan.Int(0)
}

// scalar reads one value of st's kind at the start of b into *v, and how
// many bytes it took.
func scalar(st *pbStep, b []byte, v *plan.Value) (int, error) {
	var u uint64
	var n int
	switch wireType(st.kind) {
	case protowire.VarintType:
		u, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(b)
		u = uint64(x)
	case protowire.Fixed64Type:
		u, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		var s []byte
		if s, n = protowire.ConsumeBytes(b); n < 0 {
			return 0, protoErr(n)
		}
		if !utf8.Valid(s) {
			return 0, errors.New("a string that is not valid UTF-8")
		}
		*v = plan.Str(string(s))
		return n, nil
	}
	if n < 0 {
		return 0, protoErr(n)
	}
	var i int64
	switch st.kind {
	case protoreflect.BoolKind:
		*v = plan.Bool(u != 0)
		return n, nil
	case protoreflect.EnumKind:
		e := protoreflect.EnumNumber(int32(u))
		if ev := st.enum.ByNumber(e); ev != nil {
			*v = plan.Str(string(ev.Name()))
		} else {
			// A number the enum lacks (an open enum's, or a closed one's:
			// proto.Unmarshal keeps those too) reads as the number.
			*v = plan.Str(strconv.Itoa(int(e)))
		}
		return n, nil
	case protoreflect.FloatKind:
		*v = plan.Float(float64(math.Float32frombits(uint32(u))))
		return n, nil
	case protoreflect.DoubleKind:
		*v = plan.Float(math.Float64frombits(u))
		return n, nil
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		i = int64(int32(u))
	case protoreflect.Sint32Kind:
		i = int64(int32(protowire.DecodeZigZag(u & math.MaxUint32)))
	case protoreflect.Sint64Kind:
		i = protowire.DecodeZigZag(u)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		i = int64(uint32(u))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if u > math.MaxInt64 {
			if st.toDouble {
				*v = plan.Float(float64(u))
				return n, nil
			}
			return 0, fmt.Errorf("%d is beyond BIGINT's range", u)
		}
		i = int64(u)
	default: // int64, sfixed64
		i = int64(u)
	}
	if st.toDouble {
		*v = plan.Float(float64(i))
	} else {
		*v = plan.Int(i)
	}
	return n, nil
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
