package funcs

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/streamsql/streamsql/planner/plan"
)

// Regular expressions: REGEXP_LIKE (and the REGEXP / RLIKE operators),
// REGEXP_INSTR, REGEXP_SUBSTR, REGEXP_REPLACE as MySQL 8 has them, and
// REGEXP_EXTRACT as Flink has it. The syntax is Go's (RE2: no
// backreferences or lookaround, linear time), not MySQL's ICU.
//
// A constant pattern (and match_type) is compiled once per query, in
// Compile; Bind compiles it first, so a bad constant pattern is a
// planning error naming it. A pattern from the row is compiled once per
// distinct pattern into a small per-call cache (reCacheSize patterns,
// cleared when full); a bad one makes that row's result NULL (MySQL fails
// the statement; a continuous query cannot), as does a position out of
// bounds or a bad match_type from the row.
//
// Matching is case-sensitive unless match_type has 'i' (MySQL's default
// follows the collation; streamsql compares strings as bytes, as its =
// and LIKE do). Positions count characters, from 1.

// reCacheSize bounds the patterns a call keeps compiled when its pattern
// is no constant.
const reCacheSize = 64

type reKey struct{ flags, pat string }

// reSource is the compiled pattern of a call: the constant's, compiled
// once, or each row's from the cache. Used by its task's goroutine only.
// The calls of one task with the same constant pattern share one (Env),
// so that q21's REGEXP_EXTRACT in WHERE and in the select list searches
// each row once: the source remembers its last search.
type reSource struct {
	fixed *regexp.Regexp
	// lit is a literal every match of fixed contains ("" when there is
	// none): a text without it is not searched.
	lit   string
	cache map[reKey]*regexp.Regexp // a nil value: the pattern does not compile
	// skip, when set, finds fixed's leftmost match from skipW bytes
	// before the first skipLit of a text on (fixed is skipW bytes at most
	// and then skipLit, ...: no match starts earlier): fixed with its ^
	// never matching, which at such a start it could not (see
	// newSkip).
	skip    *regexp.Regexp
	skipLit string
	skipW   int
	// The last search of fixed by submatch: its text and match.
	memoOK  bool
	memoS   string
	memoLoc []int
}

// requiredLiteral is a literal (case-sensitive) that every match of re
// contains, "" when it finds none.
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return string(re.Rune)
		}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// mayMatch: s contains the literal every match has (when there is one).
func (s *reSource) mayMatch(text string) bool {
	return s.lit == "" || strings.Contains(text, s.lit)
}

// from is where fixed's leftmost match in text can start at the earliest,
// and the regexp that finds it in text[from:] (fixed itself from 0); -1
// when there is none.
func (s *reSource) from(text string) (int, *regexp.Regexp) {
	if s.skip == nil {
		if !s.mayMatch(text) {
			return -1, nil
		}
		return 0, s.fixed
	}
	p := strings.Index(text, s.skipLit)
	switch {
	case p < 0:
		return -1, nil
	case p <= s.skipW:
		return 0, s.fixed
	}
	at := p - s.skipW
	for at > 0 && !utf8.RuneStart(text[at]) { // from a character's first byte: a place the search from 0 passes
		at--
	}
	if at == 0 {
		return 0, s.fixed
	}
	return at, s.skip
}

// match is fixed.MatchString(text).
func (s *reSource) match(text string) bool {
	at, re := s.from(text)
	return at >= 0 && re.MatchString(text[at:])
}

// newSkip sets s.skip when fixed (tree, simplified) is a concatenation
// whose items before a case-sensitive literal match skipW bytes at most,
// and it has no assertion that looks at the text before where a search
// starts but ^ (\A): a word boundary or a multi-line ^. Then the
// leftmost match starts at most skipW bytes before the literal's first
// occurrence in the text (the literal of any match is at or after it),
// and from there, where ^ cannot match in the text, the search with ^
// never matching finds the same match.
func (s *reSource) newSkip(tree *syntax.Regexp) {
	if tree.Op != syntax.OpConcat || lookBehind(tree) {
		return
	}
	w := 0
	for _, sub := range tree.Sub {
		if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
			re, err := regexp.Compile(noBeginText(tree).String())
			if err != nil {
				return
			}
			s.skip, s.skipLit, s.skipW = re, string(sub.Rune), w
			return
		}
		sw, ok := maxWidth(sub)
		if !ok {
			return
		}
		w += sw
	}
}

