// Package examples holds example SQL: the Nexmark queries that
// `streamsql bench` runs, one query per file (a SELECT, or an INSERT INTO
// a table the CREATE TABLE statements before it make), named by file.
package examples

import "embed"

// FS holds the *.sql files.
//
//go:embed *.sql nexmark/*.sql
var FS embed.FS
