package plan

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Type is a SQL column type.
type Type uint8

const (
	TypeNull Type = iota // the type of a bare NULL literal
	TypeBigint
	TypeDouble
	TypeVarchar
	TypeTimestamp // milliseconds since the Unix epoch, UTC
	TypeBoolean
)

func (t Type) String() string {
	switch t {
	case TypeNull:
		return "NULL"
	case TypeBigint:
		return "BIGINT"
	case TypeDouble:
		return "DOUBLE"
	case TypeVarchar:
		return "VARCHAR"
	case TypeTimestamp:
		return "TIMESTAMP(3)"
	case TypeBoolean:
		return "BOOLEAN"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Numeric reports whether arithmetic applies to t.
func (t Type) Numeric() bool { return t == TypeBigint || t == TypeDouble || t == TypeBoolean }

// Value is one SQL value. The zero Value is NULL.
//
// Representation by kind: BIGINT, TIMESTAMP (epoch ms) and BOOLEAN (0/1) in I;
// DOUBLE as math.Float64bits in I; VARCHAR in S.
type Value struct {
	K Type // TypeNull means NULL
	I int64
	S string
}

// Null is the NULL value.
var Null = Value{}

func Int(i int64) Value     { return Value{K: TypeBigint, I: i} }
func Float(f float64) Value { return Value{K: TypeDouble, I: int64(math.Float64bits(f))} }
func Str(s string) Value    { return Value{K: TypeVarchar, S: s} }
func Time(ms int64) Value   { return Value{K: TypeTimestamp, I: ms} }
func Bool(b bool) Value {
	if b {
		return Value{K: TypeBoolean, I: 1}
	}
	return Value{K: TypeBoolean, I: 0}
}

func (v Value) IsNull() bool { return v.K == TypeNull }

// F returns the value as a float64 (DOUBLE, or an integer kind widened).
func (v Value) F() float64 {
	if v.K == TypeDouble {
		return math.Float64frombits(uint64(v.I))
	}
	return float64(v.I)
}

// True reports whether v is a true boolean (NULL and false are not).
func (v Value) True() bool {
	switch v.K {
	case TypeNull:
		return false
	case TypeDouble:
		return v.F() != 0
	case TypeVarchar:
		f, _ := strconv.ParseFloat(v.S, 64)
		return f != 0
	}
	return v.I != 0
}

// String renders v for EXPLAIN and error messages (not for JSON).
func (v Value) String() string {
	switch v.K {
	case TypeNull:
		return "NULL"
	case TypeBigint:
		return strconv.FormatInt(v.I, 10)
	case TypeDouble:
		return strconv.FormatFloat(v.F(), 'g', -1, 64)
	case TypeVarchar:
		return strconv.Quote(v.S)
	case TypeTimestamp:
		return FormatTime(v.I)
	case TypeBoolean:
		if v.I != 0 {
			return "TRUE"
		}
		return "FALSE"
	}
	return "?"
}

// FormatTime renders epoch milliseconds as RFC 3339 UTC with milliseconds.
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// The TIMESTAMP range, in epoch milliseconds: 0001-01-01T00:00:00.000Z to
// 9999-12-31T23:59:59.999Z, the years RFC 3339 text can write (and
// MySQL's DATETIME holds). Values are checked against it where they enter
// (ingest, Kafka records, the Nexmark generator's base time) and where
// expressions make them (time arithmetic, casts: NULL outside it), so
// watermarks and window bounds stay far from int64's limits. Only a
// window's bounds may pass it (the last TUMBLE window of 9999 ends at
// 10000-01-01T00:00:00.000Z).
const (
	MinTime int64 = -62135596800000 // 0001-01-01T00:00:00.000Z
	MaxTime int64 = 253402300799999 // 9999-12-31T23:59:59.999Z
)

// TimeInRange reports whether ms is in the TIMESTAMP range.
func TimeInRange(ms int64) bool { return MinTime <= ms && ms <= MaxTime }

// TimeRange describes the TIMESTAMP range, for error messages.
const TimeRange = "0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z"

// CheckTime returns an error naming the range when ms is outside it.
func CheckTime(ms int64) error {
	if TimeInRange(ms) {
		return nil
	}
	return fmt.Errorf("epoch milliseconds %d are outside the TIMESTAMP range, %s (%d to %d)", ms, TimeRange, MinTime, MaxTime)
}

// Non-finite DOUBLEs in JSON, which has no literal for them: the strings
// PostgreSQL's to_json writes. They stay distinct from NULL (null) and
// from each other everywhere a value is written.
const (
	JSONNaN    = "NaN"
	JSONInf    = "Infinity"
	JSONNegInf = "-Infinity"
)

// JSON is v as the Go value encoding/json writes for it (docs/http-api.md: values):
// BIGINT an int64, DOUBLE a float64 (NaN and the infinities, which JSON
// cannot write as numbers, the strings "NaN", "Infinity" and
// "-Infinity"), VARCHAR a string, TIMESTAMP its FormatTime string,
// BOOLEAN a bool, NULL nil. The HTTP API, the results, /changes keys and
// rows and the Kafka sink's records all write values through it.
func (v Value) JSON() any {
	switch v.K {
	case TypeBigint:
		return v.I
	case TypeDouble:
		f := v.F()
		switch {
		case math.IsNaN(f):
			return JSONNaN
		case math.IsInf(f, 1):
			return JSONInf
		case math.IsInf(f, -1):
			return JSONNegInf
		}
		return f
	case TypeVarchar:
		return v.S
	case TypeTimestamp:
		return FormatTime(v.I)
	case TypeBoolean:
		return v.I != 0
	}
	return nil
}

// Row is one record: values by column position.
type Row []Value

// Column is a named, typed column of a schema.
type Column struct {
	Name    string
	Type    Type
	NotNull bool
}

// Schema is an ordered list of columns.
type Schema []Column

// Index returns the position of the named column (case-insensitive), or -1.
func (s Schema) Index(name string) int {
	for i, c := range s {
		if equalFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// NameKey is the key names are matched by in Index: ASCII letters in lower
// case. Two names are the same column name when their keys are equal, so a
// map keyed by it finds what Index finds without a scan.
func NameKey(name string) string {
	for i := 0; i < len(name); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return name
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