// lookBehind: re has an assertion about the text before a position
// other than ^ and \A.
func lookBehind(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if lookBehind(sub) {
			return true
		}
	}
	return false
}

// noBeginText is a copy of re with ^ and \A matching nothing.
func noBeginText(re *syntax.Regexp) *syntax.Regexp {
	if re.Op == syntax.OpBeginText {
		return &syntax.Regexp{Op: syntax.OpNoMatch}
	}
	c := *re
	c.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, sub := range re.Sub {
		c.Sub[i] = noBeginText(sub)
	}
	return &c
}

// maxWidth is the most bytes re matches, false when unbounded.
func maxWidth(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpNoMatch, syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, true
	case syntax.OpLiteral:
		return utf8.UTFMax * len(re.Rune), true // case folding may change a rune's width
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxWidth(re.Sub[0])
	case syntax.OpRepeat:
		w, ok := maxWidth(re.Sub[0])
		if !ok || re.Max < 0 || (w > 0 && re.Max > 1<<20/w) {
			return 0, false
		}
		return w * re.Max, true
	case syntax.OpConcat, syntax.OpAlternate:
		most, sum := 0, 0
		for _, sub := range re.Sub {
			w, ok := maxWidth(sub)
			if !ok {
				return 0, false
			}
			most, sum = max(most, w), sum+w
		}
		if re.Op == syntax.OpConcat {
			return sum, true
		}
		return most, true
	}
	return 0, false
}

// submatch is re's leftmost match of text (FindStringSubmatchIndex).
func (s *reSource) submatch(re *regexp.Regexp, text string) []int {
	if s.fixed == nil {
		return re.FindStringSubmatchIndex(text)
	}
	if s.memoOK && text == s.memoS {
		return s.memoLoc
	}
	var loc []int
	if at, re := s.from(text); at >= 0 {
		if loc = re.FindStringSubmatchIndex(text[at:]); at > 0 {
			for i := range loc {
				if loc[i] >= 0 {
					loc[i] += at
				}
			}
		}
	}
	s.memoOK, s.memoS, s.memoLoc = true, text, loc
	return loc
}

// get is the regexp for pat with match_type flags, nil when it does not
// compile.
func (s *reSource) get(pat, flags string) *regexp.Regexp {
	if s.fixed != nil {
		return s.fixed
	}
	k := reKey{flags, pat}
	if re, ok := s.cache[k]; ok {
		return re
	}
	re, _ := compileRE("", pat, flags)
	if len(s.cache) >= reCacheSize {
		clear(s.cache)
	}
	s.cache[k] = re
	return re
}

// compileRE compiles pat under MySQL's match_type flags: c (case
// sensitive, the default), i (case insensitive), m (multiple lines: ^
// and $ at line ends), n (. matches line ends), u (Unix line ends only:
// Go's only kind). The last of c and i wins, as in MySQL.
func compileRE(name, pat, flags string) (*regexp.Regexp, error) {
	var ci, multi, dotNL bool
	for _, f := range flags {
		switch f {
		case 'c':
			ci = false
		case 'i':
			ci = true
		case 'm':
			multi = true
		case 'n':
			dotNL = true
		case 'u':
		default:
			return nil, errorf("", "%s: match_type %s has %q, which is none of c, i, m, n, u", name, quoteSQL(flags), f)
		}
	}
	var b strings.Builder
	if ci || multi || dotNL {
		b.WriteString("(?")
		if ci {
			b.WriteByte('i')
		}
		if multi {
			b.WriteByte('m')
		}
		if dotNL {
			b.WriteByte('s')
		}
		b.WriteByte(')')
	}
	b.WriteString(pat)
	re, err := regexp.Compile(b.String())
	if err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "error parsing regexp: ")
		return nil, errorf("", "%s: bad regular expression %s: %s", name, quoteSQL(pat), msg)
	}
	return re, nil
}

// quoteSQL is s as a SQL string literal, for messages.
func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// constArg is argument i of the call when it is a constant that is not
// NULL.
func constArg(args []plan.Expr, i int) (plan.Value, bool) {
	if i < 0 || i >= len(args) {
		return plan.Null, false
	}
	c, ok := args[i].(*plan.Const)
	if !ok || c.V.IsNull() {
		return plan.Null, false
	}
	return c.V, true
}

