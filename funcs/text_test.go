package funcs

import (
	"math"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/planner/plan"
)

// textCases are the cases of table_text.go's functions (merged into
// cases). Expected values are MySQL's (Flink's for SPLIT_INDEX and
// REGEXP_EXTRACT) unless a comment says otherwise.
var textCases = map[string][]fcase{
	"substring_index": {c(S("www.mysql"), S("www.mysql.com"), S("."), I(2)), c(S("mysql.com"), S("www.mysql.com"), S("."), I(-2)),
		c(S("www.mysql.com"), S("www.mysql.com"), S("."), I(5)), c(S("www.mysql.com"), S("www.mysql.com"), S("."), I(-5)),
		c(S(""), S("www.mysql.com"), S("."), I(0)), c(S(""), S("abc"), S(""), I(1)), c(S("www"), S("www.mysql.com"), S("."), I(1)),
		c(S("com"), S("www.mysql.com"), S("."), I(-1)), c(S("a"), S("a||b||c"), S("||"), I(1)), c(S("b||c"), S("a||b||c"), S("||"), I(-2)),
		c(S("héllo"), S("héllo wörld"), S(" "), I(1)), c(S(""), S(""), S("."), I(1)), c(S("x"), S("x"), S("."), I(math.MaxInt64)),
		c(S("x"), S("x"), S("."), I(math.MinInt64)), c(S("1"), F(1.5), S("."), I(1)), c(N, N, S("."), I(1))},
	"locate": {c(I(4), S("bar"), S("foobarbar")), c(I(0), S("xbar"), S("foobar")), c(I(7), S("bar"), S("foobarbar"), I(5)),
		c(I(1), S(""), S("abc")), c(I(3), S(""), S("abc"), I(3)), c(I(4), S(""), S("abc"), I(4)), c(I(0), S(""), S("abc"), I(5)),
		c(I(0), S("a"), S("abc"), I(0)), c(I(0), S("a"), S("abc"), I(-1)), c(I(3), S("l"), S("héllo")), c(I(4), S("l"), S("héllo"), I(4)),
		c(I(0), S("a"), S("abc"), I(math.MaxInt64)), c(I(0), S("a"), S("abc"), I(math.MinInt64)), c(I(2), I(2), I(123)), c(N, S("a"), N)},
	"split_index": {c(S("www.nexmark.com"), S("https://www.nexmark.com/abc/def"), S("/"), I(2)), c(S("def"), S("https://www.nexmark.com/abc/def"), S("/"), I(4)),
		c(N, S("https://www.nexmark.com/abc/def"), S("/"), I(5)), c(S(""), S("a//b"), S("/"), I(1)), c(S(""), S("a/"), S("/"), I(1)),
		c(S(""), S("/a"), S("/"), I(0)), c(N, S("a/b"), S("/"), I(-1)), c(S("Jack"), S("Jack,John,Mary"), S(","), I(0)),
		c(N, S(""), S(","), I(0)), // Flink: '' has no parts
		c(S("abc"), S("abc"), S(","), I(0)), c(S("b"), S("a--b--c"), S("--"), I(1)), c(S("b"), S("a b\tc"), S(""), I(1)),
		c(S("c"), S("a b\tc"), S(""), I(2)), c(S("a\u00a0b"), S("a\u00a0b c"), S(""), I(0)), c(N, S("abc"), S("b"), I(math.MaxInt64)),
		c(S("ü"), S("ä/ü"), S("/"), I(1)), c(N, S("a/b"), N, I(0))},
	"truncate": {c(F(1.2), F(1.223), I(1)), c(F(1.9), F(1.999), I(1)), c(F(1), F(1.999), I(0)), c(F(-1.9), F(-1.999), I(1)),
		c(I(100), I(122), I(-2)), c(F(10), F(10.28), I(-1)), c(F(0.28), F(0.29), I(2)), // MySQL too: 0.29 as a DOUBLE is below 0.29
		c(I(-100), I(-199), I(-2)), c(I(122), I(122), I(3)), c(I(0), I(math.MaxInt64), I(-19)), c(I(9000000000000000000), I(math.MaxInt64), I(-18)),
		c(F(nan), F(nan), I(2)), c(F(inf), F(inf), I(2)), c(F(-inf), F(-inf), I(-2)), c(F(1e308), F(1e308), I(2)),
		c(F(0), F(123.4), I(-400)), c(F(123.4), F(123.4), I(400)), c(F(0), F(123.4), I(math.MinInt64)), c(F(123.4), F(123.4), I(math.MaxInt64)),
		c(I(1), B(true), I(0)), c(N, N, I(1)), bad("needs a number, not VARCHAR", S("1.5"), I(1))},
	"regexp_like": {c(B(true), S("Michael!"), S(".*")), c(B(false), S("new*\n*line"), S("new\\*.\\*line")), c(B(true), S("new*\n*line"), S("new\\*.\\*line"), S("n")),
		c(B(true), S("a"), S("^[a-d]")), c(B(false), S("abc"), S("ABC")), c(B(true), S("abc"), S("ABC"), S("i")), c(B(false), S("abc"), S("ABC"), S("ic")),
		c(B(true), S("a\nb"), S("^b"), S("m")), c(B(false), S("a\nb"), S("^b")), c(B(true), S("héllo"), S("^h.llo$")), c(B(true), I(123), S("^\\d+$")),
		c(B(true), S(""), S("")), c(N, N, S("a")), c(N, S("a"), N),
		bad("REGEXP_LIKE: bad regular expression '(': missing closing ): `(`", S("x"), S("(")),
		bad("REGEXP_LIKE: bad regular expression 'a{2,1}': invalid repeat count: `{2,1}`", S("x"), S("a{2,1}")),
		bad(`REGEXP_LIKE: match_type 'x' has 'x', which is none of c, i, m, n, u`, S("x"), S("a"), S("x")),
		bad(`REGEXP_LIKE: bad regular expression '(a)\1': invalid escape sequence: `+"`\\1`", S("aa"), S(`(a)\1`))}, // RE2 has no backreferences
	"regexp_instr": {c(I(1), S("dog cat dog"), S("dog")), c(I(9), S("dog cat dog"), S("dog"), I(2)), c(I(1), S("aa aaa aaaa"), S("a{2}")),
		c(I(8), S("aa aaa aaaa"), S("a{4}")), c(I(4), S("aa aaa aaaa"), S("a{2}"), I(1), I(2)), c(I(6), S("aa aaa aaaa"), S("a{2}"), I(1), I(2), I(1)),
		c(I(0), S("abc"), S("x")), c(I(0), S("abc"), S("b"), I(1), I(2)), c(I(3), S("héllo"), S("l")), c(I(5), S("héllo"), S("l+"), I(1), I(1), I(1)),
		c(I(2), S("aBc"), S("b"), I(1), I(1), I(0), S("i")), c(I(4), S("abc"), S(""), I(4)), c(N, S("abc"), S(""), F(5)), // MySQL: an out-of-bounds error
		c(I(1), S("abc"), S("a"), I(1), I(0)), // occurrence 0 is the first
		c(I(0), S("abc"), S("a"), I(1), I(math.MaxInt64)), c(N, N, S("a")),
		bad("REGEXP_INSTR: position 0 is before the first character (positions count from 1)", S("abc"), S("a"), I(0)),
		bad("REGEXP_INSTR: return_option 2 is neither 0 (the match's position) nor 1 (the position after it)", S("abc"), S("a"), I(1), I(1), I(2)),
		bad("REGEXP_INSTR: bad regular expression '[': missing closing ]: `[`", S("abc"), S("["))},
	"regexp_substr": {c(S("abc"), S("abc def ghi"), S("[a-z]+")), c(S("ghi"), S("abc def ghi"), S("[a-z]+"), I(1), I(3)), c(N, S("abc def ghi"), S("[a-z]+"), I(1), I(4)),
		c(S("bc"), S("abc def ghi"), S("[a-z]+"), I(2)), c(S("ef"), S("abc def ghi"), S("[a-z]+"), I(6)), c(S("b"), S("abc"), S("^b"), I(2)),
		c(N, S("abc"), S("x")), c(S("éé"), S("héélo"), S("é+")), c(S("llo"), S("héllo"), S("l.*"), I(3)), c(S("DEF"), S("abc DEF"), S("d[a-z]+"), I(1), I(1), S("i")),
		c(S(""), S("abc"), S("x*")), c(N, S("abc"), S("a"), I(5)), c(N, S("a"), N),
		bad("REGEXP_SUBSTR: position -1 is before the first character (positions count from 1)", S("abc"), S("a"), I(-1))},
	"regexp_replace": {c(S("a X c"), S("a b c"), S("b"), S("X")), c(S("abc def X"), S("abc def ghi"), S("[a-z]+"), S("X"), I(1), I(3)),
		c(S("X X X"), S("abc def ghi"), S("[a-z]+"), S("X")), c(S("aX X"), S("abc def"), S("[a-z]+"), S("X"), I(2)),
		c(S("abc X ghi"), S("abc def ghi"), S("[a-z]+"), S("X"), I(1), I(2)), c(S("abc def ghi"), S("abc def ghi"), S("[a-z]+"), S("X"), I(1), I(4)),
		c(S("b-a"), S("a-b"), S("(\\w)-(\\w)"), S("$2-$1")), c(S("$a"), S("a"), S("a"), S("\\$a")), c(S("[a]"), S("a"), S("(a)"), S("[$1]")),
		c(S("-a-b-c-"), S("abc"), S("x*"), S("-")), c(S("hXllo"), S("héllo"), S("é"), S("X")), c(S("héXlo"), S("héllo"), S("l"), S("X"), I(3), I(1)),
		c(S("xxx"), S("AaA"), S("a"), S("x"), I(1), I(0), S("i")), c(S("a1b"), S("ab"), S("(a)(b)"), S("$11$2")), // $11 is $1 then 1: the pattern has 2 groups
		c(N, S("a"), N, S("x")),
		bad("REGEXP_REPLACE: replacement '$2' refers to a group the pattern does not have ($0 to $1; \\$ is a $)", S("ab"), S("(a)"), S("$2")),
		bad("REGEXP_REPLACE: bad regular expression '*': missing argument to repetition operator: `*`", S("ab"), S("*"), S("x"))},
	"regexp_extract": {c(S("bar"), S("foothebar"), S("foo(.*?)(bar)"), I(2)), c(S("the"), S("foothebar"), S("foo(.*?)(bar)"), I(1)),
		c(S("foothebar"), S("foothebar"), S("foo(.*?)(bar)"), I(0)), c(S("foothebar"), S("foothebar"), S("foo(.*?)(bar)")),
		c(N, S("x"), S("foo")), c(N, S("b"), S("(a)|b"), I(1)), // a group that took no part
		c(S("1234"), S("https://www.nexmark.com/abc/item.htm?query=1&channel_id=1234"), S("(&|^)channel_id=([^&]*)"), I(2)),
		c(N, S("https://www.nexmark.com/abc/item.htm?query=1"), S("(&|^)channel_id=([^&]*)"), I(2)), c(S("7"), S("channel_id=7&x=1"), S("(&|^)channel_id=([^&]*)"), I(2)),
		c(N, N, S("a")),
		bad("REGEXP_EXTRACT: group 3 of a pattern with 2 groups", S("ab"), S("(a)(b)"), I(3)),
		bad("REGEXP_EXTRACT: group -1 is negative (0 is the whole match, 1 the first group)", S("ab"), S("(a)(b)"), I(-1)),
		bad("REGEXP_EXTRACT: bad regular expression '(?<x': invalid named capture: `(?<x`", S("ab"), S("(?<x"))},
	"json_extract": {c(S("20"), S(`[10, 20, [30, 40]]`), S("$[1]")), c(S("[30, 40]"), S(`[10, 20, [30, 40]]`), S("$[2]")), c(S("40"), S(`[10, 20, [30, 40]]`), S("$[2][1]")),
		c(N, S(`[10, 20, [30, 40]]`), S("$[3]")), c(S("[30, 40]"), S(`[10, 20, [30, 40]]`), S("$[last]")), c(S("20"), S(`[10, 20, [30, 40]]`), S("$[last-1]")),
		c(S(`"Aztalan"`), S(`{"id": 14, "name": "Aztalan"}`), S("$.name")), c(S("14"), S(`{"id":14,"name":"Aztalan"}`), S("$.id")),
		c(S(`{"a": 1, "bb": {"c": [1, true, null]}}`), S(`{"bb":{"c":[1,true,null]},"a":1}`), S("$")), // MySQL's spacing and key order
		c(S(`{"c": [1, true, null]}`), S(` {"bb" : {"c":[1 , true,null]}} `), S("$.bb")), c(S("true"), S(`{"a":{"b":[0,true]}}`), S("$.a.b[1]")),
		c(S("2"), S(`{"a":1,"a":2}`), S("$.a")), c(S(`{"a": 2}`), S(`{"a":1,"a":2}`), S("$")), // the last duplicate, as MySQL keeps it
		c(S("1"), S(`{"a b":1}`), S(`$."a b"`)), c(S(`"A\n"`), S(`{"x":"\u0041\n"}`), S("$.x")), c(S(`{"é": "ü"}`), S(`{"\u00e9":"\u00fc"}`), S("$")),
		c(S("1.50E+2"), S(`{"x":1.50E+2}`), S("$.x")), // MySQL: 150.0 (the number as written)
		c(S(`{"a": 1}`), S(`{"a":1}`), S("$[0]")), c(N, S(`{"a":1}`), S("$[1]")), c(N, S(`{"a":1}`), S("$.b")), c(N, S(`[1]`), S("$.a")),
		c(N, S(`{"a":1`), S("$.a")), c(N, S(`{"a":1} x`), S("$.a")), c(N, S(`{'a':1}`), S("$.a")), c(N, S(``), S("$")), // no JSON (MySQL: an error)
		c(S("null"), S(`{"a":null}`), S("$.a")), c(S("[]"), S(`{"a":[ ]}`), S("$.a")), c(S("{}"), S(`[{ }]`), S("$[0]")),
		c(N, N, S("$"))},
	"json_unquote": {c(S("abc"), S(`"abc"`)), c(S("abc"), S("abc")), c(S("a\nb"), S(`"a\nb"`)), c(S("é"), S(`"\u00e9"`)), c(S("😀"), S(`"\ud83d\ude00"`)),
		c(S(`"abc`), S(`"abc`)), c(S("[1, 2]"), S("[1, 2]")), c(N, S(`"a"b"`)), c(S(""), S(`""`)), c(S(`"`), S(`"`)), c(S("1"), I(1)), c(N, N)},
}

