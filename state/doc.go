// Package state owns persistence. Two Badger databases live under the data
// directory: "state" in managed mode (commit timestamp = checkpoint id) holds
// operator state, built-in results and checkpoint markers (Versioned); "meta"
// in normal mode holds the catalog, id sequences, HTTP-ingest logs and
// idempotency keys (Meta). They are kept apart because managed mode is
// per-DB. Beside the meta DB, in meta/highwater/, small high-water files
// (highwater.go) keep what its write-ahead log must not be able to lose
// silently: each ingest log's acknowledged end, each sequence's last
// value, and tombstones of drops in progress. An in-memory Versioned
// serves tests and benchmarks.
//
// Threading: every exported method is safe for concurrent use. Each ingest
// log has one appender goroutine that group-commits concurrent appends
// (and a short-lived one per group that syncs its high-water file while
// Badger syncs).
package state
