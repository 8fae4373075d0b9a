package parser

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions
)

// Statement is one parsed statement with its original text and position.
type Statement struct {
	Stmt Stmt
	Text string // the statement's text as written, without the trailing ';'
	Pos  Pos
	// Params are the statement's parameters ($1, $2, ...) in the order
	// they are written; nil when it has none.
	Params []Param
	// Dialect is how Text reads (Dialect.Parse): a statement kept as text
	// (a view's) is read again in it.
	Dialect Dialect
}

// Dialect is how a statement's text reads: its string literals and its
// double quotes. The grammar is the same in both.
type Dialect string

const (
	// MySQL is streamsql's own dialect (POST /v1/sql, files): MySQL's
	// lexical rules, where a backslash in '...' escapes the next
	// character and "..." is a string. The zero value.
	MySQL Dialect = ""
	// PostgreSQL is the dialect of the PostgreSQL wire protocol: standard
	// strings ('...' where only '' escapes a quote and a backslash is a
	// character, as standard_conforming_strings = on promises clients
	// that quote values themselves) and "..." a quoted identifier.
	PostgreSQL Dialect = "postgresql"
)

// mode is the TiDB parser's SQL mode of d.
func (d Dialect) mode() mysql.SQLMode {
	if d == PostgreSQL {
		return mysql.ModeNoBackslashEscapes | mysql.ModeANSIQuotes
	}
	return mysql.ModeNone
}

// Valid reports whether d is a dialect (a stored one may come from a
// newer version).
func (d Dialect) Valid() bool { return d == MySQL || d == PostgreSQL }

// ErrorKind tells a syntax error (the text is not SQL) from SQL that parses
// but that streamsql does not run.
type ErrorKind int

const (
	// Syntax: malformed SQL, or a parser warning (400).
	Syntax ErrorKind = iota
	// Unsupported: valid SQL that streamsql does not run (422), also SQL
	// nested deeper than MaxDepth.
	Unsupported
	// TooLarge: a statement longer than MaxStatementBytes (413).
	TooLarge
)

// Status is the HTTP status of an error of kind k.
func (k ErrorKind) Status() int {
	switch k {
	case Unsupported:
		return 422
	case TooLarge:
		return 413
	}
	return 400
}

