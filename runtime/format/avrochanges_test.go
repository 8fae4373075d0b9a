package format

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/streamsql/streamsql/planner/plan"
)

// dbzValueV1 is a Debezium Value record with its temporal types as the
// Avro converter writes them (connect.name, no logicalType); v2 adds an
// optional field, as an ALTER TABLE ADD COLUMN does mid-stream.
const (
	dbzValueV1 = `{"type":"record","name":"Value","namespace":"pg.public.orders","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":"string"},
		{"name":"amount","type":["null","double"],"default":null},
		{"name":"placed","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}},
		{"name":"updated","type":["null",{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}],"default":null},
		{"name":"day","type":{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Date"}},
		{"name":"nanos","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.NanoTimestamp"}},
		{"name":"millis","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"}},
		{"name":"blob","type":["null","bytes"],"default":null}],"connect.name":"pg.public.orders.Value"}`
	dbzValueV2 = `{"type":"record","name":"Value","namespace":"pg.public.orders","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":"string"},
		{"name":"amount","type":["null","double"],"default":null},
		{"name":"placed","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}},
		{"name":"updated","type":["null",{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}],"default":null},
		{"name":"day","type":{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Date"}},
		{"name":"nanos","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.NanoTimestamp"}},
		{"name":"millis","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"}},
		{"name":"blob","type":["null","bytes"],"default":null},
		{"name":"notes","type":["null","string"],"default":null}],"connect.name":"pg.public.orders.Value"}`
	dbzKey = `{"type":"record","name":"Key","namespace":"pg.public.orders","fields":[{"name":"id","type":"long"}],"connect.name":"pg.public.orders.Key"}`
)

// dbzEnvelope is the Debezium envelope around value record v (opType:
// the type of op).
func dbzEnvelope(v, opType string) string {
	return `{"type":"record","name":"Envelope","namespace":"pg.public.orders","fields":[
		{"name":"before","type":["null",` + v + `],"default":null},
		{"name":"after","type":["null","pg.public.orders.Value"],"default":null},
		{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
			{"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
			{"name":"ts_ms","type":"long"},
			{"name":"snapshot","type":["null",{"type":"string","connect.name":"io.debezium.data.Enum"}],"default":null},
			{"name":"db","type":"string"},{"name":"table","type":"string"},{"name":"lsn","type":["null","long"],"default":null}]}},
		{"name":"op","type":` + opType + `},
		{"name":"ts_ms","type":["null","long"],"default":null},
		{"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[
			{"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}]}],"default":null}]}`
}

type dbzRow struct {
	ID       int64    `avro:"id"`
	Customer string   `avro:"customer"`
	Amount   *float64 `avro:"amount"`
	Placed   int64    `avro:"placed"`
	Updated  *string  `avro:"updated"`
	Day      int32    `avro:"day"`
	Nanos    int64    `avro:"nanos"`
	Millis   int64    `avro:"millis"`
	Blob     []byte   `avro:"blob"`
	Notes    *string  `avro:"notes"`
}

type dbzSource struct {
	Version   string  `avro:"version"`
	Connector string  `avro:"connector"`
	Name      string  `avro:"name"`
	TsMs      int64   `avro:"ts_ms"`
	Snapshot  *string `avro:"snapshot"`
	DB        string  `avro:"db"`
	Table     string  `avro:"table"`
	LSN       *int64  `avro:"lsn"`
}

type dbzTx struct {
	ID    string `avro:"id"`
	Total int64  `avro:"total_order"`
	Order int64  `avro:"data_collection_order"`
}

type dbzEvent struct {
	Before *dbzRow   `avro:"before"`
	After  *dbzRow   `avro:"after"`
	Source dbzSource `avro:"source"`
	Op     string    `avro:"op"`
	TsMs   *int64    `avro:"ts_ms"`
	Tx     *dbzTx    `avro:"transaction"`
}

// dbzEventNullOp is an event of an envelope whose op may be null.
type dbzEventNullOp struct {
	After  *dbzRow   `avro:"after"`
	Source dbzSource `avro:"source"`
	Op     *string   `avro:"op"`
}

