// Package examples holds example SQL: the Nexmark queries that
// `streamsql bench` runs, one SELECT per file, named by file.
package examples

import "embed"

// FS holds the *.sql files.
//
//go:embed *.sql nexmark/*.sql
var FS embed.FS
