package planner

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
)

// TestCheckNames: names a statement creates are refused (400, naming the
// identifier) when empty, too long, not UTF-8, "." or "..", starting or
// ending with whitespace, holding a control, format (bidi, zero-width) or
// separator character, not in NFC, or, for tables and views, holding a
// path separator.
func TestCheckNames(t *testing.T) {
	long := strings.Repeat("a", MaxNameLen+1)
	for _, c := range []struct{ sql, want string }{
		{"CREATE TABLE `` (x BIGINT) ENGINE=http", `table name "" is empty`},
		{"CREATE TABLE `a/b` (x BIGINT) ENGINE=http", `table name "a/b" contains '/'`},
		{"CREATE TABLE `a\\b` (x BIGINT) ENGINE=http", `table name "a\\b" contains '\\'`},
		{"CREATE TABLE `a\x01b` (x BIGINT) ENGINE=http", `table name "a\x01b" contains the control character U+0001`},
		{"CREATE TABLE `a\u0085b` (x BIGINT) ENGINE=http", `contains the control character U+0085`},
		{"CREATE TABLE `a ` (x BIGINT) ENGINE=http", `table name "a " ends with a space`},
		{"CREATE TABLE `.` (x BIGINT) ENGINE=http", `table name "." is a path segment of its own`},
		{"CREATE TABLE `..` (x BIGINT) ENGINE=http", `table name ".." is a path segment of its own`},
		{"CREATE TABLE ` a` (x BIGINT) ENGINE=http", `table name " a" starts with the space character U+0020`},
		{"CREATE TABLE `\u3000a` (x BIGINT) ENGINE=http", `starts with the space character U+3000`},
		{"CREATE TABLE `a\u00a0` (x BIGINT) ENGINE=http", `ends with the space character U+00A0`},
		{"CREATE TABLE `a\u202eb` (x BIGINT) ENGINE=http", `table name "a\u202eb" contains the invisible format character U+202E`},
		{"CREATE TABLE `a\u200bb` (x BIGINT) ENGINE=http", `contains the invisible format character U+200B`},
		{"CREATE TABLE `\ufeffa` (x BIGINT) ENGINE=http", `contains the invisible format character U+FEFF`},
		{"CREATE TABLE `a\u2028b` (x BIGINT) ENGINE=http", `contains the line or paragraph separator U+2028`},
		{"CREATE TABLE `a\u2029b` (x BIGINT) ENGINE=http", `contains the line or paragraph separator U+2029`},
		{"CREATE TABLE `cafe\u0301` (x BIGINT) ENGINE=http", `is not in Unicode normalization form NFC ("cafe\u0301"; write it as "caf\u00e9", which looks the same)`},
		{"CREATE TABLE t (`\u212b` BIGINT) ENGINE=http", `is not in Unicode normalization form NFC ("\u212b"; write it as "\u00c5"`},
		{"CREATE TABLE t (`x\u200d` BIGINT) ENGINE=http", `column name "x\u200d" contains the invisible format character U+200D`},
		{"CREATE TABLE t (`..` BIGINT) ENGINE=http", `column name ".." is a path segment of its own`},
		{"CREATE TABLE `" + long + "` (x BIGINT) ENGINE=http", `table name "` + long[:MaxNameLen] + `"... is 129 bytes long, over the limit of 128`},
		{"CREATE TABLE t (`a\tb` BIGINT) ENGINE=http", `column name "a\tb" contains the control character U+0009`},
		{"CREATE TABLE t (`` BIGINT) ENGINE=http", `column name "" is empty`},
		{"CREATE TABLE t (`" + long + "` BIGINT) ENGINE=http", `column name "` + long[:MaxNameLen] + `"... is 129 bytes long`},
		{"CREATE TABLE t (`" + long[:64] + "` BIGINT, PRIMARY KEY (`" + long[:64] + "`)) ENGINE=postgres CONNECTION='postgres://h/db'", `over PostgreSQL's limit of 63`},
		{"CREATE TABLE `" + long[:64] + "` (x BIGINT, PRIMARY KEY (x)) ENGINE=postgres CONNECTION='postgres://h/db'", `name the PostgreSQL table with ENGINE_ATTRIBUTE table`},
		{`CREATE TABLE t (x BIGINT, PRIMARY KEY (x)) ENGINE=postgres CONNECTION='postgres://h/db' ENGINE_ATTRIBUTE='{"schema": "a\\u0000b"}'`, `ENGINE_ATTRIBUTE schema must be a PostgreSQL name of 1 to 63 bytes without control characters, not "a\x00b"`},
		{`CREATE TABLE t (x BIGINT, PRIMARY KEY (x)) ENGINE=postgres CONNECTION='postgres://h/db' ENGINE_ATTRIBUTE='{"table": "a\\nb"}'`, `ENGINE_ATTRIBUTE table must be a PostgreSQL name`},
		{`CREATE TABLE t (x BIGINT, PRIMARY KEY (x)) ENGINE=postgres CONNECTION='postgres://h/db' ENGINE_ATTRIBUTE='{"table": ""}'`, `ENGINE_ATTRIBUTE table must be a PostgreSQL name`},
		{`CREATE TABLE t (x BIGINT) ENGINE=kafka CONNECTION='h:9092' ENGINE_ATTRIBUTE='{"topic": "a/b"}'`, `ENGINE_ATTRIBUTE topic must be a Kafka topic name`},
	} {
		stmts, err := parser.Parse(c.sql)
		if err != nil {
			t.Fatalf("%q: %v", c.sql, err)
		}
		_, err = Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text)
		pe, ok := err.(*Error)
		if !ok || pe.Status != 400 || !strings.Contains(pe.Msg, c.want) {
			t.Errorf("%q: error %v, want 400 containing %q", c.sql, err, c.want)
		}
	}
	// Good names, at the limits.
	for _, sql := range []string{
		"CREATE TABLE `" + long[:MaxNameLen] + "` (`" + long[:MaxNameLen] + "` BIGINT) ENGINE=http",
		"CREATE TABLE `bids 2024` (`price (€)` BIGINT, `a.b` DOUBLE) ENGINE=http",
		"CREATE TABLE `caf\u00e9...` (`...` BIGINT, `.a` DOUBLE, `a b` BIGINT, `\u0645\u0631\u062d\u0628\u0627` BIGINT) ENGINE=http",
		"CREATE TABLE `" + long[:63] + "` (`" + long[:63] + "` BIGINT, PRIMARY KEY (`" + long[:63] + "`)) ENGINE=postgres CONNECTION='postgres://h/db'",
	} {
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatalf("%q: %v", sql, err)
		}
		if _, err := Table(stmts[0].Stmt.(*parser.CreateTable), stmts[0].Text); err != nil {
			t.Errorf("%q: %v", sql, err)
		}
	}
	// Aliases, in subqueries too; views are checked like tables.
	stmts, err := parser.Parse("SELECT a AS `x\ny` FROM (SELECT b AS `` FROM t) AS s")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckAliases(stmts[0].Stmt.(*parser.Select)); err == nil || !strings.Contains(err.Error(), `column name "x\ny" contains the control character U+000A`) {
		t.Errorf("alias: %v", err)
	}
	stmts, _ = parser.Parse("SELECT a FROM t JOIN (SELECT b AS `b ` FROM u) AS s ON a = b")
	if err := CheckAliases(stmts[0].Stmt.(*parser.Select)); err == nil || !strings.Contains(err.Error(), `column name "b " ends with a space`) {
		t.Errorf("alias in a joined subquery: %v", err)
	}
	if err := CheckName("view", "v/1"); err == nil || !strings.Contains(err.Error(), `view name "v/1" contains '/'`) {
		t.Errorf("view: %v", err)
	}
}
