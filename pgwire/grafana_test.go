package pgwire

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// timeFilterRE is Grafana's $__timeFilter(column) macro.
var timeFilterRE = regexp.MustCompile(`\$__timeFilter\(([^)]*)\)`)

// expandGrafana expands the macros of a Grafana panel query as Grafana's
// PostgreSQL data source does: $__timeFilter(col) is col BETWEEN '<from>'
// AND '<to>' in RFC 3339 UTC.
func expandGrafana(sql string, from, to time.Time) string {
	return timeFilterRE.ReplaceAllStringFunc(sql, func(m string) string {
		col := strings.TrimSpace(timeFilterRE.FindStringSubmatch(m)[1])
		return fmt.Sprintf("%s BETWEEN '%s' AND '%s'", col, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	})
}

// TestGrafanaTimeSeries: the recorded time series query of a Grafana panel,
// expanded as Grafana expands it, answers the view's rows in the panel's
// range in time order, over the simple protocol (lib/pq, Grafana's driver
// until version 10) and the extended one (pgx), with "time" a timestamp.
func TestGrafanaTimeSeries(t *testing.T) {
	e := start(t, Options{})
	ctx := ctxT(t)
	for _, sql := range []string{
		`CREATE TABLE g (channel VARCHAR(16), price BIGINT, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}'`,
		`CREATE VIEW gv AS SELECT window_start, channel, COUNT(*) AS bids FROM g GROUP BY TUMBLE(ts, '1m'), channel`,
	} {
		if _, err := e.eng.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	base := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	var body strings.Builder
	for i := range 300 {
		fmt.Fprintf(&body, `{"channel": "c%d", "price": %d, "ts": "%s"}`+"\n", i%3, i, base.Add(time.Duration(i)*7*time.Second).Format(time.RFC3339Nano))
	}
	if _, err := e.eng.Ingest(ctx, "g", body.String(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Checkpoint(ctx, "gv"); err != nil {
		t.Fatal(err)
	}
	recorded, err := os.ReadFile("testdata/grafana/timeseries.sql")
	if err != nil {
		t.Fatal(err)
	}
	// The statement after the file's header comment.
	var stmt []string
	for _, line := range strings.Split(string(recorded), "\n") {
		if !strings.HasPrefix(line, "--") {
			stmt = append(stmt, line)
		}
	}
	from, to := base.Add(10*time.Minute), base.Add(20*time.Minute)
	sql := expandGrafana(strings.Join(stmt, "\n"), from, to)
	if strings.Contains(sql, "$__") || !strings.Contains(sql, "window_start BETWEEN '2026-12-03T09:10:00Z' AND '2026-12-03T09:20:00Z'") {
		t.Fatalf("expanded:\n%s", sql)
	}
	// The oracle: the view's results (GET /v1/queries/gv/results) in the
	// range, by time (a stable sort: rows of one time in the view's order).
	cols, rows, err := e.eng.Results("gv", true)
	if err != nil {
		t.Fatal(err)
	}
	ws, ch, n := cols.Index("window_start"), cols.Index("channel"), cols.Index("bids")
	var want []string
	for _, r := range rows {
		at := time.UnixMilli(r[ws].I).UTC()
		if !at.Before(from) && !at.After(to) {
			want = append(want, fmt.Sprintf("%s %s %d", at.Format(time.RFC3339), r[ch].S, r[n].I))
		}
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i][:20] < want[j][:20] })
	if len(want) == 0 || len(want) == len(rows) {
		t.Fatalf("%d of the view's %d rows in the range: the test wants some in and some out", len(want), len(rows))
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := e.connect(mode)
		res, err := c.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		var got []string
		for res.Next() {
			var at time.Time
			var metric string
			var bids int64
			if err := res.Scan(&at, &metric, &bids); err != nil {
				t.Fatalf("%v: %v", mode, err)
			}
			got = append(got, fmt.Sprintf("%s %s %d", at.UTC().Format(time.RFC3339), metric, bids))
		}
		if err := res.Err(); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		fds := res.FieldDescriptions()
		if names := fieldNames(fds); names != "time metric bids" || fds[0].DataTypeOID != oidTimestamp {
			t.Errorf("%v: columns %s, time's type %d, want time metric bids and timestamp", mode, names, fds[0].DataTypeOID)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%v: got\n%s\nwant\n%s", mode, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func fieldNames(fds []pgconn.FieldDescription) string {
	var names []string
	for _, fd := range fds {
		names = append(names, fd.Name)
	}
	return strings.Join(names, " ")
}
