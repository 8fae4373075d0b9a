package value

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
)

// The formats of Kafka sources with a PRIMARY KEY (docs/connectors.md,
// "Upsert and Debezium sources"): their records are the changelog of the
// table. A change format is named <envelope>_<payload>: the envelope says
// how records carry changes (EnvelopeUpsert, EnvelopeDebezium), the
// payload how keys and values are encoded (a record format of Kafka
// sources: json, decoded by a ChangeDecoder; avro, by runtime/format).
const (
	FormatUpsertJSON   = "upsert_json"
	FormatDebeziumJSON = "debezium_json"
	FormatUpsertAvro   = "upsert_avro"
	FormatDebeziumAvro = "debezium_avro"
	EnvelopeUpsert     = "upsert"
	EnvelopeDebezium   = "debezium"
)

// changePayloads are the payload formats a change envelope takes. A new
// one (protobuf) is one entry here, its decoder in runtime/format
// (avrochanges.go is the pattern) and its choice in runtime/kafkachanges.go.
var changePayloads = []string{"json", "avro"}

// ChangeFormat splits a change format into its envelope and payload
// ("debezium_avro": "debezium", "avro"); ok is false for any other format.
func ChangeFormat(format string) (envelope, payload string, ok bool) {
	env, payload, found := strings.Cut(format, "_")
	if !found || (env != EnvelopeUpsert && env != EnvelopeDebezium) || !slices.Contains(changePayloads, payload) {
		return "", "", false
	}
	return env, payload, true
}

// ChangeFormats lists the change formats, for messages.
func ChangeFormats() string {
	var n []string
	for _, env := range []string{EnvelopeUpsert, EnvelopeDebezium} {
		for _, p := range changePayloads {
			n = append(n, env+"_"+p)
		}
	}
	return strings.Join(n, ", ")
}

// IsChangeFormat reports whether format is one of a PRIMARY KEY Kafka
// source's.
func IsChangeFormat(format string) bool {
	_, _, ok := ChangeFormat(format)
	return ok
}

// DebeziumMetaColumns are the columns of a debezium_json source filled
// from the envelope rather than from after: _ts_ms is the envelope's
// ts_ms (when the connector processed the change), _source_ts_ms its
// source.ts_ms (when the database made it). Either can be the event time.
var DebeziumMetaColumns = map[string]plan.Type{"_ts_ms": plan.TypeTimestamp, "_source_ts_ms": plan.TypeTimestamp}

// ChangeDecoder decodes the records of a PRIMARY KEY Kafka source into
// the table's log rows: the columns, then the delete flag (a BOOLEAN),
// as ingest logs the rows of PRIMARY KEY tables. One per reader: it
// reuses its scratch space and caches what it learnt of each Debezium
// schema; not safe for concurrent use.
type ChangeDecoder struct {
	format string
	cols   plan.Schema
	key    []int // the PRIMARY KEY's columns
	et     int   // the event-time column, or -1
	// own: the column is not in the record's value (a Kafka metadata
	// column, filled by the reader, or a Debezium one).
	own               []bool
	tsCol, srcCol     int // _ts_ms, _source_ts_ms (-1: not declared)
	d                 rowDecoder
	fields, keyFields map[string]json.RawMessage // scratch
	keyVals           []plan.Value               // scratch
	env               envelope                   // scratch
	// units caches, per Debezium value schema (its JSON text), the
	// semantic type names of after's fields (io.debezium.time.*).
	units map[string]map[string]string
}

// envelope is a Debezium change event's payload.
type envelope struct {
	Schema  json.RawMessage `json:"schema"`
	Payload json.RawMessage `json:"payload"`
	Before  json.RawMessage `json:"before"`
	After   json.RawMessage `json:"after"`
	Op      string          `json:"op"`
	TsMs    *int64          `json:"ts_ms"`
	Source  struct {
		TsMs *int64 `json:"ts_ms"`
	} `json:"source"`
}

// maxCachedSchemas bounds ChangeDecoder.units: a topic's schema changes
// rarely, so past this many the cache starts over.
const maxCachedSchemas = 64

