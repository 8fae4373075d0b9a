package format

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/planner/plan"
)

// The three versions of the JSON Schema evolution test: v2 adds a
// nullable bidder, v3 removes note.
const (
	jsBidV1 = `{"type": "object", "properties": {
		"auction": {"type": "integer", "minimum": 0},
		"price": {"type": "number"},
		"ts": {"type": "string", "format": "date-time"},
		"note": {"type": "string"}},
		"required": ["auction", "ts"]}`
	jsBidV2 = `{"type": "object", "properties": {
		"auction": {"type": "integer", "minimum": 0},
		"price": {"type": "number"},
		"ts": {"type": "string", "format": "date-time"},
		"note": {"type": "string"},
		"bidder": {"oneOf": [{"type": "null", "title": "Not included"}, {"type": "string"}]}},
		"required": ["auction", "ts"]}`
	jsBidV3 = `{"type": "object", "properties": {
		"auction": {"type": "integer", "minimum": 0},
		"price": {"type": "number"},
		"ts": {"type": "string", "format": "date-time"},
		"bidder": {"type": ["null", "string"]}},
		"required": ["auction", "ts"]}`
)

func registerJSON(t testing.TB, reg *srfake.Registry, subject, text string) int {
	t.Helper()
	id, _, err := reg.RegisterSchema(subject, sr.Schema{Schema: text, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// jsFrame is v as JSON behind the Confluent header of id, as Confluent's
// JSON Schema serializer writes it.
func jsFrame(t testing.TB, id int, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(AppendHeader(nil, id), b...)
}

func TestJSONSchemaEvolution(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	fetches := countIDs(reg)
	ids := []int{registerJSON(t, reg, "bids-value", jsBidV1), registerJSON(t, reg, "bids-value", jsBidV2), registerJSON(t, reg, "bids-value", jsBidV3)}
	for _, validate := range []string{"false", "true"} {
		tab := Table{Name: "bids", Columns: bidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "json_schema", "schema_registry": reg.URL(), "validate": validate}}
		if err := Check(context.Background(), tab); err != nil {
			t.Fatal(err)
		}
		d, err := NewDecoder(tab)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			a, p, ms := int64(i%4), float64(i)*1.5, int64(1_700_000_000_000+i*1001)
			v := i % 3
			rec := map[string]any{"auction": a, "price": p, "ts": time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)}
			want := plan.Row{plan.Int(a), plan.Float(p), plan.Time(ms), plan.Null, plan.Null, plan.Null}
			if v < 2 && i%2 == 0 {
				rec["note"] = fmt.Sprint("n", i)
				want[3] = plan.Str(fmt.Sprint("n", i))
			}
			if v > 0 {
				if i%4 == 1 {
					rec["bidder"] = nil
				} else {
					rec["bidder"] = "alice"
					want[4] = plan.Str("alice")
				}
			}
			row, err := d.Decode(jsFrame(t, ids[v], rec))
			if err != nil {
				t.Fatalf("validate %s, record %d (v%d): %v", validate, i, v+1, err)
			}
			if fmt.Sprint(row) != fmt.Sprint(want) {
				t.Fatalf("validate %s, record %d (v%d): %v, want %v", validate, i, v+1, row, want)
			}
		}
	}
	if n := fetches.Load(); n != 6 {
		t.Fatalf("%d schema-by-id fetches, want 6 (each decoder each id once)", n)
	}
}

