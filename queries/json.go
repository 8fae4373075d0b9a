package queries

import (
	"encoding/json"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
)

// Object is a result row as a JSON object whose members keep the order of
// the columns (a Go map would sort them).
type Object struct {
	Cols []string
	Vals []any
}

// MarshalJSON writes the members in column order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range o.Cols {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(c)
		v, err := json.Marshal(o.Vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// JSONValue converts a value for JSON output (docs/http-api.md: values): v.JSON().
func JSONValue(v plan.Value) any { return v.JSON() }

// ColumnNames lists a schema's column names.
func ColumnNames(s plan.Schema) []string {
	n := make([]string, len(s))
	for i, c := range s {
		n[i] = c.Name
	}
	return n
}

// ColumnTypes lists a schema's column types.
func ColumnTypes(s plan.Schema) []plan.Type {
	t := make([]plan.Type, len(s))
	for i, c := range s {
		t[i] = c.Type
	}
	return t
}

// Objects renders rows of schema s for JSON.
func Objects(s plan.Schema, rows []plan.Row) []Object {
	cols := ColumnNames(s)
	out := make([]Object, len(rows))
	for i, r := range rows {
		vals := make([]any, len(r))
		for j, v := range r {
			vals[j] = JSONValue(v)
		}
		out[i] = Object{Cols: cols, Vals: vals}
	}
	return out
}
