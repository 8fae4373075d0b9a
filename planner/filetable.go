package planner

import (
	"path"
	"strings"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner/plan"
)

// File tables (ENGINE=file, docs/connectors.md): without a PRIMARY KEY a
// sink that INSERT INTO writes as files under "path"; with one a side
// input read from the file at "path", the table side of stream-to-table
// joins.

// fileSinkFormats and fileSourceFormats are the formats of each role.
var (
	fileSinkFormats   = []string{"ndjson", "csv", "parquet"}
	fileSourceFormats = []string{"ndjson", "csv"}
)

// checkFileTable checks the ENGINE_ATTRIBUTE of an ENGINE=file table
// (def.Attrs, already read) and fills in the default format.
func checkFileTable(def *plan.TableDef) error {
	p, ok := def.Attrs["path"]
	if !ok || p == "" {
		return errf("path", "ENGINE=file table %s needs ENGINE_ATTRIBUTE path: an absolute path, or one relative to the data directory's files/ directory", def.Name)
	}
	if err := checkFilePath(p); err != "" {
		return badf("path", "ENGINE_ATTRIBUTE path of %s: %s", def.Name, err)
	}
	formats := fileSourceFormats
	if def.IsSink() {
		formats = fileSinkFormats
	}
	f := def.Attrs["format"]
	if f == "" {
		f = "ndjson"
		def.Attrs["format"] = f
	}
	if !contains(formats, f) {
		role := "a side input (it has a PRIMARY KEY)"
		if def.IsSink() {
			role = "a sink (it has no PRIMARY KEY)"
		}
		return badf("format", "ENGINE_ATTRIBUTE format of file table %s, %s, must be %s, not %q", def.Name, role, orList(formats), f)
	}
	if def.StartLatest && !def.IsSink() {
		return errf("start", "ENGINE_ATTRIBUTE start of side input %s: a query reads a side input from its first version (start latest would miss the rows that have not changed since)", def.Name)
	}
	if d, set := def.Attrs["delivery"]; set {
		switch {
		case !def.IsSink():
			return errf("delivery", "ENGINE_ATTRIBUTE delivery is for file sinks (tables without a PRIMARY KEY); %s is a side input", def.Name)
		case d == "at_least_once":
			return errf("delivery", "ENGINE_ATTRIBUTE delivery of file sink %s must be exactly_once (the default) or at_most_once, not at_least_once: files are never changed, so a write repeated after a crash would be a second copy of its rows that no reader can tell apart", def.Name)
		}
	}
	if b, set := def.Attrs["bounded"]; set {
		if def.IsSink() {
			return errf("bounded", "ENGINE_ATTRIBUTE bounded is for file side inputs (tables with a PRIMARY KEY); %s is a sink", def.Name)
		}
		if b != "true" && b != "false" {
			return badf("bounded", "ENGINE_ATTRIBUTE bounded must be true or false, not %q", b)
		}
	}
	if _, set := def.Attrs["partition_by"]; !set {
		return nil
	}
	if !def.IsSink() {
		return errf("partition_by", "ENGINE_ATTRIBUTE partition_by is for file sinks; %s has a PRIMARY KEY, so it is a side input read from one file", def.Name)
	}
	_, _, err := FilePartitions(def)
	return err
}

// FilePartitions binds file sink def's partition_by: a list of
// expressions over its columns, as a SELECT list (a column, or an
// expression such as DATE_FORMAT(ts, '%Y-%m-%d') AS dt), each a directory
// level. names[i] is the level's name (the column, or the alias; "" for
// an expression without one: the level is its value alone).
func FilePartitions(def *plan.TableDef) (exprs []plan.Expr, names []string, err error) {
	pb := def.Attrs["partition_by"]
	if strings.TrimSpace(pb) == "" {
		return nil, nil, nil
	}
	bad := func(format string, args ...any) error {
		return errf("partition_by", "ENGINE_ATTRIBUTE partition_by of %s: "+format, append([]any{def.Name}, args...)...)
	}
	stmts, perr := parser.Parse("SELECT " + pb + " FROM t")
	var sel *parser.Select
	if perr == nil && len(stmts) == 1 {
		sel, _ = stmts[0].Stmt.(*parser.Select)
	}
	if sel == nil || len(sel.Fields) == 0 || sel.Where != nil || len(sel.GroupBy) > 0 {
		return nil, nil, bad("not a list of expressions over its columns (%q; e.g. \"dt, hm\" or \"DATE_FORMAT(ts, '%%Y-%%m-%%d') AS dt\")", pb)
	}
	sc := newScope(def.Name, def.Columns)
	seen := map[string]bool{}
	for _, f := range sel.Fields {
		if f.Star {
			return nil, nil, bad("* is not a partition")
		}
		e, berr := sc.bind(f.Expr)
		if berr != nil {
			return nil, nil, bad("%v (partition_by names columns of %s, or expressions over them)", berrMsg(berr), def.Name)
		}
		if c := nondeterministic(e); c != "" {
			return nil, nil, bad("%s is not a function of the row: a re-commit after a crash must make the same files", c)
		}
		name := f.Alias
		if c, ok := f.Expr.(*parser.ColumnRef); ok && name == "" {
			name = def.Columns[def.Columns.Index(c.Name)].Name
		}
		if name != "" {
			if seen[strings.ToLower(name)] {
				return nil, nil, bad("names %s twice", name)
			}
			seen[strings.ToLower(name)] = true
		}
		exprs, names = append(exprs, e), append(names, name)
	}
	return exprs, names, nil
}

// berrMsg is a binding error's message without its statement context.
func berrMsg(err error) string {
	if pe, ok := err.(*Error); ok {
		return pe.Msg
	}
	return err.Error()
}

// nondeterministic names a call in e whose value is not a function of the
// row ("": none).
func nondeterministic(e plan.Expr) string {
	c, ok := e.(*plan.Call)
	if !ok {
		return ""
	}
	switch strings.ToLower(c.Fn) {
	case "proctime", "now", "current_timestamp", "rand", "uuid":
		return strings.ToUpper(c.Fn) + "()"
	}
	for _, a := range c.Args {
		if n := nondeterministic(a); n != "" {
			return n
		}
	}
	return ""
}

// checkFilePath says what is wrong with path p of a file table ("": nothing).
// An absolute path is taken as it is (cleaned); a relative one is under
// the data directory's files/ and may not leave it.
func checkFilePath(p string) string {
	if strings.ContainsRune(p, 0) {
		return "it contains a NUL byte"
	}
	if strings.HasPrefix(p, "/") {
		return ""
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return "a relative path is under the data directory's files/ directory and may not contain .. (use an absolute path)"
		}
	}
	if c := path.Clean(p); c == "." {
		return "it names the files/ directory itself; name a directory or file under it"
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// checkFileInsert checks that the query g written into file sink t is
// append-only: a file is written once, so it cannot take a row back.
func checkFileInsert(g *plan.Graph, t *plan.TableDef) error {
	if g.Key != plan.KeyRowID {
		return errf(t.Name, "INSERT INTO %s: file sinks take append-only queries (files are written once and never changed), and this query updates its rows on its upsert key (%s); write it to a PostgreSQL or Kafka sink table instead", t.Name, keyNames(g))
	}
	if d := t.Attrs["delivery"]; !t.IsSink() || d != "exactly_once" && d != "at_most_once" {
		return errf(t.Name, "INSERT INTO %s: file sinks are exactly_once or at_most_once", t.Name)
	}
	return nil
}

// orList is "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