func TestJSONSchemaCheck(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	types := `{"type": "object", "properties": {
		"i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"}, "t": {"type": "string", "format": "date-time"},
		"b": {"type": "boolean"}, "ni": {"type": ["integer", "null"]}, "any": {}, "e": {"enum": ["A", "B"]},
		"o": {"type": "object"}, "a": {"type": "array"}, "r": {"$ref": "#/definitions/x"}, "nul": {"type": "null"},
		"u": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}`
	registerJSON(t, reg, "types-value", types)
	registerJSON(t, reg, "closed-value", `{"type": "object", "properties": {"i": {"type": "integer"}}, "additionalProperties": false}`)
	registerJSON(t, reg, "array-value", `{"type": "array"}`)
	registerProto(t, reg, "proto-value", pbBidV1)
	attrs := func(topic string) map[string]string {
		return map[string]string{"topic": topic, "format": "json_schema", "schema_registry": reg.URL()}
	}
	col := func(name string, typ plan.Type, notNull bool) plan.Column {
		return plan.Column{Name: name, Type: typ, NotNull: notNull}
	}
	// What fits: an integer into DOUBLE too, a date-time into VARCHAR
	// too, an integer into TIMESTAMP (epoch ms); a property without a
	// type (checked per record), a string enum, a nullable column the
	// schema lacks (it allows more properties).
	fits := plan.Schema{col("i", plan.TypeBigint, true), col("n", plan.TypeDouble, false), col("s", plan.TypeVarchar, false),
		col("t", plan.TypeTimestamp, false), col("b", plan.TypeBoolean, false), col("ni", plan.TypeBigint, false), col("any", plan.TypeBoolean, false),
		col("e", plan.TypeVarchar, false), col("later", plan.TypeVarchar, false), col("_partition", plan.TypeBigint, false)}
	for _, c := range []plan.Column{col("I", plan.TypeDouble, false), col("t", plan.TypeVarchar, false), col("i", plan.TypeTimestamp, false)} {
		if err := Check(context.Background(), Table{Name: "t", Columns: plan.Schema{c}, EventTime: -1, Attrs: attrs("types")}); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	if err := Check(context.Background(), Table{Name: "t", Columns: fits, EventTime: -1, Attrs: attrs("types")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cols  plan.Schema
		et    int
		topic string
		want  string
	}{
		{plan.Schema{col("i", plan.TypeVarchar, false)}, -1, "types",
			"subject types-value (latest version, schema id 1): property i is JSON Schema integer, which does not fit column i VARCHAR (it takes string)"},
		{plan.Schema{col("n", plan.TypeBigint, false)}, -1, "types", "property n is JSON Schema number, which does not fit column n BIGINT (it takes integer)"},
		{plan.Schema{col("s", plan.TypeTimestamp, false)}, -1, "types", "property s is JSON Schema string, which does not fit column s TIMESTAMP(3) (it takes string with format date-time, or integer (epoch milliseconds))"},
		{plan.Schema{col("b", plan.TypeBigint, false)}, -1, "types", "property b is JSON Schema boolean, which does not fit"},
		{plan.Schema{col("ni", plan.TypeVarchar, false)}, -1, "types", "property ni is JSON Schema integer or null, which does not fit column ni VARCHAR"},
		{plan.Schema{col("o", plan.TypeVarchar, false)}, -1, "types", "property o is JSON Schema object, which does not fit"},
		{plan.Schema{col("a", plan.TypeVarchar, false)}, -1, "types", "property a is JSON Schema array, which does not fit"},
		{plan.Schema{col("r", plan.TypeVarchar, false)}, -1, "types", "property r is a $ref (#/definitions/x): references are not read"},
		{plan.Schema{col("nul", plan.TypeVarchar, false)}, -1, "types", "property nul is JSON Schema null, which does not fit"},
		{plan.Schema{col("u", plan.TypeBigint, false)}, -1, "types", "property u is JSON Schema integer or string, which does not fit column u BIGINT"},
		{plan.Schema{col("missing", plan.TypeBigint, true)}, -1, "types", "no property for the NOT NULL column missing (properties: a, any, b, e, i, n, ni, nul, o, r, s, t, u)"},
		{plan.Schema{col("i", plan.TypeBigint, false), col("when", plan.TypeTimestamp, false)}, 1, "types", "no property for the event-time column when"},
		{plan.Schema{col("later", plan.TypeBigint, false)}, -1, "closed", "no property for column later, and additionalProperties is false: no record has it (properties: i)"},
		{plan.Schema{col("i", plan.TypeBigint, false)}, -1, "array", `the schema's type is "array", not object`},
		{plan.Schema{col("i", plan.TypeBigint, false)}, -1, "proto", "a PROTOBUF schema, not JSON (format json_schema)"},
		{plan.Schema{col("i", plan.TypeBigint, false)}, -1, "nope", "subject nope-value is not in the schema registry"},
	} {
		err := Check(context.Background(), Table{Name: "t", Columns: c.cols, EventTime: c.et, Attrs: attrs(c.topic)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.cols, err, c.want)
		}
	}
}

func TestJSONSchemaBadRecords(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	fetches := countIDs(reg)
	id := registerJSON(t, reg, "bids-value", jsBidV3)
	idStr := registerJSON(t, reg, "bids-value", strings.Replace(jsBidV3, `"price": {"type": "number"}`, `"price": {"type": "string"}`, 1))
	idProto := registerProto(t, reg, "other-value", pbBidV1)
	tab := Table{Name: "bids", Columns: bidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "json_schema", "schema_registry": reg.URL(), "validate": "true"}}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	good := jsFrame(t, id, map[string]any{"auction": 1, "price": 2.5, "ts": "2024-01-01T00:00:00Z", "extra": map[string]any{"deep": []any{1, 2}}})
	for _, c := range []struct {
		v    []byte
		want string
	}{
		{[]byte(`{"auction": 1}`), "not the Schema Registry magic byte 0"},
		{good[:3], "shorter than the 5-byte Schema Registry header"},
		{good[:len(good)-4], "not a JSON value"},
		{append(AppendHeader(nil, 999), good[5:]...), fmt.Sprintf("schema id 999 is not in the schema registry %s", reg.URL())},
		{jsFrame(t, id, map[string]any{"auction": -1, "ts": "2024-01-01T00:00:00Z"}), fmt.Sprintf("does not match schema id %d: ", id)},
		{jsFrame(t, idStr, map[string]any{"auction": 1, "price": "x", "ts": "2024-01-01T00:00:00Z"}),
			fmt.Sprintf("schema id %d: property price is JSON Schema string, which does not fit column Price DOUBLE", idStr)},
		{jsFrame(t, idProto, map[string]any{}), fmt.Sprintf("schema id %d: a PROTOBUF schema, not JSON", idProto)},
	} {
		if _, err := d.Decode(c.v); err == nil || !strings.Contains(err.Error(), c.want) || IsRetryable(err) {
			t.Errorf("%q: %v, want %q", c.v, err, c.want)
		}
	}
	// Without validation a record is checked as format json checks one.
	tab.Attrs["validate"] = "false"
	d2, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    []byte
		want string
	}{
		{good[:len(good)-4], "not a JSON object"},
		{jsFrame(t, id, map[string]any{"auction": 1, "price": "x", "ts": "2024-01-01T00:00:00Z"}), "column Price: expected DOUBLE, got a string"},
		{jsFrame(t, id, map[string]any{"price": 1, "ts": "2024-01-01T00:00:00Z"}), "column auction: missing value for NOT NULL column"},
		{jsFrame(t, id, []int{1}), "not a JSON object"},
	} {
		if _, err := d2.Decode(c.v); err == nil || !strings.Contains(err.Error(), c.want) || IsRetryable(err) {
			t.Errorf("%q: %v, want %q", c.v, err, c.want)
		}
	}
	for _, d := range []Decoder{d, d2} {
		row, err := d.Decode(good)
		if err != nil || fmt.Sprint(row) != fmt.Sprint(plan.Row{plan.Int(1), plan.Float(2.5), plan.Time(1704067200000), plan.Null, plan.Null, plan.Null}) {
			t.Fatalf("good: %v %v", row, err)
		}
	}
	before := fetches.Load()
	if _, err := d.Decode(append(AppendHeader(nil, 999), good[5:]...)); err == nil || fetches.Load() != before {
		t.Fatalf("unknown id asked again at once: %v", err)
	}
}

// BenchmarkJSONSchemaDecode: one registry-framed JSON bid into a row,
// without and with validating it against its schema.
func BenchmarkJSONSchemaDecode(b *testing.B) {
	reg := srfake.New()
	defer reg.Close()
	id := registerJSON(b, reg, "bids-value", jsBidV2)
	v := jsFrame(b, id, map[string]any{"auction": 7, "price": 1.5, "ts": "2024-01-01T00:00:00.005Z", "note": "a note", "bidder": "someone"})
	for _, validate := range []string{"false", "true"} {
		b.Run("validate="+validate, func(b *testing.B) {
			d, err := NewDecoder(Table{Name: "bids", Columns: bidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "json_schema", "schema_registry": reg.URL(), "validate": validate}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.Decode(v); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
