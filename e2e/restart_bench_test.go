package e2e

// BenchmarkRestart1M: how long a restart takes with the state of 1,000,000
// rows, and what checkpoints of that state cost. Not run by `go test`; run
//
//	go test ./e2e -run XXX -bench Restart1M -benchtime 1x
//
// It posts 1M rows (NDJSON, 20k rows a request) to a table read by three
// views (a tumble over many keys, sessions, a running aggregate with COUNT
// DISTINCT), checkpoints, reads each view's checkpoint history (duration
// and bytes), SIGKILLs the server and measures the time from the new
// process's start until every query runs and a checkpoint succeeds. The
// restored rows_in must be 1M and every view's results must equal those
// before the kill, with no row read again.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

const (
	benchRows        = 1_000_000
	benchRowsPerPost = 20_000
	benchAuctions    = 30_000 // keys of the tumble and the running aggregate
	benchBidders     = 10_000 // keys of the sessions
)

// benchViews: parallelism 2 each.
var benchViews = []struct{ name, sql string }{
	{"r1m_tumble", `CREATE VIEW r1m_tumble AS SELECT /*+ SET_VAR(parallelism=2) */ window_start, window_end, auction,
  COUNT(*) AS n, SUM(price) AS volume, MAX(price) AS max_price FROM bids GROUP BY TUMBLE(ts, '30s'), auction`},
	{"r1m_session", `CREATE VIEW r1m_session AS SELECT /*+ SET_VAR(parallelism=2) */ window_start, window_end, bidder,
  COUNT(*) AS n, SUM(price) AS volume FROM bids GROUP BY SESSION_WINDOW(ts, '5s'), bidder`},
	{"r1m_running", `CREATE VIEW r1m_running AS SELECT /*+ SET_VAR(parallelism=2) */ auction,
  COUNT(*) AS n, COUNT(DISTINCT bidder) AS bidders, SUM(price) AS volume, AVG(price) AS avg_price,
  MIN(price) AS min_price, MAX(price) AS max_price FROM bids GROUP BY auction`},
}

// benchBody returns rows [first, first+n) of the benchmark's log as NDJSON:
// event time advances 0.12ms a row (1M rows span 120s) minus up to 1.5s of
// disorder (under the 2s watermark delay: no late rows).
func benchBody(rng *rand.Rand, first, n int) []byte {
	b := make([]byte, 0, n*100)
	for i := first; i < first+n; i++ {
		ts := baseTime + int64(i)*3/25 - rng.Int64N(1500)
		b = append(b, `{"auction":`...)
		b = strconv.AppendInt(b, 1+rng.Int64N(benchAuctions), 10)
		b = append(b, `,"bidder":`...)
		b = strconv.AppendInt(b, 1+rng.Int64N(benchBidders), 10)
		b = append(b, `,"price":`...)
		b = strconv.AppendInt(b, 1+rng.Int64N(1000), 10)
		if c := rng.IntN(len(channels) + 1); c < len(channels) {
			b = append(b, `,"channel":"`...)
			b = append(b, channels[c]...)
			b = append(b, '"')
		}
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, ts, 10)
		b = append(b, "}\n"...)
	}
	return b
}

// percentile is the p-th percentile (nearest rank) of sorted xs.
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(p/100*float64(len(xs)) + 0.999999) // ceil
	return xs[min(max(i, 1), len(xs))-1]
}

func BenchmarkRestart1M(b *testing.B) {
	for it := 0; it < b.N; it++ {
		benchRestartOnce(b)
	}
}

