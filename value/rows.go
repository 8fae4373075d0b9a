package value

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
)

// RowError is a rejected ingest request: which row and column, and why.
type RowError struct {
	Row    int    // 0-based index of the row in the request; -1: the body
	Column string // empty when about the whole row
	Msg    string
	// Status is the HTTP status to answer with: 0 is 400; a row over
	// Limits.MaxRowSize is 413.
	Status int
}

// Limits bound what decoding one ingest body (or Kafka record) accepts.
type Limits struct {
	// MaxRowSize is the largest row, in bytes of its JSON text; 0: no
	// limit. A larger row is refused with 413.
	MaxRowSize int
	// MaxDepth is the deepest nesting of JSON values, counted from the
	// outermost one (a JSON array body counts, then the row object); 0:
	// DefaultMaxJSONDepth. Every column is a scalar, so anything nested is
	// wrong anyway: the limit bounds the work spent finding that out.
	MaxDepth int
	// skipUnknown skips a member that names no column (SchemaRecordDecoder)
	// instead of refusing it.
	skipUnknown bool
}

// Defaults of Limits (and of serve's --max-row-size and --max-json-depth).
const (
	DefaultMaxRowSize   = 1 << 20
	DefaultMaxJSONDepth = 32
)

// DefaultLimits are the limits serve starts with.
var DefaultLimits = Limits{MaxRowSize: DefaultMaxRowSize, MaxDepth: DefaultMaxJSONDepth}

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
// validating every row (within DefaultLimits); any bad row rejects the
// whole request. VARCHAR values are substrings of body where they have no
// escapes.
func DecodeRows(def *plan.TableDef, body string) ([]plan.Row, error) {
	var rows []plan.Row
	err := decodeRows(def, body, DefaultLimits, func(r plan.Row) { rows = append(rows, slices.Clone(r)) })
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// EncodeRows is DecodeRows within lim, with each row in the ingest log's
// encoding (AppendRow), all in one buffer: the hot path of ingest,
// with no allocation per row.
func EncodeRows(def *plan.TableDef, body string, lim Limits) ([][]byte, error) {
	buf := make([]byte, 0, len(body)*3/4+64) // encoded rows are smaller than their JSON (no member names)
	var ends []int
	err := decodeRows(def, body, lim, func(r plan.Row) {
		buf = AppendRow(buf, r)
		ends = append(ends, len(buf))
	})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(ends))
	from := 0
	for i, end := range ends {
		out[i] = buf[from:end:end]
		from = end
	}
	return out, nil
}

// decodeRows calls emit with each row of an NDJSON body (JSON values
// separated by whitespace) or a JSON array body (starting with '['). The
// row passed to emit is reused for the next one.
//
// Semantics (docs/http-api.md): every value must be an object; members name
// columns case-insensitively (an unknown one is an error); a column given
// twice takes its last value, but each is type-checked; absent and null
// members are NULL; NOT NULL and event-time columns must have a value. A
// PRIMARY KEY table also takes "_op" ("upsert" or "delete"; a delete needs
// only the key and event-time columns) and logs the operation as one more
// value. Errors name the row (0-based) and the column; the first error in
// the body is reported. A row longer than lim.MaxRowSize or a value nested
// deeper than lim.MaxDepth is an error too.
func decodeRows(def *plan.TableDef, body string, lim Limits, emit func(plan.Row)) error {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultMaxJSONDepth
	}
	d := rowDecoder{def: def, j: jsonScan{s: body, maxDepth: lim.MaxDepth}, row: make(plan.Row, len(def.Columns), len(def.Columns)+1), maxRow: lim.MaxRowSize, skipUnknown: lim.skipUnknown}
	j := &d.j
	if j.ws(); j.peek() != '[' {
		for n := 0; !j.atEnd(); n++ {
			if err := d.decodeRow(n, 0); err != nil {
				return err
			}
			emit(d.row)
		}
		return nil
	}
	j.i++
	if j.ws(); j.peek() == ']' {
		j.i++
	} else {
		for n := 0; ; n++ {
			if err := d.decodeRow(n, 1); err != nil {
				return err
			}
			emit(d.row)
			j.ws()
			if j.i == len(j.s) {
				return &RowError{Row: -1, Msg: "body is not a JSON array of row objects: " + errUnexpectedEnd().Error()}
			}
			c := j.s[j.i]
			j.i++
			if c == ']' {
				break
			}
			if c != ',' {
				return &RowError{Row: -1, Msg: "body is not a JSON array of row objects: " + errInvalid(c, "after array element").Error()}
			}
		}
	}
	if !j.atEnd() {
		return &RowError{Row: -1, Msg: "unexpected data after the JSON array"}
	}
	return nil
}

