package e2e

// Crash recovery of joins and composed queries: TestCrashRecovery's
// machinery (crashPoster, runKills, stopProbe in crash_test.go) over the
// two tables of the join tests, posted in joinData's interleaved plan.

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// joinCrashChunks cuts d's posting plan into chunks of at most size rows
// (each step's rows in order), keyed per table.
func joinCrashChunks(t *testing.T, d joinData, size int, prefix string) []idemChunk {
	t.Helper()
	var out []idemChunk
	next := map[string]int{}
	for _, s := range d.steps {
		all := d.bids
		if s.table == "auctions" {
			all = d.auctions
		}
		from := next[s.table]
		for start := from; start < from+s.n; start += size {
			part := all[start:min(start+size, from+s.n)]
			out = append(out, idemChunk{table: s.table, key: prefix + "-" + s.table + "-" + strconv.Itoa(len(out)),
				first: start, rows: part, body: ndjson(t, wireRows(part, start))})
		}
		next[s.table] = from + s.n
	}
	return out
}

// TestCrashRecoveryJoins is TestCrashRecovery for joins and composed
// queries: q7 and q5, the LEFT window join, the base view and the LEFT
// join of auctions with it, an INNER and a LEFT interval join and an
// aggregation over a join, at parallelism 2, checkpointing every 200ms,
// while chunks of both tables (and at the end the flush rows) are posted
// with Idempotency-Keys and the server is SIGKILLed at random moments.
// Before each kill two random views reading each table once are checked
// against the oracle over the log prefixes their committed checkpoint
// read (q7 and q5 read bids twice: the offsets, recorded per table, do not
// say which rows each source had read); one view is stopped across a
// restart (stopProbe). At the end every view must equal the oracle over
// both logs.
func TestCrashRecoveryJoins(t *testing.T) {
	begin := time.Now()
	kills := crashKills(t)
	seed := testSeed(t, 20)
	data := genJoinData(seed, max(crashMinRows, kills*crashRowsPerKill))
	bid, auction := flushRows(data)
	data.bids, data.auctions = append(data.bids, bid), append(data.auctions, auction)
	data.steps = append(data.steps, postStep{"bids", 1}, postStep{"auctions", 1})

	views := []dualView{composeViewByBase("q7", 2), composeViewByBase("q5", 2)}
	// Composed views reading each table once, so checked mid-stream too:
	// watermarks held back through windowed stages, NULL rows of LEFT joins
	// over them.
	for _, base := range []string{"wjoin_left", "base", "joined"} {
		views = append(views, composeViewByBase(base, 2))
	}
	for _, d := range joinViewsByBase("j_inner", "j_left", "j_agg") {
		views = append(views, joinInstance{name: d.base + "_p2", def: d, parallelism: 2}.dual())
	}
	sc := newDualScenario(t, data, views, "--checkpoint-interval", "200ms")
	srv := sc.srv
	chunks := joinCrashChunks(t, data, crashChunkRows, "crashjoin")
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	poster := startCrashPoster(t, srv, chunks, kills)

	var checkable []dualView
	for _, v := range views {
		if v.prefixCheckable() {
			checkable = append(checkable, v)
		}
	}
	prefixChecks := 0
	var probe stopProbe
	ks := runKills(t, srv, poster, kills, rng, crashHooks{
		beforeKill: func(k int) {
			for range 2 {
				v := checkable[rng.IntN(len(checkable))]
				if !probe.holds(v.name) && sc.checkCommittedPrefix(t, v) {
					prefixChecks++
				}
			}
			probe.beforeKill(t, srv, k, kills, func() string { return views[rng.IntN(len(views))].name })
		},
		afterRestart: func(k int) { probe.afterRestart(t, srv, k) },
	})
	poster.wait(t)

	for table, rows := range map[string][]Row{"bids": data.bids, "auctions": data.auctions} {
		if end, ok := srv.endOffset(t, table); !ok || end != int64(len(rows)) {
			t.Errorf("table %s: end_offset %d (reported: %v), want %d: every row exactly once", table, end, ok, len(rows))
		}
		sc.js.posted[table] = rows
	}
	srv.waitRunning(t, sc.names()...)
	counts := sc.verify(t, "final")
	t.Logf("crash recovery (joins) summary: kills=%d (under load %d, aimed at a request %d) mid-stream checks=%d bids=%d auctions=%d chunks=%d resends=%d replayed=%d views=%d expected rows %v posting=%v elapsed=%v",
		kills, ks.underLoad, ks.aimed, prefixChecks, len(data.bids), len(data.auctions), len(chunks), poster.stats.resends, poster.stats.replayed,
		len(views), counts, poster.took.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// checkCommittedPrefix checks a running view mid-stream against the
// oracle over the log prefixes its committed checkpoint read (the offsets
// it recorded per table), the logs being the scenario's whole plan; false
// when there was nothing to check.
func (sc *dualScenario) checkCommittedPrefix(t *testing.T, v dualView) bool {
	t.Helper()
	id, got, offsets, ok := stableCommitted(t, sc.srv, v.name)
	if !ok {
		return false
	}
	logs := map[string][]Row{"bids": sc.js.data.bids, "auctions": sc.js.data.auctions}
	prefix := map[string][]Row{}
	for table, log := range logs {
		off, ok := offsets[table]
		if !ok && v.reads[table] > 0 {
			return false
		}
		if off > int64(len(log)) {
			t.Errorf("%s: checkpoint %d recorded offset %d for %s, beyond the %d rows of its log", v.name, id, off, table, len(log))
			return true
		}
		prefix[table] = log[:off]
	}
	want := v.expected(prefix["bids"], prefix["auctions"])
	if diffs := diffResult(want, got.Columns, got.Rows); len(diffs) > 0 {
		t.Errorf("%s: committed results at checkpoint %d differ from the oracle over the %d bids and %d auctions before its offsets (%d rows served, %d expected): %s",
			v.name, id, len(prefix["bids"]), len(prefix["auctions"]), len(got.Rows), len(want.Rows), formatDiffs(diffs, 5))
	}
	return true
}
