package value

import (
	"bytes"
	"encoding/hex"
	"hash/fnv"
	"math"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// sameRow compares rows value by value, DOUBLEs by their encoding (which
// writes -0 as 0).
func sameRow(a, b plan.Row) bool {
	return bytes.Equal(AppendRow(nil, a), AppendRow(nil, b))
}

// FuzzRowCodec: a row of every type round-trips; any bytes either decode
// to a row that encodes back to bytes decoding to the same row, or fail;
// RowWidth agrees with DecodeRow.
func FuzzRowCodec(f *testing.F) {
	f.Add([]byte{}, int64(0), 0.0, "")
	f.Add(AppendRow(nil, plan.Row{plan.Int(-5), plan.Str("héllo"), plan.Null}), int64(math.MaxInt64), math.Inf(-1), "a\x00b")
	f.Add(AppendRow(nil, plan.Row{plan.Time(1704067200000), plan.Float(-0.0), plan.Bool(true)}), int64(math.MinInt64), math.NaN(), "x")
	f.Add([]byte{3, 3, 0xff, 0xff, 0xff, 0xff, 0x0f}, int64(1), 1.5, "")
	f.Fuzz(func(t *testing.T, data []byte, i int64, fl float64, s string) {
		row := plan.Row{plan.Null, plan.Int(i), plan.Float(fl), plan.Str(s), plan.Time(i), plan.Bool(i&1 == 1)}
		enc := AppendRow(nil, row)
		got, err := DecodeRow(enc)
		if err != nil || !sameRow(got, row) {
			t.Fatalf("round trip of %v: %v, %v", row, got, err)
		}
		if n, err := RowWidth(enc); n != len(row) || err != nil {
			t.Fatalf("RowWidth of %v: %d, %v", row, n, err)
		}
		if v, rest, err := DecodeValue(AppendValue(nil, row[3])); err != nil || len(rest) != 0 || v.S != s {
			t.Fatalf("value %q: %v, %d bytes left, %v", s, v, len(rest), err)
		}

		got, err = DecodeRow(data)
		n, werr := RowWidth(data)
		if (err == nil) != (werr == nil) || err == nil && n != len(got) {
			t.Fatalf("DecodeRow: %d columns, %v; RowWidth: %d, %v", len(got), err, n, werr)
		}
		if err == nil {
			again, err := DecodeRow(AppendRow(nil, got))
			if err != nil || !sameRow(again, got) {
				t.Fatalf("re-encoding %v decodes to %v, %v", got, again, err)
			}
		}
		DecodeValue(data)
	})
}

// TestDoubleKeys: the encoding that keys groups (and COUNT(DISTINCT)) puts
// every NaN in one group, -0 with 0, and keeps NaN, the infinities and
// NULL apart.
func TestDoubleKeys(t *testing.T) {
	key := func(v plan.Value) string { return string(AppendValue(nil, v)) }
	nan2 := plan.Float(math.Float64frombits(0x7ff0000000000001))
	if key(plan.Float(math.NaN())) != key(nan2) {
		t.Error("two NaNs encode apart")
	}
	if key(plan.Float(math.Copysign(0, -1))) != key(plan.Float(0)) {
		t.Error("-0 and 0 encode apart")
	}
	seen := map[string]plan.Value{}
	for _, v := range []plan.Value{plan.Null, plan.Float(math.NaN()), plan.Float(math.Inf(1)), plan.Float(math.Inf(-1)), plan.Float(0), plan.Float(math.MaxFloat64)} {
		if o, dup := seen[key(v)]; dup {
			t.Errorf("%v and %v encode alike", v, o)
		}
		seen[key(v)] = v
	}
	if v, _, err := DecodeValue([]byte(key(nan2))); err != nil || !math.IsNaN(v.F()) {
		t.Errorf("a NaN decodes to %v, %v", v, err)
	}
}

// TestCompare: numbers compare numerically across kinds, strings
// bytewise, a string against a number as a number (0 when it is not one),
// TIMESTAMPs and BOOLEANs by their integers.
func TestCompare(t *testing.T) {
	for _, c := range []struct {
		x, y plan.Value
		want int
	}{
		{plan.Int(1), plan.Int(2), -1},
		{plan.Int(math.MaxInt64), plan.Int(math.MinInt64), 1},
		{plan.Int(2), plan.Float(1.5), 1},
		{plan.Float(-0.5), plan.Int(0), -1},
		{plan.Str("a"), plan.Str("b"), -1},
		{plan.Str("b"), plan.Str("ab"), 1},
		{plan.Str(""), plan.Str(""), 0},
		{plan.Str(" 10 "), plan.Int(9), 1},
		{plan.Str("x"), plan.Int(0), 0},
		{plan.Int(3), plan.Str("3.5"), -1},
		{plan.Time(5), plan.Time(-5), 1},
		{plan.Bool(true), plan.Bool(false), 1},
		{plan.Bool(true), plan.Int(1), 0},
	} {
		if got := Compare(c.x, c.y); got != c.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", c.x, c.y, got, c.want)
		}
		if got := Compare(c.y, c.x); got != -c.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", c.y, c.x, got, -c.want)
		}
	}
	if Float(plan.Str(" 2.5\n")) != 2.5 || Float(plan.Str("two")) != 0 || Float(plan.Int(-3)) != -3 {
		t.Error("Float: strings are trimmed and parsed (0 if not a number), integers widened")
	}
}