// rowDecoder decodes the rows of one request.
type rowDecoder struct {
	def    *plan.TableDef
	j      jsonScan
	row    plan.Row // the row being decoded; its capacity has room for the operation
	maxRow int      // Limits.MaxRowSize
	// byName finds columns by name as declared, byKey by plan.NameKey;
	// built for the first member out of column order, so rows of many
	// columns in any order decode in linear time (and a name as declared
	// is found without allocating).
	byName, byKey map[string]int
	skipUnknown   bool // Limits.skipUnknown
}

// column is def.Columns.Index(name), by a map.
func (d *rowDecoder) column(name string) int {
	if d.byName == nil {
		cols := d.def.Columns
		d.byName, d.byKey = make(map[string]int, len(cols)), make(map[string]int, len(cols))
		for i := len(cols) - 1; i >= 0; i-- { // the first of equal keys wins, as in Index
			d.byName[cols[i].Name] = i
			d.byKey[plan.NameKey(cols[i].Name)] = i
		}
	}
	if i, ok := d.byName[name]; ok { // CREATE TABLE refuses names equal but for case
		return i
	}
	if i, ok := d.byKey[plan.NameKey(name)]; ok {
		return i
	}
	return -1
}

// decodeRow decodes the row object n, at nesting depth depth, into d.row.
func (d *rowDecoder) decodeRow(n, depth int) *RowError {
	j := &d.j
	j.ws()
	start := j.i
	err := d.decodeObject(n, depth)
	if err == nil && d.maxRow > 0 && j.i-start > d.maxRow {
		err = &RowError{Row: n, Status: 413, Msg: fmt.Sprintf("row is %d bytes, over the %d-byte limit on one row (--max-row-size)", j.i-start, d.maxRow)}
	}
	return err
}

// tooDeep is the error for a value nested deeper than the limit: in row
// n, in column col (empty: the row itself).
func (d *rowDecoder) tooDeep(n int, col string) *RowError {
	return &RowError{Row: n, Column: col, Msg: fmt.Sprintf("JSON nested deeper than %d levels (--max-json-depth; every column is a scalar)", d.j.maxDepth)}
}

// decodeObject decodes the row object n (the reading position is at its
// first byte), at nesting depth depth, into d.row.
func (d *rowDecoder) decodeObject(n, depth int) *RowError {
	j, def := &d.j, d.def
	syntax := func(err error) *RowError { return &RowError{Row: n, Msg: "not a JSON object: " + err.Error()} }
	if j.i == len(j.s) {
		return syntax(errUnexpectedEnd())
	}
	if j.s[j.i] != '{' {
		if err := j.skip(depth); err == errTooDeep {
			return d.tooDeep(n, "")
		} else if err != nil {
			return syntax(err)
		}
		return &RowError{Row: n, Msg: "not a JSON object"}
	}
	if depth+1 > j.maxDepth {
		return d.tooDeep(n, "")
	}
	j.i++
	row := d.row[:len(def.Columns)]
	clear(row)
	del := false
	next := 0 // the column expected next: clients usually send them in order
	if j.ws(); j.peek() == '}' {
		j.i++
	} else {
		for {
			j.ws()
			if j.i == len(j.s) {
				return syntax(errUnexpectedEnd())
			}
			if j.s[j.i] != '"' {
				return syntax(errInvalid(j.s[j.i], "looking for beginning of object key string"))
			}
			name, err := j.str()
			if err != nil {
				return syntax(err)
			}
			if err := j.colon(); err != nil {
				return syntax(err)
			}
			i := -1
			if next < len(def.Columns) && def.Columns[next].Name == name {
				i = next
			} else {
				i = d.column(name)
			}
			switch {
			case i >= 0:
				v, msg, err := d.value(def.Columns[i].Type, depth+1)
				if err == errTooDeep {
					return d.tooDeep(n, def.Columns[i].Name)
				}
				if err != nil {
					return syntax(err)
				}
				if msg != "" {
					return &RowError{Row: n, Column: def.Columns[i].Name, Msg: msg}
				}
				row[i] = v
				next = i + 1
			case d.skipUnknown && (name != "_op" || len(def.PrimaryKey) == 0):
				if err := j.skip(depth + 1); err == errTooDeep {
					return d.tooDeep(n, clip(name))
				} else if err != nil {
					return syntax(err)
				}
			case name == "_op":
				if len(def.PrimaryKey) == 0 {
					return &RowError{Row: n, Column: name, Msg: "_op is only for tables with a PRIMARY KEY"}
				}
				op, isStr, err := d.op(depth + 1)
				if err == errTooDeep {
					return d.tooDeep(n, name)
				}
				if err != nil {
					return syntax(err)
				}
				switch {
				case isStr && op == "delete":
					del = true
				case isStr && op == "upsert":
					del = false
				default:
					return &RowError{Row: n, Column: name, Msg: fmt.Sprintf(`_op must be "upsert" or "delete", not %s`, op)}
				}
			default:
				return &RowError{Row: n, Column: clip(name), Msg: fmt.Sprintf("unknown column (table %s has %s)", def.Name, columnList(def.Columns))}
			}
			j.ws()
			if j.i == len(j.s) {
				return syntax(errUnexpectedEnd())
			}
			c := j.s[j.i]
			j.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return syntax(errInvalid(c, "after object key:value pair"))
			}
		}
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
			return &RowError{Row: n, Column: c.Name, Msg: msg}
		}
	}
	if len(def.PrimaryKey) > 0 {
		// PRIMARY KEY tables log the operation as one more value.
		row = append(row, plan.Bool(del))
	}
	d.row = row
	return nil
}

