package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// The parameters of the extended protocol: the types a Parse declares
// (OIDs), those Describe answers, and Bind's values decoded into
// plan.Value by their type and format (0 text, 1 binary).

// More type OIDs that drivers declare for parameters; each is read as the
// streamsql type it widens to (paramType).
const (
	oidInt2        = 21
	oidInt4        = 23
	oidFloat4      = 700
	oidUnknown     = 705
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidName        = 19
	oidTimestamptz = 1184
	oidNumeric     = 1700
)

// paramType is the streamsql type of a parameter declared with oid; 0
// (unspecified) is TypeNull: the engine infers it.
func paramType(oid uint32) (plan.Type, error) {
	switch oid {
	case 0:
		return plan.TypeNull, nil
	case oidInt8, oidInt4, oidInt2:
		return plan.TypeBigint, nil
	case oidFloat8, oidFloat4, oidNumeric:
		return plan.TypeDouble, nil
	case oidText, oidVarchar, oidBpchar, oidName, oidUnknown:
		return plan.TypeVarchar, nil
	case oidBool:
		return plan.TypeBoolean, nil
	case oidTimestamp, oidTimestamptz:
		return plan.TypeTimestamp, nil
	}
	return 0, fmt.Errorf("type OID %d is not a type streamsql takes (int8, int4, int2, float8, float4, numeric, text, varchar, bool, timestamp, timestamptz)", oid)
}

// paramOIDs are the parameters' types as ParameterDescription sends
// them: the OID a Parse declared, else that of the type inferred.
func paramOIDs(declared []uint32, types []plan.Type) []uint32 {
	out := make([]uint32, len(types))
	for i, t := range types {
		if i < len(declared) && declared[i] != 0 {
			out[i] = declared[i]
			continue
		}
		out[i], _ = typeOID(t)
	}
	return out
}

// decodeParam reads parameter n (1-based) of type oid in format (0 text, 1
// binary); nil data is NULL. A value that is not of its type is 22P02, a
// binary value of the wrong length 08P01.
func decodeParam(n int, oid uint32, format int16, data []byte) (plan.Value, error) {
	if data == nil {
		return plan.Null, nil
	}
	switch format {
	case 0:
		return decodeText(oid, string(data))
	case 1:
		return decodeBinary(n, oid, data)
	}
	return plan.Value{}, &pgError{code: "0A000", msg: fmt.Sprintf("unsupported format code: %d", format)}
}

// typeName is the PostgreSQL name of oid, for messages.
func typeName(oid uint32) string {
	switch oid {
	case oidInt8:
		return "bigint"
	case oidInt4:
		return "integer"
	case oidInt2:
		return "smallint"
	case oidFloat8:
		return "double precision"
	case oidFloat4:
		return "real"
	case oidNumeric:
		return "numeric"
	case oidBool:
		return "boolean"
	case oidTimestamp:
		return "timestamp without time zone"
	case oidTimestamptz:
		return "timestamp with time zone"
	}
	return "text"
}

// badInput is PostgreSQL's invalid_text_representation error.
func badInput(oid uint32, s string) error {
	return &pgError{code: "22P02", msg: fmt.Sprintf("invalid input syntax for type %s: %q", typeName(oid), s)}
}

