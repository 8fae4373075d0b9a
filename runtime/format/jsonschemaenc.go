package format

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/streamsql/streamsql/planner/plan"
)

// jsonSchemaSink writes a Kafka sink's records as the JSON of format json
// behind the wire format's header (format json_schema).
type jsonSchemaSink struct{}

func (jsonSchemaSink) srType() sr.SchemaType { return sr.TypeJSON }

// sinkNonFinite are the strings the JSON a sink writes has for DOUBLEs JSON
// numbers cannot hold.
var sinkNonFinite = []any{"NaN", "Infinity", "-Infinity"}

// sinkJSONSchemaType is the JSON Schema of a column's JSON (plan.Value.JSON):
// BIGINT integer, DOUBLE number or one of the strings of sinkNonFinite,
// VARCHAR string, BOOLEAN boolean, TIMESTAMP string of format date-time;
// a nullable column's also allows null.
func sinkJSONSchemaType(c plan.Column) (map[string]any, error) {
	var t string
	switch c.Type {
	case plan.TypeBigint:
		t = "integer"
	case plan.TypeDouble:
		br := []any{map[string]any{"type": "number"}, map[string]any{"enum": sinkNonFinite}}
		if !c.NotNull {
			br = append([]any{map[string]any{"type": "null"}}, br...)
		}
		return map[string]any{"anyOf": br}, nil
	case plan.TypeVarchar, plan.TypeTimestamp:
		t = "string"
	case plan.TypeBoolean:
		t = "boolean"
	default:
		return nil, fmt.Errorf("column %s: type %s has no JSON Schema mapping", c.Name, c.Type)
	}
	m := map[string]any{"type": t}
	if !c.NotNull {
		m["type"] = []string{"null", t}
	}
	if c.Type == plan.TypeTimestamp {
		m["format"] = "date-time"
	}
	return m, nil
}

// generate is an object schema (draft-07) with a property per column, all
// required, no others.
func (jsonSchemaSink) generate(name string, cols plan.Schema) (string, error) {
	props := map[string]any{}
	req := make([]string, len(cols))
	for i, c := range cols {
		t, err := sinkJSONSchemaType(c)
		if err != nil {
			return "", err
		}
		props[c.Name] = t
		req[i] = c.Name
	}
	b, err := json.Marshal(map[string]any{
		"$schema":              "http://json-schema.org/draft-07/schema#",
		"title":                name,
		"type":                 "object",
		"properties":           props,
		"required":             req,
		"additionalProperties": false,
	})
	return string(b), err
}

// sinkJSONTypes are the JSON types schema s allows (from "type" and the
// branches of anyOf and oneOf); nil: any.
func sinkJSONTypes(s map[string]any) []string {
	var out []string
	switch t := s["type"].(type) {
	case string:
		out = append(out, t)
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok {
				out = append(out, x)
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		brs, _ := s[k].([]any)
		for _, br := range brs {
			m, _ := br.(map[string]any)
			bt := sinkJSONTypes(m)
			if bt == nil {
				if e, ok := m["enum"].([]any); ok {
					for _, x := range e {
						switch x.(type) {
						case string:
							bt = append(bt, "string")
						case nil:
							bt = append(bt, "null")
						}
					}
				}
			}
			if bt == nil {
				return nil
			}
			out = append(out, bt...)
		}
	}
	return out
}

// encoder checks that the object schema text takes the JSON of cols: a
// property per column whose types allow the column's (and null for a
// nullable column), unless the schema allows other properties; every
// required property a column.
func (jsonSchemaSink) encoder(text string, id int, cols plan.Schema, body func([]byte, plan.Row) ([]byte, error)) (Encoder, error) {
	var s map[string]any
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema object: %v", err)
	}
	if t := sinkJSONTypes(s); t != nil && !slices.Contains(t, "object") {
		return nil, fmt.Errorf("the schema's type is %v, not object", t)
	}
	props, _ := s["properties"].(map[string]any)
	closed := s["additionalProperties"] == false
	names := map[string]bool{}
	for _, c := range cols {
		names[c.Name] = true
		p, ok := props[c.Name].(map[string]any)
		if !ok {
			if closed {
				return nil, fmt.Errorf("column %s has no property, and the schema allows no others (additionalProperties false)", c.Name)
			}
			continue
		}
		t := sinkJSONTypes(p)
		if t == nil {
			continue
		}
		want := map[plan.Type]string{plan.TypeBigint: "integer", plan.TypeDouble: "number", plan.TypeVarchar: "string", plan.TypeTimestamp: "string", plan.TypeBoolean: "boolean"}[c.Type]
		if !slices.Contains(t, want) && !(want == "integer" && slices.Contains(t, "number")) {
			return nil, fmt.Errorf("property %s allows %v, and column %s is %s (JSON %s)", c.Name, t, c.Name, c.Type, want)
		}
		if !c.NotNull && !slices.Contains(t, "null") {
			return nil, fmt.Errorf("property %s allows %v, not null, and column %s may be NULL", c.Name, t, c.Name)
		}
	}
	req, _ := s["required"].([]any)
	for _, r := range req {
		if r, ok := r.(string); ok && !names[r] {
			return nil, fmt.Errorf("property %s is required, and the sink has no column %s", r, r)
		}
	}
	if body == nil {
		return nil, fmt.Errorf("no JSON writer (a bug)")
	}
	return &sinkJSONSchemaEncoder{hdr: AppendHeader(nil, id), body: body}, nil
}

type sinkJSONSchemaEncoder struct {
	hdr  []byte
	body func([]byte, plan.Row) ([]byte, error)
}

func (e *sinkJSONSchemaEncoder) Append(dst []byte, vals plan.Row) ([]byte, error) {
	return e.body(append(dst, e.hdr...), vals)
}
