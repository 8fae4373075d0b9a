// Package funcs is the function registry: a table (table.go, and
// table_text.go for the string, regular expression and JSON functions of
// strings.go, regexp.go and json.go) of every SQL scalar and aggregate
// function with its names, arity, type rule, NULL behaviour and
// implementation. The planner binds calls by it
// (Lookup, Func.Result, Func.Bind) and the runtime's expression compiler
// evaluates them by it (ByFn, Func.Compile), so the two cannot disagree
// on a name. Aggregates are named with their type rules; their
// accumulators stay in runtime/op (acc.go). It also holds the value
// semantics functions share with the operators: comparison (Compare),
// casts (Cast), conversions (ToString, ToFloat, ToInt) and BIGINT
// arithmetic with overflow (AddInt, SubInt, MulInt).
//
// It sits below both planner and runtime (planner may not import
// runtime), beside window: it imports planner/plan and the standard
// library only, and is pure (arch_test.go: no clock, no goroutines, no
// I/O).
//
// Threading: the registry is built at init and read-only after; a
// compiled Eval is used by one goroutine (its task's), and its Env is
// that task's: what the Evals of one task share through it (compiled
// constant patterns and their last search, regexp.go) needs no lock.
package funcs
