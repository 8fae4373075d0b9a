package queries

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// aggRow is one input row of TestNewAggregatesSQL.
type aggRow struct {
	k, x int64
	s    string
	ts   int64
}

// aggsBatches are TestNewAggregatesSQL's input, in two batches (a restart
// between them); the second one's last row closes the first window.
var aggsBatches = [][]aggRow{
	{{1, 6, "bo", 1000}, {1, 3, "al", 2000}, {2, 12, "cy", 3000}, {1, 5, "al", 4000}, {2, 7, "dee", 5000}, {3, 1, "eve", 6000}},
	{{2, 9, "al", 7000}, {1, 6, "fay", 8000}, {3, 1, "eve", 9000}, {4, 2, "gus", 30000}},
}

// TestNewAggregatesSQL runs the new aggregates through SQL and the whole
// engine: a running aggregate, a TUMBLE closing on the watermark, and an
// aggregation over a running aggregation (its input updates: the bags
// and BIT_XOR's retraction), checked against what the rows give computed
// here, before and after a restart (their state restored from the
// checkpoint). APPROX_COUNT_DISTINCT over the updating input is refused,
// naming it.
func TestNewAggregatesSQL(t *testing.T) {
	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, NoSampler: true}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e, `CREATE TABLE t (k BIGINT NOT NULL, x BIGINT, s VARCHAR(16), ts TIMESTAMP(3) NOT NULL) ENGINE=http
		ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1s", "allowed_lateness": "0s"}';
		CREATE VIEW running AS SELECT k, STDDEV_SAMP(x) AS sd, VARIANCE(x) AS vp, BIT_OR(x) AS bo, BIT_AND(x) AS ba,
		  GROUP_CONCAT(s ORDER BY x DESC SEPARATOR '|') AS ss, APPROX_COUNT_DISTINCT(s) AS ns FROM t GROUP BY k;
		CREATE VIEW windowed AS SELECT /*+ SET_VAR(emit_mode=on_window_close) */ window_start, k, STD(x) AS sd,
		  BIT_XOR(x) AS bx, GROUP_CONCAT(DISTINCT s) AS ss FROM t GROUP BY TUMBLE(ts, '10s'), k;
		CREATE VIEW nested AS SELECT n, VAR_SAMP(total) AS vs, BIT_AND(total) AS ba, BIT_XOR(total) AS bx,
		  GROUP_CONCAT(k ORDER BY total, k SEPARATOR ' ') AS ks FROM (SELECT k, COUNT(*) AS n, SUM(x) AS total FROM t GROUP BY k) r GROUP BY n`)
	_, err = e.Exec(ctx, `CREATE VIEW refused AS SELECT n, APPROX_COUNT_DISTINCT(total) FROM (SELECT k, COUNT(*) AS n, SUM(x) AS total FROM t GROUP BY k) r GROUP BY n`)
	// The error points at the call (its name, found in the statement).
	var qe *Error
	if !errors.As(err, &qe) || qe.Status != 422 || qe.Column != 34 || !strings.Contains(qe.Detail, "use COUNT(DISTINCT") {
		t.Errorf("APPROX_COUNT_DISTINCT over an updating input: %#v", err)
	}

	var fed []aggRow
	for i, batch := range aggsBatches {
		var nd strings.Builder
		for _, r := range batch {
			fmt.Fprintf(&nd, `{"k": %d, "x": %d, "s": %q, "ts": %d}`+"\n", r.k, r.x, r.s, r.ts)
		}
		ingest(t, e, "t", nd.String())
		fed = append(fed, batch...)
		for _, v := range []string{"running", "windowed", "nested"} {
			if _, err := e.Checkpoint(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		checkAggsView(t, e, "running", runningOracle(fed))
		checkAggsView(t, e, "windowed", windowedOracle(fed))
		checkAggsView(t, e, "nested", nestedOracle(fed))
		if i == 0 {
			e.Close(ctx)
			if e, err = Open(cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.Close(ctx)
}

// checkAggsView compares a view's committed rows with want, by their
// text, DOUBLEs to 1e-9.
func checkAggsView(t *testing.T, e *Engine, view string, want [][]any) {
	t.Helper()
	_, rows, err := e.Results(view, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(rows))
	for _, r := range rows {
		var parts []string
		for _, v := range r {
			if v.K == plan.TypeDouble {
				parts = append(parts, fmt.Sprintf("%.9g", v.F()))
				continue
			}
			parts = append(parts, fmt.Sprint(JSONValue(v)))
		}
		got = append(got, strings.Join(parts, ";"))
	}
	var ws []string
	for _, r := range want {
		var parts []string
		for _, v := range r {
			if f, ok := v.(float64); ok {
				parts = append(parts, fmt.Sprintf("%.9g", f))
				continue
			}
			parts = append(parts, fmt.Sprint(v))
		}
		ws = append(ws, strings.Join(parts, ";"))
	}
	slices.Sort(got)
	slices.Sort(ws)
	if !slices.Equal(got, ws) {
		t.Errorf("%s:\n got %q\nwant %q", view, got, ws)
	}
}

func byKey(rows []aggRow) map[int64][]aggRow {
	m := map[int64][]aggRow{}
	for _, r := range rows {
		m[r.k] = append(m[r.k], r)
	}
	return m
}

// moments are the mean and the sum of squared deviations, in two passes.
func moments(xs []int64) (n, m2 float64) {
	mean := 0.0
	for _, x := range xs {
		mean += float64(x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		m2 += (float64(x) - mean) * (float64(x) - mean)
	}
	return float64(len(xs)), m2
}

func sampleVar(xs []int64) any {
	n, m2 := moments(xs)
	if n < 2 {
		return nil
	}
	return m2 / (n - 1)
}

func runningOracle(rows []aggRow) [][]any {
	var out [][]any
	for k, rs := range byKey(rows) {
		var xs []int64
		or, and := int64(0), int64(-1)
		names := map[string]bool{}
		for _, r := range rs {
			xs = append(xs, r.x)
			or, and = or|r.x, and&r.x
			names[r.s] = true
		}
		srt := slices.Clone(rs)
		slices.SortFunc(srt, func(a, b aggRow) int {
			if a.x != b.x {
				return int(b.x - a.x)
			}
			return strings.Compare(a.s, b.s)
		})
		var ss []string
		for _, r := range srt {
			ss = append(ss, r.s)
		}
		n, m2 := moments(xs)
		sd := sampleVar(xs)
		if sd != nil {
			sd = math.Sqrt(sd.(float64))
		}
		out = append(out, []any{k, sd, m2 / n, or, and, strings.Join(ss, "|"), len(names)})
	}
	return out
}

func windowedOracle(rows []aggRow) [][]any {
	wm := int64(math.MinInt64)
	for _, r := range rows {
		wm = max(wm, r.ts-1000)
	}
	var out [][]any
	type wk struct{ start, k int64 }
	groups := map[wk][]aggRow{}
	for _, r := range rows {
		groups[wk{r.ts / 10000 * 10000, r.k}] = append(groups[wk{r.ts / 10000 * 10000, r.k}], r)
	}
	for g, rs := range groups {
		if g.start+10000 > wm {
			continue // not closed
		}
		var xs []int64
		xor := int64(0)
		names := map[string]bool{}
		for _, r := range rs {
			xs = append(xs, r.x)
			xor ^= r.x
			names[r.s] = true
		}
		n, m2 := moments(xs)
		distinct := make([]string, 0, len(names))
		for s := range names {
			distinct = append(distinct, s)
		}
		slices.Sort(distinct)
		out = append(out, []any{time.UnixMilli(g.start).UTC().Format("2006-01-02T15:04:05.000Z"), g.k, math.Sqrt(m2 / n), xor, strings.Join(distinct, ",")})
	}
	return out
}

func nestedOracle(rows []aggRow) [][]any {
	type kt struct{ k, total int64 }
	byN := map[int64][]kt{}
	for k, rs := range byKey(rows) {
		total := int64(0)
		for _, r := range rs {
			total += r.x
		}
		byN[int64(len(rs))] = append(byN[int64(len(rs))], kt{k, total})
	}
	var out [][]any
	for n, ks := range byN {
		slices.SortFunc(ks, func(a, b kt) int {
			if a.total != b.total {
				return int(a.total - b.total)
			}
			return int(a.k - b.k)
		})
		var totals []int64
		and, xor := int64(-1), int64(0)
		var names []string
		for _, x := range ks {
			totals = append(totals, x.total)
			and, xor = and&x.total, xor^x.total
			names = append(names, fmt.Sprint(x.k))
		}
		out = append(out, []any{n, sampleVar(totals), and, xor, strings.Join(names, " ")})
	}
	return out
}