// decodeText reads a parameter in text format, as PostgreSQL's input
// functions read it.
func decodeText(oid uint32, s string) (plan.Value, error) {
	if !utf8.ValidString(s) {
		return plan.Value{}, &pgError{code: "22021", msg: "invalid byte sequence for encoding \"UTF8\" in a parameter"}
	}
	t, err := paramType(oid)
	if err != nil {
		return plan.Value{}, &pgError{code: "0A000", msg: err.Error()}
	}
	trimmed := strings.TrimSpace(s)
	switch t {
	case plan.TypeBigint:
		i, err := strconv.ParseInt(trimmed, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return plan.Value{}, &pgError{code: "22003", msg: fmt.Sprintf("value %q is out of range for type %s", s, typeName(oid))}
			}
			return plan.Value{}, badInput(oid, s)
		}
		if oid == oidInt4 && (i < math.MinInt32 || i > math.MaxInt32) || oid == oidInt2 && (i < math.MinInt16 || i > math.MaxInt16) {
			return plan.Value{}, &pgError{code: "22003", msg: fmt.Sprintf("value %q is out of range for type %s", s, typeName(oid))}
		}
		return plan.Int(i), nil
	case plan.TypeDouble:
		f, ok := parseFloat(trimmed)
		if !ok {
			return plan.Value{}, badInput(oid, s)
		}
		return plan.Float(f), nil
	case plan.TypeBoolean:
		switch strings.ToLower(trimmed) {
		case "t", "true", "y", "yes", "on", "1":
			return plan.Bool(true), nil
		case "f", "false", "n", "no", "off", "0":
			return plan.Bool(false), nil
		}
		return plan.Value{}, badInput(oid, s)
	case plan.TypeTimestamp:
		ms, ok := value.ParseTime(trimmed) // sub-millisecond digits truncated: TIMESTAMP(3)
		if !ok {
			return plan.Value{}, badInput(oid, s)
		}
		if !plan.TimeInRange(ms) {
			return plan.Value{}, &pgError{code: "22008", msg: fmt.Sprintf("timestamp out of range: %q (streamsql's TIMESTAMP holds %s)", s, plan.TimeRange)}
		}
		return plan.Time(ms), nil
	}
	return plan.Str(s), nil
}

// parseFloat reads a float8 as PostgreSQL spells it: numbers, NaN,
// Infinity, -Infinity (case-insensitive; inf too).
func parseFloat(s string) (float64, bool) {
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), true
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), true
	case "-infinity", "-inf":
		return math.Inf(-1), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of range is an error in PostgreSQL too; strconv's other
		// spellings (hex, underscores) are not PostgreSQL's.
		return 0, false
	}
	if strings.ContainsAny(s, "xX_pP") {
		return 0, false
	}
	return f, true
}

// decodeBinary reads parameter n in binary format.
func decodeBinary(n int, oid uint32, b []byte) (plan.Value, error) {
	size := func(want int) error {
		if len(b) != want {
			return &pgError{code: "08P01", msg: fmt.Sprintf("incorrect binary data format in bind parameter %d: %s takes %d bytes, got %d", n, typeName(oid), want, len(b))}
		}
		return nil
	}
	switch oid {
	case oidInt8:
		if err := size(8); err != nil {
			return plan.Value{}, err
		}
		return plan.Int(int64(binary.BigEndian.Uint64(b))), nil
	case oidInt4:
		if err := size(4); err != nil {
			return plan.Value{}, err
		}
		return plan.Int(int64(int32(binary.BigEndian.Uint32(b)))), nil
	case oidInt2:
		if err := size(2); err != nil {
			return plan.Value{}, err
		}
		return plan.Int(int64(int16(binary.BigEndian.Uint16(b)))), nil
	case oidFloat8:
		if err := size(8); err != nil {
			return plan.Value{}, err
		}
		return plan.Float(math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case oidFloat4:
		if err := size(4); err != nil {
			return plan.Value{}, err
		}
		return plan.Float(float64(math.Float32frombits(binary.BigEndian.Uint32(b)))), nil
	case oidBool:
		if err := size(1); err != nil {
			return plan.Value{}, err
		}
		return plan.Bool(b[0] != 0), nil
	case oidTimestamp, oidTimestamptz:
		if err := size(8); err != nil {
			return plan.Value{}, err
		}
		us := int64(binary.BigEndian.Uint64(b))
		// Microseconds since 2000-01-01, floored to milliseconds.
		ms := us / 1000
		if us%1000 < 0 {
			ms--
		}
		if !plan.TimeInRange(ms + pgEpochMillis) {
			return plan.Value{}, &pgError{code: "22008", msg: fmt.Sprintf("timestamp out of range in bind parameter %d (streamsql's TIMESTAMP holds %s)", n, plan.TimeRange)}
		}
		return plan.Time(ms + pgEpochMillis), nil
	case oidText, oidVarchar, oidBpchar, oidName, oidUnknown:
		if !utf8.Valid(b) {
			return plan.Value{}, &pgError{code: "22021", msg: fmt.Sprintf("invalid byte sequence for encoding \"UTF8\" in bind parameter %d", n)}
		}
		return plan.Str(string(b)), nil
	}
	return plan.Value{}, &pgError{code: "0A000", msg: fmt.Sprintf("bind parameter %d: the binary format of %s is not supported: send it as text", n, typeName(oid))}
}
