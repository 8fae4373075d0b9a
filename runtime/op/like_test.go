package op

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/value"
)

// likeRegexp is the reference matcher: the pattern translated to an
// anchored regular expression (Go's regexp runs in linear time too, but
// is slower than the segment matcher; see BenchmarkLike).
func likeRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(pattern); {
		r, w := utf8.DecodeRuneInString(pattern[i:])
		i += w
		switch r {
		case '%':
			b.WriteString(`.*`)
		case '_':
			b.WriteString(`.`)
		case '\\':
			if i < len(pattern) {
				r, w = utf8.DecodeRuneInString(pattern[i:])
				i += w
			}
			b.WriteString(regexp.QuoteMeta(string(r)))
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	return regexp.MustCompile(b.String())
}

// randomLike draws a string over a small alphabet (so that matches are
// common) with LIKE's special characters and a multi-byte one.
func randomLike(rng *rand.Rand, n int, special bool) string {
	alpha := []string{"a", "b", "é", "ab"}
	if special {
		alpha = append(alpha, "%", "%", "_", `\`, `\%`, `\_`)
	} else {
		alpha = append(alpha, "%", "_", `\`)
	}
	var b strings.Builder
	for range rng.IntN(n + 1) {
		b.WriteString(alpha[rng.IntN(len(alpha))])
	}
	return b.String()
}

// TestLikeMatchesReference compares the matcher with the regexp
// translation of the pattern on random patterns and texts.
func TestLikeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	fixed := []struct{ pat, s string }{
		{"", ""}, {"", "a"}, {"%", ""}, {"%%", "abc"}, {"_", ""}, {"_", "é"}, {"a%", "a"}, {"%a", "ba"},
		{"a%a", "a"}, {"a%a", "aa"}, {"%a%b%", "xaxb"}, {"%ab%ba%", "aba"}, {`\%`, "%"}, {`\%`, "a"},
		{`a\`, `a\`}, {`\\`, `\`}, {"a_c", "abc"}, {"a_c", "aébc"}, {"%_%_", "é"}, {"%a_b", "aab"},
	}
	for _, c := range fixed {
		if got, want := compileLikePattern(c.pat).match(c.s), likeRegexp(c.pat).MatchString(c.s); got != want {
			t.Errorf("%q LIKE %q = %v, reference %v", c.s, c.pat, got, want)
		}
	}
	matches := 0
	for i := range 20000 {
		pat := randomLike(rng, 8, true)
		s := randomLike(rng, 12, false)
		got, want := compileLikePattern(pat).match(s), likeRegexp(pat).MatchString(s)
		if got != want {
			t.Fatalf("case %d: %q LIKE %q = %v, reference %v", i, s, pat, got, want)
		}
		if got {
			matches++
		}
	}
	if matches < 1000 {
		t.Fatalf("only %d of 20000 random cases matched: the property test tests little", matches)
	}
}

// TestLikeLinear is the regression test of a row that froze a query: a
// pattern of several %-separated words against a 1 MiB text that almost
// matches everywhere took exponential time with the backtracking matcher
// (4.8 KB: 1.45 s). Linear time does it in milliseconds; the bound is
// generous (a busy machine), and the old matcher never finished.
func TestLikeLinear(t *testing.T) {
	text := strings.Repeat("error timeout retr", (1<<20)/18)
	cases := []struct {
		pat  string
		want bool
	}{
		{"%error%timeout%retry%", false},
		{"%error%timeout%retr", true},
		{"%e_r_r%t_m_o%r_t_y%", false},
		{"%_%_%_%_%_%_%_%_%x", false},
	}
	for _, c := range cases {
		m := compileLikePattern(c.pat)
		done := make(chan bool, 1)
		start := time.Now()
		go func() { done <- m.match(text) }()
		select {
		case got := <-done:
			if got != c.want {
				t.Errorf("1 MiB text LIKE %q = %v, want %v", c.pat, got, c.want)
			}
			t.Logf("%q over 1 MiB: %v", c.pat, time.Since(start))
		case <-time.After(10 * time.Second):
			t.Fatalf("%q over 1 MiB did not finish in 10 s", c.pat)
		}
	}
}

// TestLikeColumnPattern checks a pattern read from a column (compiled
// per distinct value) and NULLs.
func TestLikeColumnPattern(t *testing.T) {
	e, err := Compile(&plan.Call{Fn: "like", T: plan.TypeBoolean, Args: []plan.Expr{&plan.ColRef{Index: 0}, &plan.ColRef{Index: 1}}}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s, p plan.Value
		want plan.Value
	}{
		{plan.Str("abc"), plan.Str("a%"), plan.Bool(true)},
		{plan.Str("abc"), plan.Str("a%"), plan.Bool(true)},
		{plan.Str("abc"), plan.Str("b%"), plan.Bool(false)},
		{plan.Str("abc"), plan.Null, plan.Null},
		{plan.Null, plan.Str("%"), plan.Null},
		{plan.Int(123), plan.Str("1_3"), plan.Bool(true)},
	} {
		if got := e(plan.Row{c.s, c.p}); value.Compare(got, c.want) != 0 || got.IsNull() != c.want.IsNull() {
			t.Errorf("%v LIKE %v = %v, want %v", c.s, c.p, got, c.want)
		}
	}
}

func BenchmarkLike(b *testing.B) {
	text := strings.Repeat("GET /api/v1/orders?id=42 200 12ms ", 8)
	const pat = "%orders%200%ms%"
	for _, m := range []struct {
		name  string
		match func(string) bool
	}{
		{"segments", compileLikePattern(pat).match},
		{"regexp", likeRegexp(pat).MatchString},
	} {
		b.Run(m.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				m.match(text)
			}
		})
	}
}
