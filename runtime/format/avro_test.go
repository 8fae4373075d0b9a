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
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/planner/plan"
)

func TestWireHeader(t *testing.T) {
	v := AppendHeader(nil, 0x01020304)
	v = append(v, 'x', 'y')
	if !bytes.Equal(v[:5], []byte{0, 1, 2, 3, 4}) {
		t.Fatalf("header % x", v[:5])
	}
	id, rest, err := SplitHeader(v)
	if err != nil || id != 0x01020304 || string(rest) != "xy" {
		t.Fatalf("SplitHeader: %d %q %v", id, rest, err)
	}
	for _, c := range []struct {
		v    []byte
		want string
	}{
		{[]byte{0, 0, 0, 1}, "4 bytes, shorter than the 5-byte"},
		{nil, "0 bytes"},
		{[]byte{'{', 0, 0, 0, 1, 2}, "byte 0x7b, not the Schema Registry magic byte 0"},
	} {
		if _, _, err := SplitHeader(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SplitHeader(% x): %v, want %q", c.v, err, c.want)
		}
	}
}

// The three versions of the evolution test: v2 adds an optional field,
// v3 removes a field that has a default.
const (
	bidV1 = `{"type":"record","name":"Bid","fields":[
		{"name":"auction","type":"long"},
		{"name":"price","type":"double"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"note","type":"string","default":""}]}`
	bidV2 = `{"type":"record","name":"Bid","fields":[
		{"name":"auction","type":"long"},
		{"name":"price","type":"double"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"note","type":"string","default":""},
		{"name":"bidder","type":["null","string"],"default":null}]}`
	bidV3 = `{"type":"record","name":"Bid","fields":[
		{"name":"auction","type":"long"},
		{"name":"price","type":"double"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"bidder","type":["null","string"],"default":null}]}`
)

type bid1 struct {
	Auction int64   `avro:"auction"`
	Price   float64 `avro:"price"`
	TS      int64   `avro:"ts"`
	Note    string  `avro:"note"`
}

type bid2 struct {
	Auction int64   `avro:"auction"`
	Price   float64 `avro:"price"`
	TS      int64   `avro:"ts"`
	Note    string  `avro:"note"`
	Bidder  *string `avro:"bidder"`
}

type bid3 struct {
	Auction int64     `avro:"auction"`
	Price   float64   `avro:"price"`
	TS      time.Time `avro:"ts"`
	Bidder  *string   `avro:"bidder"`
}

var bidColumns = plan.Schema{
	{Name: "auction", Type: plan.TypeBigint, NotNull: true},
	{Name: "Price", Type: plan.TypeDouble},
	{Name: "ts", Type: plan.TypeTimestamp, NotNull: true},
	{Name: "note", Type: plan.TypeVarchar},
	{Name: "bidder", Type: plan.TypeVarchar},
	{Name: "_offset", Type: plan.TypeBigint},
}

// framed is v encoded with schema s behind the wire header of id.
func framed(t *testing.T, s string, id int, v any) []byte {
	t.Helper()
	b, err := avro.Marshal(avro.MustParse(s), v)
	if err != nil {
		t.Fatal(err)
	}
	return append(AppendHeader(nil, id), b...)
}

func register(t *testing.T, reg *srfake.Registry, subject, schema string) int {
	t.Helper()
	id, _, err := reg.RegisterSchema(subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// countIDs counts the registry's schema-by-id requests.
func countIDs(reg *srfake.Registry) *atomic.Int64 {
	var n atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			n.Add(1)
		}
		return false
	})
	return &n
}

func TestAvroEvolution(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	fetches := countIDs(reg)
	id1 := register(t, reg, "bids-value", bidV1)
	id2 := register(t, reg, "bids-value", bidV2)
	id3 := register(t, reg, "bids-value", bidV3)
	tab := Table{Name: "bids", Columns: bidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "avro", "schema_registry": reg.URL()}}
	if err := Check(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	alice := "alice"
	type rec struct {
		v    []byte
		want plan.Row
	}
	var recs []rec
	for i := range 30 {
		a, p, ts := int64(i%4), float64(i)*1.5, int64(1_700_000_000_000+i*1000)
		switch i % 3 {
		case 0:
			note := fmt.Sprint("n", i)
			recs = append(recs, rec{framed(t, bidV1, id1, bid1{a, p, ts, note}), plan.Row{plan.Int(a), plan.Float(p), plan.Time(ts), plan.Str(note), plan.Null, plan.Null}})
		case 1:
			var who *string
			want := plan.Null
			if i%2 == 1 {
				who, want = &alice, plan.Str(alice)
			}
			recs = append(recs, rec{framed(t, bidV2, id2, bid2{a, p, ts, "", who}), plan.Row{plan.Int(a), plan.Float(p), plan.Time(ts), plan.Str(""), want, plan.Null}})
		case 2:
			recs = append(recs, rec{framed(t, bidV3, id3, bid3{a, p, time.UnixMilli(ts), &alice}), plan.Row{plan.Int(a), plan.Float(p), plan.Time(ts), plan.Null, plan.Str(alice), plan.Null}})
		}
	}
	for i, r := range recs {
		row, err := d.Decode(r.v)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if fmt.Sprint(row) != fmt.Sprint(r.want) {
			t.Fatalf("record %d: %v, want %v", i, row, r.want)
		}
	}
	// Check fetched the latest by subject; the decoder each id once.
	if n := fetches.Load(); n != 3 {
		t.Fatalf("%d schema-by-id fetches, want 3 (one per id)", n)
	}
}