func init() {
	for k, v := range textCases {
		cases[k] = v
	}
}

// rowCases are calls whose arguments all come from the row (no Bind, no
// constant compiled once): what a row's bad argument gives.
var rowCases = map[string][]fcase{
	"regexp_like": {c(N, S("x"), S("(")), c(N, S("x"), S("a"), S("x")), c(B(true), S("A"), S("a"), S("i"))},
	"regexp_instr": {c(N, S("abc"), S("a"), I(1), I(1), I(2)), // a return_option neither 0 nor 1 (MySQL: an error)
		c(N, S("abc"), S("a"), I(0)), c(I(3), S("abc"), S("c"), I(2))},
	"regexp_substr": {c(N, S("abc"), S("a"), I(-1)), c(N, S("abc"), S("[")), c(S("c"), S("abc"), S("c"))},
	"regexp_replace": {c(N, S("ab"), S("(a)"), S("$2")), c(N, S("ab"), S("a"), S("$")), c(S("xb"), S("ab"), S("(a)"), S("x")), c(N, S("ab"), S("*"), S("x")),
		c(N, S(strings.Repeat("a", 1<<10)), S(""), S(strings.Repeat("x", 1<<10)))}, // past MaxStringLen, as LPAD's
	"regexp_extract": {c(N, S("ab"), S("(a)"), I(5)), // a group the pattern lacks (Flink: NULL)
		c(N, S("ab"), S("(a)"), I(-1)), c(N, S("ab"), S("(")), c(S("a"), S("ab"), S("(a)"), I(1))},
	"json_extract": {c(N, S(`{"a":1}`), S("$.*")), c(N, S(`{"a":1}`), S("a")), c(S("1"), S(`{"a":1}`), S("$.a"))},
}

