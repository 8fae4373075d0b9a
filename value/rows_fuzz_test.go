package value_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// FuzzDecodeRows checks the hand-written decoder against an oracle: the
// encoding/json decoder it replaced (below). Where both accept, the rows are
// equal; where the oracle accepts, so does the decoder, except for the two
// differences made on purpose (a repeated member's earlier values are
// type-checked too; nothing but whitespace may follow a JSON array body);
// where both reject a body that is valid JSON, they name the same row.
func FuzzDecodeRows(f *testing.F) {
	for _, s := range []string{
		"", "[]", "null", "[1]", `{"auction": 1, "ts": 1}`,
		`{"auction": 1, "price": 2.5, "channel": "web", "ok": true, "ts": "2024-01-01T00:00:01.000Z"}` + "\r\n" + `{"ts": 1704067201000, "ok": false, "channel": "app", "price": -3, "auction": -7}`,
		`[{"auction": 1, "ts": 1}, {"AUCTION": 2, "Ts": 2, "price": null}]`,
		`{"auction": 1, "ts": "2024-01-01 00:00:01.5"}`,
		`{"auction": -0, "price": 1e3, "ts": 9223372036854775807}`,
		`{"auction": 1, "ts": 1, "channel": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}`,
		"{\"auction\": 1, \"ts\": 1, \"channel\": \"\\ud83d\\u0041 \\ude00 \xff é\"}",
		`{"auction": {"a": [1, {}]}, "ts": 1}`, `{"auction": 1.5, "ts": 1}`, `{"auction": 1, "ts": 1, "colour": "red"}`,
		`{"auction": 1, "ts": 1, "_op": "delete"}`, `{"id": 1, "ts": 6, "_op": "remove"}`, `{"id": 1, "_op": "delete"}`,
		`{"id": 1, "ts": 6, "_op": 5}`, `{"id": 2, "name": "b", "ts": 7, "_op": "upsert"}`,
		"{\"auction\": 1, \"ts\": 1}\nnot json", `[{"auction": 1, "ts": 1}] {}`, `{"auction": 01}`,
	} {
		f.Add(false, s)
		f.Add(true, s)
	}
	plain, pk := tableDef(f, bidsTableSQL), tableDef(f, `CREATE TABLE p (id BIGINT, name VARCHAR(8) NOT NULL, ts TIMESTAMP(3) NOT NULL, PRIMARY KEY (id)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`)
	f.Fuzz(func(t *testing.T, withKey bool, body string) {
		def := plain
		if withKey {
			def = pk
		}
		got, err := value.DecodeRows(def, body)
		want, oerr := oracleDecodeRows(def, []byte(body))
		if err == nil {
			enc, eerr := value.EncodeRows(def, body, value.DefaultLimits)
			if eerr != nil || len(enc) != len(got) {
				t.Fatalf("EncodeRows: %d rows, %v; DecodeRows: %d rows", len(enc), eerr, len(got))
			}
			// What the log reader reads back: rows of the table's width
			// (and the delete flag of a PRIMARY KEY table) that encode
			// as written.
			width := len(def.Columns)
			if len(def.PrimaryKey) > 0 {
				width++
			}
			for i, b := range enc {
				r, derr := value.DecodeRow(b)
				if derr != nil || len(r) != width || !bytes.Equal(value.AppendRow(nil, r), b) || !bytes.Equal(value.AppendRow(nil, got[i]), b) {
					t.Fatalf("row %d: the log reads %v, %v; decoded %v", i, r, derr, got[i])
				}
			}
		}
		switch {
		case err == nil && oerr == nil:
			if !equalRows(got, want) && !repeatsMember(body) {
				t.Fatalf("rows\n%v\noracle\n%v", got, want)
			}
		case err != nil && oerr == nil:
			if !repeatsMember(body) && !strings.HasPrefix(err.Error(), "unexpected data after the JSON array") {
				t.Fatalf("rejected (%v), the oracle accepts %v", err, want)
			}
		case err == nil && oerr != nil:
			t.Fatalf("accepted %v, the oracle rejects: %v", got, oerr)
		default:
			var re, ore *value.RowError
			if !errors.As(err, &re) || !errors.As(oerr, &ore) {
				t.Fatalf("errors %T, %T: want *value.RowError", err, oerr)
			}
			// The oracle finds syntax errors in the whole body before it
			// looks at any row; the decoder reports the first problem.
			if json.Valid(jsonArrayOf(body)) && !repeatsMember(body) && ore.Row >= 0 && re.Row != ore.Row {
				t.Fatalf("error %q, the oracle's %q: different rows", err, oerr)
			}
		}
	})
}

// jsonArrayOf wraps an NDJSON body's values in an array so that
// json.Valid can say whether the body is valid JSON throughout.
func jsonArrayOf(body string) []byte {
	trimmed := strings.TrimLeft(body, " \t\r\n")
	if strings.HasPrefix(trimmed, "[") {
		return []byte(trimmed)
	}
	var vals []string
	dec := json.NewDecoder(strings.NewReader(trimmed))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return nil
		}
		vals = append(vals, string(raw))
	}
	return []byte("[" + strings.Join(vals, ",") + "]")
}

// repeatsMember reports whether some object in the body names a member
// twice, up to ASCII case (the oracle's map keeps one of exact repeats and
// applies case variants in random order).
func repeatsMember(body string) bool {
	dec := json.NewDecoder(strings.NewReader(body))
	var walk func() (bool, error)
	walk = func() (bool, error) {
		tok, err := dec.Token()
		if err != nil {
			return false, err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return false, err
				}
				name := strings.Map(func(r rune) rune {
					if 'A' <= r && r <= 'Z' {
						return r + 'a' - 'A'
					}
					return r
				}, k.(string))
				if seen[name] {
					return true, nil
				}
				seen[name] = true
				if rep, err := walk(); rep || err != nil {
					return rep, err
				}
			}
			_, err := dec.Token()
			return false, err
		case json.Delim('['):
			for dec.More() {
				if rep, err := walk(); rep || err != nil {
					return rep, err
				}
			}
			_, err := dec.Token()
			return false, err
		}
		return false, nil
	}
	for {
		if rep, err := walk(); rep || err != nil {
			return rep
		}
	}
}

