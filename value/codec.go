package value

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/planner/plan"
)

// The row codec: per value a kind byte, then BIGINT/TIMESTAMP/BOOLEAN as a
// zigzag varint, DOUBLE as 8 bytes, VARCHAR as a length-prefixed string.
// It is used for the ingest log, results, state and group keys (equal
// values encode to equal bytes: DOUBLE -0 is written as 0, and every NaN
// as one NaN, so they group as PostgreSQL groups them: -0 with 0, NaN with
// NaN, apart from NULL and the infinities).

// AppendValue appends the encoding of v to buf.
func AppendValue(buf []byte, v plan.Value) []byte {
	buf = append(buf, byte(v.K))
	switch v.K {
	case plan.TypeNull:
	case plan.TypeDouble:
		f := v.F()
		switch {
		case f == 0:
			f = 0 // -0 -> 0
		case math.IsNaN(f):
			f = math.NaN() // one NaN of the many bit patterns
		}
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
	case plan.TypeVarchar:
		buf = binary.AppendUvarint(buf, uint64(len(v.S)))
		buf = append(buf, v.S...)
	default:
		buf = binary.AppendVarint(buf, v.I)
	}
	return buf
}

// AppendRow appends the encoding of every value of r.
func AppendRow(buf []byte, r plan.Row) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(r)))
	for _, v := range r {
		buf = AppendValue(buf, v)
	}
	return buf
}

// DecodeValue decodes one value from b, returning the rest.
func DecodeValue(b []byte) (plan.Value, []byte, error) {
	if len(b) == 0 {
		return plan.Null, nil, fmt.Errorf("decode value: empty input")
	}
	v := plan.Value{K: plan.Type(b[0])}
	b = b[1:]
	switch v.K {
	case plan.TypeNull:
	case plan.TypeDouble:
		if len(b) < 8 {
			return v, nil, fmt.Errorf("decode double: short input")
		}
		v.I = int64(binary.BigEndian.Uint64(b))
		b = b[8:]
	case plan.TypeVarchar:
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return v, nil, fmt.Errorf("decode string: bad length")
		}
		v.S = string(b[k : k+int(n)])
		b = b[k+int(n):]
	case plan.TypeBigint, plan.TypeTimestamp, plan.TypeBoolean:
		i, k := binary.Varint(b)
		if k <= 0 {
			return v, nil, fmt.Errorf("decode integer: bad varint")
		}
		v.I = i
		b = b[k:]
	default:
		return v, nil, fmt.Errorf("decode value: unknown kind %d", v.K)
	}
	return v, b, nil
}

// DecodeValueIn decodes one value from the front of s (AppendValue's
// encoding), returning the rest: a string value is a substring of s, not
// a copy, so decoding allocates nothing (and the value keeps s alive).
func DecodeValueIn(s string) (plan.Value, string, error) {
	if len(s) == 0 {
		return plan.Null, "", fmt.Errorf("decode value: empty input")
	}
	v := plan.Value{K: plan.Type(s[0])}
	s = s[1:]
	switch v.K {
	case plan.TypeNull:
	case plan.TypeDouble:
		if len(s) < 8 {
			return v, "", fmt.Errorf("decode double: short input")
		}
		var u uint64
		for _, c := range []byte(s[:8]) {
			u = u<<8 | uint64(c)
		}
		v.I = int64(u)
		s = s[8:]
	case plan.TypeVarchar:
		n, k := uvarintString(s)
		if k <= 0 || uint64(len(s)-k) < n {
			return v, "", fmt.Errorf("decode string: bad length")
		}
		v.S = s[k : k+int(n)]
		s = s[k+int(n):]
	case plan.TypeBigint, plan.TypeTimestamp, plan.TypeBoolean:
		u, k := uvarintString(s)
		if k <= 0 {
			return v, "", fmt.Errorf("decode integer: bad varint")
		}
		v.I = int64(u>>1) ^ -int64(u&1) // zig-zag, as binary.Varint
		s = s[k:]
	default:
		return v, "", fmt.Errorf("decode value: unknown kind %d", v.K)
	}
	return v, s, nil
}

