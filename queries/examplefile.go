package queries

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// NexmarkSideInput is the side input file of Nexmark q13, relative to the
// data directory's files/, and its number of keys (0 to 9999, as
// auction % 10000 gives).
const (
	NexmarkSideInput     = "nexmark/q13/side_input.csv"
	NexmarkSideInputKeys = 10000
)

// NexmarkSideValue is the value of key k in NexmarkSideInput.
func NexmarkSideValue(k int64) string { return "value-" + strconv.FormatInt(k, 10) }

// WriteExampleFiles writes the files the examples read (q13's side input)
// under dataDir's files/, unless they are there.
func WriteExampleFiles(dataDir string) error {
	p := filepath.Join(FilesDir(dataDir), NexmarkSideInput)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	b := []byte("key,value\n")
	for k := int64(0); k < NexmarkSideInputKeys; k++ {
		b = strconv.AppendInt(b, k, 10)
		b = append(b, ',')
		b = append(b, NexmarkSideValue(k)...)
		b = append(b, '\n')
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
