package queries

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
)

// RowError is a rejected ingest request: which row and column, and why.
type RowError struct {
	Row    int    // 0-based index of the row in the request; -1: the body
	Column string // empty when about the whole row
	Msg    string
}

func (e *RowError) Error() string {
	switch {
	case e.Row < 0:
		return e.Msg
	case e.Column == "":
		return fmt.Sprintf("row %d: %s", e.Row, e.Msg)
	}
	return fmt.Sprintf("row %d, column %s: %s", e.Row, e.Column, e.Msg)
}

// DecodeRows parses a JSON array or NDJSON body into rows of def's schema,
// validating every row; any bad row rejects the whole request.
func DecodeRows(def *plan.TableDef, body []byte) ([]plan.Row, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	var objs []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&objs); err != nil {
			return nil, &RowError{Row: -1, Msg: "body is not a JSON array of row objects: " + err.Error()}
		}
		if dec.More() {
			return nil, &RowError{Row: -1, Msg: "unexpected data after the JSON array"}
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
				return nil, &RowError{Row: i, Msg: "not a JSON object: " + err.Error()}
			}
			objs = append(objs, raw)
		}
	}
	rows := make([]plan.Row, len(objs))
	for i, raw := range objs {
		r, err := decodeRow(def, raw)
		if err != nil {
			err.Row = i
			return nil, err
		}
		rows[i] = r
	}
	return rows, nil
}

func decodeRow(def *plan.TableDef, raw json.RawMessage) (plan.Row, *RowError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, &RowError{Msg: "not a JSON object"}
	}
	row := make(plan.Row, len(def.Columns))
	seen := 0
	del := false
	for name, v := range obj {
		i := def.Columns.Index(name)
		if i < 0 {
			if name == "_op" {
				if len(def.PrimaryKey) == 0 {
					return nil, &RowError{Column: name, Msg: "_op is only for tables with a PRIMARY KEY"}
				}
				switch v {
				case "delete":
					del = true
				case "upsert":
				default:
					return nil, &RowError{Column: name, Msg: fmt.Sprintf(`_op must be "upsert" or "delete", not %v`, v)}
				}
				continue
			}
			return nil, &RowError{Column: name, Msg: fmt.Sprintf("unknown column (table %s has %s)", def.Name, columnList(def.Columns))}
		}
		seen++
		val, err := jsonValue(v, def.Columns[i].Type)
		if err != "" {
			return nil, &RowError{Column: def.Columns[i].Name, Msg: err}
		}
		row[i] = val
	}
	for i, c := range def.Columns {
		if del && !isKey(def, c.Name) && i != def.EventTime {
			continue // a delete needs its key (and its time, for AS OF versions)
		}
		if row[i].IsNull() && (c.NotNull || i == def.EventTime) {
			msg := "missing value for NOT NULL column"
			if i == def.EventTime {
				msg = "missing value for the event-time column"
			}
			return nil, &RowError{Column: c.Name, Msg: msg}
		}
	}
	if len(def.PrimaryKey) > 0 {
		// PRIMARY KEY tables log the operation as one more value.
		row = append(row, plan.Bool(del))
	}
	return row, nil
}

func isKey(def *plan.TableDef, col string) bool {
	for _, k := range def.PrimaryKey {
		if strings.EqualFold(k, col) {
			return true
		}
	}
	return false
}

func columnList(s plan.Schema) string {
	n := make([]string, len(s))
	for i, c := range s {
		n[i] = c.Name
	}
	return strings.Join(n, ", ")
}

func kindOf(v any) string {
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

// jsonValue converts one JSON value to type t; a non-empty string is the
// error.
func jsonValue(v any, t plan.Type) (plan.Value, string) {
	if v == nil {
		return plan.Null, ""
	}
	want := func() string { return fmt.Sprintf("expected %s, got %s", t, kindOf(v)) }
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
			ms, ok := planner.ParseTime(x)
			if !ok {
				return plan.Null, fmt.Sprintf("expected a TIMESTAMP (RFC 3339 such as 2024-01-01T00:00:10.000Z, or epoch milliseconds), got %q", x)
			}
			return plan.Time(ms), ""
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return plan.Null, fmt.Sprintf("expected epoch milliseconds, got %s", x)
			}
			return plan.Time(i), ""
		}
		return plan.Null, want()
	}
	return plan.Null, "unsupported column type"
}

// JSONValue converts a value for JSON output (SPEC section 3).
func JSONValue(v plan.Value) any {
	switch v.K {
	case plan.TypeBigint:
		return v.I
	case plan.TypeDouble:
		f := v.F()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case plan.TypeVarchar:
		return v.S
	case plan.TypeTimestamp:
		return plan.FormatTime(v.I)
	case plan.TypeBoolean:
		return v.I != 0
	}
	return nil
}
