package op

import (
	"strings"
	"unicode/utf8"

	"github.com/streamsql/streamsql/funcs"
	"github.com/streamsql/streamsql/planner/plan"
)

// LIKE is matched in time linear in the text: a pattern is compiled once
// (per query for a constant pattern, per distinct pattern for a column)
// into the segments between its runs of %, each of a fixed number of
// characters. Segments are placed leftmost, in order: the first one at
// the start unless the pattern begins with %, the last one at the end
// unless it ends with %. Leftmost placement never loses a match, because
// a segment placed earlier ends no later and % absorbs the rest, so there
// is no backtracking: a text of n bytes costs O(n × the longest segment)
// at worst, and a segment without _ is found with strings.Index.
//
// The pattern language is MySQL's with the default escape: % any run of
// characters, _ exactly one character, \ makes the next character
// literal (a trailing \ is itself). Characters are UTF-8 code points;
// matching is case-sensitive, on the bytes' code points (no collation).

// likePattern is a compiled LIKE pattern.
type likePattern struct {
	segs []likeSeg
	// leading, trailing: the pattern begins / ends with %. A pattern with
	// no % at all has exactly one segment (maybe empty) and both false.
	leading, trailing bool
	wild              bool // the pattern has a % at all
}

// likeSeg is a run of literal characters and _ between two %s.
type likeSeg struct {
	lit   string // the segment's text when it has no _ (plain); "" otherwise
	elems []likeElem
	plain bool
}

// likeElem is one character of a segment: a literal, or _ (one: any).
type likeElem struct {
	r   rune
	one bool
}

func compileLikePattern(pattern string) *likePattern {
	p := &likePattern{}
	var cur []likeElem
	flush := func() {
		if len(cur) == 0 {
			return
		}
		seg := likeSeg{elems: cur, plain: true}
		var b strings.Builder
		for _, e := range cur {
			if e.one {
				seg.plain = false
				break
			}
			b.WriteRune(e.r)
		}
		if seg.plain {
			seg.lit = b.String()
		}
		p.segs = append(p.segs, seg)
		cur = nil
	}
	for i := 0; i < len(pattern); {
		r, w := utf8.DecodeRuneInString(pattern[i:])
		i += w
		switch r {
		case '%':
			if i == w {
				p.leading = true
			}
			p.wild = true
			flush()
			p.trailing = true
			continue
		case '_':
			cur = append(cur, likeElem{one: true})
		case '\\':
			if i < len(pattern) {
				r, w = utf8.DecodeRuneInString(pattern[i:])
				i += w
			}
			cur = append(cur, likeElem{r: r})
		default:
			cur = append(cur, likeElem{r: r})
		}
		p.trailing = false
	}
	if !p.wild {
		// No %: the whole text must match one segment (maybe empty).
		if len(cur) == 0 {
			p.segs = []likeSeg{{plain: true}}
			return p
		}
	}
	flush()
	return p
}

// matchAt matches seg at byte offset i of s; it returns the offset after
// the match.
func (seg *likeSeg) matchAt(s string, i int) (int, bool) {
	if seg.plain {
		if strings.HasPrefix(s[i:], seg.lit) {
			return i + len(seg.lit), true
		}
		return 0, false
	}
	for _, e := range seg.elems {
		if i >= len(s) {
			return 0, false
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if !e.one && r != e.r {
			return 0, false
		}
		i += w
	}
	return i, true
}

// find places seg leftmost at or after byte offset from; it returns the
// offset after it.
func (seg *likeSeg) find(s string, from int) (int, bool) {
	if seg.plain {
		k := strings.Index(s[from:], seg.lit)
		if k < 0 {
			return 0, false
		}
		return from + k + len(seg.lit), true
	}
	for i := from; i < len(s); {
		if end, ok := seg.matchAt(s, i); ok {
			return end, true
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return 0, false
}

// runes is the number of characters seg matches.
func (seg *likeSeg) runes() int { return len(seg.elems) }

// match reports whether s matches the pattern.
func (p *likePattern) match(s string) bool {
	segs := p.segs
	if !p.wild {
		end, ok := segs[0].matchAt(s, 0)
		return ok && end == len(s)
	}
	pos := 0
	if !p.leading && len(segs) > 0 {
		end, ok := segs[0].matchAt(s, 0)
		if !ok {
			return false
		}
		pos, segs = end, segs[1:]
	}
	var last *likeSeg
	if !p.trailing && len(segs) > 0 {
		last, segs = &segs[len(segs)-1], segs[:len(segs)-1]
	}
	for i := range segs {
		end, ok := segs[i].find(s, pos)
		if !ok {
			return false
		}
		pos = end
	}
	if last == nil {
		return true
	}
	// The last segment ends the text: it starts last.runes() characters
	// before the end, not inside what the others took.
	start := len(s)
	for range last.runes() {
		if start <= pos {
			return false
		}
		_, w := utf8.DecodeLastRuneInString(s[:start])
		start -= w
	}
	if start < pos {
		return false
	}
	end, ok := last.matchAt(s, start)
	return ok && end == len(s)
}

// compileLike compiles x LIKE pat: a constant pattern once, a pattern
// from a column once per distinct value in a row (the last one is kept:
// consecutive rows mostly share it).
func compileLike(x, p Eval, pat plan.Expr) Eval {
	if c, ok := pat.(*plan.Const); ok && c.V.K == plan.TypeVarchar {
		m := compileLikePattern(c.V.S)
		return funcs.Strict1(x, func(v plan.Value) plan.Value { return plan.Bool(m.match(funcs.ToString(v))) })
	}
	var lastPat string
	var last *likePattern
	return funcs.Strict2(x, p, func(v, pv plan.Value) plan.Value {
		ps := funcs.ToString(pv)
		if last == nil || ps != lastPat {
			last, lastPat = compileLikePattern(ps), ps
		}
		return plan.Bool(last.match(funcs.ToString(v)))
	})
}
