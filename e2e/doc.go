// Package e2e holds the end-to-end tests of streamsql. They build the real
// server binary (./cmd/streamsql, once per test run, or take STREAMSQL_BIN),
// start it as a separate process on a loopback port, drive it over its HTTP
// API only, kill it with SIGKILL and restart it on the same data directory,
// and compare every view's committed results with an independent batch
// evaluation of the same query over the same input.
//
// Of the module the package imports only internal/pgtest (a throwaway
// PostgreSQL server), internal/kafkatest (a kfake Kafka broker in a
// process of its own, with produce and read_committed consume commands)
// and internal/storetest (a key count of a stopped server's meta store, in
// a process of its own), all themselves standard library only; beyond the
// standard library, hamba/avro (to write Avro records) and franz-go's
// srfake (a Schema Registry in the test process). It shares no code with
// the engine, so a misunderstanding of the semantics cannot be copied from
// one into the other (TestE2EImports at the repository root checks it).
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
//   - changelog_oracle_test.go: the changelog oracle (issue 18): a query
//     over a running aggregate is the batch evaluation of the inner query,
//     then of the outer over the inner's rows; a windowed aggregation over
//     a PRIMARY KEY table walks the table's changes (an upsert takes the
//     key's previous row out of its windows, a delete takes it out; a
//     change into a closed window is dropped and counted late). Witnesses
//     say, from the oracle's view of the input, that the answers depend on
//     rows taken back (an outer MIN's extreme, a COUNT(DISTINCT) value's
//     last row, a group leaving HAVING, a row leaving WHERE, a row moving
//     between windows), and hand-computed cases check both.
//   - changelog_test.go: queries over a running aggregate (aggregations
//     with every retracting aggregate over BIGINT, VARCHAR, TIMESTAMP,
//     DOUBLE and NULL values, HAVING, WHERE straight into the results and
//     feeding an aggregation, views three levels deep, a filter over a
//     view, one parallelism over the other) at parallelism 1 and 2,
//     checked after single chunks and single rows, after a SIGKILL right
//     after acknowledged rows, after a restart and at the end; a TUMBLE
//     aggregation over a PRIMARY KEY table in both emit modes, a running
//     aggregate and a filter over it (upserts moving rows between windows
//     and back in time, deletes, emptied windows, a flush row, then a late
//     delete and a late move counted in late_rows, and a delete with an
//     old time of a row in an open window, not late). Both tables' queries
//     under crash_test.go's random SIGKILLs too (TestChangelogCrash,
//     checked mid-stream against the prefix each checkpoint read).
//   - backup_test.go: the backups of docs/operations.md as written there:
//     stop and copy (SIGTERM, wait, cp -a), and the online copy of a paused
//     server (kill -STOP, cp -a, kill -CONT); a server on the copy serves
//     the original's results and goes on as it does.
//   - changes_test.go: a committed /changes reader through a SIGKILL: it
//     shows exactly the rows the restarted server reads at its marker, while
//     a latest reader had seen the counts the crash rolled back.
//   - badinput_test.go: bad input and limits, each case followed by a
//     health check: malformed SQL, bad identifiers and ENGINE_ATTRIBUTE,
//     conflicts; bad rows, over-long rows, deep JSON, wrong content types,
//     gzip bombs (TestBadInput); missing and wrong tokens, cross-origin
//     requests, unknown endpoints and methods, too-large bodies and
//     headers, too many streams, slow headers and bodies against a server
//     with --token (TestBadRequests); bad flags, addresses beyond loopback
//     without a token, unusable, locked data directories and a port in use
//     (TestBadConfig). RELIABILITY.md lists them with their answers.
//   - attack_http_test.go: attacks on the HTTP surface: DNS rebinding
//     against a server without a token (a foreign Host is refused on every
//     route, --allowed-host names are served), the passwords of sinks'
//     connection strings searched in every output and the server log while
//     a fake PostgreSQL server sees the sink send the real one (also after
//     a restart), 24 concurrent gzip bombs against /v1/login with the
//     server's VmHWM read from /proc, names in URLs (one unescape, case
//     as SQL's) and at CREATE, console sessions (logout, restart, Max-Age).
//   - crash_test.go: SIGKILL at random moments under load, every chunk
//     posted with an Idempotency-Key and resent after a crash; committed
//     results checked mid-stream against the log prefix their checkpoint
//     read, and at the end against the whole log. STREAMSQL_CRASH_KILLS=20
//     is the full run (default 3). The poster, killer and stopped-view
//     probe are shared with crash_join_test.go: the same over the two join
//     tables, with q7, q5, window and interval joins, views over views and
//     an aggregation over a join.
//   - metastore_test.go: the meta store under attack: one byte flipped in
//     its memtable write-ahead log after a SIGKILL loses the last
//     acknowledged request (the table ends at the acknowledged end, is
//     corrupt with the range lost in the API, the log and /metrics, new
//     rows never reuse the offsets; an old view counts every acknowledged
//     row, a new one what is left); a SIGKILL inside DROP TABLE (fault
//     point catalog.after_drop) and the next start removing every key of
//     the table's log (counted by internal/storetest, a process of its
//     own); an Idempotency-Key reused with other rows (422 naming it).
//   - restart_state_test.go: what GET /v1/queries shows after a restart
//     (SIGTERM, then SIGKILL twice) before any new row: the watermark it
//     had and the recent late rows of the late_rows it restores.
//   - torn_memtable_test.go: a restart after a SIGKILL that left an empty
//     Badger memtable file (one landing while Badger creates it).
//   - hang_test.go: a query that does not answer and a sink that hangs: a
//     view spinning in one batch (STREAMSQL_SPIN), a PostgreSQL sink whose
//     database is frozen with SIGSTOP, an INSERT waiting for that database
//     and a Kafka source on a server that never answers; every other API
//     call answers within a second meanwhile (one isolated call under two
//     seconds forgiven: a loaded machine), the spinning query fails
//     after --stall-timeout naming its task, and both can be dropped.
//   - values_test.go: values out of range and non-finite: TIMESTAMPs
//     beyond 0001-9999 at ingest and in arithmetic (NULL, counted in
//     out_of_range), NaN and Infinity apart from NULL in every output,
//     and the limits on statement size, nesting and columns.
//   - diskfull_writes_test.go: every write path on a full disk answers
//     507 and leaves queries as they were; a COUNT(DISTINCT) view whose
//     checkpoints failed for lack of space recovers by itself once it is
//     back.
//   - fault_test.go: one server per fault point of internal/fault
//     (STREAMSQL_FAULT), dying there by itself, restarted without it.
//   - diskfull_test.go: the data directory on a 96 MiB tmpfs (root only:
//     it mounts one), filled by ingest until 507, then by a filler file to
//     the last byte (checkpoints fail, recorded with the error, queries
//     retrying, the server up), then freed: ingest and checkpoints resume
//     by themselves, results equal the oracle over the acknowledged rows,
//     also after SIGKILL and restart; a start on a full disk is refused
//     naming it (not a SIGBUS in Badger), and works once space is back.
//   - pg_test.go: PostgreSQL UPSERT sinks (ENGINE=postgres, INSERT INTO
//     ... SELECT) against a real PostgreSQL server (internal/pgtest, one
//     per test run, a schema per sink, sessions in a TimeZone other than
//     UTC): the helpers that read a table back with psql into rows for
//     diffResult and check the progress records (one sink per schema,
//     each epoch once, increasing, reaching the checkpoint waited for);
//     windowed (TUMBLE, HOP with HAVING, sessions), running and join
//     queries (append-only with _row_id, an aggregation over a LEFT join)
//     in both delivery modes, checked halfway and at the end against the
//     oracle, then after rows that delete committed groups and sessions,
//     and with append-only sinks catching up with the whole log (large
//     epochs); the tables created (types, lower-case names, PRIMARY KEY);
//     what must be refused (a PRIMARY KEY other than the query's key,
//     bad ENGINE_ATTRIBUTE, an incompatible existing table, DROP TABLE of
//     a sink in use).
//   - pg_crash_test.go: PostgreSQL sinks through SIGKILL at random
//     moments under load (runSinkCrash, shared with the Kafka sinks:
//     crash_test.go's poster and killer; mid-stream,
//     an exactly-once table read with its last epoch equals the oracle
//     over that checkpoint's log prefix; no epoch of a failed checkpoint
//     committed), a crash at each sink fault point (sink.before_commit,
//     sink.after_commit), and PostgreSQL stopped and killed under load
//     (queries retrying, checkpoints going on, catching up by themselves).
//   - kafka_test.go: Kafka sources and sinks against a broker in its own
//     process (internal/kafkatest, one per test): a source table named
//     bids (the main scenario's views read it as they read the HTTP table)
//     over a topic of three partitions, records produced outside
//     transactions and in committed and aborted ones, undecodable ones
//     among them, rows never late (so the watermark's minimum over
//     partitions makes the order partitions are read in irrelevant): views
//     created before the topic exists (retrying), then equal to the oracle
//     over the committed decodable rows, metadata columns included;
//     bad_records and recent_bad_records; offsets and lag per partition; a
//     transaction left open (a checkpoint reads the other partitions); the
//     issue's Kafka-to-Kafka example. Sinks fed by the main scenario's
//     views in both delivery modes: the topic read read_committed, the
//     latest record per key (keys the primary key as a JSON object in key
//     order, values the row in column order, tombstones deleting) equal to
//     the oracle, the progress topic holding each epoch once, increasing;
//     an exactly-once topic read between two reads of its progress topic
//     showing the same last epoch is that epoch's state. What must be
//     refused (INSERT into a source, reading a sink, attributes).
//   - kafka_crash_test.go: SIGKILL at random moments while records are
//     produced (a view's committed results equal the oracle over exactly
//     the records below its checkpoint's offsets per partition; at the
//     end over all: no row twice, none missing), Kafka sinks under
//     SIGKILL (pg_crash_test.go's runner, shared) and at the sink fault
//     points (an epoch aborted by fencing, an epoch committed but not
//     acknowledged), and the broker stopped and killed between parts of
//     the log (queries retrying, naming the broker or topic, then running
//     again by themselves; nothing lost).
//   - formats_test.go: Kafka sources in Schema Registry formats, a format
//     being an entry of kafkaFormats (a codec: ENGINE_ATTRIBUTE members,
//     a row written as a record value in the current schema version, the
//     next version, undecodable values with the reasons they must get):
//     Avro through srfake with hamba/avro and the wire header written
//     here; Protobuf (formats_proto_test.go) with protocompile and
//     dynamicpb, the message-index list written here. TestKafkaFormatCrash: kafka_test.go's bids source in each
//     format, v1 records, then v2 (an optional field added) registered
//     after CREATE TABLE, bad records of the format, committed and
//     aborted transactions, under SIGKILLs: views checked before each
//     kill against the oracle over the records below their committed
//     checkpoint's offsets, and at the end.
//   - cdc_crash_test.go: TestKafkaChangeCrash: a Debezium topic of an
//     orders table (debezium_json: snapshot, inserts, updates, deletes
//     with their tombstones, deletes of ids never seen, aborted
//     transactions, bad records), an upsert topic of the same history
//     (upsert_json) and a JSON payments stream joined with the orders
//     (the join's rows and an aggregation over it, state_ttl 1h), and
//     the revenue per customer over each change topic, under SIGKILLs:
//     the oracle is the table state of the changes below a checkpoint's
//     offsets (each id in one partition), checked before each kill and
//     at the end (bad_records, offsets at the topics' ends).
//   - format_badinput_test.go: TestKafkaFormatBadInput: bad records of
//     each format and of both change formats between good ones: counted,
//     in recent_bad_records with their reasons, in the dead-letter topic
//     (read back with key, value and headers), the queries going on.
//   - file_crash_test.go: file sinks (ENGINE=file, NDJSON at an absolute
//     path, CSV under the data directory, partitioned by DATE_FORMAT of
//     the row) under SIGKILL (pg_crash_test.go's runner) and at the file
//     sink's fault points: every file parses whole, and the files hold
//     every row of the log exactly once (mid-stream: the epochs up to the
//     one recorded hold the prefix its checkpoint read).
//   - atmostonce_crash_test.go: at_most_once outputs under crash_test.go's
//     random SIGKILLs, barriers every 100ms and checkpoints every 2s:
//     PostgreSQL sinks (a trigger counts every write of a row) and a Kafka
//     topic, no row written twice, an at_least_once control written twice
//     (TestAtMostOnceCrash); views' built-in results with
//     delivery=at_most_once (an append-only passthrough, a window count at
//     parallelism 2) read through /changes by readers that reconnect to
//     each new process as it is launched, before it replays: no change
//     twice, every change in the oracle (the posted rows, their windows'
//     counts), the default-delivery control seeing changes again
//     (TestAtMostOnceResultsCrash).
//   - file_side_test.go: a CSV side input (ENGINE=file with a PRIMARY
//     KEY) joined AS OF the stream's time: the first version, a reload
//     polled in, a bad row (file_error, the table unchanged), a SIGKILL
//     and restart (no version logged twice).
//   - restart_bench_test.go: BenchmarkRestart1M, restart time and
//     checkpoint cost with the state of 1M rows (go test ./e2e -run XXX
//     -bench Restart1M -benchtime 1x).
//   - changelog_sinks_test.go: changelog_test.go's tables t and p into
//     PostgreSQL (exactly_once and at_least_once) and Kafka sinks
//     (exactly_once read read_committed; at_least_once folded to the
//     latest record per key, a tombstone deleting): an aggregation over a
//     running aggregate, HAVING over it, WHERE s > 0 over it (rows leave
//     the sink) and a TUMBLE aggregation over the PRIMARY KEY table
//     (rows moving between open windows, deletes, emptied windows), under
//     crash_test.go's random SIGKILLs (STREAMSQL_CRASH_KILLS); an
//     exactly-once sink checked mid-stream at its last epoch against the
//     oracle over its checkpoint's log prefix, every sink at the end over
//     the whole logs; witnesses first say the input takes rows back from
//     every sink.
//   - changelog_sql_oracle_test.go and changelog_sql_test.go: the SQL on
//     changelog streams (issue 18) over two tables at parallelism 1 and 2:
//     UNION ALL (of the tables, of two running aggregates on the same
//     keys: two rows, of a running aggregate and an append-only query),
//     UNION, running and TUMBLE aggregations over a UNION ALL (on close:
//     the windows the lower of the tables' watermarks has closed), SELECT
//     DISTINCT over a table and over a running aggregate (a value leaves
//     with its last row), WITH (a windowed CTE joined with itself, a CTE
//     reading an earlier one, an aggregation over a running aggregate
//     CTE), interval RIGHT JOINs (the LEFT join oracle with the sides
//     swapped, the columns as written) and regular joins with state_ttl
//     bounded on one side (0 <= l.ts - r.ts <= the TTL); checked after a
//     checkpoint with one table 15s ahead of the other and then the other
//     way round, after a SIGKILL right after acknowledged rows, after a
//     restart from a checkpoint and rows taking back its state, step by
//     step across a RIGHT JOIN's bound and the TTL's, and at the end;
//     the union's watermark step by step; the parallelism-2 queries under
//     crash_test.go's random SIGKILLs (TestSQLCrash, checked mid-stream
//     against the prefixes each checkpoint read); witnesses from the
//     oracle's side; refusals (422 naming the problem:
//     UNION ALL of other column counts or types, EXCEPT, INTERSECT, mixed
//     UNION, WITH RECURSIVE, a WITH query reading itself, a WITH column
//     list, DISTINCT with GROUP BY or aggregates).
//   - changelog_join_oracle_test.go, changelog_join_test.go: joins of
//     updating inputs (issue 18) against an oracle joining the inner
//     aggregations' current rows (nested loop, LEFT rows padded once): a
//     stream joined with a running aggregate (INNER, LEFT, an aggregation
//     over it; its rows expiring state_ttl behind the join's watermark keep
//     the rows they had), two running aggregates INNER and LEFT (NULL rows
//     taken back by a match and back when it goes, asserted), with a
//     residual, an aggregation over a LEFT join grouped by a right column
//     (NULL group included), a join on counts both sides update, running
//     views joined, a PRIMARY KEY table read as a changelog joined and
//     aggregated, a RIGHT JOIN; at parallelism 1 and 2, checked chunk by
//     chunk and row by row, after a SIGKILL right after acknowledged rows
//     and after one after a checkpoint, at the end and through the TTL;
//     at parallelism 2 under crash_test.go's random SIGKILLs too
//     (TestChangelogJoinCrash, checked mid-stream against the prefixes
//     each checkpoint read).
//
// Run with
//
//	go test ./e2e/
//	STREAMSQL_BIN=/path/to/streamsql go test ./e2e/
//	E2E_SEED=42 go test ./e2e/ -run TestViews
//	STREAMSQL_CRASH_KILLS=20 go test ./e2e/ -run 'TestCrashRecovery(Joins)?$' -v
//	STREAMSQL_CRASH_KILLS=20 go test ./e2e/ -run TestPGCrashRecovery -v
//	go test ./e2e/ -run 'PG|Postgres' -v
//	go test ./e2e/ -run Kafka -v
//	STREAMSQL_CRASH_KILLS=20 go test ./e2e/ -run 'TestKafka(SourceCrash|SinkCrashRecovery)' -v
//	STREAMSQL_CRASH_KILLS=20 go test ./e2e/ -run 'TestKafka(FormatCrash|ChangeCrash)' -v
package e2e