// Error is a parse error with the failing statement's index and a position.
type Error struct {
	Kind      ErrorKind
	Statement int // index of the failing statement in the request
	Line      int // 1-based; 0 when unknown
	Column    int // 1-based; 0 when unknown
	Msg       string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("statement %d, line %d column %d: %s", e.Statement, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("statement %d: %s", e.Statement, e.Msg)
}

var posRE = regexp.MustCompile(`line (\d+) column (\d+)`)

// Parse parses every statement of sql. On error it returns the statements
// before the failing one (they are valid and may be executed, as docs/http-api.md says:
// earlier statements stay applied) and an *Error naming the failing index.
// It reads sql in streamsql's own dialect (MySQL).
func Parse(sql string) ([]Statement, error) { return MySQL.Parse(sql) }

// Parse is the package's Parse reading sql in dialect d.
func (d Dialect) Parse(sql string) ([]Statement, error) {
	if off, err := checkSizes(sql); err != nil {
		// Nothing of the long statement is parsed; those before it are.
		before, perr := d.Parse(sql[:off])
		if perr != nil {
			return before, perr
		}
		return before, err
	}
	// text is sql with the keyword EXPLAIN of each EXPLAIN CREATE VIEW
	// blanked out (the TiDB parser has no EXPLAIN of CREATE): the same
	// length, so every position in it is a position in sql.
	text := sql
	var explains []int
	nodes, warns, err := d.parseSQL(text)
	for err != nil && len(explains) < MaxExplainCreate {
		m := posRE.FindStringSubmatch(err.Error())
		if m == nil {
			break
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		at, ok := explainBefore(text, min(offsetOf(text, line, col)+1, len(text)))
		if !ok {
			break
		}
		text = text[:at] + strings.Repeat(" ", len("EXPLAIN")) + text[at+len("EXPLAIN"):]
		explains = append(explains, at)
		nodes, warns, err = d.parseSQL(text)
	}
	if err != nil {
		perr := &Error{Kind: Syntax, Msg: "syntax error: " + cleanMsg(err.Error())}
		if m := posRE.FindStringSubmatch(err.Error()); m != nil {
			perr.Line, _ = strconv.Atoi(m[1])
			perr.Column, _ = strconv.Atoi(m[2])
			// The position is the end of the token the parser could not take.
			if h := syntaxHint(text, min(offsetOf(text, perr.Line, perr.Column)+1, len(text))); h != "" {
				perr.Msg += "; " + h
			}
		}
		// Find how many statements precede the error: parse the text up to
		// the last statement boundary before the error position.
		before := d.parsePrefix(sql, text, explains, offsetOf(text, perr.Line, perr.Column))
		perr.Statement = len(before)
		return before, perr
	}
	if len(warns) > 0 {
		// The TiDB parser reports unknown or misplaced hints as warnings
		// (without a position) and drops them; streamsql treats every
		// warning as an error, positioned by reading the statement's text.
		idx := d.warningStatement(nodes)
		out, _ := d.convertAll(sql, text, explains, nodes[:idx])
		return out, warningError(text, nodes, idx, warns)
	}
	return d.convertAll(sql, text, explains, nodes)
}

// MaxExplainCreate is the most EXPLAIN CREATE VIEW statements one request
// may hold (each one costs a parse of the request).
const MaxExplainCreate = 16

// parseSQL runs the TiDB parser, turning its panics (its test driver panics
// on some numeric literals, such as integers of more than 81 digits) into
// syntax errors: bad SQL must never take the server down.
func (d Dialect) parseSQL(sql string) (nodes []ast.StmtNode, warns []error, err error) {
	defer func() {
		if r := recover(); r != nil {
			nodes, warns = nil, nil
			err = fmt.Errorf("the SQL parser could not read this text (%v); check numeric literals", r)
		}
	}()
	p := tidb.New()
	p.SetSQLMode(d.mode())
	return p.ParseSQL(sql)
}

// convertAll converts nodes, stopping at the first unsupported construct.
// nodes were parsed from text, which is sql with the EXPLAIN keywords at
// offsets explains blanked out.
func (d Dialect) convertAll(sql, text string, explains []int, nodes []ast.StmtNode) ([]Statement, error) {
	out := make([]Statement, 0, len(nodes))
	lines := lineCounter{s: sql, line: 1, col: 1}
	loc := locator{text: text, explains: explains}
	for i, n := range nodes {
		off, end, explained := loc.next(n)
		st := Statement{Text: strings.TrimSpace(strings.TrimRight(sql[off:end], ";")), Dialect: d}
		line, col := lines.at(off)
		st.Pos = Pos{Index: i, Offset: off, Line: line, Column: col}
		if msg, at, word, ok := checkDepth(n); !ok {
			if at >= off && at < len(sql) {
				line, col = lineCol(sql, at)
			} else if l, c := LineColAt(st.Text, word); l > 0 {
				line, col = lineCol(sql, off+offsetOf(st.Text, l, c))
			}
			return out, &Error{Kind: Unsupported, Statement: i, Line: line, Column: col, Msg: msg}
		}
		params, perr := markParams(n, sql, text, off, end)
		if perr != nil {
			line, col = lineCol(sql, perr.at)
			return out, &Error{Kind: Unsupported, Statement: i, Line: line, Column: col, Msg: perr.msg}
		}
		st.Params = params
		s, err := convertStmt(n)
		if err == nil && explained {
			s, err = explainOf(s)
		}
		if err != nil {
			return out, &Error{Kind: Unsupported, Statement: i, Line: line, Column: col, Msg: err.Error()}
		}
		st.Stmt = s
		out = append(out, st)
	}
	return out, nil
}

// locator finds statements, in order, in the text they were parsed from:
// each is looked for after the one before, so locating all of a request's
// is linear in its length.
type locator struct {
	text     string
	explains []int // the offsets of blanked EXPLAIN keywords
	from     int
}

// next locates the next statement n: its start (its EXPLAIN, when one of
// explains is its), its end, and whether it is explained.
func (l *locator) next(n ast.StmtNode) (off, end int, explained bool) {
	body := strings.TrimSpace(n.Text())
	off = l.from
	if j := strings.Index(l.text[l.from:], body); j >= 0 {
		off = l.from + j
	}
	end = min(off+len(body), len(l.text))
	// An EXPLAIN blanked out between the previous statement and this one
	// is this statement's.
	for _, at := range l.explains {
		if at >= l.from && at < off {
			explained, off = true, at
		}
	}
	l.from = end
	return off, end, explained
}

// explainOf is EXPLAIN of the statement s (read without its EXPLAIN).
func explainOf(s Stmt) (Stmt, error) {
	if cv, ok := s.(*CreateView); ok {
		return &Explain{View: cv}, nil
	}
	return nil, unsupported("EXPLAIN of this statement; %s", explainTakes)
}

// explainTakes says what EXPLAIN explains, for rejection messages.
const explainTakes = "EXPLAIN takes SELECT ..., INSERT INTO t SELECT ..., CREATE VIEW v AS SELECT ... or the name of a view or sink query"

// parsePrefix returns the statements wholly before byte offset off.
func (d Dialect) parsePrefix(sql, text string, explains []int, off int) []Statement {
	if off > len(text) {
		off = len(text)
	}
	for cut := strings.LastIndexByte(text[:off], ';'); cut >= 0; cut = strings.LastIndexByte(text[:cut], ';') {
		nodes, warns, err := d.parseSQL(text[:cut+1])
		if err == nil && len(warns) == 0 {
			out, _ := d.convertAll(sql, text, explains, nodes)
			return out
		}
	}
	return nil
}

// warningStatement finds the first statement that, parsed alone, warns.
func (d Dialect) warningStatement(nodes []ast.StmtNode) int {
	for i, n := range nodes {
		if _, w, err := d.parseSQL(n.Text()); err == nil && len(w) > 0 {
			return i
		}
	}
	return 0
}

var unknownHintRE = regexp.MustCompile(`^Optimizer hint ([A-Za-z0-9_]+) is not supported by TiDB`)

// warningError is the error of statement idx's warnings, each said once,
// positioned at the hint it is about when the text shows it.
func warningError(text string, nodes []ast.StmtNode, idx int, warns []error) *Error {
	perr := &Error{Kind: Syntax, Statement: idx}
	loc := locator{text: text}
	var off, end int
	for _, n := range nodes[:idx+1] {
		off, end, _ = loc.next(n)
	}
	body := text[off:end]
	at := -1
	if a, b, after, ok := misplacedHint(body); ok {
		hint := body[a:b]
		where := "at the start of the statement"
		if after != "" {
			where = "after " + after
		}
		perr.Msg = fmt.Sprintf("optimizer hint %s is %s; hints go right after SELECT (or INSERT): write SELECT %s ...", hint, where, hint)
		at = a
	} else {
		seen := map[string]bool{}
		var msgs []string
		for _, w := range warns {
			msg := cleanMsg(w.Error())
			if m := unknownHintRE.FindStringSubmatch(msg); m != nil {
				// An unknown hint name: SQL that parses, naming what does
				// not exist (as an unknown option does).
				perr.Kind = Unsupported
				msg = fmt.Sprintf("unknown optimizer hint %s; streamsql takes SET_VAR(option=value)", m[1])
				if at < 0 {
					at = hintNamed(body, m[1])
				}
			}
			if !seen[msg] {
				seen[msg] = true
				msgs = append(msgs, msg)
			}
		}
		perr.Msg = strings.Join(msgs, "; ")
	}
	if at >= 0 {
		perr.Line, perr.Column = lineCol(text, off+at)
	}
	return perr
}

// syntaxHint explains syntax errors that come from join syntax streamsql
// does not have. off is the error position the TiDB parser reports: the end
// of the token it could not take.
func syntaxHint(sql string, off int) string {
	before := strings.Fields(strings.ToUpper(sql[:off]))
	after := strings.Fields(strings.ToUpper(sql[off:]))
	word := func(ws []string, i int) string {
		if i < 0 || i >= len(ws) {
			return ""
		}
		return ws[i]
	}
	n := len(before)
	last, prev := word(before, n-1), word(before, n-2)
	if h := limitParamHint(before); h != "" {
		return h
	}
	switch {
	case last == "FULL" && (word(after, 0) == "JOIN" || word(after, 0) == "OUTER"),
		prev == "FULL" && (last == "JOIN" || last == "OUTER"):
		return "FULL JOIN is not supported; " + joinsSupported
	case prev == "FOR" && last == "SYSTEM_TIME":
		return "FOR SYSTEM_TIME AS OF is not MySQL syntax; write JOIN t AS OF TIMESTAMP expr ON ..."
	case isBoolType(last) && prev == "AS", last == "AS" && isBoolType(word(after, 0)),
		isBoolType(last) && strings.HasSuffix(prev, ",") && strings.Contains(strings.Join(before[max(0, n-3):], " "), "CONVERT("):
		return "CAST has no BOOLEAN target (nor has MySQL); write x <> 0, or IF(x, TRUE, FALSE)"
	case word(before, n-3) == "AS" && prev == "OF":
		return "AS OF takes TIMESTAMP: JOIN t AS OF TIMESTAMP expr ON ..."
	}
	return ""
}

// isBoolType: the word w (with what follows it up to a space) is BOOL or
// BOOLEAN.
func isBoolType(w string) bool {
	w = strings.TrimRight(w, ");,")
	return w == "BOOLEAN" || w == "BOOL"
}

func cleanMsg(s string) string {
	s = strings.TrimPrefix(s, "[parser:1064]")
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "You have an error in your SQL syntax; check the manual that corresponds to your TiDB version for the right syntax to use ")
	if i := strings.Index(s, "]"); strings.HasPrefix(s, "[parser:") && i > 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	return s
}

// lineCounter is lineCol for ascending offsets, counting each byte once:
// positioning every statement of a request is linear in its length.
type lineCounter struct {
	s              string
	off, line, col int
}

func (c *lineCounter) at(off int) (int, int) {
	if off < c.off {
		c.off, c.line, c.col = 0, 1, 1
	}
	for ; c.off < off && c.off < len(c.s); c.off++ {
		if c.s[c.off] == '\n' {
			c.line++
			c.col = 1
		} else {
			c.col++
		}
	}
	return c.line, c.col
}

func lineCol(s string, off int) (int, int) {
	line, col := 1, 1
	for i := 0; i < off && i < len(s); i++ {
		if s[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func offsetOf(s string, line, col int) int {
	if line <= 0 {
		return len(s)
	}
	l, off := 1, 0
	for off < len(s) && l < line {
		if s[off] == '\n' {
			l++
		}
		off++
	}
	off += col - 1
	if off > len(s) {
		off = len(s)
	}
	if off < 0 {
		off = 0
	}
	return off
}

// LineCol returns the 1-based line and column of byte offset off of text
// (a parameter's: Param.Offset).
func LineCol(text string, off int) (int, int) { return lineCol(text, off) }

// LineColAt returns the 1-based line and column of the first occurrence of
// word (case-insensitive, as a whole identifier) in text, or (0, 0). The
// planner uses it to point errors about names at the name.
func LineColAt(text, word string) (int, int) {
	lt, lw := strings.ToLower(text), strings.ToLower(word)
	for from := 0; ; {
		i := strings.Index(lt[from:], lw)
		if i < 0 || lw == "" {
			return 0, 0
		}
		i += from
		end := i + len(lw)
		if (i == 0 || !identByte(lt[i-1])) && (end >= len(lt) || !identByte(lt[end])) {
			return lineCol(text, i)
		}
		from = i + 1
	}
}

func identByte(b byte) bool {
	return b == '_' || b == '`' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