// op reads the value of "_op": a string's value, or another value's JSON
// text for the error message.
func (d *rowDecoder) op(depth int) (string, bool, error) {
	j := &d.j
	if j.peek() == '"' {
		s, err := j.str()
		return s, true, err
	}
	start := j.i
	if err := j.skip(depth); err != nil {
		return "", false, err
	}
	return j.s[start:j.i], false, nil
}

// value reads one column value of type t. A value of the wrong type gives
// a message (msg); err is a syntax error.
func (d *rowDecoder) value(t plan.Type, depth int) (v plan.Value, msg string, err error) {
	j := &d.j
	if j.i == len(j.s) {
		return plan.Null, "", errUnexpectedEnd()
	}
	want := func(got string) string { return fmt.Sprintf("expected %s, got %s", t, got) }
	switch c := j.s[j.i]; {
	case c == '"':
		s, err := j.str()
		if err != nil {
			return plan.Null, "", err
		}
		switch t {
		case plan.TypeVarchar:
			return plan.Str(s), "", nil
		case plan.TypeTimestamp:
			ms, ok := ParseTime(s)
			if !ok {
				return plan.Null, fmt.Sprintf("expected a TIMESTAMP (RFC 3339 such as 2024-01-01T00:00:10.000Z, or epoch milliseconds), got %q", s), nil
			}
			if !plan.TimeInRange(ms) {
				return plan.Null, fmt.Sprintf("%q is outside the TIMESTAMP range, %s", s, plan.TimeRange), nil
			}
			return plan.Time(ms), "", nil
		case plan.TypeDouble:
			// The non-finite DOUBLEs as results write them (plan.JSONNaN...).
			switch s {
			case plan.JSONNaN:
				return plan.Float(math.NaN()), "", nil
			case plan.JSONInf:
				return plan.Float(math.Inf(1)), "", nil
			case plan.JSONNegInf:
				return plan.Float(math.Inf(-1)), "", nil
			}
		}
		return plan.Null, want("a string"), nil
	case c == '-' || '0' <= c && c <= '9':
		lit, err := j.number()
		if err != nil {
			return plan.Null, "", err
		}
		switch t {
		case plan.TypeBigint:
			i, ok := parseInt(lit)
			if !ok {
				return plan.Null, fmt.Sprintf("expected BIGINT, got %s (not an integer in range)", lit), nil
			}
			return plan.Int(i), "", nil
		case plan.TypeDouble:
			f, err := strconv.ParseFloat(lit, 64)
			if err != nil || math.IsInf(f, 0) {
				return plan.Null, fmt.Sprintf("expected DOUBLE, got %s", lit), nil
			}
			return plan.Float(f), "", nil
		case plan.TypeTimestamp:
			i, ok := parseInt(lit)
			if !ok {
				return plan.Null, fmt.Sprintf("expected epoch milliseconds, got %s", lit), nil
			}
			if err := plan.CheckTime(i); err != nil {
				return plan.Null, err.Error(), nil
			}
			return plan.Time(i), "", nil
		}
		return plan.Null, want("a number"), nil
	case c == 't' || c == 'f' || c == 'n':
		lit, err := j.literal()
		if err != nil {
			return plan.Null, "", err
		}
		switch {
		case lit == "null":
			return plan.Null, "", nil
		case t == plan.TypeBoolean:
			return plan.Bool(lit == "true"), "", nil
		}
		return plan.Null, want("a boolean"), nil
	case c == '{' || c == '[':
		if err := j.skip(depth); err != nil {
			return plan.Null, "", err
		}
		if c == '{' {
			return plan.Null, want("an object"), nil
		}
		return plan.Null, want("an array"), nil
	default:
		return plan.Null, "", errInvalid(c, "looking for beginning of value")
	}
}