// dbzColumns: every Debezium time type into a TIMESTAMP, the envelope's
// times, a field no column reads (blob), one only v2 has (notes).
var dbzColumns = plan.Schema{
	{Name: "id", Type: plan.TypeBigint},
	{Name: "customer", Type: plan.TypeVarchar, NotNull: true},
	{Name: "amount", Type: plan.TypeDouble},
	{Name: "placed", Type: plan.TypeTimestamp},
	{Name: "updated", Type: plan.TypeTimestamp},
	{Name: "day", Type: plan.TypeTimestamp},
	{Name: "nanos", Type: plan.TypeTimestamp},
	{Name: "millis", Type: plan.TypeTimestamp},
	{Name: "notes", Type: plan.TypeVarchar},
	{Name: "_source_ts_ms", Type: plan.TypeTimestamp},
	{Name: "_ts_ms", Type: plan.TypeTimestamp},
}

func ptr[T any](v T) *T { return &v }

// TestDebeziumAvro: the envelope's ops into upserts and deletes, its
// temporal types into TIMESTAMPs (computed here from time.Time values),
// tombstones and deletes of keys never seen, bad records (no op, a key
// that is not the row's, a key schema that is not the PRIMARY KEY), and
// a Value schema that evolves mid-stream; each schema id fetched once.
func TestDebeziumAvro(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	fetches := countIDs(reg)
	env1, env2 := dbzEnvelope(dbzValueV1, `"string"`), dbzEnvelope(dbzValueV2, `"string"`)
	keyID := register(t, reg, "orders-key", dbzKey)
	id1 := register(t, reg, "orders-value", env1)
	tab := Table{Name: "orders", Columns: dbzColumns, EventTime: 9, Upsert: true, Key: []string{"id"},
		Attrs: map[string]string{"topic": "orders", "format": "debezium_avro", "schema_registry": reg.URL()}}
	if err := Check(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	id2 := register(t, reg, "orders-value", env2)
	dec, err := NewChangeDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	key := func(id int64) []byte {
		return framed(t, dbzKey, keyID, struct {
			ID int64 `avro:"id"`
		}{id})
	}
	placed := time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC)
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	row := func(id int64, cust string, amount float64) *dbzRow {
		return &dbzRow{ID: id, Customer: cust, Amount: &amount, Placed: placed.UnixMicro(), Updated: ptr("2026-03-04T06:07:08.5+01:00"),
			Day: int32(day.Unix() / 86400), Nanos: placed.UnixNano(), Millis: placed.UnixMilli(), Blob: []byte{1, 2}}
	}
	event := func(schema string, id int, op string, before, after *dbzRow, srcTs int64) []byte {
		e := dbzEvent{Before: before, After: after, Op: op, TsMs: ptr(srcTs + 5),
			Source: dbzSource{Version: "2.7", Connector: "postgresql", Name: "pg", TsMs: srcTs, DB: "shop", Table: "orders"}}
		if op == "r" {
			e.Source.Snapshot = ptr("true")
		} else {
			e.Tx = &dbzTx{ID: "571:3", Total: 1, Order: 1}
		}
		return framed(t, schema, id, e)
	}
	// The columns of a row read from after, computed from the times set.
	upd := time.Date(2026, 3, 4, 5, 7, 8, 500000000, time.UTC) // +01:00
	full := func(id int64, cust string, amount float64, notes plan.Value, srcTs int64) plan.Row {
		return plan.Row{plan.Int(id), plan.Str(cust), plan.Float(amount), plan.Time(placed.UnixMilli()), plan.Time(upd.UnixMilli()),
			plan.Time(day.UnixMilli()), plan.Time(placed.UnixMilli()), plan.Time(placed.UnixMilli()), notes,
			plan.Time(srcTs), plan.Time(srcTs + 5), plan.Bool(false)}
	}
	deleted := func(id int64, srcTs int64) plan.Row {
		r := make(plan.Row, len(dbzColumns)+1)
		r[0], r[9], r[10], r[11] = plan.Int(id), plan.Time(srcTs), plan.Time(srcTs+5), plan.Bool(true)
		return r
	}
	for _, c := range []struct {
		name     string
		key, val []byte
		want     plan.Row // nil: changes nothing
		err      string
	}{
		{"snapshot", key(1), event(env1, id1, "r", nil, row(1, "ann", 2.5), 1000), full(1, "ann", 2.5, plan.Null, 1000), ""},
		{"create", key(2), event(env1, id1, "c", nil, row(2, "bob", 4), 1010), full(2, "bob", 4, plan.Null, 1010), ""},
		{"update with before", key(1), event(env1, id1, "u", row(1, "ann", 2.5), row(1, "cy", 3), 1020), full(1, "cy", 3, plan.Null, 1020), ""},
		{"update, v2", key(2), event(env2, id2, "u", nil, func() *dbzRow { r := row(2, "bob", 5); r.Notes = ptr("late"); return r }(), 1030),
			full(2, "bob", 5, plan.Str("late"), 1030), ""},
		{"v1 again", key(1), event(env1, id1, "u", nil, row(1, "dee", 6), 1040), full(1, "dee", 6, plan.Null, 1040), ""},
		{"delete, before with the key only", key(1), event(env2, id2, "d", &dbzRow{ID: 1}, nil, 1050), deleted(1, 1050), ""},
		{"tombstone", key(1), nil, nil, ""},
		{"delete of a key never seen", key(99), event(env1, id1, "d", nil, nil, 1060), deleted(99, 1060), ""},
		{"delete without a record key", nil, event(env1, id1, "d", &dbzRow{ID: 7}, nil, 1070), deleted(7, 1070), ""},
		{"create without a record key", nil, event(env1, id1, "c", nil, row(8, "ann", 1), 1080), full(8, "ann", 1, plan.Null, 1080), ""},
		{"key mismatch", key(6), event(env1, id1, "c", nil, row(7, "ann", 1), 1090), nil, "column id: the record key has 6, the value 7 (they must be equal)"},
		{"op empty", key(3), event(env1, id1, "", nil, row(3, "ann", 1), 1100), nil, "a Debezium envelope without op"},
		{"op unknown", key(3), event(env1, id1, "t", nil, nil, 1100), nil, `a Debezium event of unknown op "t" (c, r, u or d)`},
		{"create without after", key(3), event(env1, id1, "c", nil, nil, 1100), nil, `a Debezium event of op "c" without after`},
		{"delete without key or before", nil, event(env1, id1, "d", nil, nil, 1100), nil, "a delete without a key: no record key and no before"},
		{"truncated", key(3), event(env1, id1, "c", nil, row(3, "ann", 1), 1100)[:40], nil, "not a valid Avro record of its schema: truncated"},
		{"not framed", key(3), []byte(`{"op":"c"}`), nil, "not the Schema Registry magic byte 0"},
		{"key not framed", []byte(`{"id":3}`), event(env1, id1, "c", nil, row(3, "ann", 1), 1100), nil, "record key: value starts with byte 0x7b"},
	} {
		got, err := dec.Decode(c.key, c.val, 0)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, %v; want error %q", c.name, got, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == nil && got != nil:
			t.Errorf("%s: %v, want nothing", c.name, got)
		case c.want != nil && (len(got) != len(c.want) || !rowsEqual(got, c.want)):
			t.Errorf("%s:\n%v\nwant\n%v", c.name, got, c.want)
		}
	}
	if n := fetches.Load(); n != 3 {
		t.Errorf("%d schema-by-id requests, want 3 (the key's, v1's, v2's: each once)", n)
	}

	// A key schema that is not the PRIMARY KEY: its records are bad,
	// naming the field; so is an envelope whose op may be null and is.
	badKey := register(t, reg, "orders-key", `{"type":"record","name":"Key2","fields":[{"name":"id","type":"long"},{"name":"region","type":"string"}]}`)
	k2 := framed(t, `{"type":"record","name":"Key2","fields":[{"name":"id","type":"long"},{"name":"region","type":"string"}]}`, badKey, struct {
		ID     int64  `avro:"id"`
		Region string `avro:"region"`
	}{1, "eu"})
	if _, err := dec.Decode(k2, event(env1, id1, "c", nil, row(1, "ann", 1), 1), 0); err == nil ||
		err.Error() != "record key: key schema id "+itoa(badKey)+": key field region is not a PRIMARY KEY column (id)" {
		t.Errorf("key with another field: %v", err)
	}
	envNullOp := dbzEnvelope(dbzValueV1, `["null","string"]`)
	idNullOp := register(t, reg, "other-value", envNullOp)
	e := dbzEventNullOp{After: row(1, "ann", 1), Source: dbzSource{TsMs: 1}}
	if _, err := dec.Decode(key(1), framed(t, envNullOp, idNullOp, e), 0); err == nil || err.Error() != "a Debezium envelope without op" {
		t.Errorf("null op: %v", err)
	}
	noOp := `{"type":"record","name":"E","fields":[{"name":"after","type":["null",` + dbzValueV1 + `]}]}`
	idNoOp := register(t, reg, "other2-value", noOp)
	if _, err := dec.Decode(key(1), framed(t, noOp, idNoOp, struct {
		After *dbzRow `avro:"after"`
	}{row(1, "ann", 1)}), 0); err == nil || !strings.Contains(err.Error(), "schema id "+itoa(idNoOp)+": not a Debezium envelope: no field op (fields: after)") {
		t.Errorf("no op field: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func rowsEqual(a, b plan.Row) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDebeziumAvroCheck: CREATE TABLE's check reads the latest envelope's
// after record and the latest key schema, naming what does not fit.
func TestDebeziumAvroCheck(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	defer reg.Close()
	register(t, reg, "orders-value", dbzEnvelope(dbzValueV1, `"string"`))
	tab := func(cols plan.Schema, et int, key ...string) Table {
		return Table{Name: "orders", Columns: cols, EventTime: et, Upsert: true, Key: key,
			Attrs: map[string]string{"topic": "orders", "format": "debezium_avro", "schema_registry": reg.URL()}}
	}
	ok := plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "customer", Type: plan.TypeVarchar}, {Name: "_source_ts_ms", Type: plan.TypeTimestamp}}
	if err := Check(context.Background(), tab(ok, 2, "id")); err == nil || !strings.Contains(err.Error(), "subject orders-key is not in the schema registry") {
		t.Fatalf("no key subject: %v", err)
	}
	register(t, reg, "orders-key", dbzKey)
	if err := Check(context.Background(), tab(ok, 2, "id")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cols plan.Schema
		et   int
		key  []string
		want string
	}{
		{plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "customer", Type: plan.TypeBigint}}, -1, []string{"id"},
			"subject orders-value (latest version, schema id 1), after: field customer is Avro string, which does not fit column customer BIGINT"},
		{plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "blob", Type: plan.TypeVarchar}}, -1, []string{"id"},
			"after: field blob is Avro [null, bytes], which does not fit column blob VARCHAR"},
		{plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "ts", Type: plan.TypeTimestamp}}, 1, []string{"id"},
			"after: no field for the event-time column ts"},
		{plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "customer", Type: plan.TypeVarchar}}, -1, []string{"customer"},
			"key subject orders-key (latest version, schema id 2): key field id is not a PRIMARY KEY column (customer)"},
		{plan.Schema{{Name: "id", Type: plan.TypeBigint}, {Name: "customer", Type: plan.TypeVarchar}}, -1, []string{"id", "customer"},
			"the key has no field for PRIMARY KEY column customer (fields: id)"},
		{plan.Schema{{Name: "id", Type: plan.TypeVarchar}}, -1, []string{"id"},
			"field id is Avro long, which does not fit column id VARCHAR"},
	} {
		if err := Check(context.Background(), tab(c.cols, c.et, c.key...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v key %v: %v, want %q", c.cols, c.key, err, c.want)
		}
	}
	register(t, reg, "plain-value", dbzValueV1)
	register(t, reg, "plain-key", dbzKey)
	pt := tab(ok, -1, "id")
	pt.Attrs = map[string]string{"topic": "plain", "format": "debezium_avro", "schema_registry": reg.URL()}
	if err := Check(context.Background(), pt); err == nil || !strings.Contains(err.Error(), "subject plain-value (latest version, schema id 3): not a Debezium envelope: no field after (fields: id, customer") {
		t.Errorf("a plain record as the envelope: %v", err)
	}
}

