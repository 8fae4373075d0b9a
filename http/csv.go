package httpapi

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
)

// writeCSV writes a result as CSV (RFC 4180, "\n" line ends): a header of
// the column names, then one record per row. NULL is the empty field and
// an empty string the quoted `""`, so the two stay apart (encoding/csv
// writes both as an empty field); other fields are quoted as encoding/csv
// quotes them (a comma, quote, CR or LF, a leading space, or `\.`).
// Values are written as in JSON (TIMESTAMP as RFC 3339 with
// milliseconds, NaN and infinities by name).
func writeCSV(w io.Writer, cols []string, rows []plan.Row) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	for i, c := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCSVField(buf, c, c == "")
	}
	buf = append(buf, '\n')
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCSVValue(buf, v)
		}
		buf = append(buf, '\n')
		if len(buf) >= 32<<10 {
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

// appendCSVValue appends one value's field: nothing for NULL.
func appendCSVValue(buf []byte, v plan.Value) []byte {
	switch v.K {
	case plan.TypeNull:
		return buf
	case plan.TypeBigint:
		return strconv.AppendInt(buf, v.I, 10)
	case plan.TypeBoolean:
		return strconv.AppendBool(buf, v.I != 0)
	case plan.TypeVarchar:
		return appendCSVField(buf, v.S, v.S == "")
	case plan.TypeTimestamp:
		return time.UnixMilli(v.I).UTC().AppendFormat(buf, "2006-01-02T15:04:05.000Z") // plan.FormatTime
	case plan.TypeDouble:
		switch f := v.F(); {
		case math.IsNaN(f):
			return append(buf, plan.JSONNaN...)
		case math.IsInf(f, 1):
			return append(buf, plan.JSONInf...)
		case math.IsInf(f, -1):
			return append(buf, plan.JSONNegInf...)
		default:
			return strconv.AppendFloat(buf, f, 'g', -1, 64)
		}
	}
	return buf
}

// appendCSVField appends s, quoted when it needs it or when quote is set.
func appendCSVField(buf []byte, s string, quote bool) []byte {
	if !quote && !csvNeedsQuotes(s) {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		buf = append(buf, s[:i+1]...)
		buf = append(buf, '"')
		s = s[i+1:]
	}
	buf = append(buf, s...)
	return append(buf, '"')
}

// csvNeedsQuotes is encoding/csv's rule (Writer.fieldNeedsQuotes) for a
// non-empty field and the comma ','.
func csvNeedsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` || strings.ContainsAny(s, ",\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}
