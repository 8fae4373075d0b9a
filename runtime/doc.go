// Package runtime runs continuous queries: it builds tasks from a plan
// graph (Job.build; op.Build is the one place specs become operators),
// moves batches between them through bounded mailboxes, injects barriers
// from a per-query coordinator, aligns them at tasks with several inputs,
// and completes checkpoints by committing a marker in the versioned store.
// The checkpoint protocol itself is the pure state machine of runtime/ckpt;
// coordinate (coordinator.go) is its driver: it feeds it ticks, acks and
// requests and performs what it answers.
//
// Threading: one goroutine per task (and, from its first checkpoint, its
// state writer: taskBase.writeLoop, which writes the operators' and the
// sink's checkpoint writes) plus one coordinator per job, and one
// committer per job with an external sink (extsink.go: it does the
// external system's I/O, so a slow database never blocks a task except
// through the journal's bound).
// Operators (package runtime/op: calc, hashAgg, the joins, expressions)
// are deterministic and run only on their task's goroutine: no goroutines,
// no clock reads, no I/O; the task loop (task.go, chain.go: the chain of a
// task's operators and its terminal, counting rows between them with
// atomics the metrics read) owns channels, time (op.Env.ProcTime,
// watermarks), barriers and where the operators' state log blocks are
// stored (statelog.go; the records are op.LogWriter's). Sources
// (readers) and sinks do I/O on their task's goroutine. The readers are
// this package's (Reader), but which one a source gets is the server's
// choice (Deps.Reader, by ENGINE), as is an external sink's publisher
// (Deps.Publisher). Results is shared
// with API readers behind a mutex; Job's exported methods are safe for
// concurrent use.
package runtime