// TestUpsertAvro: an upsert topic of Avro keys (a bare long) and values:
// a value upserts, a tombstone deletes at its record's time, a record
// without a key or with a key that is not the value's is bad; a
// registry that cannot be asked is retryable, not a bad record.
func TestUpsertAvro(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatNone))
	vs := `{"type":"record","name":"Order","fields":[{"name":"customer","type":"string"},{"name":"amount","type":"double"},{"name":"id","type":["null","long"],"default":null}]}`
	keyID := register(t, reg, "orders-upsert-key", `"long"`)
	valID := register(t, reg, "orders-upsert-value", vs)
	cols := plan.Schema{{Name: "id", Type: plan.TypeBigint, NotNull: true}, {Name: "customer", Type: plan.TypeVarchar, NotNull: true},
		{Name: "amount", Type: plan.TypeDouble}, {Name: "ts", Type: plan.TypeTimestamp}, {Name: "_offset", Type: plan.TypeBigint}}
	tab := Table{Name: "orders_u", Columns: cols, EventTime: -1, Upsert: true, Key: []string{"id"},
		Attrs: map[string]string{"topic": "orders-upsert", "format": "upsert_avro", "schema_registry": reg.URL()}}
	if err := Check(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	dec, err := NewChangeDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	key := func(id int64) []byte { return framed(t, `"long"`, keyID, id) }
	type ord struct {
		Customer string  `avro:"customer"`
		Amount   float64 `avro:"amount"`
		ID       *int64  `avro:"id"`
	}
	val := func(o ord) []byte { return framed(t, vs, valID, o) }
	for _, c := range []struct {
		name     string
		key, val []byte
		want     plan.Row
		err      string
	}{
		{"upsert", key(4), val(ord{"ann", 1.5, nil}), plan.Row{plan.Int(4), plan.Str("ann"), plan.Float(1.5), plan.Null, plan.Null, plan.Bool(false)}, ""},
		{"upsert with the key in the value", key(5), val(ord{"bob", 2, ptr(int64(5))}), plan.Row{plan.Int(5), plan.Str("bob"), plan.Float(2), plan.Null, plan.Null, plan.Bool(false)}, ""},
		{"tombstone", key(4), nil, plan.Row{plan.Int(4), plan.Null, plan.Null, plan.Null, plan.Null, plan.Bool(true)}, ""},
		{"no key", nil, val(ord{"ann", 1, nil}), nil, "a record without a key: an upsert_avro record's key is its PRIMARY KEY (id)"},
		{"key mismatch", key(8), val(ord{"ann", 1, ptr(int64(9))}), nil, "column id: the record key has 8, the value 9 (they must be equal)"},
		{"key truncated", key(300)[:6], nil, nil, "record key: not a valid Avro record of its schema: truncated"},
	} {
		got, err := dec.Decode(c.key, c.val, 1234)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, %v; want error %q", c.name, got, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case len(got) != len(c.want) || !rowsEqual(got, c.want):
			t.Errorf("%s:\n%v\nwant\n%v", c.name, got, c.want)
		}
	}
	// A tombstone's event time is its record's timestamp.
	tab.EventTime = 3
	if dec, err = NewChangeDecoder(tab); err != nil {
		t.Fatal(err)
	}
	if got, err := dec.Decode(key(4), nil, 1234); err != nil || got[3] != plan.Time(1234) || !got[5].True() {
		t.Errorf("tombstone with an event time: %v %v", got, err)
	}
	// The registry down: a new schema id cannot be fetched (retryable).
	id2 := register(t, reg, "orders-upsert-value", `{"type":"record","name":"Order","fields":[{"name":"customer","type":"string"}]}`)
	reg.Close()
	_, err = dec.Decode(key(4), framed(t, `{"type":"record","name":"Order","fields":[{"name":"customer","type":"string"}]}`, id2, struct {
		C string `avro:"customer"`
	}{"x"}), 1)
	if !IsRetryable(err) {
		t.Errorf("registry down: %v, want a retryable error", err)
	}
}

