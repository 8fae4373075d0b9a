// Package planner compiles parsed SQL (package parser's AST) into plan data
// (package plan): it validates table definitions, binds names and types,
// builds the logical shape of a continuous query and lays it out as a
// physical graph (source -> calc -> window assignment -> hash exchange ->
// aggregation -> sink), inferring what each edge carries (append-only, or
// a changelog keyed or not: stream.go's changelog, plan.Edge.Kind). It
// plans pull queries over a view's results too (pull.go), their
// aggregation bound as a view's is (select.go's bindGrouped). For
// EXPLAIN it plans what the statement names
// (explain.go); the text is rendered by the plan itself (package plan's
// Explain methods). It is pure: no I/O, no goroutines; the catalog is
// passed in.
package planner
