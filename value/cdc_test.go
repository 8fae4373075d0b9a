package value_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// changeSource is the source of a Kafka table declared by sql, as the
// planner makes it.
func changeSource(t testing.TB, sql string) *plan.Source {
	t.Helper()
	def := tableDef(t, sql)
	return &plan.Source{Table: def.Name, Engine: def.Engine, Schema: def.Columns, EventTime: def.EventTime,
		Attrs: def.Attrs, Upsert: len(def.PrimaryKey) > 0, Key: def.PrimaryKey}
}

func changeDecoder(t testing.TB, sql string) *value.ChangeDecoder {
	t.Helper()
	d, err := value.NewChangeDecoder(changeSource(t, sql))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Expected log rows: the columns, then the delete flag.
func up(vs ...plan.Value) plan.Row  { return append(plan.Row(vs), plan.Bool(false)) }
func del(vs ...plan.Value) plan.Row { return append(plan.Row(vs), plan.Bool(true)) }

type changeCase struct {
	name     string
	key, val string // "<nil>": no key / a tombstone
	want     plan.Row
	err      string // a substring of the error; "" with want nil: a no-op
}

func bytesOf(s string) []byte {
	if s == "<nil>" {
		return nil
	}
	return []byte(s)
}

func runChangeCases(t *testing.T, d *value.ChangeDecoder, ts int64, cases []changeCase) {
	t.Helper()
	for _, c := range cases {
		row, err := d.Decode(bytesOf(c.key), bytesOf(c.val), ts)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, %v; want an error with %q", c.name, row, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !reflect.DeepEqual(row, c.want):
			t.Errorf("%s: got %v, want %v", c.name, row, c.want)
		}
	}
}

// TestUpsertJSONDecoder: the value is the row, the key its PRIMARY KEY (a
// JSON object, or a bare scalar for one column), a tombstone deletes; the
// key fills the value's key columns and must equal them when given.
func TestUpsertJSONDecoder(t *testing.T) {
	d := changeDecoder(t, `CREATE TABLE u (id BIGINT, name VARCHAR(8) NOT NULL, ts TIMESTAMP(3), PRIMARY KEY (id))
		ENGINE=kafka CONNECTION='127.0.0.1:1' ENGINE_ATTRIBUTE='{"topic": "u", "format": "upsert_json", "event_time": "ts"}'`)
	const ts = 5000
	runChangeCases(t, d, ts, []changeCase{
		{"upsert, object key", `{"id": 1}`, `{"id": 1, "name": "a", "ts": 1000}`, up(plan.Int(1), plan.Str("a"), plan.Time(1000)), ""},
		{"upsert, bare key fills the value", `7`, `{"name": "b", "ts": "1970-01-01T00:00:02Z"}`, up(plan.Int(7), plan.Str("b"), plan.Time(2000)), ""},
		{"tombstone deletes by the key, at the record's time", `{"id": 3}`, `<nil>`, del(plan.Int(3), plan.Null, plan.Time(ts)), ""},
		{"tombstone, bare key", `3`, `<nil>`, del(plan.Int(3), plan.Null, plan.Time(ts)), ""},
		{"key mismatch", `{"id": 2}`, `{"id": 1, "name": "a", "ts": 1}`, nil, "column id: the record key has 2, the value 1"},
		{"key of another column", `{"name": "a"}`, `{"id": 1, "name": "a", "ts": 1}`, nil, "record key field name is not a PRIMARY KEY column (id)"},
		{"key without the column", `{}`, `<nil>`, nil, "record key has no value for PRIMARY KEY column id"},
		{"key of the wrong type", `"x"`, `{"name": "a", "ts": 1}`, nil, "record key, column id: expected BIGINT, got a string"},
		{"no key", `<nil>`, `{"id": 1, "name": "a", "ts": 1}`, nil, "a record without a key"},
		{"unknown column", `1`, `{"id": 1, "name": "a", "ts": 1, "x": 2}`, nil, "column x: unknown column"},
		{"missing NOT NULL", `1`, `{"id": 1, "ts": 1}`, nil, "column name: missing value for NOT NULL column"},
		{"missing event time", `1`, `{"id": 1, "name": "a"}`, nil, "column ts: missing value for the event-time column"},
		{"not an object", `1`, `[1]`, nil, "not a JSON object"},
	})

	// A composite key; a VARCHAR key column taken as a plain string.
	d = changeDecoder(t, `CREATE TABLE u2 (region VARCHAR(8), id BIGINT, v DOUBLE, PRIMARY KEY (region, id))
		ENGINE=kafka CONNECTION='127.0.0.1:1' ENGINE_ATTRIBUTE='{"topic": "u", "format": "upsert_json"}'`)
	runChangeCases(t, d, 0, []changeCase{
		{"composite key", `{"id": 4, "region": "eu"}`, `{"v": 1.5}`, up(plan.Str("eu"), plan.Int(4), plan.Float(1.5)), ""},
		{"composite tombstone", `{"id": 4, "region": "eu"}`, `<nil>`, del(plan.Str("eu"), plan.Int(4), plan.Null), ""},
		{"composite key half given", `{"id": 4}`, `<nil>`, nil, "record key has no value for PRIMARY KEY column region"},
		{"bare key for a composite key", `4`, `<nil>`, nil, "is not a JSON object with the PRIMARY KEY columns (region, id)"},
	})
	d = changeDecoder(t, `CREATE TABLE u3 (sku VARCHAR(8), n BIGINT, PRIMARY KEY (sku))
		ENGINE=kafka CONNECTION='127.0.0.1:1' ENGINE_ATTRIBUTE='{"topic": "u", "format": "upsert_json"}'`)
	runChangeCases(t, d, 0, []changeCase{
		{"plain string key", `abc-1`, `{"n": 1}`, up(plan.Str("abc-1"), plan.Int(1)), ""},
		{"JSON string key", `"abc-1"`, `<nil>`, del(plan.Str("abc-1"), plan.Null), ""},
		{"numeric text key", `12`, `{"sku": "12", "n": 2}`, up(plan.Str("12"), plan.Int(2)), ""},
	})
}