// uvarintString is binary.Uvarint over a string, without converting it.
func uvarintString(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, -(i + 1) // overflow
			}
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// DecodeRow decodes a row written by AppendRow: all of b.
func DecodeRow(b []byte) (plan.Row, error) { return DecodeRowIn(b, nil) }

// DecodeRowIn is DecodeRow carving the row from *slab when it has room (a
// reader decodes a batch's rows into one allocation), else allocating it.
func DecodeRowIn(b []byte, slab *[]plan.Value) (plan.Row, error) {
	n, k := binary.Uvarint(b)
	// Every value takes at least its kind byte: a count above the bytes
	// left is corrupt, and must not size the allocation.
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("decode row: bad column count")
	}
	b = b[k:]
	var r plan.Row
	if slab != nil && uint64(len(*slab)) >= n {
		r, *slab = (*slab)[:n:n], (*slab)[n:]
	} else {
		r = make(plan.Row, n)
	}
	for i := range r {
		var err error
		if r[i], b, err = DecodeValue(b); err != nil {
			return nil, fmt.Errorf("decode row column %d: %w", i, err)
		}
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("decode row: %d bytes after its %d columns", len(b), n)
	}
	return r, nil
}

// RowWidth checks that b is a whole row written by AppendRow, without
// decoding it, and returns its number of columns.
func RowWidth(b []byte) (int, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return 0, fmt.Errorf("decode row: bad column count")
	}
	b = b[k:]
	for i := range n {
		if len(b) == 0 {
			return 0, fmt.Errorf("decode row column %d: decode value: empty input", i)
		}
		kind := plan.Type(b[0])
		b = b[1:]
		switch kind {
		case plan.TypeNull:
		case plan.TypeDouble:
			if len(b) < 8 {
				return 0, fmt.Errorf("decode row column %d: decode double: short input", i)
			}
			b = b[8:]
		case plan.TypeVarchar:
			l, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < l {
				return 0, fmt.Errorf("decode row column %d: decode string: bad length", i)
			}
			b = b[k+int(l):]
		case plan.TypeBigint, plan.TypeTimestamp, plan.TypeBoolean:
			_, k := binary.Varint(b)
			if k <= 0 {
				return 0, fmt.Errorf("decode row column %d: decode integer: bad varint", i)
			}
			b = b[k:]
		default:
			return 0, fmt.Errorf("decode row column %d: decode value: unknown kind %d", i, kind)
		}
	}
	if len(b) > 0 {
		return 0, fmt.Errorf("decode row: %d bytes after its %d columns", len(b), n)
	}
	return int(n), nil
}

// EncodeKey encodes the values of r at cols: a group key.
func EncodeKey(buf []byte, r plan.Row, cols []int) []byte {
	for _, c := range cols {
		buf = AppendValue(buf, r[c])
	}
	return buf
}

// HashKey is the FNV-1a hash of an encoded key: stable across processes,
// so a key always lands on the same task.
func HashKey(k string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(k); i++ {
		h ^= uint64(k[i])
		h *= 1099511628211
	}
	return h
}

// CompareKeys orders two encoded keys (EncodeKey's values one after the
// other, as result keys and row ids are) by their values, left to right:
// NULL first (as MySQL orders NULLs), numbers numerically (Compare),
// strings bytewise. With rowID the keys are row ids, whose strings are
// nested row ids (a subquery's or a join side's, appendIdent) and compare
// as row ids. A key that is a prefix of the other sorts first; bytes that
// do not decode compare as bytes. It allocates nothing: pull reads sort
// every row of a result by it.
func CompareKeys(a, b []byte, rowID bool) int {
	for len(a) > 0 && len(b) > 0 {
		x, ra, okA := peekValue(a)
		y, rb, okB := peekValue(b)
		if !okA || !okB {
			return bytes.Compare(a, b)
		}
		if c := compareKeyValues(x, y, rowID); c != 0 {
			return c
		}
		a, b = ra, rb
	}
	return len(a) - len(b)
}