// equalRows compares rows (DOUBLE values by their bits); no rows equals
// an empty slice.
func equalRows(a, b []plan.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// oracleDecodeRows is the ingest decoder as it was before the hand-written
// one: encoding/json into maps. It is kept as the fuzz target's oracle.
func oracleDecodeRows(def *plan.TableDef, body []byte) ([]plan.Row, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	var objs []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&objs); err != nil {
			return nil, &value.RowError{Row: -1, Msg: "body is not a JSON array of row objects: " + err.Error()}
		}
		if dec.More() {
			return nil, &value.RowError{Row: -1, Msg: "unexpected data after the JSON array"}
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for i := 0; ; i++ {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, &value.RowError{Row: i, Msg: "not a JSON object: " + err.Error()}
			}
			objs = append(objs, raw)
		}
	}
	rows := make([]plan.Row, len(objs))
	for i, raw := range objs {
		r, err := oracleDecodeRow(def, raw)
		if err != nil {
			err.Row = i
			return nil, err
		}
		rows[i] = r
	}
	return rows, nil
}

func oracleDecodeRow(def *plan.TableDef, raw json.RawMessage) (plan.Row, *value.RowError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, &value.RowError{Msg: "not a JSON object"}
	}
	row := make(plan.Row, len(def.Columns))
	del := false
	for name, v := range obj {
		i := def.Columns.Index(name)
		if i < 0 {
			if name == "_op" {
				if len(def.PrimaryKey) == 0 {
					return nil, &value.RowError{Column: name, Msg: "_op is only for tables with a PRIMARY KEY"}
				}
				switch v {
				case "delete":
					del = true
				case "upsert":
				default:
					return nil, &value.RowError{Column: name, Msg: fmt.Sprintf(`_op must be "upsert" or "delete", not %v`, v)}
				}
				continue
			}
			return nil, &value.RowError{Column: name, Msg: fmt.Sprintf("unknown column (table %s has %s)", def.Name, value.ColumnList(def.Columns))}
		}
		val, err := oracleValue(v, def.Columns[i].Type)
		if err != "" {
			return nil, &value.RowError{Column: def.Columns[i].Name, Msg: err}
		}
		row[i] = val
	}
	for i, c := range def.Columns {
		if del && !value.IsKey(def, c.Name) && i != def.EventTime {
			continue
		}
		if row[i].IsNull() && (c.NotNull || i == def.EventTime) {
			msg := "missing value for NOT NULL column"
			if i == def.EventTime {
				msg = "missing value for the event-time column"
			}
			return nil, &value.RowError{Column: c.Name, Msg: msg}
		}
	}
	if len(def.PrimaryKey) > 0 {
		row = append(row, plan.Bool(del))
	}
	return row, nil
}

func oracleValue(v any, t plan.Type) (plan.Value, string) {
	if v == nil {
		return plan.Null, ""
	}
	kind := func() string {
		switch v.(type) {
		case string:
			return "a string"
		case json.Number:
			return "a number"
		case bool:
			return "a boolean"
		case []any:
			return "an array"
		case map[string]any:
			return "an object"
		}
		return "null"
	}
	want := func() string { return fmt.Sprintf("expected %s, got %s", t, kind()) }
	switch t {
	case plan.TypeBigint:
		n, ok := v.(json.Number)
		if !ok {
			return plan.Null, want()
		}
		i, err := n.Int64()
		if err != nil {
			return plan.Null, fmt.Sprintf("expected BIGINT, got %s (not an integer in range)", n)
		}
		return plan.Int(i), ""
	case plan.TypeDouble:
		switch v {
		case "NaN":
			return plan.Float(math.NaN()), ""
		case "Infinity":
			return plan.Float(math.Inf(1)), ""
		case "-Infinity":
			return plan.Float(math.Inf(-1)), ""
		}
		n, ok := v.(json.Number)
		if !ok {
			return plan.Null, want()
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) {
			return plan.Null, fmt.Sprintf("expected DOUBLE, got %s", n)
		}
		return plan.Float(f), ""
	case plan.TypeVarchar:
		s, ok := v.(string)
		if !ok {
			return plan.Null, want()
		}
		return plan.Str(s), ""
	case plan.TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return plan.Null, want()
		}
		return plan.Bool(b), ""
	case plan.TypeTimestamp:
		switch x := v.(type) {
		case string:
			ms, ok := value.ParseTimeLayouts(x)
			if !ok {
				return plan.Null, fmt.Sprintf("expected a TIMESTAMP (RFC 3339 such as 2024-01-01T00:00:10.000Z, or epoch milliseconds), got %q", x)
			}
			if ms < -62135596800000 || ms > 253402300799999 { // years 0001 to 9999
				return plan.Null, fmt.Sprintf("%q is outside the TIMESTAMP range, 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z", x)
			}
			return plan.Time(ms), ""
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return plan.Null, fmt.Sprintf("expected epoch milliseconds, got %s", x)
			}
			if i < -62135596800000 || i > 253402300799999 {
				return plan.Null, fmt.Sprintf("epoch milliseconds %d are outside the TIMESTAMP range, 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (-62135596800000 to 253402300799999)", i)
			}
			return plan.Time(i), ""
		}
		return plan.Null, want()
	}
	return plan.Null, "unsupported column type"
}