// reLayout says where a regexp function's arguments are: the pattern's
// and match_type's positions (match_type: -1 when the function has none).
type reLayout struct{ pat, flags int }

// constRE compiles the call's pattern when it and its match_type (if
// given) are constants: nil, nil when either is not.
func constRE(name string, args []plan.Expr, l reLayout) (*regexp.Regexp, error) {
	pv, ok := constArg(args, l.pat)
	if !ok {
		return nil, nil
	}
	flags := ""
	if l.flags >= 0 && l.flags < len(args) {
		fv, ok := constArg(args, l.flags)
		if !ok {
			return nil, nil
		}
		flags = ToString(fv)
	}
	return compileRE(name, ToString(pv), flags)
}

// newSource is the call's pattern source: the constant pattern compiled
// once (Bind checked it compiles), or a cache.
func newSource(c *plan.Call, l reLayout, env *Env) *reSource {
	re, err := constRE("", c.Args, l)
	if err != nil || re == nil {
		return &reSource{cache: map[reKey]*regexp.Regexp{}}
	}
	k := reKey{pat: re.String()}
	if env != nil {
		if s := env.regexps[k]; s != nil {
			return s
		}
	}
	s := &reSource{fixed: re}
	if tree, err := syntax.Parse(re.String(), syntax.Perl); err == nil {
		tree = tree.Simplify()
		s.lit = requiredLiteral(tree)
		s.newSkip(tree)
	}
	if env != nil {
		if env.regexps == nil {
			env.regexps = map[reKey]*reSource{}
		}
		env.regexps[k] = s
	}
	return s
}

// rowRE is the row's regexp from vs (the evaluated arguments), nil when
// it does not compile.
func rowRE(src *reSource, vs []plan.Value, l reLayout) *regexp.Regexp {
	if src.fixed != nil {
		return src.fixed
	}
	flags := ""
	if l.flags >= 0 && l.flags < len(vs) {
		flags = ToString(vs[l.flags])
	}
	return src.get(ToString(vs[l.pat]), flags)
}

// evalStrict evaluates args into vs, false at the first NULL (later
// arguments are not evaluated).
func evalStrict(args []Eval, r plan.Row, vs []plan.Value) bool {
	for i, a := range args {
		vs[i] = a(r)
		if vs[i].IsNull() {
			return false
		}
	}
	return true
}

// bindRE checks a regexp call's constant arguments: the pattern and
// match_type, positions (from 1) and REGEXP_INSTR's return_option.
func bindRE(l reLayout, posArg, optArg int) func(string, []plan.Expr, plan.Type) ([]plan.Expr, error) {
	return func(name string, args []plan.Expr, _ plan.Type) ([]plan.Expr, error) {
		if _, err := constRE(name, args, l); err != nil {
			return nil, err
		}
		if l.flags >= 0 {
			if fv, ok := constArg(args, l.flags); ok {
				if _, err := compileRE(name, "", ToString(fv)); err != nil {
					return nil, err
				}
			}
		}
		if v, ok := constArg(args, posArg); ok && posArg >= 0 && ToInt(v) < 1 {
			return nil, errorf("", "%s: position %s is before the first character (positions count from 1)", name, ToString(v))
		}
		if v, ok := constArg(args, optArg); ok && optArg >= 0 {
			if o := ToInt(v); o != 0 && o != 1 {
				return nil, errorf("", "%s: return_option %s is neither 0 (the match's position) nor 1 (the position after it)", name, ToString(v))
			}
		}
		return args, nil
	}
}

// byteOffset is the byte offset of character pos (from 1) of s, false
// when pos is before the first character or more than one past the last
// (MySQL's "Index out of bounds in regular expression search").
func byteOffset(s string, pos int64) (int, bool) {
	if pos < 1 {
		return 0, false
	}
	off := 0
	for n := pos - 1; n > 0; n-- {
		if off >= len(s) {
			return 0, false
		}
		if s[off] < utf8.RuneSelf {
			off++
		} else {
			_, w := utf8.DecodeRuneInString(s[off:])
			off += w
		}
	}
	return off, true
}

