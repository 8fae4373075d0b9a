// Package pgwire serves the engine over the PostgreSQL wire protocol
// (protocol 3.0; docs/pgwire.md), beside the HTTP API: `serve --pg-addr`.
// Messages are read and written with github.com/jackc/pgx/v5/pgproto3;
// this package owns the protocol's states and what a message means:
//
//   - server.go: the listener, the connections it tracks and closes at
//     Close, the startup (SSLRequest with a TLS upgrade when configured,
//     GSSENCRequest refused, CancelRequest, StartupMessage), the
//     ParameterStatus values drivers expect, and cancelling: the
//     registry of BackendKeyData (process ID -> secret and the cancel of
//     the message being answered), the check between row batches;
//   - auth.go: the password check when there is a --token: the SCRAM
//     credential derived from it at New, SCRAM-SHA-256 (and -PLUS over
//     TLS) with github.com/xdg-go/scram, cleartext over TLS as an option;
//   - tx.go: BEGIN, COMMIT, ROLLBACK and ReadyForQuery's status (idle, in
//     a block, failed block), answered before the engine;
//   - query.go: the simple query protocol and the extended one (Parse,
//     Bind, Describe, Execute with row limits, Close, Sync, Flush; named
//     and unnamed statements and portals), statements run through
//     queries.Engine.ExecWith as POST /v1/sql runs them, with Bind's
//     parameters; Parse plans a statement (queries.Engine.Prepare) and
//     Describe answers from that plan, running nothing;
//   - params.go: the parameters' type OIDs (declared, or inferred by the
//     engine) and Bind's values decoded by type and format;
//   - session.go: the client and session statements answered here and
//     never sent to the engine (SELECT version(), current_database(),
//     current_schema(), SHOW of the reported parameters, SET of session
//     parameters, SET and SHOW consistency: the engine's setting of pull
//     queries, kept per connection and passed with every statement),
//     recognized by their exact shape, never rewritten;
//   - catalog.go: the catalog statements of psql and Grafana (pg_catalog,
//     information_schema), recognized by the fingerprints of the
//     statements recorded from them (clientsql/, embedded) and answered
//     from the engine's tables and views, never rewritten;
//   - pgsql.go: PostgreSQL's tokens and a statement's fingerprint;
//   - encode.go: column types (OIDs), values in text and binary formats,
//     engine errors as ErrorResponse with a SQLSTATE and a Position.
//
// Threading: one goroutine per connection (started by Serve, counted in
// the server's WaitGroup), which reads a message, answers it and reads
// the next; the engine is shared by every connection (it is safe for
// concurrent use). A CancelRequest comes on a connection of its own, whose
// goroutine calls the cancel of another connection's message under that
// key's lock. While a statement runs in the engine, one more
// goroutine reads the connection (conn.watch) so that a client that
// leaves cancels the statement's context; it is stopped (a read deadline
// in the past) and waited for before the connection is read or written
// again, and a byte it read goes to the next message. A connection's
// context is cancelled when its goroutine returns and when the server
// closes; a panic on a connection's goroutine ends that connection only
// (recovered and logged in serveConn); Close closes the listeners and every connection and waits for
// their goroutines.
package pgwire