// NewChangeDecoder is the decoder of src, a Kafka source with a PRIMARY
// KEY (src.Key) in format src.Attrs["format"].
func NewChangeDecoder(src *plan.Source) (*ChangeDecoder, error) {
	format := src.Attrs["format"]
	if format != FormatUpsertJSON && format != FormatDebeziumJSON {
		return nil, fmt.Errorf("format %q is not a JSON format of PRIMARY KEY Kafka sources (%s or %s)", format, FormatUpsertJSON, FormatDebeziumJSON)
	}
	if len(src.Key) == 0 {
		return nil, fmt.Errorf("a %s source needs a PRIMARY KEY", format)
	}
	c := &ChangeDecoder{format: format, cols: src.Schema, et: src.EventTime, tsCol: -1, srcCol: -1,
		own: make([]bool, len(src.Schema)), fields: map[string]json.RawMessage{}, keyFields: map[string]json.RawMessage{}, units: map[string]map[string]string{}}
	for _, k := range src.Key {
		i := src.Schema.Index(k)
		if i < 0 {
			return nil, fmt.Errorf("PRIMARY KEY column %s is not a column of %s", k, src.Table)
		}
		c.key = append(c.key, i)
	}
	for i, col := range src.Schema {
		name := strings.ToLower(col.Name)
		if _, ok := KafkaMetaColumns[name]; ok {
			c.own[i] = true
		}
		if _, ok := DebeziumMetaColumns[name]; ok && format == FormatDebeziumJSON {
			c.own[i] = true
			if name == "_ts_ms" {
				c.tsCol = i
			} else {
				c.srcCol = i
			}
		}
	}
	def := &plan.TableDef{Name: src.Table, Columns: slices.Clone(src.Schema), EventTime: -1}
	c.d = rowDecoder{def: def, j: jsonScan{maxDepth: DefaultMaxJSONDepth}}
	return c, nil
}

// Decode decodes one record (key and value; ts is its timestamp, epoch
// ms) into a log row of the table: its columns and the delete flag. A nil
// row with a nil error is a record that changes nothing (a Debezium
// tombstone). The row is the caller's.
func (c *ChangeDecoder) Decode(key, val []byte, ts int64) (plan.Row, error) {
	if c.format == FormatUpsertJSON {
		return c.upsert(key, val, ts)
	}
	return c.debezium(key, val)
}

// newRow is a row of NULLs with room for the delete flag.
func (c *ChangeDecoder) newRow() plan.Row {
	return make(plan.Row, len(c.cols), len(c.cols)+1)
}

// upsert decodes a record of an upsert topic: the value is the row (as
// format json takes it), the key its PRIMARY KEY, a null value a delete.
func (c *ChangeDecoder) upsert(key, val []byte, ts int64) (plan.Row, error) {
	if key == nil {
		return nil, fmt.Errorf("a record without a key: an upsert_json record's key is its PRIMARY KEY (%s)", c.keyNames())
	}
	row := c.newRow()
	if val == nil {
		if err := c.parseKey(key, row, false); err != nil {
			return nil, err
		}
		if c.et >= 0 && row[c.et].IsNull() {
			// A delete's time, for the AS OF versions: the record's.
			if err := plan.CheckTime(ts); err != nil {
				return nil, fmt.Errorf("column %s, the tombstone's timestamp: %w", c.cols[c.et].Name, err)
			}
			row[c.et] = plan.Time(ts)
		}
		return append(row, plan.Bool(true)), nil
	}
	if err := c.object(val, row, nil, true); err != nil {
		return nil, err
	}
	if err := c.parseKey(key, row, true); err != nil {
		return nil, err
	}
	if err := c.required(row); err != nil {
		return nil, err
	}
	return append(row, plan.Bool(false)), nil
}

