package funcs

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
)

// rowCall compiles the function name with every argument from the row.
func rowCall(name string, types ...plan.Type) Eval {
	f := Lookup(name)
	args := make([]plan.Expr, len(types))
	evals := make([]Eval, len(types))
	for i, t := range types {
		args[i] = &plan.ColRef{Index: i, T: t}
		evals[i] = func(r plan.Row) plan.Value { return r[i] }
	}
	typ, _ := f.Result(name, args)
	return f.Compile(&plan.Call{Fn: f.Fn, Args: args, T: typ}, evals, &Env{})
}

// FuzzRegexp: the REGEXP functions never panic on any text, pattern,
// position and occurrence from the row, and agree with Go's regexp where
// it is the definition: REGEXP_LIKE is MatchString, REGEXP_REPLACE of
// every match with a replacement without $ or \ is
// ReplaceAllLiteralString, REGEXP_SUBSTR of the first match from 1 is
// FindString (NULL for none), REGEXP_INSTR is its position in
// characters.
func FuzzRegexp(f *testing.F) {
	f.Add("abc def", "[a-z]+", "X", int64(1), int64(2))
	f.Add("héllo", "l*", "-", int64(3), int64(0))
	f.Add("", "^$", "$1", int64(1), int64(1))
	f.Add("aaa", "(a)(?:b)?", "\\", int64(4), int64(-1))
	like := rowCall("regexp_like", plan.TypeVarchar, plan.TypeVarchar)
	repl := rowCall("regexp_replace", plan.TypeVarchar, plan.TypeVarchar, plan.TypeVarchar, plan.TypeBigint, plan.TypeBigint)
	repl3 := rowCall("regexp_replace", plan.TypeVarchar, plan.TypeVarchar, plan.TypeVarchar)
	substr := rowCall("regexp_substr", plan.TypeVarchar, plan.TypeVarchar, plan.TypeBigint, plan.TypeBigint)
	substr2 := rowCall("regexp_substr", plan.TypeVarchar, plan.TypeVarchar)
	instr := rowCall("regexp_instr", plan.TypeVarchar, plan.TypeVarchar, plan.TypeBigint, plan.TypeBigint, plan.TypeBigint)
	instr2 := rowCall("regexp_instr", plan.TypeVarchar, plan.TypeVarchar)
	extract := rowCall("regexp_extract", plan.TypeVarchar, plan.TypeVarchar, plan.TypeBigint)
	f.Fuzz(func(t *testing.T, s, pat, r string, pos, occ int64) {
		S, I := plan.Str, plan.Int
		repl(plan.Row{S(s), S(pat), S(r), I(pos), I(occ)})
		substr(plan.Row{S(s), S(pat), I(pos), I(occ)})
		instr(plan.Row{S(s), S(pat), I(pos), I(occ), I(occ & 1)})
		extract(plan.Row{S(s), S(pat), I(occ)})
		re, err := regexp.Compile(pat)
		l := like(plan.Row{S(s), S(pat)})
		if err != nil {
			if !l.IsNull() {
				t.Fatalf("REGEXP_LIKE(%q, %q) = %v of a bad pattern", s, pat, l)
			}
			return
		}
		if l.IsNull() || l.True() != re.MatchString(s) {
			t.Fatalf("REGEXP_LIKE(%q, %q) = %v", s, pat, l)
		}
		// A constant pattern skips texts without its required literal.
		if tree, err := syntax.Parse(pat, syntax.Perl); err == nil {
			if lit := requiredLiteral(tree.Simplify()); l.True() && !strings.Contains(s, lit) {
				t.Fatalf("%q matches %q, which lacks its required literal %q", s, pat, lit)
			}
		}
		if !strings.ContainsAny(r, "$\\") {
			if got, want := repl3(plan.Row{S(s), S(pat), S(r)}), re.ReplaceAllLiteralString(s, r); len(want) <= MaxStringLen && (got.IsNull() || got.S != want) {
				t.Fatalf("REGEXP_REPLACE(%q, %q, %q) = %v, want %q", s, pat, r, got, want)
			}
		}
		loc := re.FindStringIndex(s)
		got, at := substr2(plan.Row{S(s), S(pat)}), instr2(plan.Row{S(s), S(pat)})
		switch {
		case loc == nil:
			if !got.IsNull() || at.I != 0 {
				t.Fatalf("REGEXP_SUBSTR, REGEXP_INSTR(%q, %q) = %v, %v of no match", s, pat, got, at)
			}
		case got.IsNull() || got.S != s[loc[0]:loc[1]] || at.I != int64(utf8.RuneCountInString(s[:loc[0]]))+1:
			t.Fatalf("REGEXP_SUBSTR, REGEXP_INSTR(%q, %q) = %v, %v; want %q at %d", s, pat, got, at, s[loc[0]:loc[1]], loc[0])
		}
	})
}

// FuzzRegexpConst: a constant pattern's search (compiled once, shared,
// its texts filtered by the required literal and started near the
// literal: reSource) finds what Go's regexp finds from the text's start.
func FuzzRegexpConst(f *testing.F) {
	f.Add("https://www.nexmark.com/a/item.htm?query=1&channel_id=42", "(&|^)channel_id=([^&]*)")
	f.Add("channel_id=7&x", "(&|^)channel_id=([^&]*)")
	f.Add("ééé-x", "..x")
	f.Add("\xe2\x82x", ".x")
	f.Add("ab\ncd", "(?m)^cd")
	f.Add("a bc", `\bbc`)
	f.Add("xxAbc", "(?i)abc")
	f.Add("aaab", "a{2,3}b")
	f.Fuzz(func(t *testing.T, s, pat string) {
		re, err := regexp.Compile(pat)
		if err != nil {
			return
		}
		call := &plan.Call{Args: []plan.Expr{&plan.ColRef{}, &plan.Const{V: plan.Str(pat)}}}
		src := newSource(call, reLayout{pat: 1, flags: -1}, &Env{})
		if src.fixed == nil {
			t.Fatalf("%q: not compiled once", pat)
		}
		want := re.FindStringSubmatchIndex(s)
		for i := 0; i < 2; i++ { // the second from the memo
			if got := src.submatch(src.fixed, s); !slices.Equal(got, want) {
				t.Fatalf("%q in %q: %v, want %v (skip %v from %q - %d)", pat, s, got, want, src.skip, src.skipLit, src.skipW)
			}
		}
		if got := src.match(s); got != (want != nil) {
			t.Fatalf("%q matches %q: %v, want %v", pat, s, got, want != nil)
		}
	})
}
