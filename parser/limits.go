package parser

import (
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Limits on the SQL text. They bound the work and memory one request can
// make the parser, the planner and every renderer of a plan spend: the
// TiDB parser allocates some 40 to 70 bytes per byte of text, and binding,
// EXPLAIN and the runtime's expression compiler recurse once per level of
// nesting.
const (
	// MaxStatementBytes is the longest statement (its text between
	// semicolons). Longer is refused (413) before anything is parsed.
	MaxStatementBytes = 1 << 20
	// MaxDepth is the deepest nesting of a statement's syntax tree, in
	// levels: each operator, function call, parenthesis, CASE, subquery and
	// join is one (ABS(ABS(x)) is three). Deeper is refused (422) before
	// the tree is converted.
	MaxDepth = 1000
)

// checkSizes refuses a statement longer than MaxStatementBytes. It splits
// sql at the semicolons outside quotes and comments, as the TiDB lexer does
// (a split that differed on some odd text would only misjudge a length);
// it returns the offset where the long statement starts.
func checkSizes(sql string) (int, *Error) {
	start, index := 0, 0
	empty := true // nothing but spaces and comments since start
	for i := 0; i <= len(sql); i++ {
		if i == len(sql) || sql[i] == ';' {
			first := start
			for first < i && isSpace(sql[first]) {
				first++
			}
			if !empty && i-first > MaxStatementBytes {
				line, col := lineCol(sql, first)
				return first, &Error{Kind: TooLarge, Statement: index, Line: line, Column: col,
					Msg: fmt.Sprintf("the statement is %s long, over the limit of %s on one statement (nothing of it was parsed)", byteSize(i-first), byteSize(MaxStatementBytes))}
			}
			if !empty {
				index++
			}
			start, empty = i+1, true
			continue
		}
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i)
		case c == '#' || c == '-' && i+1 < len(sql) && sql[i+1] == '-' && (i+2 == len(sql) || isSpace(sql[i+2])):
			for i+1 < len(sql) && sql[i+1] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			// MySQL's /*! ... */ and /*+ ... */ are skipped the same way
			// (a ';' in them does not end a statement either).
			j := i + 2
			for j+1 < len(sql) && !(sql[j] == '*' && sql[j+1] == '/') {
				j++
			}
			i = min(j+1, len(sql)-1)
			continue
		case isSpace(c):
			continue
		}
		empty = false
	}
	return -1, nil
}

// skipQuoted returns the offset of the quote closing the string or quoted
// name that opens at i (backslash escapes in strings; a doubled quote is a
// closing and an opening one), or the last offset of sql.
func skipQuoted(sql string, i int) int {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j
		}
	}
	return len(sql) - 1
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// depthCheck is the visitor that measures a statement's nesting, stopping
// beyond MaxDepth. stack holds the nodes from the statement down to the one
// being visited (so the error can say which clause is too deep); depth
// counts the levels among them: expressions (a parenthesis is one),
// subqueries and joins.
type depthCheck struct {
	stack []ast.Node
	depth int
	deep  bool
}

// level reports whether node n counts as a level of nesting.
func level(n ast.Node) bool {
	switch n.(type) {
	case ast.ExprNode, *ast.SelectStmt, *ast.Join:
		return true
	}
	return false
}

func (d *depthCheck) Enter(n ast.Node) (ast.Node, bool) {
	d.stack = append(d.stack, n)
	if len(d.stack) > 1 && level(n) {
		d.depth++
	}
	if d.depth > MaxDepth {
		d.deep = true
		return n, true
	}
	return n, false
}

func (d *depthCheck) Leave(n ast.Node) (ast.Node, bool) {
	if d.deep {
		return n, false // stop: the stack stays as it was at the deepest node
	}
	if len(d.stack) > 1 && level(n) {
		d.depth--
	}
	d.stack = d.stack[:len(d.stack)-1]
	return n, true
}

// checkDepth refuses a statement nested deeper than MaxDepth. It returns
// the error's message and where to point it: a select list item's offset
// in the request's text (else -1), or a keyword of the statement (WHERE,
// GROUP, ...) to look for.
func checkDepth(n ast.StmtNode) (msg string, at int, word string, ok bool) {
	d := &depthCheck{stack: make([]ast.Node, 0, 64)}
	n.Accept(d)
	if !d.deep {
		return "", -1, "", true
	}
	what := "the statement is"
	if _, ok := d.stack[len(d.stack)-1].(ast.ExprNode); ok {
		what = "an expression is"
	}
	where, at := "", -1
	// The innermost SELECT on the path, and which of its clauses.
	for k := len(d.stack) - 2; k >= 0; k-- {
		sel, ok := d.stack[k].(*ast.SelectStmt)
		if !ok {
			continue
		}
		switch c := d.stack[k+1].(type) {
		case *ast.FieldList:
			where = " in the select list"
			for i, f := range c.Fields {
				if k+2 < len(d.stack) && f == d.stack[k+2] {
					where, at = fmt.Sprintf(" in select list item %d", i+1), f.Offset
				}
			}
		case *ast.TableRefsClause:
			where, word = " in FROM", "FROM"
			for _, x := range d.stack[k+1:] {
				if _, ok := x.(*ast.OnCondition); ok {
					where, word = " in a JOIN's ON condition", "ON"
					break
				}
			}
		case *ast.GroupByClause:
			where, word = " in GROUP BY", "GROUP"
		case *ast.HavingClause:
			where, word = " in HAVING", "HAVING"
		case *ast.OrderByClause:
			where, word = " in ORDER BY", "ORDER"
		default:
			if sel.Where != nil && d.stack[k+1] == sel.Where {
				where, word = " in WHERE", "WHERE"
			}
		}
		break
	}
	return fmt.Sprintf("%s nested more than %d levels deep%s (the limit on SQL nesting: each operator, function call, parenthesis, CASE, subquery and join is a level)", what, MaxDepth, where), at, word, false
}
