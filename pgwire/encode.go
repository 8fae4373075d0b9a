package pgwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries"
)

// PostgreSQL type OIDs of streamsql's column types.
const (
	oidBool      = 16
	oidInt8      = 20
	oidText      = 25
	oidFloat8    = 701
	oidTimestamp = 1114
)

// typeOID is the PostgreSQL type of a streamsql type, with its size.
func typeOID(t plan.Type) (uint32, int16) {
	switch t {
	case plan.TypeBigint:
		return oidInt8, 8
	case plan.TypeDouble:
		return oidFloat8, 8
	case plan.TypeBoolean:
		return oidBool, 1
	case plan.TypeTimestamp:
		return oidTimestamp, 8
	}
	return oidText, -1
}

// column is one result column: its name and type.
type column struct {
	name string
	typ  plan.Type
}

// resultColumns are the columns of a result with rows: the types the
// engine gives (a SELECT's), else inferred from the values (SHOW,
// DESCRIBE, EXPLAIN: text, numbers and booleans), text when mixed.
func resultColumns(r *queries.Result) []column {
	cols := make([]column, len(r.Columns))
	for i, n := range r.Columns {
		cols[i] = column{name: n, typ: plan.TypeVarchar}
		if i < len(r.Types) {
			cols[i].typ = r.Types[i]
			if cols[i].typ == plan.TypeNull {
				cols[i].typ = plan.TypeVarchar
			}
			continue
		}
		var t plan.Type
		mixed := false
		for _, row := range r.Rows {
			if i >= len(row.Vals) || row.Vals[i] == nil {
				continue
			}
			var vt plan.Type
			switch row.Vals[i].(type) {
			case int64, int, int32, uint64:
				vt = plan.TypeBigint
			case float64:
				vt = plan.TypeDouble
			case bool:
				vt = plan.TypeBoolean
			default:
				vt = plan.TypeVarchar
			}
			if t != plan.TypeNull && t != vt {
				mixed = true
			}
			t = vt
		}
		if t != plan.TypeNull && !mixed {
			cols[i].typ = t
		}
	}
	return cols
}

// rowDescription describes cols with the result formats formats (Bind's
// codes: none is text for all, one is for all, else one per column).
func rowDescription(cols []column, formats []int16) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, c := range cols {
		oid, size := typeOID(c.typ)
		fields[i] = pgproto3.FieldDescription{Name: []byte(c.name), DataTypeOID: oid, DataTypeSize: size, TypeModifier: -1, Format: formatOf(formats, i)}
	}
	return &pgproto3.RowDescription{Fields: fields}
}

func formatOf(formats []int16, i int) int16 {
	switch {
	case len(formats) == 0:
		return 0
	case len(formats) == 1:
		return formats[0]
	case i < len(formats):
		return formats[i]
	}
	return 0
}

// checkFormats refuses result format codes that are neither text nor
// binary, or a list of the wrong length.
func checkFormats(formats []int16, n int) error {
	if n >= 0 && len(formats) > 1 && len(formats) != n {
		return &pgError{code: "08P01", msg: fmt.Sprintf("bind message has %d result formats but the query has %d columns", len(formats), n)}
	}
	for _, f := range formats {
		if f != 0 && f != 1 {
			return &pgError{code: "0A000", msg: fmt.Sprintf("unsupported format code: %d", f)}
		}
	}
	return nil
}

// dataRow encodes row in the given formats. redact: the text values of
// a result other than a SELECT's go through plan.RedactSecrets, as
// /v1/sql does.
func dataRow(cols []column, row plan.Row, formats []int16, redact bool) *pgproto3.DataRow {
	out := make([][]byte, len(cols))
	for i := range cols {
		if i >= len(row) || row[i].IsNull() {
			continue // NULL: -1 length
		}
		v := row[i]
		if redact && v.K == plan.TypeVarchar {
			v.S = plan.RedactSecrets(v.S)
		}
		if formatOf(formats, i) == 1 {
			out[i] = binaryValue(v)
		} else {
			out[i] = []byte(textValue(v))
		}
	}
	return &pgproto3.DataRow{Values: out}
}

// objectRow reads a result's JSON values (SHOW, DESCRIBE, EXPLAIN: text,
// numbers and booleans; a SELECT's rows come as values, Result.Values)
// as values of the columns' types.
func objectRow(cols []column, vals []any) (plan.Row, error) {
	row := make(plan.Row, len(cols))
	for i, c := range cols {
		if i >= len(vals) || vals[i] == nil {
			continue
		}
		v, err := toValue(vals[i], c.typ)
		if err != nil {
			return nil, err
		}
		row[i] = v
	}
	return row, nil
}

