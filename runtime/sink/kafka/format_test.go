package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/format"
	"github.com/streamsql/streamsql/runtime/sink"
)

// newRegistry starts an in-memory Schema Registry (srfake, an httptest
// server on 127.0.0.1), closed when the test ends.
func newRegistry(t testing.TB) *srfake.Registry {
	t.Helper()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	return reg
}

// canon renders a row of cols for comparison: name=value, NULL, BIGINT
// and TIMESTAMP (epoch ms) as integers, DOUBLE as strconv's 'g'.
func canon(cols plan.Schema, vals []any) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + "=" + canonValue(vals[i])
	}
	return strings.Join(parts, " ")
}

func canonValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprintf("?%T(%v)", v, v)
}

// planCanon is the oracle's rendering of a plan row.
func planCanon(cols plan.Schema, r plan.Row) string {
	vals := make([]any, len(r))
	for i, v := range r {
		switch {
		case v.IsNull():
		case v.K == plan.TypeDouble:
			vals[i] = v.F()
		case v.K == plan.TypeVarchar:
			vals[i] = v.S
		case v.K == plan.TypeBoolean:
			vals[i] = v.I != 0
		default:
			vals[i] = v.I
		}
	}
	return canon(cols, vals)
}

// registryDecoder decodes records through franz-go's sr.Serde, configured
// from the schemas the registry holds, fetched by the ids the records
// carry (the registry's deserializer path): hamba/avro for Avro, dynamicpb
// of the registered .proto text for Protobuf, encoding/json for JSON
// Schema. Each decoded record is rendered as canon of the columns.
type registryDecoder struct {
	t     testing.TB
	cl    *sr.Client
	serde *sr.Serde
	cols  map[int]plan.Schema // by schema id: the columns its records render
	types map[int]sr.SchemaType
}

func newRegistryDecoder(t testing.TB, url string) *registryDecoder {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	return &registryDecoder{t: t, cl: cl, serde: sr.NewSerde(), cols: map[int]plan.Schema{}, types: map[int]sr.SchemaType{}}
}

// decode decodes b (a record's key or value) as a row of cols.
func (d *registryDecoder) decode(b []byte, cols plan.Schema) string {
	d.t.Helper()
	id, _, err := d.serde.DecodeID(b)
	if err != nil {
		d.t.Fatalf("record %x: %v", b, err)
	}
	if _, ok := d.cols[id]; !ok {
		d.register(id, cols)
	}
	v, err := d.serde.DecodeNew(b)
	if err != nil {
		d.t.Fatalf("decode a record of schema id %d (%x): %v", id, b, err)
	}
	return canon(cols, (*v.(*[]any))[0].([]any))
}

