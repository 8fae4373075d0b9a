// Package plan holds plan data only: SQL types and values, schemas, typed
// expressions, and the physical operator graph that the planner produces and
// the runtime builds tasks from, and its EXPLAIN text (the Explain methods
// of Graph, its operators and PullQuery). Everything here is immutable once built and
// safe to share between goroutines. It imports neither tidb nor badger.
package plan
