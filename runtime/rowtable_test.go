package runtime

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestRowTable runs random sets and deletes against a map, with the real
// hash and with one that collides most keys, across compactions.
func TestRowTable(t *testing.T) {
	for name, hash := range map[string]func(string) uint64{
		"maphash":   nil,
		"colliding": func(k string) uint64 { return uint64(len(k) % 3) },
	} {
		t.Run(name, func(t *testing.T) {
			tb := newRowTable()
			if hash != nil {
				tb.hash = hash
			}
			want := map[string]string{}
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 200_000 {
				k := fmt.Sprintf("k%d", rng.IntN(3000))
				if i%1000 == 0 {
					k = "" // the key of an aggregate without GROUP BY
				}
				switch rng.IntN(4) {
				case 0:
					tb.del(k)
					delete(want, k)
				default:
					v := fmt.Sprintf("v%0*d", rng.IntN(300), i) // lengths vary: in place and moved
					tb.set(k, []byte(v))
					want[k] = v
				}
			}
			got := map[string]string{}
			tb.each(func(k, v []byte) {
				if _, dup := got[string(k)]; dup {
					t.Fatalf("key %q twice", k)
				}
				got[string(k)] = string(v)
			})
			if len(got) != len(want) || tb.len() != len(want) {
				t.Fatalf("%d rows (len %d), want %d", len(got), tb.len(), len(want))
			}
			keys := make([]string, 0, len(want))
			for k := range want {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if got[k] != want[k] {
					t.Fatalf("key %q: %.20q, want %.20q", k, got[k], want[k])
				}
			}
			if tb.dead > max(tb.live, rowChunkSize) {
				t.Errorf("%d dead bytes against %d live: not compacted", tb.dead, tb.live)
			}
		})
	}
}
