package pgwire

import (
	"fmt"
	"strings"
)

// PostgreSQL's own dialect, as far as recognizing the catalog statements
// of clients takes it (catalog.go): its tokens and a statement's
// fingerprint. Nothing here executes SQL.

// tokKind is a kind of PostgreSQL token.
type tokKind uint8

const (
	tokIdent  tokKind = iota // a keyword or identifier, folded to lower case
	tokQuoted                // a "quoted" identifier, its text as written
	tokString                // '...', E'...' or $tag$...$tag$: its value
	tokNumber                // 1, 1.5, 1e3
	tokParam                 // $1
	tokOp                    // an operator (!~, <>, ::) or punctuation
)

// token is one token of a statement; pos is its byte offset.
type token struct {
	kind tokKind
	text string
	pos  int
}

func (t token) literal() bool { return t.kind == tokString || t.kind == tokNumber }

// is reports whether t is the keyword or operator s.
func (t token) is(s string) bool { return (t.kind == tokIdent || t.kind == tokOp) && t.text == s }

// opChars are the characters PostgreSQL's operators are made of.
const opChars = "+-*/<>=~!@#%^&|`?"

// tokenize splits sql into PostgreSQL's tokens, without comments. An
// unterminated string, quoted identifier or comment is an error naming
// where it starts.
func tokenize(sql string) ([]token, error) {
	var toks []token
	for i := 0; i < len(sql); {
		ch := sql[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return toks, nil
			}
			i += j + 1
		case strings.HasPrefix(sql[i:], "/*"):
			// Comments nest in PostgreSQL.
			depth, j := 1, i+2
			for depth > 0 {
				if j >= len(sql)-1 {
					return nil, fmt.Errorf("unterminated /* comment at offset %d", i)
				}
				switch sql[j : j+2] {
				case "/*":
					depth++
					j += 2
				case "*/":
					depth--
					j += 2
				default:
					j++
				}
			}
			i = j
		case ch == '\'':
			s, n, err := quoted(sql[i:], '\'', false)
			if err != nil {
				return nil, fmt.Errorf("%w at offset %d", err, i)
			}
			toks = append(toks, token{tokString, s, i})
			i += n
		case (ch == 'E' || ch == 'e') && i+1 < len(sql) && sql[i+1] == '\'':
			s, n, err := quoted(sql[i+1:], '\'', true)
			if err != nil {
				return nil, fmt.Errorf("%w at offset %d", err, i)
			}
			toks = append(toks, token{tokString, s, i})
			i += n + 1
		case ch == '"':
			s, n, err := quoted(sql[i:], '"', false)
			if err != nil {
				return nil, fmt.Errorf("%w at offset %d", err, i)
			}
			toks = append(toks, token{tokQuoted, s, i})
			i += n
		case ch == '$':
			j := i + 1
			for j < len(sql) && '0' <= sql[j] && sql[j] <= '9' {
				j++
			}
			if j > i+1 {
				toks = append(toks, token{tokParam, sql[i:j], i})
				i = j
				continue
			}
			// A dollar-quoted string: $tag$ ... $tag$.
			for j < len(sql) && identByte(sql[j]) {
				j++
			}
			if j >= len(sql) || sql[j] != '$' {
				return nil, fmt.Errorf("unexpected $ at offset %d", i)
			}
			tag := sql[i : j+1]
			end := strings.Index(sql[j+1:], tag)
			if end < 0 {
				return nil, fmt.Errorf("unterminated dollar-quoted string at offset %d", i)
			}
			toks = append(toks, token{tokString, sql[j+1 : j+1+end], i})
			i = j + 1 + end + len(tag)
		case '0' <= ch && ch <= '9' || ch == '.' && i+1 < len(sql) && '0' <= sql[i+1] && sql[i+1] <= '9':
			j := i
			for j < len(sql) && ('0' <= sql[j] && sql[j] <= '9' || sql[j] == '.' ||
				(sql[j] == 'e' || sql[j] == 'E') && j+1 < len(sql) && ('0' <= sql[j+1] && sql[j+1] <= '9' || sql[j+1] == '-' || sql[j+1] == '+') ||
				(sql[j] == '-' || sql[j] == '+') && (sql[j-1] == 'e' || sql[j-1] == 'E')) {
				j++
			}
			toks = append(toks, token{tokNumber, sql[i:j], i})
			i = j
		case identByte(ch) || ch >= 0x80:
			j := i
			for j < len(sql) && (identByte(sql[j]) || sql[j] == '$' || sql[j] >= 0x80) {
				j++
			}
			toks = append(toks, token{tokIdent, strings.ToLower(sql[i:j]), i})
			i = j
		case ch == ':' && strings.HasPrefix(sql[i:], "::"):
			toks = append(toks, token{tokOp, "::", i})
			i += 2
		case strings.IndexByte(opChars, ch) >= 0:
			j := i
			for j < len(sql) && strings.IndexByte(opChars, sql[j]) >= 0 && !strings.HasPrefix(sql[j:], "--") && !strings.HasPrefix(sql[j:], "/*") {
				j++
			}
			// As PostgreSQL's lexer: a multi-character operator does not
			// end in + or - unless it has one of ~!@#%^&|`? (so "=-1" is
			// = and -1).
			op := sql[i:j]
			for len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') && !strings.ContainsAny(op, "~!@#%^&|`?") {
				op = op[:len(op)-1]
			}
			toks = append(toks, token{tokOp, op, i})
			i += len(op)
		default: // ( ) , ; . [ ] :
			toks = append(toks, token{tokOp, sql[i : i+1], i})
			i++
		}
	}
	return toks, nil
}

