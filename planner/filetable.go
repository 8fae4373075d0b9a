package planner

import (
	"path"
	"strings"

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
	if b, set := def.Attrs["bounded"]; set {
		if def.IsSink() {
			return errf("bounded", "ENGINE_ATTRIBUTE bounded is for file side inputs (tables with a PRIMARY KEY); %s is a sink", def.Name)
		}
		if b != "true" && b != "false" {
			return badf("bounded", "ENGINE_ATTRIBUTE bounded must be true or false, not %q", b)
		}
	}
	pb, set := def.Attrs["partition_by"]
	if !set {
		return nil
	}
	if !def.IsSink() {
		return errf("partition_by", "ENGINE_ATTRIBUTE partition_by is for file sinks; %s has a PRIMARY KEY, so it is a side input read from one file", def.Name)
	}
	var cols []string
	for _, c := range strings.Split(pb, ",") {
		c = strings.TrimSpace(c)
		i := def.Columns.Index(c)
		if i < 0 {
			return errf("partition_by", "ENGINE_ATTRIBUTE partition_by of %s: %q is not a column of %s (partition_by names columns, comma-separated; compute a partition value, e.g. DATE_FORMAT(ts, '%%Y-%%m-%%d'), as a column in the INSERT's SELECT)", def.Name, c, def.Name)
		}
		name := def.Columns[i].Name
		if contains(cols, name) {
			return errf("partition_by", "ENGINE_ATTRIBUTE partition_by of %s names column %s twice", def.Name, name)
		}
		cols = append(cols, name)
	}
	def.Attrs["partition_by"] = strings.Join(cols, ",")
	return nil
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
		return errf(t.Name, "INSERT INTO %s: file sinks take append-only queries (files are written once and never changed), and this query updates its rows on its upsert key (%s); write it to a PostgreSQL or Kafka sink, or aggregate in windows emitted on close into a table read by an append-only query", t.Name, keyNames(g))
	}
	if !t.IsSink() || t.Attrs["delivery"] != "exactly_once" {
		return errf(t.Name, "INSERT INTO %s: file sinks are exactly_once", t.Name)
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