// charPos is the character position (from 1) of byte offset off of s.
func charPos(s string, off int) int64 {
	return int64(utf8.RuneCountInString(s[:off])) + 1
}

// nthMatch is the submatch indexes (into s) of the n-th match of re in s
// from byte offset off, nil when there are fewer than n.
func nthMatch(src *reSource, re *regexp.Regexp, s string, off int, n int64) []int {
	if re == src.fixed && !src.mayMatch(s[off:]) {
		return nil
	}
	if n < 1 {
		n = 1
	}
	if n > int64(len(s)-off)+1 { // more matches than there can be
		return nil
	}
	ms := re.FindAllStringSubmatchIndex(s[off:], int(n))
	if int64(len(ms)) < n {
		return nil
	}
	loc := ms[n-1]
	for i := range loc {
		if loc[i] >= 0 {
			loc[i] += off
		}
	}
	return loc
}

// argInt is argument i as a BIGINT, def when the call has fewer.
func argInt(vs []plan.Value, i int, def int64) int64 {
	if i < len(vs) {
		return ToInt(vs[i])
	}
	return def
}

func compileRegexpLike(c *plan.Call, a []Eval, env *Env) Eval {
	l := reLayout{pat: 1, flags: 2}
	src := newSource(c, l, env)
	vs := make([]plan.Value, len(a))
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		re := rowRE(src, vs, l)
		if re == nil {
			return plan.Null
		}
		s := ToString(vs[0])
		if re == src.fixed {
			return plan.Bool(src.match(s))
		}
		return plan.Bool(re.MatchString(s))
	}
}

// REGEXP_INSTR(s, pat[, pos[, occurrence[, return_option[, match_type]]]]).
func compileRegexpInstr(c *plan.Call, a []Eval, env *Env) Eval {
	l := reLayout{pat: 1, flags: 5}
	src := newSource(c, l, env)
	vs := make([]plan.Value, len(a))
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		re := rowRE(src, vs, l)
		s := ToString(vs[0])
		off, ok := byteOffset(s, argInt(vs, 2, 1))
		opt := argInt(vs, 4, 0)
		if re == nil || !ok || (opt != 0 && opt != 1) {
			return plan.Null
		}
		loc := nthMatch(src, re, s, off, argInt(vs, 3, 1))
		if loc == nil {
			return plan.Int(0)
		}
		return plan.Int(charPos(s, loc[opt]))
	}
}

// REGEXP_SUBSTR(s, pat[, pos[, occurrence[, match_type]]]).
func compileRegexpSubstr(c *plan.Call, a []Eval, env *Env) Eval {
	l := reLayout{pat: 1, flags: 4}
	src := newSource(c, l, env)
	vs := make([]plan.Value, len(a))
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		re := rowRE(src, vs, l)
		s := ToString(vs[0])
		off, ok := byteOffset(s, argInt(vs, 2, 1))
		if re == nil || !ok {
			return plan.Null
		}
		loc := nthMatch(src, re, s, off, argInt(vs, 3, 1))
		if loc == nil {
			return plan.Null
		}
		return plan.Str(s[loc[0]:loc[1]])
	}
}

// REGEXP_REPLACE(s, pat, repl[, pos[, occurrence[, match_type]]]):
// occurrence 0 (the default) replaces every match from pos on. repl
// refers to groups as $1 ... $9 (digits are read while they name a
// group, as ICU reads them); \ takes the next character as it is.
func compileRegexpReplace(c *plan.Call, a []Eval, env *Env) Eval {
	l := reLayout{pat: 1, flags: 5}
	src := newSource(c, l, env)
	vs := make([]plan.Value, len(a))
	var buf []byte
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		re := rowRE(src, vs, l)
		s, repl := ToString(vs[0]), ToString(vs[2])
		off, ok := byteOffset(s, argInt(vs, 3, 1))
		if re == nil || !ok {
			return plan.Null
		}
		occ := argInt(vs, 4, 0)
		var ms [][]int
		if occ <= 0 {
			if re != src.fixed || src.mayMatch(s[off:]) {
				ms = re.FindAllStringSubmatchIndex(s[off:], -1)
			}
		} else if loc := nthMatch(src, re, s, off, occ); loc != nil {
			for i := range loc {
				if loc[i] >= 0 {
					loc[i] -= off
				}
			}
			ms = [][]int{loc}
		}
		if len(ms) == 0 {
			return plan.Str(s)
		}
		buf = append(buf[:0], s[:off]...)
		last := off
		for _, m := range ms {
			buf = append(buf, s[last:off+m[0]]...)
			if buf, ok = expandRepl(buf, repl, s[off:], m, re.NumSubexp()); !ok {
				return plan.Null
			}
			if len(buf) > MaxStringLen { // as LPAD's: NULL past 1 MiB, before it grows further
				buf = buf[:0]
				return plan.Null
			}
			last = off + m[1]
		}
		buf = append(buf, s[last:]...)
		if len(buf) > MaxStringLen {
			return plan.Null
		}
		return plan.Str(string(buf))
	}
}