// parseInt parses a JSON number literal as an int64, as strconv.ParseInt
// does (so "1.0" and "1e3" are not integers), without its cost for the
// usual short literal.
func parseInt(lit string) (int64, bool) {
	s, neg := lit, false
	if s != "" && s[0] == '-' {
		s, neg = s[1:], true
	}
	if len(s) == 0 || len(s) > 18 {
		i, err := strconv.ParseInt(lit, 10, 64)
		return i, err == nil
	}
	var n int64
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0') // 18 digits cannot overflow
	}
	if neg {
		n = -n
	}
	return n, true
}

// clip shortens a name from a request for an error message: a member
// name may be as long as the body.
func clip(name string) string {
	const max = 128
	if len(name) <= max {
		return name
	}
	i := max
	for i > 0 && !utf8.RuneStart(name[i]) {
		i--
	}
	return name[:i] + "..."
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

// KafkaMetaColumns are the columns of a Kafka source filled from each
// record's metadata rather than its value, with their types.
var KafkaMetaColumns = map[string]plan.Type{
	"_partition": plan.TypeBigint, "_offset": plan.TypeBigint, "_key": plan.TypeVarchar, "_timestamp": plan.TypeTimestamp,
}

// RecordDecoder decodes the record values of Kafka source src: each is
// one JSON object, taken as HTTP ingest takes a row. The metadata columns
// (_partition, _offset, _key, _timestamp) are the reader's to fill, so
// they may be absent.
func RecordDecoder(src *plan.Source) (func([]byte) (plan.Row, error), error) {
	return recordDecoder(src, Limits{})
}

// SchemaRecordDecoder is RecordDecoder for the JSON values of a topic with
// a JSON Schema (format json_schema, runtime/format): a member that names
// no column is skipped, not refused, as the schema's properties may be
// more than the table reads.
func SchemaRecordDecoder(src *plan.Source) (func([]byte) (plan.Row, error), error) {
	return recordDecoder(src, Limits{skipUnknown: true})
}

func recordDecoder(src *plan.Source, lim Limits) (func([]byte) (plan.Row, error), error) {
	def := &plan.TableDef{Name: src.Table, Columns: slices.Clone(src.Schema), EventTime: src.EventTime}
	for i, c := range def.Columns {
		if _, ok := KafkaMetaColumns[strings.ToLower(c.Name)]; ok {
			def.Columns[i].NotNull = false
			if i == def.EventTime {
				def.EventTime = -1 // the record's timestamp: always there
			}
		}
	}
	return func(v []byte) (plan.Row, error) {
		var row plan.Row
		n := 0
		err := decodeRows(def, string(v), lim, func(r plan.Row) {
			n++
			row = slices.Clone(r)
		})
		if err != nil {
			var re *RowError
			if errors.As(err, &re) && re.Row >= 0 {
				if re.Column != "" {
					return nil, fmt.Errorf("column %s: %s", re.Column, re.Msg)
				}
				return nil, errors.New(re.Msg)
			}
			return nil, err
		}
		if n != 1 {
			return nil, fmt.Errorf("a record value must be one JSON object, not %d", n)
		}
		return row, nil
	}, nil
}