// toValue reads a JSON value of a result as a value of type t.
func toValue(x any, t plan.Type) (plan.Value, error) {
	switch t {
	case plan.TypeBigint:
		switch n := x.(type) {
		case int64:
			return plan.Int(n), nil
		case int:
			return plan.Int(int64(n)), nil
		case int32:
			return plan.Int(int64(n)), nil
		case uint64:
			return plan.Int(int64(n)), nil
		}
	case plan.TypeDouble:
		if f, ok := x.(float64); ok {
			return plan.Float(f), nil
		}
	case plan.TypeBoolean:
		if b, ok := x.(bool); ok {
			return plan.Bool(b), nil
		}
	default:
		if s, ok := x.(string); ok {
			return plan.Str(s), nil
		}
		return plan.Str(fmt.Sprint(x)), nil
	}
	return plan.Value{}, fmt.Errorf("pgwire: value %v (%T) is not a %s", x, x, t)
}

// textValue is v in PostgreSQL's text format.
func textValue(v plan.Value) string {
	switch v.K {
	case plan.TypeBigint:
		return strconv.FormatInt(v.I, 10)
	case plan.TypeDouble:
		return formatFloat(v.F())
	case plan.TypeBoolean:
		if v.I != 0 {
			return "t"
		}
		return "f"
	case plan.TypeTimestamp:
		return time.UnixMilli(v.I).UTC().Format("2006-01-02 15:04:05.000")
	}
	return v.S
}

// formatFloat writes f as PostgreSQL's float8out does (12 and later,
// extra_float_digits 1): the shortest text that reads back exactly,
// exponential below 1e-4 and from 1e15 on, "NaN", "Infinity",
// "-Infinity".
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0"
		}
		return "0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	i := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= 15 {
		return e // Go writes at least two exponent digits, as PostgreSQL does
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// pgEpochMillis is 2000-01-01T00:00:00Z, PostgreSQL's timestamp epoch, in
// Unix milliseconds.
const pgEpochMillis = 946684800000

// binaryValue is v in PostgreSQL's binary format of its type.
func binaryValue(v plan.Value) []byte {
	switch v.K {
	case plan.TypeBigint:
		return binary.BigEndian.AppendUint64(nil, uint64(v.I))
	case plan.TypeDouble:
		return binary.BigEndian.AppendUint64(nil, uint64(v.I)) // the float's bits
	case plan.TypeBoolean:
		if v.I != 0 {
			return []byte{1}
		}
		return []byte{0}
	case plan.TypeTimestamp:
		return binary.BigEndian.AppendUint64(nil, uint64((v.I-pgEpochMillis)*1000))
	}
	return []byte(v.S)
}

// pgError is an error with a SQLSTATE, answered as an ErrorResponse.
type pgError struct {
	code     string
	msg      string
	position int32
}

func (e *pgError) Error() string { return e.msg }

// errorResponse answers err, an error of running sql: the engine's
// *queries.Error mapped to a SQLSTATE (sqlState) with the position of
// its line and column, a *pgError as it is, anything else XX000.
func errorResponse(err error, sql string) *pgproto3.ErrorResponse {
	r := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "XX000", Message: err.Error()}
	var pe *pgError
	var qe *queries.Error
	switch {
	case errors.As(err, &pe):
		r.Code, r.Message, r.Position = pe.code, pe.msg, pe.position
	case errors.As(err, &qe):
		r.Code = sqlState(qe.Status, qe.Detail)
		r.Message = qe.Detail
		if qe.Line > 0 {
			r.Position = position(sql, qe.Line, qe.Column)
		}
	}
	return r
}

// sqlState maps the engine's error (its HTTP status and message) to a
// SQLSTATE.
func sqlState(status int, msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "unknown column"):
		return "42703" // undefined_column
	case strings.Contains(m, "unknown view") || strings.Contains(m, "unknown table"):
		return "42P01" // undefined_table
	case strings.Contains(m, "unknown function"):
		return "42883" // undefined_function
	case strings.HasPrefix(m, "there is no parameter $"):
		return "42P02" // undefined_parameter
	}
	switch status {
	case 400:
		return "42601" // syntax_error
	case 404:
		return "42P01"
	case 409:
		if strings.Contains(m, "already") {
			return "42710" // duplicate_object
		}
		return "55000" // object_not_in_prerequisite_state
	case 413:
		return "54000" // program_limit_exceeded
	case 422:
		switch {
		case strings.Contains(m, "out of range") || strings.Contains(m, "overflow"):
			return "22003" // numeric_value_out_of_range
		case strings.Contains(m, "division by zero"):
			return "22012"
		case strings.Contains(m, "type") || strings.Contains(m, "cannot compare") || strings.Contains(m, "cannot be"):
			return "42804" // datatype_mismatch
		}
		return "0A000" // feature_not_supported: streamsql cannot run it
	case 503:
		return "57P03" // cannot_connect_now
	case 507:
		return "53100" // disk_full
	}
	return "XX000"
}

// position is the 1-based character offset into sql of line and column
// (1-based; the column counts bytes, as the parser's does).
func position(sql string, line, col int) int32 {
	off, l := 0, 1
	for l < line && off < len(sql) {
		i := strings.IndexByte(sql[off:], '\n')
		if i < 0 {
			off = len(sql)
			break
		}
		off += i + 1
		l++
	}
	off = min(off+col-1, len(sql))
	return int32(utf8.RuneCountInString(sql[:off]) + 1)
}
