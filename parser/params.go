package parser

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// PostgreSQL's parameters $1, $2, ... (pgwire's extended protocol). The
// TiDB lexer reads an unquoted $1 as a column name; marking turns those
// column references, and only those (a quoted `$1` stays a column), into
// TiDB's own placeholder node before conversion, which converts it to a
// *Param. The text is never rewritten: Statement.Text stays as written,
// and the planner binds each Param to its value (planner/params.go).

// MaxParam is the highest parameter number, PostgreSQL's (the Bind
// message counts its parameters in 16 bits).
const MaxParam = 65535

// paramMarker turns the parameter references of one statement into
// *test_driver.ParamMarkerExpr with Order = n and Offset = the byte offset
// of the $ in the statement's text, and collects them in order. A `?`
// (MySQL's placeholder, which the TiDB parser reads as a marker) is an
// error: its own Order is not a parameter number.
type paramMarker struct {
	text   string // the text the statement was parsed from
	base   int    // the offset in text of the statement's Text
	params []Param
	err    *paramError
}

// paramError is a marking error at byte offset at of text.
type paramError struct {
	at  int
	msg string
}

func (m *paramMarker) Enter(n ast.Node) (ast.Node, bool) {
	if p, ok := n.(*test_driver.ParamMarkerExpr); ok && m.err == nil {
		m.err = &paramError{at: p.Offset, msg: "? placeholders are not supported: streamsql takes PostgreSQL's parameters $1, $2, ..."}
	}
	return n, m.err != nil
}

func (m *paramMarker) Leave(n ast.Node) (ast.Node, bool) {
	c, ok := n.(*ast.ColumnNameExpr)
	if !ok || m.err != nil || c.Name.Table.O != "" || c.Name.Schema.O != "" {
		return n, true
	}
	at := c.OriginTextPosition()
	name := c.Name.Name.O
	if at < 0 || at >= len(m.text) || m.text[at] != '$' || !isParamName(name) {
		return n, true // a column (`$1` quoted, a$1)
	}
	k, err := strconv.Atoi(name[1:])
	if err != nil || k > MaxParam {
		m.err = &paramError{at: at, msg: "parameter " + name + " is out of range: parameters are $1 to $" + strconv.Itoa(MaxParam)}
		return n, true
	}
	p := Param{N: k, Offset: at - m.base}
	m.params = append(m.params, p)
	return &test_driver.ParamMarkerExpr{Offset: p.Offset, Order: p.N}, true
}

// isParamName reports whether name is $ and digits.
func isParamName(name string) bool {
	if len(name) < 2 || name[0] != '$' {
		return false
	}
	for i := 1; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

// markParams marks the parameters of n, parsed from text (sql with its
// EXPLAIN keywords blanked), whose Text starts at sql[off:end] after its
// leading spaces (those of sql: a blanked EXPLAIN is not one).
func markParams(n ast.StmtNode, sql, text string, off, end int) ([]Param, *paramError) {
	base := off + len(sql[off:end]) - len(strings.TrimLeftFunc(sql[off:end], unicode.IsSpace))
	m := &paramMarker{text: text, base: base}
	n.Accept(m)
	return m.params, m.err
}

// limitParamHint explains the syntax error of a parameter as LIMIT's or
// OFFSET's count, which the TiDB grammar takes only as a literal. before
// are the words up to the error.
func limitParamHint(before []string) string {
	n := len(before)
	if n < 2 || !isParamName(before[n-1]) {
		return ""
	}
	if prev := before[n-2]; prev == "LIMIT" || prev == "OFFSET" || strings.HasSuffix(prev, ",") && n >= 3 && before[n-3] == "LIMIT" {
		return "LIMIT and OFFSET take integer literals, not parameters (" + before[n-1] + "): write the number into the statement"
	}
	return ""
}