// debezium decodes a Debezium change event (with or without the JSON
// converter's schema wrapper).
func (c *ChangeDecoder) debezium(key, val []byte) (plan.Row, error) {
	if val == nil || isNull(val) {
		return nil, nil // the tombstone after a delete (for compaction)
	}
	env := &c.env
	*env = envelope{}
	if err := json.Unmarshal(val, env); err != nil {
		return nil, fmt.Errorf("not a Debezium change event (a JSON object): %v", err)
	}
	var units map[string]string
	if len(env.Payload) > 0 && env.Op == "" {
		// The JSON converter's wrapper: {"schema": ..., "payload": ...}.
		if isNull(env.Payload) {
			return nil, nil
		}
		payload, schema := env.Payload, env.Schema
		*env = envelope{}
		if len(schema) > 0 && !isNull(schema) {
			units = c.schemaUnits(schema)
		}
		if err := json.Unmarshal(payload, env); err != nil {
			return nil, fmt.Errorf("Debezium payload is not a change event (a JSON object): %v", err)
		}
	}
	row := c.newRow()
	if c.tsCol >= 0 && env.TsMs != nil {
		row[c.tsCol] = plan.Time(*env.TsMs)
	}
	if c.srcCol >= 0 && env.Source.TsMs != nil {
		row[c.srcCol] = plan.Time(*env.Source.TsMs)
	}
	switch env.Op {
	case "":
		return nil, fmt.Errorf("a Debezium envelope without op")
	case "c", "r", "u":
		if len(env.After) == 0 || isNull(env.After) {
			return nil, fmt.Errorf("a Debezium event of op %q without after", env.Op)
		}
		if err := c.object(env.After, row, units, false); err != nil {
			return nil, fmt.Errorf("after: %w", err)
		}
		if key != nil && !isNull(key) {
			if err := c.parseKey(key, row, true); err != nil {
				return nil, err
			}
		}
		if err := c.required(row); err != nil {
			return nil, fmt.Errorf("after: %w", err)
		}
		if err := c.checkTimes(row); err != nil {
			return nil, err
		}
		return append(row, plan.Bool(false)), nil
	case "d":
		switch {
		case key != nil && !isNull(key):
			if err := c.parseKey(key, row, false); err != nil {
				return nil, err
			}
			if len(env.Before) > 0 && !isNull(env.Before) && c.et >= 0 && !c.own[c.et] {
				// Only the event time is taken from before (its key is
				// the record's); a bad before is no reason to keep a row.
				tmp := c.newRow()
				if c.object(env.Before, tmp, units, false) == nil {
					row[c.et] = tmp[c.et]
				}
			}
		case len(env.Before) > 0 && !isNull(env.Before):
			if err := c.object(env.Before, row, units, false); err != nil {
				return nil, fmt.Errorf("before: %w", err)
			}
			for _, k := range c.key {
				if row[k].IsNull() {
					return nil, fmt.Errorf("a delete without a key: before has no value for PRIMARY KEY column %s", c.cols[k].Name)
				}
			}
			for i := range row {
				if !c.isKey(i) && i != c.et && i != c.tsCol && i != c.srcCol {
					row[i] = plan.Null // a delete carries its key (and time) only
				}
			}
		default:
			return nil, fmt.Errorf("a delete without a key: no record key and no before")
		}
		if c.et >= 0 && row[c.et].IsNull() {
			// before lacks it (PostgreSQL without REPLICA IDENTITY FULL):
			// the change's time in the source, else the connector's.
			switch {
			case env.Source.TsMs != nil:
				row[c.et] = plan.Time(*env.Source.TsMs)
			case env.TsMs != nil:
				row[c.et] = plan.Time(*env.TsMs)
			default:
				return nil, fmt.Errorf("column %s: a delete without an event time (no %s in before, no source.ts_ms or ts_ms)", c.cols[c.et].Name, c.cols[c.et].Name)
			}
		}
		if err := c.checkTimes(row); err != nil {
			return nil, err
		}
		return append(row, plan.Bool(true)), nil
	}
	return nil, fmt.Errorf("a Debezium event of unknown op %q (c, r, u or d)", env.Op)
}