// TestAvroTypes reads every mapped type from an inline schema (plain Avro,
// no header), skipping fields of every kind the table lacks.
func TestAvroTypes(t *testing.T) {
	schema := `{"type":"record","name":"R","fields":[
		{"name":"skip_arr","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"a","type":"string"},{"name":"b","type":["null","long"]}]}}},
		{"name":"i","type":"int"},
		{"name":"l","type":"long"},
		{"name":"skip_map","type":{"type":"map","values":"double"}},
		{"name":"f","type":"float"},
		{"name":"d","type":"double"},
		{"name":"di","type":"int"},
		{"name":"s","type":"string"},
		{"name":"skip_fixed","type":{"type":"fixed","name":"F","size":3}},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["RED","GREEN"]}},
		{"name":"b","type":"boolean"},
		{"name":"skip_bytes","type":"bytes"},
		{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
		{"name":"lms","type":{"type":"long","logicalType":"local-timestamp-millis"}},
		{"name":"n","type":["string","null"]}]}`
	cols := plan.Schema{
		{Name: "i", Type: plan.TypeBigint}, {Name: "l", Type: plan.TypeBigint}, {Name: "f", Type: plan.TypeDouble},
		{Name: "d", Type: plan.TypeDouble}, {Name: "di", Type: plan.TypeDouble}, {Name: "s", Type: plan.TypeVarchar},
		{Name: "e", Type: plan.TypeVarchar}, {Name: "b", Type: plan.TypeBoolean}, {Name: "us", Type: plan.TypeTimestamp},
		{Name: "lms", Type: plan.TypeTimestamp}, {Name: "n", Type: plan.TypeVarchar}, {Name: "absent", Type: plan.TypeBigint},
	}
	tab := Table{Name: "t", Columns: cols, EventTime: -1, Attrs: map[string]string{"format": "avro", "avro_schema": schema}}
	if err := Check(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		us   int64
		n    any
		wms  int64
		wn   plan.Value
		last string
	}{
		{1_700_000_000_123_999, map[string]any{"string": "yes"}, 1_700_000_000_123, plan.Str("yes"), "GREEN"},
		{-1, nil, -1, plan.Null, "RED"}, // micros round down
	} {
		in := map[string]any{
			"skip_arr": []any{map[string]any{"a": "x", "b": map[string]any{"long": int64(5)}}, map[string]any{"a": "", "b": nil}},
			"i":        int32(-7), "l": int64(math.MaxInt64), "skip_map": map[string]any{"k": 1.5},
			"f": float32(0.5), "d": math.Pi, "di": int32(3), "s": "héllo", "skip_fixed": [3]byte{1, 2, 3},
			"e": c.last, "b": true, "skip_bytes": []byte("zz"), "us": c.us, "lms": int64(42), "n": c.n,
		}
		v, err := avro.Marshal(avro.MustParse(schema), in)
		if err != nil {
			t.Fatal(err)
		}
		row, err := d.Decode(v)
		if err != nil {
			t.Fatal(err)
		}
		want := plan.Row{plan.Int(-7), plan.Int(math.MaxInt64), plan.Float(0.5), plan.Float(math.Pi), plan.Float(3), plan.Str("héllo"),
			plan.Str(c.last), plan.Bool(true), plan.Time(c.wms), plan.Time(42), c.wn, plan.Null}
		if fmt.Sprint(row) != fmt.Sprint(want) {
			t.Fatalf("row %v\nwant %v", row, want)
		}
		// One more byte after the record is not a record of the schema.
		if _, err := d.Decode(append(v, 0)); err == nil || !strings.Contains(err.Error(), "bytes left after the record") {
			t.Fatalf("trailing byte: %v", err)
		}
	}
}