// register fetches schema id and registers its decoder in the serde.
func (d *registryDecoder) register(id int, cols plan.Schema) {
	d.t.Helper()
	s, err := d.cl.SchemaByID(context.Background(), id)
	if err != nil {
		d.t.Fatalf("schema id %d: %v", id, err)
	}
	d.cols[id], d.types[id] = cols, s.Type
	gen := sr.GenerateFn(func() any { return &[]any{} })
	switch s.Type {
	case sr.TypeAvro:
		sch, err := avro.Parse(s.Schema)
		if err != nil {
			d.t.Fatal(err)
		}
		d.serde.Register(id, &[]any{}, gen, sr.DecodeFn(func(b []byte, v any) error {
			var m map[string]any
			if err := avro.Unmarshal(sch, b, &m); err != nil {
				return err
			}
			row := make([]any, len(cols))
			for i, c := range cols {
				switch x := m[c.Name].(type) {
				case time.Time:
					row[i] = x.UnixMilli()
				case map[string]any: // a union decoded as {"type": value}
					for _, y := range x {
						row[i] = y
						if tm, ok := y.(time.Time); ok {
							row[i] = tm.UnixMilli()
						}
					}
				default:
					row[i] = x
				}
			}
			*v.(*[]any) = []any{row}
			return nil
		}))
	case sr.TypeProtobuf:
		comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{"s.proto": s.Schema}),
		})}
		files, err := comp.Compile(context.Background(), "s.proto")
		if err != nil {
			d.t.Fatalf("schema id %d: %v\n%s", id, err, s.Schema)
		}
		md := files[0].Messages().Get(0)
		d.serde.Register(id, &[]any{}, gen, sr.Index(0), sr.DecodeFn(func(b []byte, v any) error {
			msg := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(b, msg); err != nil {
				return err
			}
			row := make([]any, len(cols))
			for i, c := range cols {
				fd := md.Fields().ByName(protoreflect.Name(c.Name))
				if fd == nil {
					return fmt.Errorf("no field %s", c.Name)
				}
				if fd.HasPresence() && !msg.Has(fd) {
					continue // NULL
				}
				x := msg.Get(fd)
				switch fd.Kind() {
				case protoreflect.Int64Kind, protoreflect.Int32Kind, protoreflect.Sint64Kind:
					row[i] = x.Int()
				case protoreflect.DoubleKind:
					row[i] = x.Float()
				case protoreflect.StringKind:
					row[i] = x.String()
				case protoreflect.BoolKind:
					row[i] = x.Bool()
				case protoreflect.MessageKind:
					ts := x.Message()
					fs := ts.Descriptor().Fields()
					row[i] = ts.Get(fs.ByName("seconds")).Int()*1000 + ts.Get(fs.ByName("nanos")).Int()/1e6
				default:
					return fmt.Errorf("field %s: kind %s", c.Name, fd.Kind())
				}
			}
			*v.(*[]any) = []any{row}
			return nil
		}))
	case sr.TypeJSON:
		d.serde.Register(id, &[]any{}, gen, sr.DecodeFn(func(b []byte, v any) error {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				return err
			}
			row := make([]any, len(cols))
			for i, c := range cols {
				switch x := m[c.Name].(type) {
				case json.Number:
					if c.Type == plan.TypeBigint {
						row[i], err = x.Int64()
					} else {
						row[i], err = x.Float64()
					}
					if err != nil {
						return err
					}
				case string:
					switch c.Type {
					case plan.TypeTimestamp:
						tm, err := time.Parse(time.RFC3339Nano, x)
						if err != nil {
							return err
						}
						row[i] = tm.UnixMilli()
					case plan.TypeDouble:
						row[i], _ = strconv.ParseFloat(x, 64) // "NaN", "Infinity", "-Infinity"
					default:
						row[i] = x
					}
				default:
					row[i] = x
				}
			}
			*v.(*[]any) = []any{row}
			return nil
		}))
	default:
		d.t.Fatalf("schema id %d: type %s", id, s.Type)
	}
}

// decodeLatest decodes the records read from a sink topic of columns
// cols (key: key columns) and returns the latest value per key.
func (d *registryDecoder) decodeLatest(recs []rec, cols, keyCols plan.Schema) map[string]string {
	d.t.Helper()
	m := map[string]string{}
	for _, r := range recs {
		k := d.decode([]byte(r.key), keyCols)
		if r.value == nil {
			delete(m, k)
			continue
		}
		m[k] = d.decode([]byte(*r.value), cols)
	}
	return m
}

// oracle is the latest row per key of the changes the test wrote.
type oracle map[string]string

func (o oracle) apply(cols plan.Schema, key []int, changes []sink.Change) {
	keyCols := make(plan.Schema, len(key))
	for i, k := range key {
		keyCols[i] = cols[k]
	}
	for _, ch := range changes {
		k := planCanon(keyCols, ch.Key)
		if ch.Row == nil {
			delete(o, k)
		} else {
			o[k] = planCanon(cols, ch.Row)
		}
	}
}

func diffMaps(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	var bad []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			bad = append(bad, fmt.Sprintf("missing %s => %s", k, w))
		} else if g != w {
			bad = append(bad, fmt.Sprintf("%s:\n   got  %s\n   want %s", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("extra %s => %s", k, g))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("%s: %d keys differ from the oracle (%d keys):\n%s", what, len(bad), len(want), strings.Join(bad, "\n"))
	}
}

