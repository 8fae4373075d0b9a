// Package sink defines what the runtime asks of an external sink's
// publisher (PostgreSQL in runtime/sink/postgres, Kafka in
// runtime/sink/kafka): writing one epoch's changes together with a
// progress record in one transaction of the external system, reading
// that progress back, and applying changes at least once. The runtime
// owns everything else: journaling each epoch's changes in the
// checkpoint, deduplicating them per key, deciding which epochs to
// publish after a restart, retrying, backpressure (runtime/extsink.go).
//
// Threading: a Publisher is used by one goroutine at a time (the query's
// committer); it does blocking I/O and honours its context.
package sink
