package format

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// JSON Schema (format json_schema): the registry holds a JSON Schema
// document (schema type JSON) and a record is the 5-byte header and a
// JSON object, read as format json reads one (value.SchemaRecordDecoder)
// but for members the table lacks, which are skipped. The columns are
// checked against the schema's top-level properties, at CREATE TABLE
// against the subject's latest version and per schema id when a record
// names one first; with "validate": "true" every record is also validated
// against its schema (santhosh-tekuri/jsonschema), which costs about six
// times the decode (BenchmarkJSONSchemaDecode: 18 µs and 77 allocations
// a record against 2.7 µs and 8) and so is off by default (docs/connectors.md, "Formats").

// jsSchema is one schema id's: whether the table fits it (err), and its
// compiled validator when the table validates.
type jsSchema struct {
	err       error
	validator *jsonschema.Schema
}

// jsonSchemaDecoder reads registry-framed JSON record values.
type jsonSchemaDecoder struct {
	t        Table
	reg      *Registry
	decode   func([]byte) (plan.Row, error)
	validate bool
	schemas  map[int]*jsSchema
}

func newJSONSchemaDecoder(t Table) (Decoder, error) {
	reg, err := NewRegistry(t.Attrs["schema_registry"])
	if err != nil {
		return nil, err
	}
	dec, err := value.SchemaRecordDecoder(&plan.Source{Table: t.Name, Schema: t.Columns, EventTime: t.EventTime, Attrs: t.Attrs})
	if err != nil {
		return nil, err
	}
	return &jsonSchemaDecoder{t: t, reg: reg, decode: dec, validate: t.Attrs["validate"] == "true", schemas: map[int]*jsSchema{}}, nil
}

// checkJSONSchema checks t's columns against its subject's latest schema.
func checkJSONSchema(ctx context.Context, t Table, reg *Registry) error {
	ss, err := reg.latest(ctx, t.Subject())
	if err != nil {
		return err
	}
	where := fmt.Sprintf("subject %s (latest version, schema id %d)", t.Subject(), ss.ID)
	if _, err := jsonSchemaFit(t, ss.Schema, where, t.Attrs["validate"] == "true"); err != nil {
		return err
	}
	return nil
}

func (d *jsonSchemaDecoder) schema(id int) (*jsSchema, error) {
	if s := d.schemas[id]; s != nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	defer cancel()
	ss, err := d.reg.fetch(ctx, id)
	if err != nil {
		return nil, err
	}
	s := &jsSchema{}
	s.validator, s.err = jsonSchemaFit(d.t, ss, fmt.Sprintf("schema id %d", id), d.validate)
	d.schemas[id] = s
	return s, nil
}

