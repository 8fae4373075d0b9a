// Package e2e holds the end-to-end tests of streamsql. They build the real
// server binary (./cmd/streamsql, once per test run, or take STREAMSQL_BIN),
// start it as a separate process on a loopback port, drive it over its HTTP
// API only, kill it with SIGKILL and restart it on the same data directory,
// and compare every view's committed results with an independent batch
// evaluation of the same query over the same input.
//
// The package imports only the standard library: it shares no code with the
// engine, so a misunderstanding of the semantics cannot be copied from one
// into the other.
//
// Layout:
//
//   - oracle_test.go: the batch evaluator (windows, watermarks, lateness,
//     sessions, aggregates, HAVING, emit modes). It knows nothing about HTTP.
//   - compare_test.go: compares an expected result with rows decoded from
//     the server's JSON (unordered, keyed by the upsert key, DOUBLE with a
//     relative tolerance of 1e-9, TIMESTAMP as RFC 3339 UTC with milliseconds).
//   - oracle_check_test.go: hand-computed cases for the oracle and the
//     comparison themselves; they need no server.
//   - harness_test.go: building, starting, killing and restarting the server,
//     and one helper per API call. procattr_*_test.go make the kernel kill a
//     server whose test process died without cleaning up (Linux).
//   - engine_test.go: the main scenario (many views on one table, parallelism
//     1 and 2, emit modes changes and on_window_close), restarts and kills.
//   - join_oracle_test.go: the interval join oracle (a nested loop over
//     both logs evaluating the ON condition; LEFT rows padded with NULLs
//     once the right watermark is past their bound) and its hand-computed
//     cases.
//   - join_test.go: interval join views over two tables (INNER, residual,
//     strict and negative bounds, LEFT, an aggregation over a join) at
//     parallelism 1 and 2, through SIGKILL and restart; state shrinking
//     once the bounds pass; the LEFT join's exact watermark boundary; the
//     watermarks a join query reports; join SQL that must be refused.
//   - badinput_test.go: malformed SQL and ingest requests, conflicts.
//   - crash_test.go: SIGKILL at random moments under load, every chunk
//     posted with an Idempotency-Key and resent after a crash; committed
//     results checked mid-stream against the log prefix their checkpoint
//     read, and at the end against the whole log. STREAMSQL_CRASH_KILLS=20
//     is the full run (default 3).
//   - fault_test.go: one server per fault point of internal/fault
//     (STREAMSQL_FAULT), dying there by itself, restarted without it.
//   - restart_bench_test.go: BenchmarkRestart1M, restart time and
//     checkpoint cost with the state of 1M rows (go test ./e2e -run XXX
//     -bench Restart1M -benchtime 1x).
//
// Run with
//
//	go test ./e2e/
//	STREAMSQL_BIN=/path/to/streamsql go test ./e2e/
//	E2E_SEED=42 go test ./e2e/ -run TestViews
//	STREAMSQL_CRASH_KILLS=20 go test ./e2e/ -run TestCrashRecovery -v
package e2e