func TestAvroCheck(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	register(t, reg, "bids-value", bidV3)
	attrs := map[string]string{"topic": "bids", "format": "avro", "schema_registry": reg.URL()}
	col := func(name string, typ plan.Type, notNull bool) plan.Column {
		return plan.Column{Name: name, Type: typ, NotNull: notNull}
	}
	for _, c := range []struct {
		cols  plan.Schema
		et    int
		attrs map[string]string
		want  string
	}{
		{plan.Schema{col("auction", plan.TypeVarchar, false)}, -1, attrs,
			"subject bids-value (latest version, schema id 1): field auction is Avro long, which does not fit column auction VARCHAR (it takes string or enum)"},
		{plan.Schema{col("ts", plan.TypeBigint, false)}, -1, attrs, "field ts is Avro long (timestamp-millis), which does not fit column ts BIGINT"},
		{plan.Schema{col("price", plan.TypeTimestamp, false)}, -1, attrs, "field price is Avro double, which does not fit column price TIMESTAMP"},
		{plan.Schema{col("bidder", plan.TypeBigint, false)}, -1, attrs, `field bidder is Avro [null, string], which does not fit column bidder BIGINT`},
		{plan.Schema{col("note", plan.TypeVarchar, true)}, -1, attrs, "no field for the NOT NULL column note (fields: auction, price, ts, bidder)"},
		{plan.Schema{col("when", plan.TypeTimestamp, false)}, 0, attrs, "no field for the event-time column when"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, map[string]string{"topic": "other", "format": "avro", "schema_registry": reg.URL()},
			"subject other-value is not in the schema registry"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, map[string]string{"topic": "bids", "format": "avro", "avro_schema": `{"type":"record","name":"R","fields":[{"name":"a","type":["null","long","string"]}]}`},
			`avro_schema: field a is [null, long, string], which does not fit column a BIGINT: unions must be ["null", T]`},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, map[string]string{"format": "avro", "avro_schema": `"long"`}, "the schema is long, not a record"},
		{plan.Schema{col("a", plan.TypeBigint, false)}, -1, map[string]string{"format": "avro", "avro_schema": `{"type":"record"`}, "avro_schema is not a valid Avro schema"},
	} {
		err := Check(context.Background(), Table{Name: "bids", Columns: c.cols, EventTime: c.et, Attrs: c.attrs})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.cols, err, c.want)
		}
	}
	// A nullable column the schema lacks is NULL until a writer has it.
	if err := Check(context.Background(), Table{Name: "bids", Columns: plan.Schema{col("auction", plan.TypeBigint, true), col("later", plan.TypeVarchar, false)}, EventTime: -1, Attrs: attrs}); err != nil {
		t.Fatal(err)
	}
}

func TestAvroBadRecords(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	fetches := countIDs(reg)
	id := register(t, reg, "bids-value", bidV3)
	// A later version changes price to a string: its records do not fit.
	idStr := register(t, reg, "bids-value", strings.Replace(bidV3, `"name":"price","type":"double"`, `"name":"price","type":"string"`, 1))
	// Another nullable auction: a null auction does not fit NOT NULL.
	idNull := register(t, reg, "bids-value", strings.Replace(bidV3, `"name":"auction","type":"long"`, `"name":"auction","type":["null","long"]`, 1))
	tab := Table{Name: "bids", Columns: bidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "avro", "schema_registry": reg.URL()}}
	d, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	good := framed(t, bidV3, id, bid3{1, 2, time.UnixMilli(3), nil})
	type strPrice struct {
		Auction int64     `avro:"auction"`
		Price   string    `avro:"price"`
		TS      time.Time `avro:"ts"`
		Bidder  *string   `avro:"bidder"`
	}
	type nullAuction struct {
		Auction *int64    `avro:"auction"`
		Price   float64   `avro:"price"`
		TS      time.Time `avro:"ts"`
		Bidder  *string   `avro:"bidder"`
	}
	outOfRange := framed(t, bidV3, id, bid3{1, 2, time.UnixMilli(plan.MaxTime + 1), nil})
	for _, c := range []struct {
		v    []byte
		want string
	}{
		{[]byte(`{"auction": 1}`), "not the Schema Registry magic byte 0"},
		{good[:3], "shorter than the 5-byte Schema Registry header"},
		{good[:len(good)-2], "not a valid Avro record of its schema: truncated"},
		{append(AppendHeader(nil, 999), good[5:]...), fmt.Sprintf("schema id 999 is not in the schema registry %s", reg.URL())},
		{framed(t, strings.Replace(bidV3, `"double"`, `"string"`, 1), idStr, strPrice{1, "x", time.UnixMilli(3), nil}),
			fmt.Sprintf("schema id %d: field price is Avro string, which does not fit column Price DOUBLE", idStr)},
		{framed(t, strings.Replace(bidV3, `"name":"auction","type":"long"`, `"name":"auction","type":["null","long"]`, 1), idNull, nullAuction{nil, 2, time.UnixMilli(3), nil}),
			"column auction: null for a NOT NULL column"},
		{outOfRange, "column ts: "},
	} {
		if _, err := d.Decode(c.v); err == nil || !strings.Contains(err.Error(), c.want) || IsRetryable(err) {
			t.Errorf("% x: %v, want %q", c.v, err, c.want)
		}
	}
	if _, err := d.Decode(good); err != nil {
		t.Fatal(err)
	}
	// The unknown id was asked once for two records (remembered for a while).
	before := fetches.Load()
	if _, err := d.Decode(append(AppendHeader(nil, 999), good[5:]...)); err == nil {
		t.Fatal("unknown id decoded")
	}
	if fetches.Load() != before {
		t.Fatalf("an unknown id was asked again at once")
	}

	// The registry unreachable: retryable, not a bad record; once it is
	// back, the same record decodes.
	down := srfake.New()
	downID := register(t, down, "bids-value", bidV3)
	tab.Attrs = map[string]string{"topic": "bids", "format": "avro", "schema_registry": down.URL()}
	d2, err := NewDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	var status atomic.Int64 // the registry's answer; 0: its own
	down.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if s := status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return true
		}
		return false
	})
	v := framed(t, bidV3, downID, bid3{7, 2, time.UnixMilli(3), nil})
	for _, s := range []int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusTooManyRequests} {
		status.Store(int64(s))
		if _, err := d2.Decode(v); !IsRetryable(err) || !strings.Contains(err.Error(), fmt.Sprintf("is unavailable: schema id %d: ", downID)) || !strings.Contains(err.Error(), fmt.Sprintf("(HTTP %d)", s)) {
			t.Fatalf("registry answering %d: %v", s, err)
		}
	}
	status.Store(0)
	if row, err := d2.Decode(v); err != nil || row[0] != plan.Int(7) {
		t.Fatalf("registry back: %v %v", row, err)
	}
	down.Close()
	if _, err := d2.Decode(v); err != nil { // cached: no request
		t.Fatalf("cached schema after the registry closed: %v", err)
	}
	v = framed(t, bidV3, downID+1, bid3{7, 2, time.UnixMilli(3), nil})
	if _, err := d2.Decode(v); !IsRetryable(err) {
		t.Fatalf("registry closed: %v", err)
	}
}

