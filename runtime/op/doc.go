// Package op holds the stream operators of a query and what they stand
// on: the Operator, TwoInput and Emitter interfaces, the batches and row
// metadata they pass (Batch, RowMeta, the Insert/Upsert/Delete/Before
// kinds of a changelog) and the barriers they see (Barrier); Build, the
// one place a plan.Op becomes an operator; the operators themselves
// (calc.go: filter and projection; agg.go, aggstate.go: windowed and
// running aggregation, its snapshot and restore; aggrows.go: a running
// aggregation over a slice of rows, for pull queries; acc.go: accumulators;
// retract.go: what aggregations over updating inputs keep; distinct.go:
// COUNT(DISTINCT) sets; join.go: interval join; temporal.go:
// stream-to-table join; cjoin.go: the join of updating inputs;
// normalize.go: a PRIMARY KEY table as a changelog; union.go: UNION ALL); the
// expression compiler (expr.go, like.go; functions from the registry in
// funcs/); the state an operator writes at a checkpoint (StateWriter,
// StateReader) and the state log's record encoding (statelog.go:
// LogWriter, LogRecords); state memory estimates (statemem.go) and typed
// heaps (heap.go); an operator's counters (Counters, late rows).
//
// Threading: an operator runs on one goroutine, its task's, and is not
// safe for concurrent use. The package is pure (arch_test.go): no I/O, no
// clock, no goroutines, no locks. Time comes in as watermarks, as the
// rows' RowMeta.WM and as Env.ProcTime, set by the task loop; output goes
// to the Emitter it is given. The task (package runtime) owns the
// channels, the clock, barriers, where state blocks are stored, and the
// counters it publishes.
package op