// formatChanges are inserts, updates and deletes over ids 0..n-1 in
// rounds (round r: every id upserted, NULLs and odd doubles among them,
// one in five of round 1's ids deleted, some deleted ids inserted again).
func formatChanges(round, n int, nonFinite bool) []sink.Change {
	var out []sink.Change
	for i := 0; i < n; i++ {
		id := int64(i)
		switch {
		case round == 1 && i%5 == 0:
			out = append(out, del(id))
			continue
		case round == 2 && i%10 != 0 && i%5 == 0:
			continue // stays deleted
		}
		r := row(id, fmt.Sprintf("n%d-%d é\"<", i, round), float64(i)/7+float64(round), 1704067200000+id*1001-int64(round)*5e12, (i+round)%2 == 0, id*int64(round+1)-40)
		switch i % 7 {
		case 1:
			r[1], r[3] = plan.Null, plan.Null
		case 2:
			r[2], r[4], r[5] = plan.Null, plan.Null, plan.Null
		case 3:
			r[2], r[5] = plan.Float(0), plan.Int(0)
		case 4:
			if nonFinite {
				r[2] = plan.Float([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[round%3])
			}
		}
		out = append(out, upsert(r))
	}
	return out
}

var testKeyColumns = plan.Schema{testColumns[0]}

// TestFormatsThroughRegistry writes inserts, updates and deletes in each
// registry format, exactly once and at least once, reads the topic back
// decoding through the registry's schemas by id, and compares the last
// value per key with the oracle of the changes written.
func TestFormatsThroughRegistry(t *testing.T) {
	for _, f := range []string{"avro", "protobuf", "json_schema"} {
		for _, eo := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/exactly_once=%v", f, eo), func(t *testing.T) {
				_, addr := newCluster(t)
				reg := newRegistry(t)
				topic := "out-" + strings.ReplaceAll(f, "_", "-")
				p := open(t, testSpec(addr, topic, eo, "format", f, "schema_registry", reg.URL(), "partitions", "3"))
				if eo && committed(t, p) != 0 {
					t.Fatal("a new sink has committed epochs")
				}
				o := oracle{}
				for round := 0; round < 3; round++ {
					changes := formatChanges(round, 40, true)
					if eo {
						commit(t, p, uint64(round+1), changes...)
					} else if err := p.Apply(ctx(t), changes); err != nil {
						t.Fatal(err)
					}
					o.apply(testColumns, []int{0}, changes)
				}
				recs := readTopic(t, addr, topic, eo)
				d := newRegistryDecoder(t, reg.URL())
				diffMaps(t, f, d.decodeLatest(recs, testColumns, testKeyColumns), o)

				// Every record carries the ids registered under the
				// topic's subjects, schemas of the format.
				want := map[string]sr.SchemaType{"avro": sr.TypeAvro, "protobuf": sr.TypeProtobuf, "json_schema": sr.TypeJSON}[f]
				for _, subj := range []string{topic + "-value", topic + "-key"} {
					s, ok := reg.GetSchema(subj, 1)
					if !ok || s.Type != want {
						t.Fatalf("subject %s: %v %v, want a %s schema at version 1", subj, s, ok, want)
					}
					if _, ok := reg.GetSchema(subj, 2); ok {
						t.Fatalf("subject %s has a version 2: registering is not idempotent", subj)
					}
				}
				vs, _ := reg.GetSchema(topic+"-value", 1)
				ks, _ := reg.GetSchema(topic+"-key", 1)
				for _, r := range recs {
					kid, _, _ := (&sr.ConfluentHeader{}).DecodeID([]byte(r.key))
					if kid != ks.ID {
						t.Fatalf("record key schema id %d, want %d", kid, ks.ID)
					}
					if r.value != nil {
						if vid, _, _ := (&sr.ConfluentHeader{}).DecodeID([]byte(*r.value)); vid != vs.ID {
							t.Fatalf("record value schema id %d, want %d", vid, vs.ID)
						}
					}
				}

				// A second publisher (a restart) registers the same
				// schemas again: the same ids, no new version.
				p2 := open(t, testSpec(addr, topic, eo, "format", f, "schema_registry", reg.URL()))
				if p2.codec.ValueID != vs.ID || p2.codec.KeyID != ks.ID {
					t.Fatalf("restart: ids %d/%d, want %d/%d", p2.codec.ValueID, p2.codec.KeyID, vs.ID, ks.ID)
				}
			})
		}
	}
}

