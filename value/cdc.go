package value

import (
	"bytes"
	"encoding/json"
	"errors"
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
// as ingest logs the rows of PRIMARY KEY tables. Records are read in
// place with json.go's scanner (encoding/json only for a Debezium schema
// not seen before: its field types, cached). One per reader: it reuses
// its scratch space; not safe for concurrent use.
type ChangeDecoder struct {
	format string
	cols   plan.Schema
	key    []int // the PRIMARY KEY's columns
	et     int   // the event-time column, or -1
	// own: the column is not in the record's value (a Kafka metadata
	// column, filled by the reader, or a Debezium one).
	own           []bool
	tsCol, srcCol int // _ts_ms, _source_ts_ms (-1: not declared)
	d             rowDecoder
	keyFields     []keyMember  // scratch
	keyVals       []plan.Value // scratch
	env           envelope     // scratch
	// rec is the record value being decoded, read in place by d's
	// scanner: its VARCHAR values are substrings of it.
	rec string
	// units caches, per Debezium value schema (its JSON text), the
	// semantic type names of after's fields (io.debezium.time.*).
	units map[string]map[string]string
}

// envelope is a Debezium change event's payload, as scanEnvelope finds
// it: where its values are in the record, its op and times.
type envelope struct {
	Schema, Payload, Before, After span
	Op                             string
	TsMs, SrcTsMs                  *int64 // nil: absent or null
	tsMs, srcTsMs                  int64  // what they point to
}

// span is where a JSON value is in ChangeDecoder.rec: [start, end);
// empty when the member is absent.
type span struct{ start, end int }

// has reports whether the member was there (null included).
func (s span) has() bool { return s.end > s.start }

// maxArena bounds the scanner's buffer of unescaped strings: past it, a
// record starts a new one.
const maxArena = 64 << 10

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
		own: make([]bool, len(src.Schema)), units: map[string]map[string]string{}}
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
	if c.d.j.arena.Len() > maxArena {
		// Unescaped strings of earlier records stay valid in the old
		// buffer; a long-lived decoder must not keep growing one.
		c.d.j.arena = strings.Builder{}
	}
	c.rec = string(val)
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
	if err := c.object(span{0, len(c.rec)}, row, nil, true); err != nil {
		return nil, err
	}
	if j := &c.d.j; !j.atEnd() {
		return nil, fmt.Errorf("not a JSON object: %v", errInvalid(j.s[j.i], "after top-level value"))
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
	if err := c.scanEnvelope(0, env); err != nil {
		return nil, fmt.Errorf("not a Debezium change event (a JSON object): %v", err)
	}
	if j := &c.d.j; !j.atEnd() {
		return nil, fmt.Errorf("not a Debezium change event (a JSON object): %v", errInvalid(j.s[j.i], "after top-level value"))
	}
	var units map[string]string
	if env.Payload.has() && env.Op == "" {
		// The JSON converter's wrapper: {"schema": ..., "payload": ...}.
		if !c.present(env.Payload) {
			return nil, nil
		}
		payload, schema := env.Payload, env.Schema
		if c.present(schema) {
			units = c.schemaUnits(c.rec[schema.start:schema.end])
		}
		if err := c.scanEnvelope(payload.start, env); err != nil {
			return nil, fmt.Errorf("Debezium payload is not a change event (a JSON object): %v", err)
		}
	}
	row := c.newRow()
	if c.tsCol >= 0 && env.TsMs != nil {
		row[c.tsCol] = plan.Time(*env.TsMs)
	}
	if c.srcCol >= 0 && env.SrcTsMs != nil {
		row[c.srcCol] = plan.Time(*env.SrcTsMs)
	}
	switch env.Op {
	case "":
		return nil, fmt.Errorf("a Debezium envelope without op")
	case "c", "r", "u":
		if !c.present(env.After) {
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
			if c.present(env.Before) && c.et >= 0 && !c.own[c.et] {
				// Only the event time is taken from before (its key is
				// the record's); a bad before is no reason to keep a row.
				tmp := c.newRow()
				if c.object(env.Before, tmp, units, false) == nil {
					row[c.et] = tmp[c.et]
				}
			}
		case c.present(env.Before):
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
			case env.SrcTsMs != nil:
				row[c.et] = plan.Time(*env.SrcTsMs)
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
func (c *ChangeDecoder) schemaUnits(schema string) map[string]string {
	if u, ok := c.units[schema]; ok {
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
	if json.Unmarshal([]byte(schema), &s) == nil {
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
	c.units[schema] = u
	return u
}

// present reports whether s holds a value other than null.
func (c *ChangeDecoder) present(s span) bool {
	return s.has() && c.rec[s.start:s.end] != "null"
}

// scanEnvelope reads the JSON object at c.rec[at:] as a Debezium event
// (or the converter's wrapper around one) into env: its op, ts_ms and
// source.ts_ms, and where its before, after, schema and payload are.
// Other members are skipped (validated). The scanner is left after it.
func (c *ChangeDecoder) scanEnvelope(at int, env *envelope) error {
	*env = envelope{}
	j := &c.d.j
	j.s, j.i = c.rec, at
	if err := c.open(0); err != nil {
		return err
	}
	for first := true; ; first = false {
		name, ok, err := j.member(first)
		if err != nil || !ok {
			return err
		}
		start := j.i
		switch name {
		case "op":
			env.Op = ""
			switch j.peek() {
			case '"':
				if env.Op, err = j.str(); err != nil {
					return err
				}
			case 'n':
				if _, err := j.literal(); err != nil {
					return err
				}
			default:
				return errors.New("op is not a string")
			}
		case "ts_ms":
			if env.TsMs, err = c.optInt("ts_ms", &env.tsMs); err != nil {
				return err
			}
		case "source":
			if j.peek() == 'n' {
				if _, err := j.literal(); err != nil {
					return err
				}
				break
			}
			if err := c.open(1); err != nil {
				return err
			}
			for first := true; ; first = false {
				name, ok, err := j.member(first)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				if name == "ts_ms" {
					if env.SrcTsMs, err = c.optInt("source.ts_ms", &env.srcTsMs); err != nil {
						return err
					}
				} else if err := j.skip(2); err != nil {
					return err
				}
			}
		default:
			if err := j.skip(1); err != nil {
				return err
			}
			sp := span{start, j.i}
			switch name {
			case "before":
				env.Before = sp
			case "after":
				env.After = sp
			case "schema":
				env.Schema = sp
			case "payload":
				env.Payload = sp
			}
		}
	}
}

// open reads the '{' of an object at nesting depth depth (of its
// container).
func (c *ChangeDecoder) open(depth int) error {
	j := &c.d.j
	j.ws()
	if j.peek() != '{' {
		if err := j.skip(depth); err != nil {
			return err
		}
		return errors.New("not an object")
	}
	if depth+1 > j.maxDepth {
		return errTooDeep
	}
	j.i++
	return nil
}

// optInt reads an integer or null (nil) into *n.
func (c *ChangeDecoder) optInt(what string, n *int64) (*int64, error) {
	j := &c.d.j
	if j.peek() == 'n' {
		_, err := j.literal()
		return nil, err
	}
	lit, err := j.number()
	if err != nil {
		return nil, err
	}
	v, ok := parseInt(lit)
	if !ok {
		return nil, fmt.Errorf("%s is not an integer: %s", what, lit)
	}
	*n = v
	return n, nil
}

// object decodes the JSON object at sp (in c.rec) into row's columns by
// name: strict (format upsert_json: an unknown member is an error) or not
// (Debezium's after and before: other fields are ignored). units are the
// Debezium semantic types of its fields (nil: none known). The scanner is
// left after the object.
func (c *ChangeDecoder) object(sp span, row plan.Row, units map[string]string, strict bool) error {
	j := &c.d.j
	j.s, j.i = c.rec, sp.start
	if err := c.open(1); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	for first := true; ; first = false {
		name, ok, err := j.member(first)
		if err != nil {
			return fmt.Errorf("not a JSON object: %v", err)
		}
		if !ok {
			return nil
		}
		i := c.d.column(name)
		if i < 0 || c.own[i] {
			if strict && i < 0 {
				return fmt.Errorf("column %s: unknown column (table %s has %s)", clip(name), c.d.def.Name, columnList(c.cols))
			}
			if err := j.skip(2); err != nil {
				return fmt.Errorf("not a JSON object: %v", err)
			}
			continue
		}
		var unit string
		if units != nil {
			unit = units[strings.ToLower(name)]
		}
		v, err := c.valueHere(c.cols[i].Type, unit)
		if err != nil {
			return fmt.Errorf("column %s: %v", c.cols[i].Name, err)
		}
		row[i] = v
	}
}

// value converts one JSON value to type t; unit is its Debezium semantic
// type (io.debezium.time.MicroTimestamp...), or empty.
func (c *ChangeDecoder) value(raw []byte, t plan.Type, unit string) (plan.Value, error) {
	j := &c.d.j
	j.s, j.i = string(bytes.TrimSpace(raw)), 0
	return c.valueHere(t, unit)
}

// valueHere converts the JSON value at the scanner's position to type t
// (unit: as value's).
func (c *ChangeDecoder) valueHere(t plan.Type, unit string) (plan.Value, error) {
	j := &c.d.j
	j.ws()
	if p := j.peek(); t == plan.TypeTimestamp && (p == '-' || '0' <= p && p <= '9') {
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
			lit, err := j.number()
			if err != nil {
				return plan.Null, err
			}
			n, err := strconv.ParseInt(lit, 10, 64)
			if err != nil {
				return plan.Null, fmt.Errorf("expected an integer (%s), got %s", unit, lit)
			}
			ms := floorDiv(n, div) * mul
			if err := plan.CheckTime(ms); err != nil || (mul != 1 && ms/mul != n) {
				return plan.Null, fmt.Errorf("%s %s is outside the TIMESTAMP range, %s", unit, lit, plan.TimeRange)
			}
			return plan.Time(ms), nil
		}
	}
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
		j := &c.d.j
		j.s = string(kt)
		m, err := c.keyMembers(0)
		if err != nil {
			return fmt.Errorf("record key: not a JSON object: %v", err)
		}
		if len(m) == 2 && (m[0].name == "schema" && m[1].name == "payload" || m[0].name == "payload" && m[1].name == "schema") {
			// The JSON converter's wrapper.
			p := m[0].at
			if m[1].name == "payload" {
				p = m[1].at
			}
			if m, err = c.keyMembers(p); err != nil {
				return fmt.Errorf("record key: payload is not a JSON object: %v", err)
			}
		}
		for _, f := range m {
			i := c.d.column(f.name)
			k := slices.Index(c.key, i)
			if k < 0 {
				return fmt.Errorf("record key field %s is not a PRIMARY KEY column (%s)", clip(f.name), c.keyNames())
			}
			j.i = f.at
			v, err := c.valueHere(c.cols[i].Type, "")
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

// keyMember is a member of a record key's JSON object: its name and
// where its value starts (in the scanner's text).
type keyMember struct {
	name string
	at   int
}

// keyMembers reads the JSON object at the scanner's text[at:] (the whole
// text: nothing may follow it when at is 0) into its members, in
// c.keyFields.
func (c *ChangeDecoder) keyMembers(at int) ([]keyMember, error) {
	j := &c.d.j
	j.i = at
	m := c.keyFields[:0]
	if err := c.open(0); err != nil {
		return nil, err
	}
	for first := true; ; first = false {
		name, ok, err := j.member(first)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		m = append(m, keyMember{name, j.i})
		if err := j.skip(1); err != nil {
			return nil, err
		}
	}
	c.keyFields = m
	if at == 0 && !j.atEnd() {
		return nil, errInvalid(j.s[j.i], "after top-level value")
	}
	return m, nil
}

// member reads the name of the next member of the object being read, and
// its colon (first: just after the object's '{'); ok is false at the
// object's '}', which it reads.
func (j *jsonScan) member(first bool) (name string, ok bool, err error) {
	j.ws()
	if j.i >= len(j.s) {
		return "", false, errUnexpectedEnd()
	}
	c := j.s[j.i]
	if c == '}' && first {
		j.i++
		return "", false, nil
	}
	if !first {
		j.i++
		switch c {
		case '}':
			return "", false, nil
		case ',':
		default:
			return "", false, errInvalid(c, "after object key:value pair")
		}
		j.ws()
		if j.i >= len(j.s) {
			return "", false, errUnexpectedEnd()
		}
	}
	if j.s[j.i] != '"' {
		return "", false, errInvalid(j.s[j.i], "looking for beginning of object key string")
	}
	if name, err = j.str(); err != nil {
		return "", false, err
	}
	if err := j.colon(); err != nil {
		return "", false, err
	}
	return name, true, nil
}