// keyValue is an encoded value as it lies in a key: its kind, its integer
// (or a DOUBLE's bits) and a string's bytes.
type keyValue struct {
	k plan.Type
	i int64
	s []byte
}

// peekValue reads one value of an encoded key without copying a string.
func peekValue(b []byte) (keyValue, []byte, bool) {
	v := keyValue{k: plan.Type(b[0])}
	b = b[1:]
	switch v.k {
	case plan.TypeNull:
	case plan.TypeDouble:
		if len(b) < 8 {
			return v, nil, false
		}
		v.i = int64(binary.BigEndian.Uint64(b))
		b = b[8:]
	case plan.TypeVarchar:
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return v, nil, false
		}
		v.s, b = b[k:k+int(n)], b[k+int(n):]
	case plan.TypeBigint, plan.TypeTimestamp, plan.TypeBoolean:
		i, k := binary.Varint(b)
		if k <= 0 {
			return v, nil, false
		}
		v.i, b = i, b[k:]
	default:
		return v, nil, false
	}
	return v, b, true
}

func compareKeyValues(x, y keyValue, rowID bool) int {
	switch {
	case x.k == plan.TypeNull && y.k == plan.TypeNull:
		return 0
	case x.k == plan.TypeNull:
		return -1 // NULL first
	case y.k == plan.TypeNull:
		return 1
	case x.k == plan.TypeVarchar && y.k == plan.TypeVarchar:
		if rowID {
			return CompareKeys(x.s, y.s, true)
		}
		return bytes.Compare(x.s, y.s)
	case x.k == plan.TypeVarchar || y.k == plan.TypeVarchar:
		return cmp.Compare(x.k, y.k) // one column holds one type: not in a real key
	}
	return Compare(plan.Value{K: x.k, I: x.i}, plan.Value{K: y.k, I: y.i})
}

// Compare orders two non-NULL values: numbers numerically, strings
// bytewise, a string against a number as numbers. NaN equals NaN and is
// above every other number, as in PostgreSQL: a total order, so = and
// GROUP BY agree (NaN = 1 is false, NaN = NaN true) and MIN, MAX and
// ORDER BY do not depend on the order rows come in.
func Compare(x, y plan.Value) int {
	if x.K == plan.TypeVarchar && y.K == plan.TypeVarchar {
		return strings.Compare(x.S, y.S)
	}
	if x.K == plan.TypeDouble || y.K == plan.TypeDouble || x.K == plan.TypeVarchar || y.K == plan.TypeVarchar {
		a, b := Float(x), Float(y)
		switch an, bn := math.IsNaN(a), math.IsNaN(b); {
		case an || bn:
			switch {
			case an && bn:
				return 0
			case an:
				return 1
			}
			return -1
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	switch {
	case x.I < y.I:
		return -1
	case x.I > y.I:
		return 1
	}
	return 0
}

// CompareNullsFirst orders two values as ORDER BY ascending does: NULL
// first (as MySQL), then Compare.
func CompareNullsFirst(x, y plan.Value) int {
	switch {
	case x.IsNull() && y.IsNull():
		return 0
	case x.IsNull():
		return -1
	case y.IsNull():
		return 1
	}
	return Compare(x, y)
}

// Float is v as a DOUBLE in numeric context: a DOUBLE itself, an integer
// kind widened, a string parsed as a number (0 when it is not one), as
// MySQL reads a string compared with a number.
func Float(v plan.Value) float64 {
	if v.K == plan.TypeVarchar {
		f, _ := strconv.ParseFloat(strings.TrimSpace(v.S), 64)
		return f
	}
	return v.F()
}