// TestRowArgs runs rowCases with every argument a column.
func TestRowArgs(t *testing.T) {
	for name, cs := range rowCases {
		f := Lookup(name)
		for _, tc := range cs {
			args := make([]plan.Expr, len(tc.args))
			evals := make([]Eval, len(tc.args))
			for i, v := range tc.args {
				args[i] = &plan.ColRef{Index: i, T: v.K}
				evals[i] = func(r plan.Row) plan.Value { return r[i] }
			}
			typ, err := f.Result(name, args)
			if err != nil {
				t.Fatal(err)
			}
			e := f.Compile(&plan.Call{Fn: f.Fn, Args: args, T: typ}, evals, &Env{})
			if got := e(plan.Row(tc.args)); !same(got, tc.want) {
				t.Errorf("%s%v = %v, want %v", name, tc.args, got, tc.want)
			}
		}
	}
}

// TestJSONPathErrors: a constant path that is no path of the subset is a
// planning error naming it.
func TestJSONPathErrors(t *testing.T) {
	f := Lookup("json_extract")
	for path, want := range map[string]string{
		"a":          `JSON_EXTRACT: path 'a' does not begin with $ (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$.*":        `JSON_EXTRACT: path '$.*' has a wildcard (.*), which streamsql does not support (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$[*]":       `JSON_EXTRACT: path '$[*]' has a wildcard ([*]), which streamsql does not support (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$**.a":      `JSON_EXTRACT: path '$**.a' has a wildcard (**), which streamsql does not support (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$[1 to 2]":  `JSON_EXTRACT: path '$[1 to 2]' has a range ([m to n]), which streamsql does not support (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$[-1]":      `JSON_EXTRACT: path '$[-1]' has a bad index [-1] (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$[1":        `JSON_EXTRACT: path '$[1' has a '[' without its ']' (paths are $, .key, ."key", [n], [last], [last-n])`,
		`$."a`:       `JSON_EXTRACT: path '$."a' has an unterminated quoted key (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$.":         `JSON_EXTRACT: path '$.' has a '.' without a key after it (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$a":         `JSON_EXTRACT: path '$a' has "a" where a .key or [n] belongs (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$[last+1]":  `JSON_EXTRACT: path '$[last+1]' has a bad index [last+1] (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$.a[x]":     `JSON_EXTRACT: path '$.a[x]' has a bad index [x] (paths are $, .key, ."key", [n], [last], [last-n])`,
		"$.a.b[0].c": "",
	} {
		_, err := bind(f, []plan.Value{S("{}"), S(path)})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", path, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("%s: error %v, want %q", path, err, want)
		}
	}
}

// TestRegexpRowPatterns: a pattern from the row is compiled per distinct
// pattern (cached), a bad one is NULL for its row only, and the cache
// stays bounded.
func TestRegexpRowPatterns(t *testing.T) {
	f := Lookup("regexp_like")
	col := func(i int) Eval { return func(r plan.Row) plan.Value { return r[i] } }
	call := &plan.Call{Fn: "regexp_like", Args: []plan.Expr{&plan.ColRef{Index: 0, T: plan.TypeVarchar}, &plan.ColRef{Index: 1, T: plan.TypeVarchar}}, T: plan.TypeBoolean}
	e := f.Compile(call, []Eval{col(0), col(1)}, &Env{})
	rows := []struct {
		s, p string
		want plan.Value
	}{{"abc", "^a", B(true)}, {"abc", "(", N}, {"xbc", "^a", B(false)}, {"abc", "c$", B(true)}, {"abc", "(", N}}
	for i := 0; i < 3; i++ {
		for _, r := range rows {
			if got := e(plan.Row{S(r.s), S(r.p)}); !same(got, r.want) {
				t.Errorf("REGEXP_LIKE(%q, %q) = %v, want %v", r.s, r.p, got, r.want)
			}
		}
	}
	for i := 0; i < 3*reCacheSize; i++ {
		p := string(rune('a'+i%26)) + "{" + string(rune('0'+i%10)) + "}"
		e(plan.Row{S("aaaa"), S(p)})
	}
	if got := e(plan.Row{S("abc"), S("^a")}); !same(got, B(true)) {
		t.Errorf("after many patterns: %v", got)
	}
}

// TestTextFuncsAllocate: the per-row closures of the functions whose
// result is part of their argument allocate nothing (constant patterns
// and paths are compiled once).
func TestTextFuncsAllocate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []plan.Value
	}{
		{"split_index", []plan.Value{S("https://www.nexmark.com/abc/def/ghi/item.htm"), S("/"), I(4)}},
		{"substring_index", []plan.Value{S("www.mysql.com"), S("."), I(-2)}},
		{"locate", []plan.Value{S("bar"), S("foobarbar"), I(5)}},
		{"regexp_like", []plan.Value{S("https://www.nexmark.com/abc"), S("nexmark\\.com")}},
		{"json_extract", []plan.Value{S(`{"a": {"b": [1, "x"]}}`), S("$.a.b[1]")}},
		{"json_unquote", []plan.Value{S(`"abc"`)}},
		{"truncate", []plan.Value{F(1.2345), I(2)}},
	} {
		call, err := bind(Lookup(tc.name), tc.args)
		if err != nil {
			t.Fatal(err)
		}
		e := compile(t, call, &Env{})
		if raceEnabled && tc.name == "regexp_like" {
			// Go's regexp takes its matcher from a sync.Pool, which the race
			// detector empties at random: checked without -race only.
			continue
		}
		if n := testing.AllocsPerRun(100, func() { e(nil) }); n != 0 {
			t.Errorf("%s allocates %v times a row", tc.name, n)
		}
	}
}
