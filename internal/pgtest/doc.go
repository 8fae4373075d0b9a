// Package pgtest runs a throwaway PostgreSQL server for tests: a new
// cluster (initdb) in a temporary directory, listening on 127.0.0.1 only
// on a free port, trust authentication, started from the PostgreSQL
// binaries installed on the machine (Debian's /usr/lib/postgresql/<v>/bin,
// or PG_BIN). PostgreSQL refuses to run as root: when the test runs as
// root, the server runs as the "postgres" user.
//
// The server is a child process of the test (on Linux it is killed when
// the test process dies). Stop, Kill and Start stop and restart it on the
// same directory and port, for tests of a database that goes away.
//
// It imports only the standard library, so end-to-end tests that share no
// code with the engine can use it; Query runs SQL through psql.
//
// Threading: a Server's methods are not safe for concurrent use, except
// DSN and Query.
package pgtest
