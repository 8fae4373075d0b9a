package queries

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/streamsql/streamsql/parser"
)

// exampleParts is an example split into the statements that set it up
// (CREATE TABLE of the file sink it writes or the side input it reads:
// Nexmark q10, q13) and its query: a SELECT, or INSERT INTO Sink SELECT.
type exampleParts struct {
	Setup  string // statements before the query, each ending in ";\n" ("": none)
	Select string // the query's SELECT, as written
	Sink   string // the table an INSERT writes ("": a SELECT)
	Sel    *parser.Select
}

var insertHead = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\s+\S+\s+`)

// splitExample splits the text of an example: any CREATE TABLE
// statements, then one SELECT or INSERT INTO ... SELECT.
func splitExample(name string, text []byte) (exampleParts, error) {
	stmts, err := parser.Parse(string(text))
	if err != nil {
		return exampleParts{}, fmt.Errorf("example %s: %w", name, err)
	}
	if len(stmts) == 0 {
		return exampleParts{}, fmt.Errorf("example %s has no statement", name)
	}
	var p exampleParts
	var setup strings.Builder
	for _, st := range stmts[:len(stmts)-1] {
		if _, ok := st.Stmt.(*parser.CreateTable); !ok {
			return exampleParts{}, fmt.Errorf("example %s: only CREATE TABLE statements may come before its query", name)
		}
		setup.WriteString(st.Text + ";\n")
	}
	p.Setup = setup.String()
	last := stmts[len(stmts)-1]
	switch s := last.Stmt.(type) {
	case *parser.Select:
		p.Select, p.Sel = last.Text, s
	case *parser.Insert:
		head := insertHead.FindString(last.Text)
		if head == "" {
			return exampleParts{}, fmt.Errorf("example %s: cannot find the SELECT of its INSERT", name)
		}
		p.Select, p.Sel, p.Sink = last.Text[len(head):], s.Select, s.Table
	default:
		return exampleParts{}, fmt.Errorf("example %s does not end in a SELECT or an INSERT INTO ... SELECT", name)
	}
	return p, nil
}

// exampleQuery reads example name and splits it.
func exampleQuery(name string) (exampleParts, error) {
	text, err := exampleSQL(name)
	if err != nil {
		return exampleParts{}, err
	}
	return splitExample(name, text)
}