const orderSchema = `{"type":"struct","name":"dbserver1.public.orders.Envelope","fields":[
	{"type":"struct","optional":true,"field":"before","fields":[{"type":"int32","field":"id"},{"type":"string","field":"customer"},{"type":"double","field":"amount"},{"type":"int64","name":"io.debezium.time.MicroTimestamp","field":"placed"},{"type":"string","name":"io.debezium.time.ZonedTimestamp","field":"shipped"}]},
	{"type":"struct","optional":true,"field":"after","fields":[{"type":"int32","field":"id"},{"type":"string","field":"customer"},{"type":"double","field":"amount"},{"type":"int64","name":"io.debezium.time.MicroTimestamp","field":"placed"},{"type":"string","name":"io.debezium.time.ZonedTimestamp","field":"shipped"}]},
	{"type":"struct","field":"source","fields":[{"type":"int64","field":"ts_ms"}]},
	{"type":"string","field":"op"},{"type":"int64","optional":true,"field":"ts_ms"}]}`

func wrapped(payload string) string {
	return `{"schema": ` + orderSchema + `, "payload": ` + payload + `}`
}

// TestDebeziumJSONDecoder: every op, with and without the JSON
// converter's schema wrapper; deletes by the record key or before's key;
// tombstones change nothing; Debezium's timestamp encodings; bad envelopes.
func TestDebeziumJSONDecoder(t *testing.T) {
	d := changeDecoder(t, `CREATE TABLE orders (id BIGINT, customer VARCHAR(16) NOT NULL, amount DOUBLE, placed TIMESTAMP(3), shipped TIMESTAMP(3),
		_source_ts_ms TIMESTAMP(3), _ts_ms TIMESTAMP(3), PRIMARY KEY (id))
		ENGINE=kafka CONNECTION='127.0.0.1:1' ENGINE_ATTRIBUTE='{"topic": "dbserver1.public.orders", "format": "debezium_json", "event_time": "_source_ts_ms"}'`)
	after := `{"id": 1, "customer": "ann", "amount": 2.5, "placed": 1700000000123456, "shipped": "2023-11-14T22:13:20.5Z", "extra": [1]}`
	row := func(del bool, vs ...plan.Value) plan.Row { return append(plan.Row(vs), plan.Bool(del)) }
	full := []plan.Value{plan.Int(1), plan.Str("ann"), plan.Float(2.5), plan.Time(1700000000123), plan.Time(1700000000500), plan.Time(90), plan.Time(100)}
	// Without the schema the MicroTimestamp is taken as milliseconds, which is out of range:
	// the unwrapped cases give placed as epoch ms (time.precision.mode=connect).
	afterMs := `{"id": 1, "customer": "ann", "amount": 2.5, "placed": 1700000000123, "shipped": "2023-11-14T22:13:20.5Z", "extra": {"a": 1}}`
	env := func(op, before, after string) string {
		return `{"before": ` + before + `, "after": ` + after + `, "source": {"ts_ms": 90, "db": "x"}, "op": "` + op + `", "ts_ms": 100, "transaction": null}`
	}
	keyOnly := []plan.Value{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Null, plan.Time(90), plan.Time(100)}
	var cases []changeCase
	for _, op := range []string{"r", "c", "u"} {
		cases = append(cases,
			changeCase{"wrapped " + op, `{"id": 1}`, wrapped(env(op, "null", after)), row(false, full...), ""},
			changeCase{"unwrapped " + op, `{"id": 1}`, env(op, "null", afterMs), row(false, full...), ""},
			changeCase{"no key " + op, `<nil>`, env(op, "null", afterMs), row(false, full...), ""},
			changeCase{op + " without after", `{"id": 1}`, env(op, "null", "null"), nil, `a Debezium event of op "` + op + `" without after`},
		)
	}
	cases = append(cases,
		changeCase{"wrapped key", `{"schema": {"type": "struct"}, "payload": {"id": 1}}`, env("u", "null", afterMs), row(false, full...), ""},
		changeCase{"delete by the record key (before null)", `{"id": 1}`, env("d", "null", "null"), row(true, keyOnly...), ""},
		changeCase{"delete by before's key", `<nil>`, env("d", `{"id": 1, "customer": null}`, "null"), row(true, keyOnly...), ""},
		changeCase{"wrapped delete by before (REPLICA IDENTITY FULL)", `<nil>`, wrapped(env("d", after, "null")), row(true, keyOnly...), ""},
		changeCase{"a tombstone", `{"id": 1}`, `<nil>`, nil, ""},
		changeCase{"a wrapped null payload", `{"id": 1}`, `{"schema": null, "payload": null}`, nil, ""},
		changeCase{"delete without a key", `<nil>`, env("d", "null", "null"), nil, "a delete without a key"},
		changeCase{"delete with a keyless before", `<nil>`, env("d", `{"customer": "ann"}`, "null"), nil, "a delete without a key: before has no value for PRIMARY KEY column id"},
		changeCase{"no op", `{"id": 1}`, `{"before": null, "after": ` + afterMs + `, "ts_ms": 1}`, nil, "a Debezium envelope without op"},
		changeCase{"wrapped, no op", `{"id": 1}`, wrapped(`{"after": ` + after + `}`), nil, "a Debezium envelope without op"},
		changeCase{"unknown op", `{"id": 1}`, env("t", "null", "null"), nil, `unknown op "t"`},
		changeCase{"key mismatch", `{"id": 2}`, env("c", "null", afterMs), nil, "column id: the record key has 2, the value 1"},
		changeCase{"key of another column", `{"customer": "ann"}`, env("c", "null", afterMs), nil, "record key field customer is not a PRIMARY KEY column"},
		changeCase{"missing NOT NULL", `{"id": 1}`, env("c", "null", `{"id": 1}`), nil, "after: column customer: missing value for NOT NULL column"},
		changeCase{"a wrong type", `{"id": 1}`, env("c", "null", `{"id": 1, "customer": 5}`), nil, "after: column customer: expected VARCHAR, got a number"},
		changeCase{"no event time", `{"id": 1}`, `{"after": ` + afterMs + `, "op": "c"}`, nil, "column _source_ts_ms: missing value for the event-time column"},
		changeCase{"not JSON", `{"id": 1}`, `not json`, nil, "not a Debezium change event"},
		changeCase{"micros without the schema", `{"id": 1}`, env("c", "null", after), nil, "column placed"},
	)
	runChangeCases(t, d, 0, cases)

	// An event-time column of the table: a delete without it in before
	// takes source.ts_ms.
	d = changeDecoder(t, `CREATE TABLE o2 (id BIGINT, placed TIMESTAMP(3), PRIMARY KEY (id))
		ENGINE=kafka CONNECTION='127.0.0.1:1' ENGINE_ATTRIBUTE='{"topic": "o", "format": "debezium_json", "event_time": "placed"}'`)
	runChangeCases(t, d, 0, []changeCase{
		{"upsert", `1`, `{"op": "c", "after": {"id": 1, "placed": 5}}`, up(plan.Int(1), plan.Time(5)), ""},
		{"delete, time from before", `1`, `{"op": "d", "before": {"id": 1, "placed": 5}, "source": {"ts_ms": 9}}`, del(plan.Int(1), plan.Time(5)), ""},
		{"delete, time from source.ts_ms", `1`, `{"op": "d", "before": {"id": 1}, "source": {"ts_ms": 9}}`, del(plan.Int(1), plan.Time(9)), ""},
		{"delete, time from ts_ms", `1`, `{"op": "d", "ts_ms": 11}`, del(plan.Int(1), plan.Time(11)), ""},
		{"delete without a time", `1`, `{"op": "d"}`, nil, "column placed: a delete without an event time"},
	})
}

