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
//   - compose_oracle_test.go: the composition oracle: windowed stages
//     (a window is out of k stages once the table's watermark reaches
//     window_end + k * allowed_lateness), batch GROUP BY and nested-loop
//     joins over what a stage emitted.
//   - compose_test.go: composed queries over the two join tables at
//     parallelism 1 and 2: Nexmark q7 and q5, INNER and LEFT window joins
//     of windowed subqueries, views over views (a cascading aggregation in
//     both emit modes, three levels, a LEFT interval join with a view),
//     checked halfway, after SIGKILL and restart, step by step across the
//     watermark boundaries where windows come out of one and two stages and
//     NULL rows come due, and after flush rows; DROP VIEW of a view others
//     read (409 naming them), what cannot feed another query (422); a view
//     reading a view whose name sorts after its own, through a restart.
//   - badinput_test.go: malformed SQL and ingest requests, conflicts.
//   - crash_test.go: SIGKILL at random moments under load, every chunk
//     posted with an Idempotency-Key and resent after a crash; committed
//     results checked mid-stream against the log prefix their checkpoint
//     read, and at the end against the whole log. STREAMSQL_CRASH_KILLS=20
//     is the full run (default 3). The poster, killer and stopped-view
//     probe are shared with crash_join_test.go: the same over the two join
//     tables, with q7, q5, window and interval joins, views over views and
//     an aggregation over a join.
//   - torn_memtable_test.go: a restart after a SIGKILL that left an empty
//     Badger memtable file (one landing while Badger creates it).
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
//	STREAMSQL_CRASH_KILLS=20 go test ./e2e/ -run 'TestCrashRecovery(Joins)?$' -v
package e2e
