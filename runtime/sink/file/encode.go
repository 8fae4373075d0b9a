package file

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/sink"
)

// encoder writes rows in a file format. Values are written as the HTTP
// API writes them (plan.Value.JSON): TIMESTAMP as RFC 3339 UTC with
// milliseconds, the non-finite DOUBLEs as NaN, Infinity, -Infinity.
type encoder struct {
	cols    plan.Schema
	names   [][]byte // NDJSON: each column's quoted name and a colon
	scratch []byte
	pq      *parquetSchema // Parquet: made at the first file
	pqRow   []parquet.Row
}

// encode writes the rows of changes at rows (from the first) into one
// file's bytes, until they pass maxBytes: it returns the bytes and how
// many rows went in (at least one).
func (e *encoder) encode(format string, changes []sink.Change, rows []int, maxBytes int) ([]byte, int, error) {
	switch format {
	case "ndjson":
		buf, n := e.ndjson(changes, rows, maxBytes)
		return buf, n, nil
	case "csv":
		return e.csv(changes, rows, maxBytes)
	case "parquet":
		return e.parquet(changes, rows, maxBytes)
	}
	return nil, 0, fmt.Errorf("unknown format %q", format)
}

// ndjson is one JSON object per line.
func (e *encoder) ndjson(changes []sink.Change, rows []int, maxBytes int) ([]byte, int) {
	if e.names == nil {
		e.names = make([][]byte, len(e.cols))
		for i, c := range e.cols {
			e.names[i] = append(appendJSONString(nil, c.Name), ':')
		}
	}
	var buf []byte
	n := 0
	for _, i := range rows {
		buf = append(buf, '{')
		for j, v := range changes[i].Row {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, e.names[j]...)
			buf = appendJSON(buf, v)
		}
		buf = append(buf, '}', '\n')
		n++
		if len(buf) >= maxBytes {
			break
		}
	}
	return buf, n
}

// csv is a header line of the column names, then a line per row (RFC
// 4180, \n line ends): NULL an empty field, the empty string "".
func (e *encoder) csv(changes []sink.Change, rows []int, maxBytes int) ([]byte, int, error) {
	var buf []byte
	for j, c := range e.cols {
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = appendCSVField(buf, c.Name, true)
	}
	buf = append(buf, '\n')
	n := 0
	for _, i := range rows {
		for j, v := range changes[i].Row {
			if j > 0 {
				buf = append(buf, ',')
			}
			switch {
			case v.IsNull():
			case v.K == plan.TypeVarchar:
				buf = appendCSVField(buf, v.S, true)
			default:
				e.scratch = appendText(e.scratch[:0], v)
				buf = appendCSVField(buf, e.scratch, false)
			}
		}
		buf = append(buf, '\n')
		n++
		if len(buf) >= maxBytes {
			break
		}
	}
	return buf, n, nil
}

// appendCSVField appends s, quoted when it must be (or, when emptyQuoted,
// when it is empty: an unquoted empty field is NULL).
func appendCSVField[S string | []byte](dst []byte, s S, emptyQuoted bool) []byte {
	quote := len(s) == 0 && emptyQuoted
	for i := 0; i < len(s) && !quote; i++ {
		switch s[i] {
		case ',', '"', '\n', '\r':
			quote = true
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

// appendText appends v as text (CSV fields, partition names).
func appendText(dst []byte, v plan.Value) []byte {
	switch v.K {
	case plan.TypeBigint:
		return strconv.AppendInt(dst, v.I, 10)
	case plan.TypeDouble:
		return appendDouble(dst, v.F())
	case plan.TypeVarchar:
		return append(dst, v.S...)
	case plan.TypeTimestamp:
		return time.UnixMilli(v.I).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z")
	case plan.TypeBoolean:
		return strconv.AppendBool(dst, v.I != 0)
	}
	return dst
}

func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, plan.JSONNaN...)
	case math.IsInf(f, 1):
		return append(dst, plan.JSONInf...)
	case math.IsInf(f, -1):
		return append(dst, plan.JSONNegInf...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// appendJSON appends v's JSON, as plan.Value.JSON's through encoding/json.
func appendJSON(dst []byte, v plan.Value) []byte {
	switch v.K {
	case plan.TypeNull:
		return append(dst, "null"...)
	case plan.TypeVarchar:
		return appendJSONString(dst, v.S)
	case plan.TypeTimestamp:
		dst = append(dst, '"')
		dst = appendText(dst, v)
		return append(dst, '"')
	case plan.TypeDouble:
		f := v.F()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, '"')
			dst = appendDouble(dst, f)
			return append(dst, '"')
		}
		return appendDouble(dst, f)
	}
	return appendText(dst, v)
}

// appendJSONString appends s as a JSON string (invalid UTF-8 as U+FFFD,
// as encoding/json does; HTML characters not escaped).
func appendJSONString(dst []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexd[r&15])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
