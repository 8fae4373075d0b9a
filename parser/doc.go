// Package parser turns SQL text into streamsql's own statement AST. It is the
// only importer of the TiDB parser: it parses with it, treats its warnings as
// errors, converts the TiDB AST into the small AST below (ast.go), and rejects
// every construct streamsql does not run with an error that names it. Every
// statement keeps its original text (SHOW CREATE, catalog) and position.
// Where the TiDB AST does not tell enough, the statement's own text is read
// (text.go): EXPLAIN t from DESCRIBE t by the first keyword, EXPLAIN CREATE
// VIEW (which the TiDB parser has not), and where a misplaced hint sits.
// PostgreSQL's parameters ($1: the TiDB lexer reads a column name) become
// Param nodes before conversion (params.go), the text untouched.
//
// Threading: Parse is safe for concurrent use (a parser per call).
package parser
