package e2e

// Oracles of Top-N and deduplication (issue 19) over the changelog
// tests' table t (k, v, tag, ts; changelog_test.go), from what the
// queries mean: ranks by the ORDER BY, ties by row id (a row's offset in
// t's log; a running aggregate's rows by their key), deduplication's
// first row per key by event time among the rows not late when they
// came.

import (
	"cmp"
	"slices"
)

// changelogSource is t's event time, watermark delay and lateness
// (changelogTableDDL).
var changelogSource = Source{TimeCol: "ts", WatermarkDelay: 2000, AllowedLateness: 1000}

// topNByKey is, per k, the n rows of the largest v (the earlier in the
// log first among equal v), with rn.
func topNByKey(log []Row, n int) Result {
	per := map[int64][]int{}
	for i, r := range log {
		per[bigint(r, "k")] = append(per[bigint(r, "k")], i)
	}
	res := Result{Columns: []string{"k", "v", "rn"}, Key: []string{"k", "rn"}}
	for k, idx := range per {
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(bigint(log[b], "v"), bigint(log[a], "v")) })
		for rank, i := range idx[:min(n, len(idx))] {
			res.Rows = append(res.Rows, Row{"k": k, "v": bigint(log[i], "v"), "rn": int64(rank + 1)})
		}
	}
	return res
}

// topSumPerCount is, per n of the running aggregate (keys with n rows),
// the key of the largest s (the smallest k among equal s).
func topSumPerCount(inner []Row) Result {
	best := map[int64]Row{}
	for _, r := range inner {
		n := bigint(r, "n")
		b, seen := best[n]
		if !seen || bigint(r, "s") > bigint(b, "s") || bigint(r, "s") == bigint(b, "s") && bigint(r, "k") < bigint(b, "k") {
			best[n] = r
		}
	}
	res := Result{Columns: []string{"n", "k", "s"}, Key: []string{"n"}}
	for _, r := range best {
		res.Rows = append(res.Rows, Row{"n": r["n"], "k": r["k"], "s": r["s"]})
	}
	return res
}

// firstByTime is deduplication over src's log: per v the row of the
// earliest ts (the first in the log among equal ts), among the rows that
// were not late when they came (ts behind the watermark before them less
// the allowed lateness), emitted once the watermark less the lateness
// passes it; after that the key's rows are dropped. Append-only.
func firstByTime(src Source, log []Row) Result {
	res := Result{Columns: []string{"v", "k", "ts"}}
	held := map[int64]Row{}
	done := map[int64]bool{}
	wm := watermark{delay: src.WatermarkDelay}
	thr := func() (int64, bool) { return wm.max - wm.delay - src.AllowedLateness, wm.seen }
	flush := func() {
		t, ok := thr()
		if !ok {
			return
		}
		for k, r := range held {
			if tsOf(r) < t {
				res.Rows = append(res.Rows, Row{"v": k, "k": r["k"], "ts": r["ts"]})
				delete(held, k)
				done[k] = true
			}
		}
	}
	for _, r := range log {
		flush()
		k := bigint(r, "v")
		if done[k] {
			wm.observe(tsOf(r))
			continue
		}
		if t, ok := thr(); ok && tsOf(r) < t {
			wm.observe(tsOf(r))
			continue // late
		}
		if h, ok := held[k]; !ok || tsOf(r) < tsOf(h) {
			held[k] = r
		}
		wm.observe(tsOf(r))
	}
	flush()
	return res
}