func benchRestartOnce(b *testing.B) {
	srv := startServer(b)
	defer srv.stop()
	srv.sql(b, bidsDDL)
	names := make([]string, len(benchViews))
	for i, v := range benchViews {
		srv.sql(b, v.sql)
		names[i] = v.name
	}
	srv.waitRunning(b, names...)

	// Ingest.
	rng := rand.New(rand.NewPCG(20240101, 1))
	ingestStart := time.Now()
	for first := 0; first < benchRows; first += benchRowsPerPost {
		n := min(benchRowsPerPost, benchRows-first)
		ack := srv.ingest(b, "bids", "application/x-ndjson", benchBody(rng, first, n), n)
		if ack.FirstOffset != int64(first) {
			b.Fatalf("rows %d..: first_offset %d", first, ack.FirstOffset)
		}
	}
	ingest := time.Since(ingestStart)
	srv.checkpoint(b)
	processed := time.Since(ingestStart)

	// Checkpoint history.
	var durations, sizes []int64
	var totalBytes int64
	var perView []string
	for _, name := range names {
		var vd []int64
		var vb, failed int64
		for _, c := range srv.checkpointHistory(b, name) {
			if c.Status != "completed" {
				failed++
				continue
			}
			durations = append(durations, c.DurationMS)
			sizes = append(sizes, c.Bytes)
			totalBytes += c.Bytes
			vd = append(vd, c.DurationMS)
			vb += c.Bytes
		}
		slices.Sort(vd)
		perView = append(perView, fmt.Sprintf("%s: %d completed (%d not), duration p50 %d ms max %d ms, %d bytes",
			name, len(vd), failed, percentile(vd, 50), percentile(vd, 100), vb))
	}
	slices.Sort(durations)
	slices.Sort(sizes)

	// Before the kill.
	before := map[string][]string{}
	for _, name := range names {
		if q := srv.query(b, name); q.Counters.RowsIn != benchRows {
			b.Fatalf("%s before the kill: rows_in %d, want %d", name, q.Counters.RowsIn, benchRows)
		}
		before[name] = canonicalRows(srv.results(b, name).Rows)
	}

	// SIGKILL, restart, every query running and a checkpoint taken.
	srv.kill(b)
	restartStart := time.Now()
	srv.start(b)
	healthy := time.Since(restartStart)
	srv.waitRunning(b, names...)
	running := time.Since(restartStart)
	srv.checkpoint(b)
	restart := time.Since(restartStart)

	resultRows := 0
	for _, name := range names {
		q := srv.query(b, name)
		if q.Counters.RowsIn != benchRows {
			b.Errorf("%s after the restart: rows_in %d, want %d", name, q.Counters.RowsIn, benchRows)
		}
		// The checkpoint after the restart read nothing new: the sources
		// resumed at the end of the log, not at its start.
		if h := srv.checkpointHistory(b, name); len(h) == 0 || h[0].Offsets["bids"] != benchRows {
			b.Errorf("%s after the restart: checkpoint history %+v, want the newest at offset %d", name, h, benchRows)
		}
		after := canonicalRows(srv.results(b, name).Rows)
		if d := diffCanonical(before[name], after, 5); d != "" {
			b.Errorf("%s: results after the restart differ from those before the kill: %s", name, d)
		}
		resultRows += len(after)
	}

	b.ReportMetric(restart.Seconds(), "restart_s")
	b.ReportMetric(float64(percentile(durations, 50)), "ckpt_p50_ms")
	b.ReportMetric(float64(percentile(durations, 99)), "ckpt_p99_ms")
	b.ReportMetric(float64(percentile(sizes, 50)), "ckpt_p50_bytes")
	b.ReportMetric(float64(percentile(sizes, 99)), "ckpt_p99_bytes")
	b.ReportMetric(float64(totalBytes), "ckpt_total_bytes")
	b.ReportMetric(float64(benchRows)/ingest.Seconds(), "ingest_rows/s")
	fmt.Printf("BenchmarkRestart1M: %d rows in %d requests: ingest %v (%.0f rows/s), processed and checkpointed after %v\n",
		benchRows, (benchRows+benchRowsPerPost-1)/benchRowsPerPost, ingest.Round(time.Millisecond), float64(benchRows)/ingest.Seconds(), processed.Round(time.Millisecond))
	fmt.Printf("  checkpoints: %d completed over %d views: duration p50 %d ms, p99 %d ms, max %d ms; bytes p50 %d, p99 %d, max %d, total %d\n",
		len(durations), len(names), percentile(durations, 50), percentile(durations, 99), percentile(durations, 100),
		percentile(sizes, 50), percentile(sizes, 99), percentile(sizes, 100), totalBytes)
	for _, v := range perView {
		fmt.Printf("    %s\n", v)
	}
	fmt.Printf("  restart after SIGKILL: /healthz %v, all running %v, checkpoint done %v; %d result rows equal before and after\n",
		healthy.Round(time.Millisecond), running.Round(time.Millisecond), restart.Round(time.Millisecond), resultRows)
}