// BenchmarkDebeziumAvroDecode: one snapshot event's decode, schemas
// cached.
func BenchmarkDebeziumAvroDecode(b *testing.B) {
	reg := srfake.New()
	defer reg.Close()
	env := dbzEnvelope(dbzValueV1, `"string"`)
	keyID, _, err := reg.RegisterSchema("orders-key", sr.Schema{Schema: dbzKey, Type: sr.TypeAvro})
	if err != nil {
		b.Fatal(err)
	}
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: env, Type: sr.TypeAvro})
	if err != nil {
		b.Fatal(err)
	}
	tab := Table{Name: "orders", Columns: dbzColumns, EventTime: 9, Upsert: true, Key: []string{"id"},
		Attrs: map[string]string{"topic": "orders", "format": "debezium_avro", "schema_registry": reg.URL()}}
	dec, err := NewChangeDecoder(tab)
	if err != nil {
		b.Fatal(err)
	}
	k, err := avro.Marshal(avro.MustParse(dbzKey), struct {
		ID int64 `avro:"id"`
	}{1})
	if err != nil {
		b.Fatal(err)
	}
	key := append(AppendHeader(nil, keyID), k...)
	op := "r"
	v, err := avro.Marshal(avro.MustParse(env), dbzEvent{After: &dbzRow{ID: 1, Customer: "ann", Amount: ptr(2.5), Placed: 1, Day: 1, Nanos: 1, Millis: 1},
		Op: op, Source: dbzSource{TsMs: 1000}, TsMs: ptr(int64(1005))})
	if err != nil {
		b.Fatal(err)
	}
	val := append(AppendHeader(nil, id), v...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dec.Decode(key, val, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDebeziumAvroDecode: any key and value payload of the envelope's
// and the key's schema ids is a log row of the table, nothing, or an
// error; never a panic.
func FuzzDebeziumAvroDecode(f *testing.F) {
	env := dbzEnvelope(dbzValueV1, `["null","string"]`)
	tab := Table{Name: "orders", Columns: dbzColumns, EventTime: 9, Upsert: true, Key: []string{"id"},
		Attrs: map[string]string{"topic": "orders", "format": "debezium_avro", "schema_registry": "http://127.0.0.1:1"}}
	c, err := newAvroChanges(tab)
	if err != nil {
		f.Fatal(err)
	}
	if c.envs[1] = c.envelopePlan(avro.MustParse(env), "schema id 1"); c.envs[1].err != nil {
		f.Fatal(c.envs[1].err)
	}
	if c.keys[2] = c.keyPlan(avro.MustParse(dbzKey), "key schema id 2"); c.keys[2].err != nil {
		f.Fatal(c.keys[2].err)
	}
	op := "d"
	amount := 1.5
	v, err := avro.Marshal(avro.MustParse(env), dbzEventNullOp{After: &dbzRow{ID: 1, Customer: "a", Amount: &amount}, Op: &op})
	if err != nil {
		f.Fatal(err)
	}
	k, err := avro.Marshal(avro.MustParse(dbzKey), struct {
		ID int64 `avro:"id"`
	}{1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(k, v)
	f.Add([]byte{}, []byte{2, 2})
	f.Fuzz(func(t *testing.T, key, val []byte) {
		kk := append(AppendHeader(nil, 2), key...)
		if len(key) == 0 {
			kk = nil
		}
		row, err := c.Decode(kk, append(AppendHeader(nil, 1), val...), 0)
		if err == nil && row != nil && len(row) != len(dbzColumns)+1 {
			t.Fatalf("row %v", row)
		}
	})
}