// checkTimes checks the Debezium time columns are TIMESTAMPs in range.
func (c *ChangeDecoder) checkTimes(row plan.Row) error {
	for _, i := range []int{c.tsCol, c.srcCol, c.et} {
		if i < 0 {
			continue
		}
		if row[i].IsNull() {
			if i == c.et && i != c.tsCol && i != c.srcCol && c.own[i] {
				continue // a Kafka metadata column: the reader fills it
			}
			if i == c.et {
				return fmt.Errorf("column %s: missing value for the event-time column", c.cols[i].Name)
			}
			continue
		}
		if err := plan.CheckTime(row[i].I); err != nil {
			return fmt.Errorf("column %s: %w", c.cols[i].Name, err)
		}
	}
	return nil
}

// schemaUnits reads the semantic type names of after's fields from a
// Debezium value schema, cached by the schema's text.
func (c *ChangeDecoder) schemaUnits(schema json.RawMessage) map[string]string {
	if u, ok := c.units[string(schema)]; ok {
		return u
	}
	type field struct {
		Field  string  `json:"field"`
		Name   string  `json:"name"`
		Fields []field `json:"fields"`
	}
	var s struct {
		Fields []field `json:"fields"`
	}
	u := map[string]string{}
	if json.Unmarshal(schema, &s) == nil {
		for _, f := range s.Fields {
			if f.Field != "after" && f.Field != "before" {
				continue
			}
			for _, g := range f.Fields {
				if g.Name != "" {
					u[strings.ToLower(g.Field)] = g.Name
				}
			}
		}
	}
	if len(c.units) >= maxCachedSchemas {
		clear(c.units)
	}
	c.units[string(schema)] = u
	return u
}

// object decodes the JSON object obj into row's columns by name: strict
// (format upsert_json: an unknown member is an error) or not (Debezium's
// after and before: other fields are ignored). units are the Debezium
// semantic types of its fields (nil: none known).
func (c *ChangeDecoder) object(obj []byte, row plan.Row, units map[string]string, strict bool) error {
	clear(c.fields)
	if err := json.Unmarshal(obj, &c.fields); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	for name, raw := range c.fields {
		i := c.d.column(name)
		if i < 0 || c.own[i] {
			if strict && i < 0 {
				return fmt.Errorf("column %s: unknown column (table %s has %s)", clip(name), c.d.def.Name, columnList(c.cols))
			}
			continue
		}
		v, err := c.value(raw, c.cols[i].Type, units[strings.ToLower(name)])
		if err != nil {
			return fmt.Errorf("column %s: %v", c.cols[i].Name, err)
		}
		row[i] = v
	}
	return nil
}

// value converts one JSON value to type t; unit is its Debezium semantic
// type (io.debezium.time.MicroTimestamp...), or empty.
func (c *ChangeDecoder) value(raw []byte, t plan.Type, unit string) (plan.Value, error) {
	raw = bytes.TrimSpace(raw)
	if t == plan.TypeTimestamp && len(raw) > 0 && (raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		var div, mul int64 = 1, 1
		switch unit {
		case "io.debezium.time.MicroTimestamp":
			div = 1000
		case "io.debezium.time.NanoTimestamp":
			div = 1000000
		case "io.debezium.time.Date", "org.apache.kafka.connect.data.Date":
			mul = 86400000
		}
		if div != 1 || mul != 1 {
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return plan.Null, fmt.Errorf("expected an integer (%s), got %s", unit, raw)
			}
			ms := floorDiv(n, div) * mul
			if err := plan.CheckTime(ms); err != nil || (mul != 1 && ms/mul != n) {
				return plan.Null, fmt.Errorf("%s %s is outside the TIMESTAMP range, %s", unit, raw, plan.TimeRange)
			}
			return plan.Time(ms), nil
		}
	}
	j := &c.d.j
	j.s, j.i = string(raw), 0
	v, msg, err := c.d.value(t, 1)
	if err == errTooDeep {
		return plan.Null, fmt.Errorf("JSON nested deeper than %d levels", j.maxDepth)
	}
	if err != nil {
		return plan.Null, err
	}
	if msg != "" {
		return plan.Null, fmt.Errorf("%s", msg)
	}
	return v, nil
}

