// Command streamsql is the streamsql server and its command-line client:
// `streamsql serve` runs the server, `streamsql sql` sends SQL to one (or,
// without arguments on a terminal, is an interactive shell), `streamsql
// bench` runs a Nexmark query in-process, and `streamsql version` says what
// was built. Flags, wiring, signals and the client's output only: the logic
// lives in the packages. docs/cli.md describes every command and flag.
//
// Files: main.go (dispatch, help, exit codes), serve.go (the server's
// flags, the bind check, TLS), sql.go (the SQL client: --addr, requests,
// errors with a caret), format.go (tables, expanded rows, CSV), shell.go
// (the interactive shell and statement ends), bench.go, version.go.
// Tests: cli_test.go runs the built binary (help and exit codes, version,
// sql against a real server over HTTP and HTTPS, the shell through a
// pty); the others test the pieces in-process.
package main
