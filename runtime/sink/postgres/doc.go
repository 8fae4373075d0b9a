// Package postgres is the PostgreSQL publisher of external UPSERT sinks
// (ENGINE=postgres): it implements sink.Publisher with pgx.
//
// It owns, in the target database: the sink's table (checked against the
// sink's columns and primary key at every Open, or created when the sink
// says "create_table": true), and the progress table
// <schema>.streamsql_sink_progress (sink_id, epoch, committed_at), one row
// per committed epoch of an exactly-once sink, created when missing. An
// epoch's upserts, deletes and progress row are written in one
// transaction, the progress row first, so an epoch is either wholly there
// with its progress row or not at all, and a repeated epoch fails on the
// progress row's key (sink.ErrCommitted) before changing anything.
//
// Writes go through one statement per kind of change: small batches bind
// the rows as arrays (INSERT ... SELECT FROM unnest(...) ON CONFLICT, and
// DELETE ... USING unnest(...)), large ones COPY them into a temporary
// table first (stageThreshold). The session's TimeZone is UTC, so a
// TIMESTAMP is written as its UTC instant into timestamptz and as UTC wall
// time into timestamp without time zone. A DOUBLE goes to a numeric
// column as its shortest exact decimal text.
//
// Errors: a connection string pgx cannot parse, a target table that does
// not match the sink, and data the table refuses (a NULL in a NOT NULL
// column, a string too long for a varchar(n)) are permanent
// (sink.Permanent); everything else (connection failures, timeouts, a
// server starting up or shutting down, lock and serialization failures)
// is retryable. After any error but sink.ErrCommitted the connection is
// closed, and the next call connects again and checks the table again.
// A commit whose outcome is unknown (the connection broke during COMMIT)
// is reported as an error: the caller reads Committed to learn it.
//
// Threading: a Publisher is used by one goroutine at a time (the query's
// committer), like every sink.Publisher; its methods block on the network
// and honour their context, with deadlines of their own on top.
package postgres
