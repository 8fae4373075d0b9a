// Package torture proves exactly-once delivery the way Kafka's and Flink's
// own suites do: it runs the real server (its binary, in a process of its
// own) with a Kafka-protocol broker (kfake, its own process) and
// PostgreSQL, creates views and sinks covering every window kind,
// aggregate and join kind, and queries over updating inputs (an
// aggregation and a filter over a running aggregate, an aggregation over
// a PRIMARY KEY table: changelog streams whose rows are taken back), in
// the three delivery modes, drives steady ingest
// over HTTP (chunks with Idempotency-Keys, resent until acknowledged) and
// Kafka (with aborted transactions among the committed records), kills the
// server with SIGKILL at random moments or arms a named fault point
// (internal/fault) for N cycles, and then compares the built-in results,
// the PostgreSQL tables and a read_committed read of the Kafka sink topics
// with an oracle: a batch evaluation of the same queries over the input,
// written here from the SQL's meaning, not from the engine. An
// at_most_once sink may lack rows (Lost, reported, not a failure) but
// must hold none twice and none the oracle lacks.
//
// The input is generated so that no row is ever late (each source's
// disorder is below its watermark delay) and every view is in changes
// mode: the final results then depend only on the set of rows, not on
// how a crash interleaved them, and the oracle needs no watermarks.
//
// cmd/streamsql-torture is the command; torture_test.go runs short runs
// (a few kills, and one crash at each fault point) in the README's test
// command.
//
// Threading: Run drives one server from a few goroutines of its own (the
// HTTP poster, the Kafka feeder, the kill loop); a Report is the caller's.
package torture