// BenchmarkAvroDecode: one registry-framed record of five fields (a
// string among them) into a row: the row and the string are its only
// allocations.
func BenchmarkAvroDecode(b *testing.B) {
	reg := srfake.New()
	defer reg.Close()
	id, _, err := reg.RegisterSchema("bids-value", sr.Schema{Schema: bidV2, Type: sr.TypeAvro})
	if err != nil {
		b.Fatal(err)
	}
	d, err := NewDecoder(Table{Name: "bids", Columns: bidColumns, EventTime: 2, Attrs: map[string]string{"topic": "bids", "format": "avro", "schema_registry": reg.URL()}})
	if err != nil {
		b.Fatal(err)
	}
	who := "someone"
	v, err := avro.Marshal(avro.MustParse(bidV2), bid2{7, 1.5, 1_700_000_000_000, "a note", &who})
	if err != nil {
		b.Fatal(err)
	}
	v = append(AppendHeader(nil, id), v...)
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

// FuzzAvroDecode: any bytes are a row or an error, never a panic or a
// spin, also through skipped arrays of nulls, maps, recursive records
// and unions.
func FuzzAvroDecode(f *testing.F) {
	schema := `{"type":"record","name":"N","fields":[
		{"name":"a","type":"long"},
		{"name":"nulls","type":{"type":"array","items":"null"}},
		{"name":"m","type":{"type":"map","values":["null","string",{"type":"array","items":"N"}]}},
		{"name":"next","type":["null","N"]},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["X"]}},
		{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
		{"name":"s","type":"string"}]}`
	cols := plan.Schema{{Name: "a", Type: plan.TypeBigint, NotNull: true}, {Name: "e", Type: plan.TypeVarchar}, {Name: "ts", Type: plan.TypeTimestamp}, {Name: "s", Type: plan.TypeVarchar}}
	d, err := NewDecoder(Table{Name: "t", Columns: cols, EventTime: -1, Attrs: map[string]string{"format": "avro", "avro_schema": schema}})
	if err != nil {
		f.Fatal(err)
	}
	seed, err := avro.Marshal(avro.MustParse(schema), map[string]any{"a": int64(1), "nulls": []any{nil, nil}, "m": map[string]any{"k": map[string]any{"string": "v"}},
		"next": nil, "e": "X", "ts": map[string]any{"long.timestamp-micros": int64(5)}, "s": "x"})
	if err == nil {
		f.Add(seed)
	}
	f.Add([]byte{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0})
	f.Add([]byte{2, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, v []byte) {
		row, err := d.Decode(v)
		if err == nil && len(row) != len(cols) {
			t.Fatalf("row %v", row)
		}
	})
}
