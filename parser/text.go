package parser

import "strings"

// This file reads a statement's own text where the TiDB parser's AST does
// not tell enough: EXPLAIN t, DESCRIBE t and DESC t are one AST (told apart
// by the first keyword), and a misplaced optimizer hint is a warning without
// a position (found here in the text). Nothing here rewrites the text.

// scanner walks SQL text token by token as far as this package needs:
// words, and everything else skipped (strings, quoted identifiers,
// comments), so that a keyword inside a string or a comment is never taken
// for one.
type scanner struct {
	s   string
	off int
}

// tokKind is the kind of a token next returns.
type tokKind int

const (
	tokEOF   tokKind = iota
	tokWord          // an identifier or keyword
	tokHint          // an optimizer hint comment /*+ ... */
	tokOther         // punctuation, numbers, strings, quoted identifiers
)

// next returns the next token's kind and its byte range, skipping white
// space and plain comments.
func (sc *scanner) next() (tokKind, int, int) {
	s := sc.s
	for sc.off < len(s) {
		c := s[sc.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			sc.off++
		case c == '#' || c == '-' && strings.HasPrefix(s[sc.off:], "-- ") || c == '-' && strings.HasPrefix(s[sc.off:], "--\n"):
			if i := strings.IndexByte(s[sc.off:], '\n'); i >= 0 {
				sc.off += i + 1
			} else {
				sc.off = len(s)
			}
		case c == '/' && strings.HasPrefix(s[sc.off:], "/*"):
			start := sc.off
			end := len(s)
			if i := strings.Index(s[sc.off+2:], "*/"); i >= 0 {
				end = sc.off + 2 + i + 2
			}
			sc.off = end
			if strings.HasPrefix(s[start:], "/*+") {
				return tokHint, start, end
			}
		case c == '\'' || c == '"' || c == '`':
			start := sc.off
			sc.off = quotedEnd(s, sc.off)
			return tokOther, start, sc.off
		case identByte(c) && c != '`' || c >= 0x80:
			start := sc.off
			for sc.off < len(s) && (identByte(s[sc.off]) && s[sc.off] != '`' || s[sc.off] == '$' || s[sc.off] >= 0x80) {
				sc.off++
			}
			return tokWord, start, sc.off
		default:
			sc.off++
			return tokOther, sc.off - 1, sc.off
		}
	}
	return tokEOF, len(s), len(s)
}

// quotedEnd is the offset just past the quoted string or identifier that
// starts at off (MySQL: the quote doubled, or a backslash, escapes it).
func quotedEnd(s string, off int) int {
	q := s[off]
	for i := off + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if q != '`' {
				i++
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(s)
}

// firstKeyword is the first word of a statement's text, upper case,
// skipping white space and comments ("" when there is none).
func firstKeyword(text string) string {
	sc := scanner{s: text}
	for {
		k, a, b := sc.next()
		switch k {
		case tokWord:
			return strings.ToUpper(text[a:b])
		case tokEOF, tokOther:
			return ""
		}
	}
}

// hintKeywords are the words an optimizer hint may follow.
var hintKeywords = map[string]bool{"SELECT": true, "INSERT": true, "REPLACE": true, "UPDATE": true, "DELETE": true}

// misplacedHint finds the first optimizer hint of text that does not come
// right after SELECT (or INSERT, ...): its byte range and the token before
// it as written ("" at the start). ok is false when every hint is in its
// place.
func misplacedHint(text string) (start, end int, after string, ok bool) {
	sc := scanner{s: text}
	prev := ""
	for {
		k, a, b := sc.next()
		switch k {
		case tokEOF:
			return 0, 0, "", false
		case tokHint:
			if !hintKeywords[strings.ToUpper(prev)] {
				return a, b, prev, true
			}
		case tokWord:
			prev = text[a:b]
		default:
			prev = text[a:b]
		}
	}
}

// hintNamed finds the hint name name inside the optimizer hints of text:
// its byte offset, or -1.
func hintNamed(text, name string) int {
	sc := scanner{s: text}
	for {
		k, a, b := sc.next()
		switch k {
		case tokEOF:
			return -1
		case tokHint:
			inner := scanner{s: text[:b-2], off: a + 3}
			for {
				ik, ia, ib := inner.next()
				if ik == tokEOF {
					break
				}
				if ik == tokWord && strings.EqualFold(text[ia:ib], name) {
					return ia
				}
			}
		}
	}
}

// explainBefore reports whether the word CREATE that ends at off (the
// position a syntax error names, which on lines after the first the TiDB
// parser gives one byte further) follows the keyword EXPLAIN, and where
// that keyword starts: EXPLAIN CREATE VIEW, which the TiDB parser does not
// take.
func explainBefore(s string, off int) (int, bool) {
	for _, end := range []int{off, off - 1} {
		if at, ok := explainAt(s, end); ok {
			return at, true
		}
	}
	return 0, false
}

func explainAt(s string, off int) (int, bool) {
	const create, kw = "CREATE", "EXPLAIN"
	if off > len(s) || off < len(create) || !strings.EqualFold(s[off-len(create):off], create) {
		return 0, false
	}
	i := off - len(create)
	if i > 0 && identByte(s[i-1]) || off < len(s) && identByte(s[off]) {
		return 0, false
	}
	j := i
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t' || s[j-1] == '\n' || s[j-1] == '\r') {
		j--
	}
	if j == i || j < len(kw) || !strings.EqualFold(s[j-len(kw):j], kw) {
		return 0, false
	}
	start := j - len(kw)
	if start > 0 && identByte(s[start-1]) {
		return 0, false
	}
	return start, true
}