// quoted reads the quoted text at the start of s (quote q, doubled to
// escape it; backslash escapes too when escapes): its value and length.
func quoted(s string, q byte, escapes bool) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == q:
			if i+1 < len(s) && s[i+1] == q {
				b.WriteByte(q)
				i++
				continue
			}
			return b.String(), i + 1, nil
		case escapes && ch == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(ch)
		}
	}
	if q == '"' {
		return "", 0, fmt.Errorf("unterminated quoted identifier")
	}
	return "", 0, fmt.Errorf("unterminated string")
}

// A fingerprint is a statement's tokens with each literal replaced by ?
// and a parenthesized list of literals by (?...): it ignores spaces,
// comments, the case of keywords and the values of literals (which the
// answer reads, pgStatement.lits). Quoted identifiers keep their quotes
// and case.
type pgStatement struct {
	toks  []token
	parts []string // the fingerprint's parts
	lits  [][]token
	where [2]int // the top-level WHERE clause: toks[where[0]:where[1]], or 0, 0
}

// parseStatement tokenizes one statement (a trailing ; is dropped).
func parseStatement(sql string) (*pgStatement, error) {
	toks, err := tokenize(sql)
	if err != nil {
		return nil, err
	}
	for len(toks) > 0 && toks[len(toks)-1].is(";") {
		toks = toks[:len(toks)-1]
	}
	st := &pgStatement{toks: toks}
	st.parts, st.lits = fingerprintParts(toks)
	st.where = whereClause(toks)
	return st, nil
}

// fingerprintParts is the fingerprint of toks as parts, with the literals
// of each part (a ? has one, a (?...) its list).
func fingerprintParts(toks []token) ([]string, [][]token) {
	parts := make([]string, 0, len(toks))
	lits := make([][]token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.is("(") {
			// A list of literals: ( lit [, lit]... )
			j := i + 1
			for j+1 < len(toks) && toks[j].literal() && toks[j+1].is(",") {
				j += 2
			}
			if j+1 < len(toks) && j > i && toks[j].literal() && toks[j+1].is(")") {
				parts = append(parts, "(?...)")
				var list []token
				for k := i + 1; k <= j; k += 2 {
					list = append(list, toks[k])
				}
				lits = append(lits, list)
				i = j + 1
				continue
			}
		}
		switch t.kind {
		case tokString, tokNumber:
			parts = append(parts, "?")
			lits = append(lits, []token{t})
			continue
		case tokQuoted:
			parts = append(parts, `"`+strings.ReplaceAll(t.text, `"`, `""`)+`"`)
		default:
			parts = append(parts, t.text)
		}
		lits = append(lits, nil)
	}
	return parts, lits
}

// fingerprint is the statement's fingerprint as one string.
func (st *pgStatement) fingerprint() string { return strings.Join(st.parts, " ") }

// shape is the fingerprint with its top-level WHERE clause cut out (WHERE
// ... stands for it): the statements whose conditions are evaluated one
// by one (catalog.go's filters) match on their shape.
func (st *pgStatement) shape() string {
	if st.where[1] == 0 {
		return ""
	}
	before, _ := fingerprintParts(st.toks[:st.where[0]])
	after, _ := fingerprintParts(st.toks[st.where[1]:])
	return strings.Join(before, " ") + " where ... " + strings.Join(after, " ")
}

// conditions are the top-level WHERE clause's conjuncts (split at AND).
func (st *pgStatement) conditions() [][]token {
	if st.where[1] == 0 {
		return nil
	}
	var out [][]token
	depth, from := 0, st.where[0]+1
	for i := from; i < st.where[1]; i++ {
		t := st.toks[i]
		switch {
		case t.is("(") || t.is("["):
			depth++
		case t.is(")") || t.is("]"):
			depth--
		case depth == 0 && t.is("and"):
			out = append(out, st.toks[from:i])
			from = i + 1
		}
	}
	return append(out, st.toks[from:st.where[1]])
}

// whereClause finds the WHERE outside parentheses and where its clause
// ends (ORDER, GROUP, LIMIT, UNION or the end).
func whereClause(toks []token) [2]int {
	depth, start := 0, -1
	for i, t := range toks {
		switch {
		case t.is("(") || t.is("["):
			depth++
		case t.is(")") || t.is("]"):
			depth--
		case depth != 0:
		case start < 0 && t.is("where"):
			start = i
		case start >= 0 && (t.is("order") || t.is("group") || t.is("limit") || t.is("union") || t.is("having")):
			return [2]int{start, i}
		case start < 0 && t.is("union"):
			return [2]int{} // a top-level WHERE only in a single SELECT
		}
	}
	if start < 0 {
		return [2]int{}
	}
	return [2]int{start, len(toks)}
}

// literalAfter is the value of the first literal (or the first of a list
// of literals) whose fingerprint part is preceded by the parts of prefix
// (a fingerprint fragment, e.g. "c . oid ="); ok false if there is none.
func (st *pgStatement) literalAfter(prefix string) (string, bool) {
	want := strings.Fields(prefix)
	for i := len(want); i < len(st.parts); i++ {
		if st.parts[i] != "?" && st.parts[i] != "(?...)" {
			continue
		}
		match := true
		for k := range want {
			if st.parts[i-len(want)+k] != want[k] {
				match = false
				break
			}
		}
		if match {
			return st.lits[i][0].text, true
		}
	}
	return "", false
}

// aliases are the names given with AS "Name" (or AS name) to the columns
// of the top-level select list, in order.
func (st *pgStatement) aliases() []string {
	var out []string
	depth := 0
	for i, t := range st.toks {
		switch {
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
		case depth == 0 && t.is("from"):
			return out
		case depth == 0 && t.is("as") && i+1 < len(st.toks):
			out = append(out, st.toks[i+1].text)
		}
	}
	return out
}

// identByte reports whether b may be in an unquoted identifier.
func identByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