func floorDiv(n, d int64) int64 {
	q := n / d
	if n%d != 0 && (n < 0) != (d < 0) {
		q--
	}
	return q
}

// parseKey reads the record key into row's PRIMARY KEY columns: a JSON
// object with the key's columns (in a Debezium key, perhaps in the JSON
// converter's schema wrapper), or, for a one-column key, a bare JSON
// scalar (or, for a VARCHAR key, any text). check: row already holds the
// value's columns, which must equal the key's (a NULL takes the key's).
func (c *ChangeDecoder) parseKey(key []byte, row plan.Row, check bool) error {
	kt := bytes.TrimSpace(key)
	vals := c.keyVals[:0]
	for range c.key {
		vals = append(vals, plan.Null)
	}
	c.keyVals = vals
	if len(kt) > 0 && kt[0] == '{' {
		m := c.keyFields
		clear(m)
		if err := json.Unmarshal(kt, &m); err != nil {
			return fmt.Errorf("record key: not a JSON object: %v", err)
		}
		if p, ok := m["payload"]; ok && len(m) == 2 && m["schema"] != nil {
			clear(m)
			if err := json.Unmarshal(p, &m); err != nil {
				return fmt.Errorf("record key: payload is not a JSON object: %v", err)
			}
		}
		for name, raw := range m {
			i := c.d.column(name)
			k := slices.Index(c.key, i)
			if k < 0 {
				return fmt.Errorf("record key field %s is not a PRIMARY KEY column (%s)", clip(name), c.keyNames())
			}
			v, err := c.value(raw, c.cols[i].Type, "")
			if err != nil {
				return fmt.Errorf("record key, column %s: %v", c.cols[i].Name, err)
			}
			vals[k] = v
		}
		for k, i := range c.key {
			if vals[k].IsNull() {
				return fmt.Errorf("record key has no value for PRIMARY KEY column %s", c.cols[i].Name)
			}
		}
	} else {
		if len(c.key) != 1 {
			return fmt.Errorf("record key %s is not a JSON object with the PRIMARY KEY columns (%s)", clipBytes(kt), c.keyNames())
		}
		col := c.cols[c.key[0]]
		v, err := c.value(kt, col.Type, "")
		if err != nil && col.Type == plan.TypeVarchar && !(len(kt) > 0 && kt[0] == '"') {
			v, err = plan.Str(string(key)), nil // a plain string key
		}
		if err != nil {
			return fmt.Errorf("record key, column %s: %v", col.Name, err)
		}
		if v.IsNull() {
			return fmt.Errorf("record key has no value for PRIMARY KEY column %s", col.Name)
		}
		vals[0] = v
	}
	for k, i := range c.key {
		if check && !row[i].IsNull() && row[i] != vals[k] {
			return fmt.Errorf("column %s: the record key has %s, the value %s (they must be equal)", c.cols[i].Name, vals[k], row[i])
		}
		row[i] = vals[k]
	}
	return nil
}

// required checks the NOT NULL and event-time columns of an upsert.
func (c *ChangeDecoder) required(row plan.Row) error {
	for i, col := range c.cols {
		if c.own[i] || !row[i].IsNull() {
			continue
		}
		switch {
		case c.isKey(i):
			return fmt.Errorf("column %s: missing value for a PRIMARY KEY column", col.Name)
		case i == c.et:
			return fmt.Errorf("column %s: missing value for the event-time column", col.Name)
		case col.NotNull:
			return fmt.Errorf("column %s: missing value for NOT NULL column", col.Name)
		}
	}
	return nil
}

func (c *ChangeDecoder) isKey(i int) bool { return slices.Contains(c.key, i) }

func (c *ChangeDecoder) keyNames() string {
	n := make([]string, len(c.key))
	for k, i := range c.key {
		n[k] = c.cols[i].Name
	}
	return strings.Join(n, ", ")
}

func isNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

func clipBytes(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}
