package nexmark

import (
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/known.golden")

// TestKnownValues pins the generator's output for fixed event numbers: a
// change to any value (which would change every benchmark's input and
// every stored result over Nexmark tables) fails here. Regenerate with
// -update only when the change is intended.
func TestKnownValues(t *testing.T) {
	g := New(Config{})
	var b strings.Builder
	for _, k := range []Kind{Person, Auction, Bid} {
		for _, idx := range []uint64{0, 1, 2, 45, 46, 1000, 123456} {
			n := g.EventNumber(k, idx)
			fmt.Fprintf(&b, "%s #%d (event %d, time %d):", k, idx, n, g.EventTime(n))
			for i, v := range g.Fill(k, idx, nil, nil) {
				s := v.String()
				if len(s) > 40 {
					// Long padding: its start, length and a hash of all of it.
					h := fnv.New64a()
					h.Write([]byte(s))
					s = fmt.Sprintf("%s...(%d bytes, fnv %x)", s[:20], len(s), h.Sum64())
				}
				fmt.Fprintf(&b, " %s=%s", Columns(k)[i].Name, s)
			}
			b.WriteString("\n")
		}
	}
	const golden = "testdata/known.golden"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./runtime/source/nexmark -update)", err)
	}
	if b.String() != string(want) {
		t.Fatalf("generator output changed:\n--- got\n%s--- want\n%s", b.String(), want)
	}
}