// TestFormatRegisterFalse: with "register": "false" the sink writes with
// the subject's latest schema when it takes the sink's records (here one
// with its fields in another order, an int for qty and an extra field
// with a default), and refuses one that does not, naming the field.
func TestFormatRegisterFalse(t *testing.T) {
	_, addr := newCluster(t)
	reg := newRegistry(t)
	field := func(name, typ string) string { return fmt.Sprintf(`{"name":%q,"type":%s}`, name, typ) }
	nullable := func(name, typ string) string {
		return fmt.Sprintf(`{"name":%q,"type":["null",%s],"default":null}`, name, typ)
	}
	schema := func(fields ...string) sr.Schema {
		return sr.Schema{Type: sr.TypeAvro, Schema: `{"type":"record","name":"Row","fields":[` + strings.Join(fields, ",") + `]}`}
	}
	reg.SeedSchema("mine-key", 1, 50, schema(field("id", `"long"`)))
	reg.SeedSchema("mine-value", 1, 51, schema(
		nullable("qty", `"int"`), field("id", `"long"`), field("source", `{"type":"string"}`+`,"default":"streamsql"`),
		nullable("ts", `{"type":"long","logicalType":"timestamp-micros"}`), nullable("name", `"string"`),
		nullable("price", `"double"`), nullable("ok", `"boolean"`)))
	p := open(t, testSpec(addr, "mine", true, "format", "avro", "schema_registry", reg.URL(), "register", "false"))
	if p.codec.ValueID != 51 || p.codec.KeyID != 50 {
		t.Fatalf("ids %d/%d, want the latest schemas' 51/50", p.codec.ValueID, p.codec.KeyID)
	}
	o := oracle{}
	changes := formatChanges(0, 20, true)
	commit(t, p, 1, changes...)
	o.apply(testColumns, []int{0}, changes)
	d := newRegistryDecoder(t, reg.URL())
	diffMaps(t, "register false", d.decodeLatest(readTopic(t, addr, "mine", true), testColumns, testKeyColumns), o)
	if _, ok := reg.GetSchema("mine-value", 2); ok {
		t.Fatal("register false registered a schema")
	}

	i := 0
	for _, c := range []struct {
		name   string
		fields []string
		want   string
	}{
		{"a string for a double", []string{field("id", `"long"`), nullable("name", `"string"`), nullable("price", `"string"`),
			nullable("ts", `{"type":"long","logicalType":"timestamp-millis"}`), nullable("ok", `"boolean"`), nullable("qty", `"long"`)},
			"field price is [null, string], which column price (DOUBLE) cannot be written as"},
		{"a column missing", []string{field("id", `"long"`), nullable("name", `"string"`), nullable("price", `"double"`),
			nullable("ts", `{"type":"long","logicalType":"timestamp-millis"}`), nullable("ok", `"boolean"`)},
			"column qty has no field"},
		{"a required field", []string{field("id", `"long"`), nullable("name", `"string"`), nullable("price", `"double"`),
			nullable("ts", `{"type":"long","logicalType":"timestamp-millis"}`), nullable("ok", `"boolean"`), nullable("qty", `"long"`), field("region", `"string"`)},
			"field region (string) has no column in the sink and no default"},
		{"not nullable", []string{field("id", `"long"`), field("name", `"string"`), nullable("price", `"double"`),
			nullable("ts", `{"type":"long","logicalType":"timestamp-millis"}`), nullable("ok", `"boolean"`), nullable("qty", `"long"`)},
			"field name (string) is not nullable, and column name may be NULL"},
	} {
		i++
		t.Run(c.name, func(t *testing.T) {
			topic := "bad-" + strings.ReplaceAll(c.name, " ", "-")
			reg.SeedSchema(topic+"-key", 1, 100+i, schema(field("id", `"long"`)))
			reg.SeedSchema(topic+"-value", 1, 200+i, schema(c.fields...))
			p, err := New(testSpec(addr, topic, true, "format", "avro", "schema_registry", reg.URL(), "register", "false"))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			err = p.Open(ctx(t))
			if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "subject "+topic+"-value") {
				t.Fatalf("Open: %v\nwant a permanent error naming subject %s-value and saying %q", err, topic, c.want)
			}
		})
	}
	t.Run("no subject", func(t *testing.T) {
		p, _ := New(testSpec(addr, "nosubject", true, "format", "protobuf", "schema_registry", reg.URL(), "register", "false"))
		defer p.Close()
		if err := p.Open(ctx(t)); err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), "subject nosubject-value: not in the schema registry") {
			t.Fatalf("Open: %v", err)
		}
	})
	t.Run("protobuf wrong type", func(t *testing.T) {
		reg.SeedSchema("pb-key", 1, 300, sr.Schema{Type: sr.TypeProtobuf, Schema: "syntax = \"proto3\";\nmessage K { int64 id = 1; }\n"})
		reg.SeedSchema("pb-value", 1, 301, sr.Schema{Type: sr.TypeProtobuf, Schema: "syntax = \"proto3\";\nmessage V { int64 id = 1; optional string name = 2; optional double price = 3; optional string ts = 4; optional bool ok = 5; optional int64 qty = 6; }\n"})
		p, _ := New(testSpec(addr, "pb", true, "format", "protobuf", "schema_registry", reg.URL(), "register", "false"))
		defer p.Close()
		if err := p.Open(ctx(t)); err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), "field ts of message V is string, which column ts (TIMESTAMP(3)) cannot be written as") {
			t.Fatalf("Open: %v", err)
		}
	})
	t.Run("json_schema wrong type", func(t *testing.T) {
		reg.SeedSchema("js-key", 1, 400, sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{"id":{"type":"integer"}}}`})
		reg.SeedSchema("js-value", 1, 401, sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{"id":{"type":"integer"},"qty":{"type":["null","string"]}},"required":["id"]}`})
		p, _ := New(testSpec(addr, "js", true, "format", "json_schema", "schema_registry", reg.URL(), "register", "false"))
		defer p.Close()
		if err := p.Open(ctx(t)); err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), "property qty allows [null string], and column qty is BIGINT") {
			t.Fatalf("Open: %v", err)
		}
	})
}

