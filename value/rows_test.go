package value_test

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

func tableDef(t testing.TB, sql string) *plan.TableDef {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	def, err := planner.Table(stmts[0].Stmt.(*parser.CreateTable), sql)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// TestDecodeUpsertRows: PRIMARY KEY tables take `_op`; a delete needs only
// its key (and event time); the operation is logged as one more value.
func TestDecodeUpsertRows(t *testing.T) {
	pk := tableDef(t, `CREATE TABLE p (id BIGINT, name VARCHAR(8) NOT NULL, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	if pk.IdleTimeout != 5000 {
		t.Fatalf("PRIMARY KEY tables default to a 5s idle timeout, got %d", pk.IdleTimeout)
	}
	rows, err := value.DecodeRows(pk, `{"id": 1, "name": "a", "ts": 5}
{"id": 1, "ts": 6, "_op": "delete"}
{"id": 2, "name": "b", "ts": 7, "_op": "upsert"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(rows[0]) != 4 || rows[0][3].True() || !rows[1][3].True() || rows[2][3].True() {
		t.Fatalf("rows %v: want the delete flag as a fourth value", rows)
	}
	for _, c := range []struct{ body, want string }{
		{`{"id": 1, "ts": 6, "_op": "remove"}`, `_op must be "upsert" or "delete"`},
		{`{"ts": 6, "_op": "delete"}`, "column id"},
		{`{"id": 1, "_op": "delete"}`, "event-time"},
		{`{"id": 1, "ts": 6}`, "column name"},
	} {
		_, err := value.DecodeRows(pk, c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", c.body, err, c.want)
		}
	}
	plain := tableDef(t, `CREATE TABLE q (id BIGINT) ENGINE=http`)
	if _, err := value.DecodeRows(plain, `{"id": 1, "_op": "delete"}`); err == nil || !strings.Contains(err.Error(), "PRIMARY KEY") {
		t.Fatalf("_op on a table without a key: %v", err)
	}
}

const bidsTableSQL = `CREATE TABLE bids (auction BIGINT NOT NULL, price DOUBLE, channel VARCHAR(32), ok BOOLEAN, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`

// TestDecodeRows: values of every type, both body shapes, and the errors
// (naming row and column) that clients see.
func TestDecodeRows(t *testing.T) {
	def := tableDef(t, bidsTableSQL)
	const t1 = 1704067201000 // 2024-01-01T00:00:01Z
	full := func(a int64, p float64, ch string, ok bool, ts int64) plan.Row {
		return plan.Row{plan.Int(a), plan.Float(p), plan.Str(ch), plan.Bool(ok), plan.Time(ts)}
	}
	for _, c := range []struct {
		name, body string
		want       []plan.Row
	}{
		{"empty", "", nil},
		{"whitespace", " \r\n\t", nil},
		{"ndjson", `{"auction": 1, "price": 2.5, "channel": "web", "ok": true, "ts": "2024-01-01T00:00:01.000Z"}` + "\r\n" +
			`{"ts": 1704067201000, "ok": false, "channel": "app", "price": -3, "auction": -7}` + "\n",
			[]plan.Row{full(1, 2.5, "web", true, t1), full(-7, -3, "app", false, t1)}},
		{"values on one line", `{"auction": 1, "ts": 1}{"auction": 2, "ts": 2} {"auction": 3, "ts": 3}`,
			[]plan.Row{{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(1)}, {plan.Int(2), plan.Null, plan.Null, plan.Null, plan.Time(2)},
				{plan.Int(3), plan.Null, plan.Null, plan.Null, plan.Time(3)}}},
		{"array", ` [ {"auction": 1, "ts": 1} , {"AUCTION": 2, "Ts": 2, "price": null} ] `,
			[]plan.Row{{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(1)}, {plan.Int(2), plan.Null, plan.Null, plan.Null, plan.Time(2)}}},
		{"empty array", `[]`, nil},
		{"timestamps", `{"auction": 1, "ts": "2024-01-01T00:00:01Z"}
{"auction": 1, "ts": "2024-01-01 00:00:01.5"}
{"auction": 1, "ts": "1969-12-31T23:59:59.999Z"}
{"auction": 1, "ts": -5}`,
			[]plan.Row{{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(t1)}, {plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(t1 + 500)},
				{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(-1)}, {plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(-5)}}},
		{"numbers", `{"auction": -0, "price": 1e3, "ts": 253402300799999}
{"auction": -9223372036854775808, "price": 0.5E-1, "ts": -62135596800000}`,
			[]plan.Row{{plan.Int(0), plan.Float(1000), plan.Null, plan.Null, plan.Time(plan.MaxTime)},
				{plan.Int(math.MinInt64), plan.Float(0.05), plan.Null, plan.Null, plan.Time(plan.MinTime)}}},
		{"range ends", `{"auction": 1, "ts": "0001-01-01T00:00:00.000Z"}
{"auction": 1, "ts": "9999-12-31T23:59:59.999Z"}
{"auction": 1, "ts": "0001-01-01T01:00:00+01:00"}`,
			[]plan.Row{{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(plan.MinTime)}, {plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(plan.MaxTime)},
				{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(plan.MinTime)}}},
		{"non-finite doubles", `{"auction": 1, "price": "NaN", "ts": 1}
{"auction": 2, "price": "Infinity", "ts": 1}
{"auction": 3, "price": "-Infinity", "ts": 1}`,
			[]plan.Row{{plan.Int(1), plan.Float(math.NaN()), plan.Null, plan.Null, plan.Time(1)}, {plan.Int(2), plan.Float(math.Inf(1)), plan.Null, plan.Null, plan.Time(1)},
				{plan.Int(3), plan.Float(math.Inf(-1)), plan.Null, plan.Null, plan.Time(1)}}},
		{"escapes", `{"auction": 1, "ts": 1, "channel": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}`,
			[]plan.Row{{plan.Int(1), plan.Null, plan.Str("a\"b\\c/d\b\f\n\r\té😀"), plan.Null, plan.Time(1)}}},
		{"bad surrogates and UTF-8", "{\"auction\": 1, \"ts\": 1, \"channel\": \"\\ud83d\\u0041 \\ude00 \xff é\"}",
			[]plan.Row{{plan.Int(1), plan.Null, plan.Str("\uFFFDA \uFFFD \uFFFD é"), plan.Null, plan.Time(1)}}},
		{"escaped key", `{"\u0061uction": 1, "ts": 1}`, []plan.Row{{plan.Int(1), plan.Null, plan.Null, plan.Null, plan.Time(1)}}},
		{"last of a repeated column", `{"auction": 1, "auction": 2, "ts": 1}`, []plan.Row{{plan.Int(2), plan.Null, plan.Null, plan.Null, plan.Time(1)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := value.DecodeRows(def, c.body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("rows\n%v\nwant\n%v", got, c.want)
			}
		})
	}

	for _, c := range []struct{ name, body, want string }{
		{"type", "{\"auction\": 1, \"ts\": 1}\n{\"auction\": \"x\", \"ts\": 1}", "row 1, column auction: expected BIGINT, got a string"},
		{"bool for double", `{"auction": 1, "price": true, "ts": 1}`, "row 0, column price: expected DOUBLE, got a boolean"},
		{"object", `{"auction": {"a": [1, {}]}, "ts": 1}`, "row 0, column auction: expected BIGINT, got an object"},
		{"array", `{"auction": [], "ts": 1}`, "row 0, column auction: expected BIGINT, got an array"},
		{"fraction", `{"auction": 1.5, "ts": 1}`, "row 0, column auction: expected BIGINT, got 1.5 (not an integer in range)"},
		{"range", `{"auction": 9223372036854775808, "ts": 1}`, "row 0, column auction: expected BIGINT, got 9223372036854775808 (not an integer in range)"},
		{"double range", `{"auction": 1, "price": 1e400, "ts": 1}`, "row 0, column price: expected DOUBLE, got 1e400"},
		{"other text for a double", `{"auction": 1, "price": "nan", "ts": 1}`, "row 0, column price: expected DOUBLE, got a string"},
		{"number for varchar", `{"auction": 1, "channel": 5, "ts": 1}`, "row 0, column channel: expected VARCHAR, got a number"},
		{"bad time", `{"auction": 1, "ts": "yesterday"}`, `row 0, column ts: expected a TIMESTAMP (RFC 3339 such as 2024-01-01T00:00:10.000Z, or epoch milliseconds), got "yesterday"`},
		{"bad date", `{"auction": 1, "ts": "2023-02-29T00:00:00.000Z"}`, `row 0, column ts: expected a TIMESTAMP`},
		{"time fraction", `{"auction": 1, "ts": 1.5}`, "row 0, column ts: expected epoch milliseconds, got 1.5"},
		// One TIMESTAMP range, years 0001 to 9999 (issue 15 item 5): int64's
		// largest epoch milliseconds moved the watermark to year 292278994.
		{"time past the range", "{\"auction\": 1, \"ts\": 1}\n{\"auction\": 1, \"ts\": 9223372036854775807}", "row 1, column ts: epoch milliseconds 9223372036854775807 are outside the TIMESTAMP range, 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (-62135596800000 to 253402300799999)"},
		{"time before the range", `{"auction": 1, "ts": -9223372036854775808}`, "row 0, column ts: epoch milliseconds -9223372036854775808 are outside the TIMESTAMP range"},
		{"time just past the range", `{"auction": 1, "ts": 253402300800000}`, "row 0, column ts: epoch milliseconds 253402300800000 are outside the TIMESTAMP range"},
		{"year 0", `{"auction": 1, "ts": "0000-12-31T23:59:59.999Z"}`, `row 0, column ts: "0000-12-31T23:59:59.999Z" is outside the TIMESTAMP range, 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z`},
		{"year 10000 by its zone", `{"auction": 1, "ts": "9999-12-31T23:30:00-01:00"}`, `row 0, column ts: "9999-12-31T23:30:00-01:00" is outside the TIMESTAMP range`},
		{"missing", `{"ts": 1}`, "row 0, column auction: missing value for NOT NULL column"},
		{"null", `{"auction": null, "ts": 1}`, "row 0, column auction: missing value for NOT NULL column"},
		{"no time", `{"auction": 1}`, "row 0, column ts: missing value for the event-time column"},
		{"unknown", `{"auction": 1, "ts": 1, "colour": "red"}`, "row 0, column colour: unknown column (table bids has auction, price, channel, ok, ts)"},
		{"_op", `{"auction": 1, "ts": 1, "_op": "delete"}`, "row 0, column _op: _op is only for tables with a PRIMARY KEY"},
		{"not an object", "{\"auction\": 1, \"ts\": 1}\n[1]", "row 1: not a JSON object"},
		{"null row", `null`, "row 0: not a JSON object"},
		{"array element", `[{"auction": 1, "ts": 1}, 5]`, "row 1: not a JSON object"},
		{"not json", "{\"auction\": 1, \"ts\": 1}\nnot json", "row 1: not a JSON object: invalid character 'o' in literal null (expecting 'u')"},
		{"truncated", "{\"auction\": 1, \"ts\": 1}\n{\"auction\": ", "row 1: not a JSON object: unexpected end of JSON input"},
		{"truncated string", `{"auction": 1, "ts": 1, "channel": "ab`, "row 0: not a JSON object: unexpected end of JSON input"},
		{"control character", "{\"channel\": \"a\x01\"}", `row 0: not a JSON object: invalid character '\x01' in string literal`},
		{"bad escape", `{"channel": "\q"}`, `row 0: not a JSON object: invalid character 'q' in string escape code`},
		{"bad hex", `{"channel": "\u12g4"}`, `row 0: not a JSON object: invalid character 'g' in \u hexadecimal character escape`},
		{"leading zero", `{"auction": 01}`, "row 0: not a JSON object: invalid character '1' after object key:value pair"},
		{"no colon", `{"auction" 1}`, "row 0: not a JSON object: invalid character '1' after object key"},
		{"trailing comma", `{"auction": 1,}`, "row 0: not a JSON object: invalid character '}' looking for beginning of object key string"},
		{"bad number", `{"auction": -}`, "row 0: not a JSON object: invalid character '}' in numeric literal"},
		{"bad nested", `{"auction": [1 2]}`, "row 0: not a JSON object: invalid character '2' after array element"},
		{"array not closed", `[{"auction": 1, "ts": 1}`, "body is not a JSON array of row objects: unexpected end of JSON input"},
		{"array separator", `[{"auction": 1, "ts": 1} {"auction": 1, "ts": 1}]`, "body is not a JSON array of row objects: invalid character '{' after array element"},
		{"after array", `[{"auction": 1, "ts": 1}] {}`, "unexpected data after the JSON array"},
		{"bracket after array", `[{"auction": 1, "ts": 1}]]`, "unexpected data after the JSON array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, err := value.DecodeRows(def, c.body)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("rows %v, error %v, want %q", rows, err, c.want)
			}
		})
	}
}

// TestEncodeRows: the ingest path's encoding is the row codec's.
func TestEncodeRows(t *testing.T) {
	pk := tableDef(t, `CREATE TABLE p (id BIGINT, name VARCHAR(8) NOT NULL, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	body := `{"id": 1, "name": "a\n", "ts": "2024-01-01T00:00:01.000Z"}
{"id": 1, "ts": 6, "_op": "delete"}
{"id": 2, "name": "b", "ts": 7, "_op": "upsert"}`
	rows, err := value.DecodeRows(pk, body)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := value.EncodeRows(pk, body, value.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != len(rows) {
		t.Fatalf("%d encoded rows, %d decoded", len(enc), len(rows))
	}
	for i, r := range rows {
		if want := value.AppendRow(nil, r); !bytes.Equal(enc[i], want) {
			t.Errorf("row %d: encoded %x, want %x", i, enc[i], want)
		}
	}
	if _, err := value.EncodeRows(pk, `{"id": 1, "ts": 6, "name": 7}`, value.DefaultLimits); err == nil || err.Error() != "row 0, column name: expected VARCHAR, got a number" {
		t.Errorf("EncodeRows error %v", err)
	}
}

// TestDecodeLimits: a row over MaxRowSize is refused with 413 naming its
// index; a value nested deeper than MaxDepth is refused naming its row and
// column, found without recursion however deep it goes.
func TestDecodeLimits(t *testing.T) {
	def := tableDef(t, bidsTableSQL)
	lim := value.Limits{MaxRowSize: 100, MaxDepth: 4}
	small := `{"auction": 1, "ts": 1}`
	long := `{"auction": 1, "ts": 1, "channel": "` + strings.Repeat("x", 100) + `"}`
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		name, body string
		lim        value.Limits
		want       string
		status     int
	}{
		{"long row", small + "\n" + small + "\n" + long, lim, "row 2: row is 138 bytes, over the 100-byte limit on one row (--max-row-size)", 413},
		{"long row in an array", "[" + small + ", " + long + "]", lim, "row 1: row is 138 bytes, over the 100-byte limit", 413},
		{"deep column", small + "\n" + `{"auction": 1, "ts": 1, "price": ` + deep(4) + `}`, lim, "row 1, column price: JSON nested deeper than 4 levels (--max-json-depth", 0},
		{"deep row", small + "\n" + deep(5), lim, "row 1: JSON nested deeper than 4 levels", 0},
		{"deep in an array body", `[{"auction": 1, "ts": 1, "price": ` + deep(3) + `}]`, lim, "row 0, column price: JSON nested deeper than 4 levels", 0},
		{"very deep, default limits", `{"auction": 1, "ts": 1, "price": ` + deep(1_000_000) + `}`, value.Limits{}, "row 0, column price: JSON nested deeper than 32 levels", 0},
		{"very deep row, default limits", deep(1_000_000), value.Limits{}, "row 0: JSON nested deeper than 32 levels", 0},
		{"unknown column named briefly", `{"` + strings.Repeat("c", 1000) + `": 1}`, lim, "row 0, column " + strings.Repeat("c", 128) + "...: unknown column", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := value.EncodeRows(def, c.body, c.lim)
			re, ok := err.(*value.RowError)
			if !ok || !strings.HasPrefix(err.Error(), c.want) || re.Status != c.status {
				t.Fatalf("error %v (%T), want %q with status %d", err, err, c.want, c.status)
			}
		})
	}
	pk := tableDef(t, `CREATE TABLE p (id BIGINT, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	if _, err := value.EncodeRows(pk, `{"id": 1, "ts": 1, "_op": `+deep(4)+`}`, lim); err == nil || !strings.HasPrefix(err.Error(), "row 0, column _op: JSON nested deeper than 4 levels") {
		t.Errorf("deep _op: %v", err)
	}
	// At the limits exactly: accepted.
	exact := `{"auction": 1, "ts": 1, "channel": "` + strings.Repeat("x", 100-38) + `"}`
	if len(exact) != 100 {
		t.Fatalf("exact row is %d bytes", len(exact))
	}
	if rows, err := value.EncodeRows(def, "[\n"+exact+"\n]", value.Limits{MaxRowSize: 100, MaxDepth: 2}); err != nil || len(rows) != 1 {
		t.Fatalf("a row of exactly the limits: %d rows, %v", len(rows), err)
	}
	// A value at the depth limit is only the wrong type.
	if _, err := value.EncodeRows(def, `{"auction": 1, "ts": 1, "price": `+deep(3)+`}`, lim); err == nil || !strings.HasSuffix(err.Error(), "expected DOUBLE, got an array") {
		t.Fatalf("an array at the depth limit: %v", err)
	}
}

// TestRecordDecoderTimestampRange: a Kafka record whose event time is
// outside the TIMESTAMP range is a bad record naming the column and the
// range (issue 15 item 5), as an ingest row is a 400.
func TestRecordDecoderTimestampRange(t *testing.T) {
	src := &plan.Source{Table: "k", Schema: plan.Schema{{Name: "v", Type: plan.TypeBigint}, {Name: "ts", Type: plan.TypeTimestamp, NotNull: true}}, EventTime: 1}
	decode, err := value.RecordDecoder(src)
	if err != nil {
		t.Fatal(err)
	}
	if row, err := decode([]byte(`{"v": 1, "ts": "9999-12-31T23:59:59.999Z"}`)); err != nil || row[1] != plan.Time(plan.MaxTime) {
		t.Fatalf("the last TIMESTAMP: %v, %v", row, err)
	}
	for _, v := range []string{`{"v": 1, "ts": 9223372036854775807}`, `{"v": 1, "ts": "0000-01-01T00:00:00Z"}`} {
		if _, err := decode([]byte(v)); err == nil || !strings.HasPrefix(err.Error(), "column ts: ") || !strings.Contains(err.Error(), "outside the TIMESTAMP range, 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z") {
			t.Errorf("%s: %v, want a bad record naming column ts and the range", v, err)
		}
	}
}

// TestRecordDecoder: a Kafka record value is one JSON object, decoded as
// an ingest row; the metadata columns (_partition, _offset, _key,
// _timestamp) are the reader's to fill, so they may be absent even when
// NOT NULL or the event time; errors name the column but no row.
func TestRecordDecoder(t *testing.T) {
	src := &plan.Source{Table: "k", Schema: plan.Schema{
		{Name: "v", Type: plan.TypeBigint, NotNull: true}, {Name: "_Partition", Type: plan.TypeBigint, NotNull: true},
		{Name: "_key", Type: plan.TypeVarchar}, {Name: "_timestamp", Type: plan.TypeTimestamp, NotNull: true},
	}, EventTime: 3}
	decode, err := value.RecordDecoder(src)
	if err != nil {
		t.Fatal(err)
	}
	row, err := decode([]byte(`{"v": 7}`))
	if err != nil || !reflect.DeepEqual(row, plan.Row{plan.Int(7), plan.Null, plan.Null, plan.Null}) {
		t.Fatalf("a record without its metadata columns: %v, %v", row, err)
	}
	if src.Schema[1].NotNull != true || src.EventTime != 3 {
		t.Fatalf("the decoder changed the source's schema: %v, event time %d", src.Schema, src.EventTime)
	}
	again, err := decode([]byte(`{"v": 8, "_key": "given"}`))
	if err != nil || again[0] != plan.Int(8) || again[2] != plan.Str("given") || row[0] != plan.Int(7) {
		t.Fatalf("a second record: %v, %v; the first now %v", again, err, row)
	}
	for _, c := range []struct{ value, want string }{
		{`{}`, "column v: missing value for NOT NULL column"},
		{`{"v": "x"}`, "column v: expected BIGINT, got a string"},
		{`[1]`, "not a JSON object"},
		{`{"v": 1} {"v": 2}`, "a record value must be one JSON object, not 2"},
		{``, "a record value must be one JSON object, not 0"},
		{`{"v": 1`, "not a JSON object: unexpected end of JSON input"},
	} {
		if _, err := decode([]byte(c.value)); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.value, err, c.want)
		}
	}
}