// TestNewChangeDecoder: only the change formats, with a PRIMARY KEY.
func TestNewChangeDecoder(t *testing.T) {
	src := &plan.Source{Table: "k", Schema: plan.Schema{{Name: "id", Type: plan.TypeBigint}}, EventTime: -1, Attrs: map[string]string{"format": "json"}, Key: []string{"id"}}
	if _, err := value.NewChangeDecoder(src); err == nil || !strings.Contains(err.Error(), "upsert_json or debezium_json") {
		t.Fatalf("format json: %v", err)
	}
	src.Attrs["format"], src.Key = "upsert_json", nil
	if _, err := value.NewChangeDecoder(src); err == nil || !strings.Contains(err.Error(), "needs a PRIMARY KEY") {
		t.Fatalf("no key: %v", err)
	}
}

// FuzzChangeDecoder: no record makes either decoder panic, and what
// they return is a log row of the table (its columns and the flag).
func FuzzChangeDecoder(f *testing.F) {
	f.Add([]byte(`{"id": 1}`), []byte(wrapped(`{"op": "c", "after": {"id": 1, "customer": "a", "placed": 1}, "source": {"ts_ms": 1}}`)), false)
	f.Add([]byte(`1`), []byte(`{"op": "d", "before": {"id": 1}}`), true)
	f.Add([]byte(`{"schema": {}, "payload": {"id": 1}}`), []byte(`{"customer": "x"}`), true)
	f.Add([]byte(nil), []byte(nil), false)
	sql := `CREATE TABLE orders (id BIGINT, customer VARCHAR(16) NOT NULL, placed TIMESTAMP(3), _source_ts_ms TIMESTAMP(3), PRIMARY KEY (id))
		ENGINE=kafka CONNECTION='127.0.0.1:1' ENGINE_ATTRIBUTE='{"topic": "o", "format": "%s", "event_time": "placed"}'`
	var decs []*value.ChangeDecoder
	for _, format := range []string{"debezium_json", "upsert_json"} {
		decs = append(decs, changeDecoder(f, strings.Replace(sql, "%s", format, 1)))
	}
	f.Fuzz(func(t *testing.T, key, val []byte, upsert bool) {
		d := decs[0]
		if upsert {
			d = decs[1]
		}
		row, err := d.Decode(key, val, 7)
		if err == nil && row != nil && len(row) != 5 {
			t.Fatalf("a row of %d values: %v", len(row), row)
		}
	})
}

// TestChangeDecoderArena: a long-lived decoder's buffer of unescaped
// strings stays bounded however many records have escapes, and the rows
// it returned earlier keep their values.
func TestChangeDecoderArena(t *testing.T) {
	d := changeDecoder(t, `CREATE TABLE u (id BIGINT, name VARCHAR(300), PRIMARY KEY (id))
		ENGINE=kafka CONNECTION='127.0.0.1:1' ENGINE_ATTRIBUTE='{"topic": "u", "format": "upsert_json"}'`)
	name := func(i int) string { return fmt.Sprintf("%d \"%s\"", i, strings.Repeat("x", 200)) }
	var kept []plan.Row
	for i := range 5000 {
		v, _ := json.Marshal(map[string]string{"name": name(i)}) // the quotes escaped
		row, err := d.Decode([]byte(fmt.Sprint(i)), v, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			kept = append(kept, row)
		}
		if n := value.ArenaLen(d); n > 64<<10+2*len(v) {
			t.Fatalf("record %d: the buffer holds %d bytes", i, n)
		}
	}
	for k, row := range kept {
		if row[1].S != name(k*500) {
			t.Fatalf("row %d: %q", k*500, row[1].S)
		}
	}
}