// expandRepl appends repl with its group references filled from the
// match m of s; false for a reference to no group or a '$' that starts
// none (ICU's errors).
func expandRepl(dst []byte, repl, s string, m []int, groups int) ([]byte, bool) {
	for i := 0; i < len(repl); i++ {
		ch := repl[i]
		switch {
		case ch == '\\' && i+1 < len(repl):
			i++
			dst = append(dst, repl[i])
		case ch == '$':
			if i+1 >= len(repl) || repl[i+1] < '0' || repl[i+1] > '9' {
				return dst, false
			}
			g := int(repl[i+1] - '0')
			if g > groups {
				return dst, false
			}
			i++
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' {
				ng := g*10 + int(repl[i+1]-'0')
				if ng > groups {
					break
				}
				g = ng
				i++
			}
			if m[2*g] >= 0 {
				dst = append(dst, s[m[2*g]:m[2*g+1]]...)
			}
		default:
			dst = append(dst, ch)
		}
	}
	return dst, true
}

func bindRegexpReplace(name string, args []plan.Expr, t plan.Type) ([]plan.Expr, error) {
	l := reLayout{pat: 1, flags: 5}
	if _, err := bindRE(l, 3, -1)(name, args, t); err != nil {
		return nil, err
	}
	re, _ := constRE(name, args, l)
	if rv, ok := constArg(args, 2); ok && re != nil {
		m := make([]int, 2*(re.NumSubexp()+1))
		if _, ok := expandRepl(nil, ToString(rv), "", m, re.NumSubexp()); !ok {
			return nil, errorf("", "%s: replacement %s refers to a group the pattern does not have ($0 to $%d; \\$ is a $)", name, quoteSQL(ToString(rv)), re.NumSubexp())
		}
	}
	return args, nil
}

// REGEXP_EXTRACT(s, pat[, group]), as Flink's: the group (0, the
// default: the whole match) of the first match; NULL when nothing
// matches, the group took no part in the match or there is no such
// group.
func compileRegexpExtract(c *plan.Call, a []Eval, env *Env) Eval {
	l := reLayout{pat: 1, flags: -1}
	src := newSource(c, l, env)
	vs := make([]plan.Value, len(a))
	return func(r plan.Row) plan.Value {
		if !evalStrict(a, r, vs) {
			return plan.Null
		}
		re := rowRE(src, vs, l)
		if re == nil {
			return plan.Null
		}
		g := argInt(vs, 2, 0)
		if g < 0 || g > int64(re.NumSubexp()) {
			return plan.Null
		}
		s := ToString(vs[0])
		loc := src.submatch(re, s)
		if loc == nil || loc[2*g] < 0 {
			return plan.Null
		}
		return plan.Str(s[loc[2*g]:loc[2*g+1]])
	}
}

func bindRegexpExtract(name string, args []plan.Expr, _ plan.Type) ([]plan.Expr, error) {
	re, err := constRE(name, args, reLayout{pat: 1, flags: -1})
	if err != nil {
		return nil, err
	}
	if gv, ok := constArg(args, 2); ok {
		g := ToInt(gv)
		switch {
		case g < 0:
			return nil, errorf("", "%s: group %s is negative (0 is the whole match, 1 the first group)", name, ToString(gv))
		case re != nil && g > int64(re.NumSubexp()):
			groups := "groups"
			if re.NumSubexp() == 1 {
				groups = "group"
			}
			return nil, errorf("", "%s: group %d of a pattern with %d %s", name, g, re.NumSubexp(), groups)
		}
	}
	return args, nil
}