// TestKeysStable: group keys are stored (state and results are keyed by
// them) and hashed to pick a key's task, in data directories that later
// versions restore, so the encoding of a key and its hash must never
// change. The encodings are pinned; HashKey is FNV-1a 64 as the standard
// library computes it.
func TestKeysStable(t *testing.T) {
	for _, tc := range []struct {
		row plan.Row
		enc string
	}{
		{plan.Row{plan.Int(1)}, "0102"},
		{plan.Row{plan.Int(-7), plan.Str("bidder")}, "010d0306626964646572"},
		{plan.Row{plan.Null}, "00"},
		{plan.Row{plan.Float(2.5)}, "024004000000000000"},
	} {
		cols := make([]int, len(tc.row))
		for i := range cols {
			cols[i] = i
		}
		k := EncodeKey(nil, tc.row, cols)
		if got := hex.EncodeToString(k); got != tc.enc {
			t.Errorf("key of %v encodes as %s, want %s: stored state and results would no longer be found", tc.row, got, tc.enc)
		}
		h := fnv.New64a()
		h.Write(k)
		if got, want := HashKey(string(k)), h.Sum64(); got != want {
			t.Errorf("HashKey(%x) = %d, want FNV-1a %d", k, got, want)
		}
	}
}

// FuzzDecodeValueIn: decoding from a string (string values as
// substrings) agrees with DecodeValue on any input: the same value and
// rest, or both an error.
func FuzzDecodeValueIn(f *testing.F) {
	for _, v := range []plan.Value{plan.Null, plan.Int(0), plan.Int(-1), plan.Int(math.MaxInt64), plan.Int(math.MinInt64),
		plan.Float(1.5), plan.Float(math.Inf(-1)), plan.Str(""), plan.Str("héllo"), plan.Time(1_700_000_000_000), plan.Bool(true)} {
		f.Add(AppendValue(nil, v))
	}
	f.Add([]byte{byte(plan.TypeBigint), 0x80, 0x80})
	f.Add([]byte{byte(plan.TypeVarchar), 5, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wrest, werr := DecodeValue(b)
		got, grest, gerr := DecodeValueIn(string(b))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%x: DecodeValue err %v, DecodeValueIn err %v", b, werr, gerr)
		}
		if werr == nil && (got != want || grest != string(wrest)) {
			t.Fatalf("%x: DecodeValue %v rest %x, DecodeValueIn %v rest %x", b, want, wrest, got, grest)
		}
	})
}