func (d *jsonSchemaDecoder) Decode(v []byte) (plan.Row, error) {
	id, payload, err := SplitHeader(v)
	if err != nil {
		return nil, err
	}
	s, err := d.schema(id)
	if err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.validator != nil {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
		if err != nil {
			return nil, fmt.Errorf("not a JSON value: %v", err)
		}
		if err := s.validator.Validate(doc); err != nil {
			return nil, fmt.Errorf("does not match schema id %d: %s", id, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	return d.decode(payload)
}

// jsProp is what CREATE reads of a property's schema.
type jsProp struct {
	Type   json.RawMessage   `json:"type"`
	Format string            `json:"format"`
	Ref    string            `json:"$ref"`
	OneOf  []json.RawMessage `json:"oneOf"`
	AnyOf  []json.RawMessage `json:"anyOf"`
	Enum   []any             `json:"enum"`
}

// jsDoc is what CREATE reads of a schema document.
type jsDoc struct {
	Type                 json.RawMessage            `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
}

// types is the set of JSON Schema types raw (a property's schema) takes,
// and its format; a subschema that constrains no type is "any".
func jsTypes(raw json.RawMessage, depth int) (types []string, format string, err error) {
	if depth > 8 {
		return nil, "", errors.New("nested too deep")
	}
	if t := bytes.TrimSpace(raw); string(t) == "true" || string(t) == "{}" {
		return []string{"any"}, "", nil
	}
	var p jsProp
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, "", fmt.Errorf("not a schema object: %v", err)
	}
	if p.Ref != "" {
		return nil, "", fmt.Errorf("is a $ref (%s): references are not read", p.Ref)
	}
	format = p.Format
	switch {
	case len(p.Type) > 0:
		var one string
		if json.Unmarshal(p.Type, &one) == nil {
			types = []string{one}
		} else if err := json.Unmarshal(p.Type, &types); err != nil {
			return nil, "", errors.New(`"type" is neither a string nor an array of strings`)
		}
	case len(p.OneOf) > 0 || len(p.AnyOf) > 0:
		for _, sub := range append(p.OneOf, p.AnyOf...) {
			ts, f, err := jsTypes(sub, depth+1)
			if err != nil {
				return nil, "", err
			}
			types = append(types, ts...)
			if f != "" {
				format = f
			}
		}
	case len(p.Enum) > 0:
		for _, e := range p.Enum {
			t := "any"
			switch e.(type) {
			case string:
				t = "string"
			case nil:
				t = "null"
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	default:
		types = []string{"any"}
	}
	return types, format, nil
}

// jsFits reports whether a JSON Schema type (format for strings) fits a
// column of type t.
func jsFits(typ, format string, t plan.Type) bool {
	switch t {
	case plan.TypeBigint:
		return typ == "integer"
	case plan.TypeDouble:
		return typ == "number" || typ == "integer"
	case plan.TypeVarchar:
		return typ == "string"
	case plan.TypeBoolean:
		return typ == "boolean"
	case plan.TypeTimestamp:
		return typ == "string" && format == "date-time" || typ == "integer"
	}
	return false
}

func jsWant(t plan.Type) string {
	switch t {
	case plan.TypeBigint:
		return "integer"
	case plan.TypeDouble:
		return "number or integer"
	case plan.TypeVarchar:
		return "string"
	case plan.TypeBoolean:
		return "boolean"
	case plan.TypeTimestamp:
		return `string with format date-time, or integer (epoch milliseconds)`
	}
	return "?"
}

// jsonSchemaFit checks table t against registry schema ss (named where),
// as newPlan an Avro record's: each column's property (by name) must fit
// it; a column without a property is NULL unless a record has it, which
// needs the schema to allow properties beyond its own
// (additionalProperties not false) and the column to be nullable. With
// validate it compiles the schema's validator.
func jsonSchemaFit(t Table, ss sr.Schema, where string, validate bool) (*jsonschema.Schema, error) {
	if ss.Type != sr.TypeJSON {
		n := ss.Type.String()
		if ss.Type == sr.TypeAvro {
			n = "AVRO"
		}
		return nil, fmt.Errorf("%s: a %s schema, not JSON (format json_schema)", where, n)
	}
	if len(ss.References) > 0 {
		return nil, fmt.Errorf("%s: schema references are not supported for format json_schema yet", where)
	}
	var doc jsDoc
	if err := json.Unmarshal([]byte(ss.Schema), &doc); err != nil {
		return nil, fmt.Errorf("%s: not a JSON Schema object: %v", where, err)
	}
	var top string
	if len(doc.Type) > 0 && (json.Unmarshal(doc.Type, &top) != nil || top != "object") {
		return nil, fmt.Errorf("%s: the schema's type is %s, not object (a table reads an object's properties as its columns)", where, doc.Type)
	}
	closed := string(bytes.TrimSpace(doc.AdditionalProperties)) == "false"
	props := map[string]string{} // name key -> property name
	names := make([]string, 0, len(doc.Properties))
	for name := range doc.Properties {
		props[plan.NameKey(name)] = name
		names = append(names, name)
	}
	sort.Strings(names)
	for i, c := range t.Columns {
		if metaColumns[strings.ToLower(c.Name)] {
			continue
		}
		name, ok := props[plan.NameKey(c.Name)]
		if !ok {
			switch {
			case c.NotNull || i == t.EventTime:
				what := "NOT NULL column"
				if i == t.EventTime {
					what = "event-time column"
				}
				return nil, fmt.Errorf("%s: no property for the %s %s (properties: %s)", where, what, c.Name, strings.Join(names, ", "))
			case closed:
				return nil, fmt.Errorf("%s: no property for column %s, and additionalProperties is false: no record has it (properties: %s)", where, c.Name, strings.Join(names, ", "))
			}
			continue
		}
		types, format, err := jsTypes(doc.Properties[name], 0)
		if err != nil {
			return nil, fmt.Errorf("%s: property %s %v", where, name, err)
		}
		desc := strings.Join(types, " or ")
		if format != "" {
			desc += " (format " + format + ")"
		}
		nonNull := 0
		for _, ty := range types {
			if ty == "null" || ty == "any" {
				continue // any: the column's type is checked per record
			}
			nonNull++
			if !jsFits(ty, format, c.Type) {
				return nil, fmt.Errorf("%s: property %s is JSON Schema %s, which does not fit column %s %s (it takes %s)", where, name, desc, c.Name, c.Type, jsWant(c.Type))
			}
		}
		if nonNull == 0 && !slices.Contains(types, "any") {
			return nil, fmt.Errorf("%s: property %s is JSON Schema null, which does not fit column %s %s (it takes %s)", where, name, c.Name, c.Type, jsWant(c.Type))
		}
	}
	if !validate {
		return nil, nil
	}
	sch, err := compileJSONSchema(ss.Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	return sch, nil
}

// noLoader refuses every URL a schema's $ref names outside itself: a
// schema from the registry must not make the engine read files or URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is outside the schema (references are not loaded)", url)
}

func compileJSONSchema(text string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "streamsql:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %v", err)
	}
	return sch, nil
}