// TestFormatRegistryRefuses: a registry that refuses the generated schema
// as incompatible fails Open permanently, naming the subject and the
// field of its latest schema that does not fit.
func TestFormatRegistryRefuses(t *testing.T) {
	_, addr := newCluster(t)
	reg := newRegistry(t)
	reg.SeedSchema("strict-value", 1, 7, sr.Schema{Type: sr.TypeAvro, Schema: `{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"qty","type":"string"}]}`})
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && r.URL.Path == "/subjects/strict-value/versions" {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(sr.ResponseError{ErrorCode: 409, Message: "Schema being registered is incompatible with an earlier schema"})
			return true
		}
		return false
	})
	p, err := New(testSpec(addr, "strict", true, "format", "avro", "schema_registry", reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.Open(ctx(t))
	for _, want := range []string{"subject strict-value", "refuses the sink's schema as incompatible", "field qty is string, which column qty (BIGINT) cannot be written as"} {
		if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open: %v\nwant a permanent error containing %q", err, want)
		}
	}
}

// TestFormatRegistryOutage: a registry that cannot answer at Open is a
// retryable error (nothing is written meanwhile); once it answers, Open
// succeeds and the records go out in the format.
func TestFormatRegistryOutage(t *testing.T) {
	_, addr := newCluster(t)
	reg := newRegistry(t)
	var down atomic.Bool
	var refused atomic.Int64
	down.Store(true)
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() {
			refused.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	p, err := New(testSpec(addr, "flaky", false, "format", "avro", "schema_registry", reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 3; i++ {
		err := p.Open(ctx(t))
		if err == nil || sink.IsPermanent(err) || !strings.Contains(err.Error(), "is unavailable") || !strings.Contains(err.Error(), "HTTP 503") {
			t.Fatalf("Open %d with the registry down: %v, want a retryable error saying it is unavailable", i, err)
		}
		// Apply before a successful Open is refused the same way: no
		// record goes out in JSON.
		if err := p.Apply(ctx(t), []sink.Change{upsert(row(99, "a", 1, 0, true, 1))}); err == nil || sink.IsPermanent(err) {
			t.Fatalf("Apply with the registry down: %v, want a retryable error", err)
		}
	}
	if n := refused.Load(); n < 6 {
		t.Fatalf("the registry was asked %d times, want at least 6", n)
	}
	down.Store(false)
	// The runtime retries Open (bounded here).
	deadline := time.Now().Add(10 * time.Second)
	for err = p.Open(ctx(t)); err != nil; err = p.Open(ctx(t)) {
		if sink.IsPermanent(err) || time.Now().After(deadline) {
			t.Fatalf("Open with the registry back: %v", err)
		}
	}
	changes := formatChanges(0, 10, true)
	if err := p.Apply(ctx(t), changes); err != nil {
		t.Fatal(err)
	}
	o := oracle{} // without id 99: nothing of the Applies refused went out
	o.apply(testColumns, []int{0}, changes)
	d := newRegistryDecoder(t, reg.URL())
	diffMaps(t, "after the outage", d.decodeLatest(readTopic(t, addr, "flaky", false), testColumns, testKeyColumns), o)
}

// TestFormatSchemas checks the generated schemas of each format (the
// ones docs/connectors.md shows), the names made from the topic, and the
// settings New refuses.
func TestFormatSchemas(t *testing.T) {
	tbl := format.SinkTable{
		Topic: "1orders.v-1",
		Columns: plan.Schema{
			{Name: "id", Type: plan.TypeBigint, NotNull: true},
			{Name: "name", Type: plan.TypeVarchar},
			{Name: "price", Type: plan.TypeDouble},
			{Name: "ts", Type: plan.TypeTimestamp, NotNull: true},
			{Name: "ok", Type: plan.TypeBoolean},
		},
		Key: []int{0},
	}
	want := map[string][2]string{
		"avro": {
			`{"fields":[{"name":"id","type":"long"},{"default":null,"name":"name","type":["null","string"]},{"default":null,"name":"price","type":["null","double"]},{"name":"ts","type":{"logicalType":"timestamp-millis","type":"long"}},{"default":null,"name":"ok","type":["null","boolean"]}],"name":"_1orders_v_1_value","namespace":"streamsql","type":"record"}`,
			`{"fields":[{"name":"id","type":"long"}],"name":"_1orders_v_1_key","namespace":"streamsql","type":"record"}`,
		},
		"protobuf": {
			"syntax = \"proto3\";\n\npackage streamsql;\n\nimport \"google/protobuf/timestamp.proto\";\n\nmessage _1orders_v_1_value {\n  int64 id = 1;\n  optional string name = 2;\n  optional double price = 3;\n  google.protobuf.Timestamp ts = 4;\n  optional bool ok = 5;\n}\n",
			"syntax = \"proto3\";\n\npackage streamsql;\n\nmessage _1orders_v_1_key {\n  int64 id = 1;\n}\n",
		},
		"json_schema": {
			`{"$schema":"http://json-schema.org/draft-07/schema#","additionalProperties":false,"properties":{"id":{"type":"integer"},"name":{"type":["null","string"]},"ok":{"type":["null","boolean"]},"price":{"anyOf":[{"type":"null"},{"type":"number"},{"enum":["NaN","Infinity","-Infinity"]}]},"ts":{"format":"date-time","type":"string"}},"required":["id","name","price","ts","ok"],"title":"_1orders_v_1_value","type":"object"}`,
			`{"$schema":"http://json-schema.org/draft-07/schema#","additionalProperties":false,"properties":{"id":{"type":"integer"}},"required":["id"],"title":"_1orders_v_1_key","type":"object"}`,
		},
	}
	for f, w := range want {
		tbl.Attrs = map[string]string{"format": f}
		v, k, err := format.SinkSchemas(tbl)
		if err != nil {
			t.Fatal(err)
		}
		if v != w[0] || k != w[1] {
			t.Errorf("%s: value schema\n%s\nwant\n%s\nkey schema\n%s\nwant\n%s", f, v, w[0], k, w[1])
		}
	}

	for _, c := range []struct {
		attrs []string
		cols  plan.Schema
		want  string
	}{
		{[]string{"format", "avro"}, nil, `format avro needs a "schema_registry"`},
		{[]string{"format", "xml", "schema_registry", "http://r:1"}, nil, `format "xml" is not a registry format`},
		{[]string{"format", "avro", "schema_registry", "http://r:1"}, plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "a-b", Type: plan.TypeVarchar}}, "column a-b: an Avro field name is letters, digits and '_'"},
		{[]string{"format", "protobuf", "schema_registry", "http://r:1"}, plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "2x", Type: plan.TypeVarchar}}, "column 2x: a protobuf field name"},
	} {
		spec := testSpec("h:1", "t", true, c.attrs...)
		if c.cols != nil {
			spec.Columns = c.cols
		}
		if _, err := New(spec); err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v): %v, want a permanent error containing %q", c.attrs, err, c.want)
		}
	}
	// json_schema takes any column name (JSON's).
	spec := testSpec("h:1", "t", true, "format", "json_schema", "schema_registry", "http://r:1")
	spec.Columns = plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "a-b", Type: plan.TypeVarchar}}
	if _, err := New(spec); err != nil {
		t.Fatal(err)
	}
}
