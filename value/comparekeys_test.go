package value

import (
	"math"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestCompareKeys: encoded keys compare by their values, left to right,
// NULL first; row ids compare their nested ids as row ids.
func TestCompareKeys(t *testing.T) {
	key := func(vs ...plan.Value) []byte {
		var b []byte
		for _, v := range vs {
			b = AppendValue(b, v)
		}
		return b
	}
	// Each in ascending order.
	groups := [][][]byte{
		{key(plan.Null), key(plan.Int(-129)), key(plan.Int(-1)), key(plan.Int(0)), key(plan.Int(1)), key(plan.Int(127)), key(plan.Int(128)), key(plan.Int(math.MaxInt64))},
		{key(plan.Null), key(plan.Float(math.Inf(-1))), key(plan.Float(-2.5)), key(plan.Float(0)), key(plan.Float(1e300)), key(plan.Float(math.Inf(1))), key(plan.Float(math.NaN()))},
		{key(plan.Str("")), key(plan.Str("a")), key(plan.Str("ab")), key(plan.Str("b"))},
		{key(plan.Int(1)), key(plan.Int(1), plan.Null), key(plan.Int(1), plan.Int(-5)), key(plan.Int(1), plan.Int(2)), key(plan.Int(2), plan.Int(-9))},
		{key(plan.Value{K: plan.TypeTimestamp, I: -1000}), key(plan.Value{K: plan.TypeTimestamp, I: 1000})},
	}
	for gi, g := range groups {
		for i := range g {
			for j := range g {
				want := 0
				switch {
				case i < j:
					want = -1
				case i > j:
					want = 1
				}
				if got := sign(CompareKeys(g[i], g[j], false)); got != want {
					t.Errorf("group %d: CompareKeys(%x, %x) = %d, want %d", gi, g[i], g[j], got, want)
				}
			}
		}
	}
	// Row ids: (left offset, right offset), a padded row's right -1; a
	// nested id (a subquery's) is compared as a row id, not as bytes.
	nested := func(offs ...int64) plan.Value {
		var b []byte
		for _, o := range offs {
			b = AppendValue(b, plan.Int(o))
		}
		return plan.Str(string(b))
	}
	ids := [][]byte{
		key(plan.Int(2), plan.Int(-1)), key(plan.Int(2), plan.Int(3)), key(plan.Int(2), plan.Int(200)), key(plan.Int(130), plan.Int(0)),
	}
	nids := [][]byte{key(nested(1, 300), plan.Int(0)), key(nested(64, 0), plan.Int(0)), key(nested(128, 0), plan.Int(0))}
	for _, g := range [][][]byte{ids, nids} {
		for i := 0; i+1 < len(g); i++ {
			if CompareKeys(g[i], g[i+1], true) >= 0 || CompareKeys(g[i+1], g[i], true) <= 0 {
				t.Errorf("row ids %x and %x out of order", g[i], g[i+1])
			}
		}
	}
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}
