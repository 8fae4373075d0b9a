// Package ckpt is the checkpoint protocol of a query as a pure state
// machine (Coordinator): which barrier to inject and when, which acks
// count, when a checkpoint's marker is committed, when one has failed or
// timed out, and which checkpoint requests are answered with what.
//
// It owns no goroutine, reads no clock and does no I/O: every input
// carries the time it happened at, checkpoint ids come from Config.NextID,
// and every effect (sending a barrier, committing a marker, recording
// history, answering a request) is an Output the caller performs. The
// driver loop that feeds it ticks and acks is runtime's coordinate
// (runtime/coordinator.go), on the job's coordinator goroutine; a
// Coordinator is used by that one goroutine only.
//
// The scripts in testdata/ drive it input by input; they are
// github.com/cockroachdb/datadriven files (go test ./runtime/ckpt -rewrite
// rewrites their expected outputs).
package ckpt
