package queries

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// pullBids posts bids rows [from, to): channels a, b, c and none, auctions
// 0..6, a NULL price every 11th row, times over five minutes from
// 2026-12-03T09:00:00Z.
func pullBids(t *testing.T, e *Engine, from, to int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		ch := `"` + string(rune('a'+i%3)) + `"`
		if i%7 == 0 {
			ch = "null"
		}
		price := fmt.Sprint(1 + (i*37)%100)
		if i%11 == 0 {
			price = "null"
		}
		ts := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC).Add(time.Duration(i*997%300) * time.Second)
		fmt.Fprintf(&b, `{"auction": %d, "price": %s, "channel": %s, "ts": "%s"}`+"\n", (i*5)%7, price, ch, ts.Format(time.RFC3339))
	}
	ingest(t, e, "bids", b.String())
}

func pullEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	exec(t, e, `CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT, channel VARCHAR(16), ts TIMESTAMP(3) NOT NULL)
		  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1h"}';
		CREATE VIEW v AS SELECT window_start, window_end, channel, auction, COUNT(*) AS bids, SUM(price) AS volume
		  FROM bids GROUP BY TUMBLE(ts, '1m'), channel, auction`)
	return e
}

// pullRows runs a pull query and returns its rows as values.
func pullRows(t *testing.T, e *Engine, sql string) []plan.Row {
	t.Helper()
	res := exec(t, e, sql)
	return res[len(res)-1].Values
}

// The view's columns in its results: window_start, window_end, channel,
// auction, bids, volume.
const (
	vStart = iota
	vEnd
	vChannel
	vAuction
	vBids
	vVolume
)

// oracleGroups groups the view's rows by key (the key's values, as a
// string) in order of first appearance.
func oracleGroups(rows []plan.Row, key func(plan.Row) []plan.Value) ([][]plan.Value, map[string][]plan.Row) {
	var keys [][]plan.Value
	groups := map[string][]plan.Row{}
	for _, r := range rows {
		k := key(r)
		ks := fmt.Sprint(k)
		if _, ok := groups[ks]; !ok {
			keys = append(keys, k)
		}
		groups[ks] = append(groups[ks], r)
	}
	return keys, groups
}

// sumCol is SUM of column c over rows: NULL when every value is NULL.
func sumCol(rows []plan.Row, c int) plan.Value {
	var s int64
	n := 0
	for _, r := range rows {
		if !r[c].IsNull() {
			s += r[c].I
			n++
		}
	}
	if n == 0 {
		return plan.Null
	}
	return plan.Int(s)
}

func extreme(rows []plan.Row, c int, max bool) plan.Value {
	v := plan.Null
	for _, r := range rows {
		if !r[c].IsNull() && (v.IsNull() || (r[c].I > v.I) == max && r[c].I != v.I) {
			v = r[c]
		}
	}
	return v
}

// compareNullsFirst orders values as ORDER BY does (NULLs first).
func compareNullsFirst(x, y plan.Value) int {
	switch {
	case x.IsNull() && y.IsNull():
		return 0
	case x.IsNull():
		return -1
	case y.IsNull():
		return 1
	case x.K == plan.TypeVarchar:
		return strings.Compare(x.S, y.S)
	}
	return int(x.I - y.I)
}

// TestPullAggregatesOverSnapshot: aggregate pull queries over a view's
// committed results answer what the test computes itself from the same
// rows (Results, as GET .../results reads them), for GROUP BY, HAVING,
// ORDER BY, LIMIT, global aggregates over no rows, COUNT(DISTINCT) and
// SELECT DISTINCT.
func TestPullAggregatesOverSnapshot(t *testing.T) {
	e := pullEngine(t)
	pullBids(t, e, 0, 400)
	if _, err := e.Checkpoint(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 50 {
		t.Fatalf("the view has %d rows; the test wants many groups", len(rows))
	}
	channelKey := func(r plan.Row) []plan.Value { return []plan.Value{r[vChannel]} }

	t.Run("group by channel", func(t *testing.T) {
		keys, g := oracleGroups(rows, channelKey)
		slices.SortFunc(keys, func(a, b []plan.Value) int { return compareNullsFirst(a[0], b[0]) })
		var want []plan.Row
		for _, k := range keys {
			rs := g[fmt.Sprint(k)]
			want = append(want, plan.Row{k[0], sumCol(rs, vBids), sumCol(rs, vVolume), plan.Int(int64(len(rs)))})
		}
		got := pullRows(t, e, `SELECT channel, SUM(bids) AS n, SUM(volume) AS vol, COUNT(*) AS nrows FROM v GROUP BY channel ORDER BY channel`)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})

	t.Run("having, order by an aggregate not selected, limit and offset", func(t *testing.T) {
		from := time.Date(2026, 12, 3, 9, 1, 0, 0, time.UTC).UnixMilli()
		keys, g := oracleGroups(rows, func(r plan.Row) []plan.Value {
			if r[vStart].I < from {
				return nil
			}
			return []plan.Value{r[vAuction]}
		})
		type grp struct {
			row  plan.Row
			bids int64
		}
		var all []grp
		for _, k := range keys {
			if k == nil {
				continue
			}
			rs := g[fmt.Sprint(k)]
			n := sumCol(rs, vBids).I
			if n <= 20 {
				continue
			}
			var bids float64
			for _, r := range rs {
				bids += float64(r[vBids].I)
			}
			all = append(all, grp{plan.Row{k[0], extreme(rs, vVolume, true), extreme(rs, vVolume, false), plan.Float(bids / float64(len(rs)))}, n})
		}
		slices.SortStableFunc(all, func(a, b grp) int {
			if a.bids != b.bids {
				return int(b.bids - a.bids)
			}
			return int(a.row[0].I - b.row[0].I)
		})
		var want []plan.Row
		for i, x := range all {
			if i >= 1 && i < 4 {
				want = append(want, x.row)
			}
		}
		if len(all) < 4 {
			t.Fatalf("only %d groups pass HAVING: the test wants more", len(all))
		}
		got := pullRows(t, e, `SELECT auction, MAX(volume), MIN(volume), AVG(bids) FROM v
			WHERE window_start >= '2026-12-03T09:01:00Z' GROUP BY 1 HAVING SUM(bids) > 20 ORDER BY SUM(bids) DESC, auction LIMIT 3 OFFSET 1`)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})

	t.Run("global aggregates", func(t *testing.T) {
		auctions := map[int64]bool{}
		channels := 0
		for _, r := range rows {
			auctions[r[vAuction].I] = true
			if !r[vChannel].IsNull() {
				channels++
			}
		}
		got := pullRows(t, e, `SELECT COUNT(DISTINCT auction) AS auctions, COUNT(channel), COUNT(*), SUM(bids) FROM v`)
		want := []plan.Row{{plan.Int(int64(len(auctions))), plan.Int(int64(channels)), plan.Int(int64(len(rows))), sumCol(rows, vBids)}}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
		// Over no rows: one row, COUNT 0 and SUM NULL; HAVING may drop it.
		got = pullRows(t, e, `SELECT COUNT(*), SUM(volume), MAX(channel) FROM v WHERE bids < 0`)
		want = []plan.Row{{plan.Int(0), plan.Null, plan.Null}}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("over no rows: got %v, want %v", got, want)
		}
		if got := pullRows(t, e, `SELECT COUNT(*) AS n FROM v WHERE bids < 0 HAVING n > 0`); len(got) != 0 {
			t.Fatalf("HAVING over no rows: got %v, want none", got)
		}
	})

	t.Run("distinct and group by window_start", func(t *testing.T) {
		keys, _ := oracleGroups(rows, channelKey)
		slices.SortFunc(keys, func(a, b []plan.Value) int { return -compareNullsFirst(a[0], b[0]) })
		var want []plan.Row
		for _, k := range keys {
			want = append(want, plan.Row{k[0]})
		}
		got := pullRows(t, e, `SELECT DISTINCT channel FROM v ORDER BY channel DESC`)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("DISTINCT: got %v, want %v", got, want)
		}
		wkeys, g := oracleGroups(rows, func(r plan.Row) []plan.Value { return []plan.Value{r[vStart]} })
		want = want[:0]
		for _, k := range wkeys {
			want = append(want, plan.Row{k[0], plan.Int(int64(len(g[fmt.Sprint(k)])))})
		}
		slices.SortFunc(want, func(a, b plan.Row) int {
			if a[1].I != b[1].I {
				return int(b[1].I - a[1].I)
			}
			return int(a[0].I - b[0].I)
		})
		got = pullRows(t, e, `SELECT window_start, COUNT(*) AS n FROM v GROUP BY window_start ORDER BY n DESC, window_start`)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("by window: got %v\nwant %v", got, want)
		}
	})
}

// TestPullConsistency: a pull query reads committed rows by default, as
// of the last completed checkpoint; SET consistency = 'latest' (in the
// same request) and SET_VAR(consistency='latest') read the rows published
// since, until the next checkpoint commits them.
func TestPullConsistency(t *testing.T) {
	e := pullEngine(t)
	ctx := context.Background()
	total := func(rows []plan.Row) int64 {
		var n int64
		for _, r := range rows {
			n += r[vBids].I
		}
		return n
	}
	pullBids(t, e, 0, 100)
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	pullBids(t, e, 100, 130)
	// The 30 rows reach the latest results at a barrier (every 10ms).
	waitFor(t, "the latest results to hold 130 bids", func() bool {
		_, rows, err := e.Results("v", false)
		return err == nil && total(rows) == 130
	})
	one := func(sql string) int64 {
		t.Helper()
		rows := pullRows(t, e, sql)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows, want 1", sql, len(rows))
		}
		return rows[0][0].I
	}
	for _, c := range []struct {
		sql  string
		want int64
	}{
		{`SELECT SUM(bids) FROM v`, 100},
		{`SET consistency = 'committed'; SELECT SUM(bids) FROM v`, 100},
		{`SET consistency = 'latest'; SELECT SUM(bids) FROM v`, 130},
		{`SELECT /*+ SET_VAR(consistency='latest') */ SUM(bids) FROM v`, 130},
		// The hint overrides the session's setting.
		{`SET consistency = 'latest'; SELECT /*+ SET_VAR(consistency='committed') */ SUM(bids) FROM v`, 100},
	} {
		if got := one(c.sql); got != c.want {
			t.Errorf("%s: %d bids, want %d", c.sql, got, c.want)
		}
	}
	// Rows without aggregation too.
	if got := total(pullRows(t, e, `SET consistency = 'latest'; SELECT * FROM v`)); got != 130 {
		t.Errorf("latest SELECT *: %d bids, want 130", got)
	}
	if got := total(pullRows(t, e, `SELECT * FROM v`)); got != 100 {
		t.Errorf("committed SELECT *: %d bids, want 100", got)
	}
	// The setting lasts for its request only.
	if got := one(`SELECT SUM(bids) FROM v`); got != 100 {
		t.Errorf("a request after SET consistency: %d bids, want 100 (committed)", got)
	}
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := one(`SELECT SUM(bids) FROM v`); got != 130 {
		t.Errorf("after the next checkpoint: %d bids committed, want 130", got)
	}
	_, err := e.Exec(ctx, `SET consistency = 'newest'`)
	if err == nil || !strings.Contains(err.Error(), "consistency must be committed or latest") {
		t.Errorf("SET consistency = 'newest': %v, want the allowed values", err)
	}
}

// TestPullGrafanaTimeSeries: the query Grafana's time series panel writes
// ($__timeFilter expanded to RFC 3339 strings, the "time" alias quoted,
// ORDER BY 1) reads the view's rows in the range in time order.
func TestPullGrafanaTimeSeries(t *testing.T) {
	e := pullEngine(t)
	pullBids(t, e, 0, 200)
	if _, err := e.Checkpoint(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	_, rows, err := e.Results("v", true)
	if err != nil {
		t.Fatal(err)
	}
	lo := time.Date(2026, 12, 3, 9, 1, 0, 0, time.UTC).UnixMilli()
	hi := time.Date(2026, 12, 3, 9, 3, 0, 0, time.UTC).UnixMilli()
	var want []plan.Row
	for _, r := range rows {
		if r[vStart].I >= lo && r[vStart].I <= hi {
			want = append(want, plan.Row{r[vStart], r[vChannel], r[vBids]})
		}
	}
	slices.SortStableFunc(want, func(a, b plan.Row) int { return int(a[0].I - b[0].I) })
	if len(want) == 0 || len(want) == len(rows) {
		t.Fatalf("%d of %d rows in the range: the test wants some in and some out", len(want), len(rows))
	}
	res := exec(t, e, `SELECT window_start AS "time", channel AS metric, bids FROM v
		WHERE window_start BETWEEN '2026-12-03T09:01:00Z' AND '2026-12-03T09:03:00Z' ORDER BY 1`)
	got := res[0]
	if !slices.Equal(got.Columns, []string{"time", "metric", "bids"}) || got.Types[0] != plan.TypeTimestamp {
		t.Fatalf("columns %v types %v, want time (TIMESTAMP), metric, bids", got.Columns, got.Types)
	}
	// Equal times keep the view's order (a stable sort), so compare the
	// times in order and the rows as sets.
	if len(got.Values) != len(want) {
		t.Fatalf("%d rows, want %d", len(got.Values), len(want))
	}
	for i := range want {
		if got.Values[i][0] != want[i][0] {
			t.Fatalf("row %d: time %v, want %v", i, got.Values[i][0], want[i][0])
		}
	}
	key := func(r plan.Row) string { return fmt.Sprint(r) }
	gs, ws := make([]string, len(want)), make([]string, len(want))
	for i := range want {
		gs[i], ws[i] = key(got.Values[i]), key(want[i])
	}
	slices.Sort(gs)
	slices.Sort(ws)
	if !slices.Equal(gs, ws) {
		t.Fatalf("rows differ:\ngot  %v\nwant %v", gs, ws)
	}
}

// TestPullErrorsPositioned: a pull query's errors name the problem and
// point at it (line and column of the statement), and the engine keeps
// answering.
func TestPullErrorsPositioned(t *testing.T) {
	e := pullEngine(t)
	for _, c := range []struct {
		sql, msg     string
		line, column int
	}{
		{"SELECT channel,\n  auction, SUM(bids) FROM v GROUP BY channel", "column auction must appear in GROUP BY or inside an aggregate", 2, 3},
		{"SELECT auction FROM v\nWHERE window_start > 'noon'", "'noon' compared with a TIMESTAMP is not a time", 2, 23},
		{"SELECT window_start, COUNT(*) FROM v GROUP BY HOP(window_start, '1m', '2m')", "GROUP BY HOP in a pull query: windows are for views", 1, 47},
		{"SELECT /*+ SET_VAR(consistency='now') */ COUNT(*) FROM v", `consistency must be committed or latest, not "now"`, 1, 20},
	} {
		_, err := e.Exec(context.Background(), c.sql)
		var qe *Error
		if !errors.As(err, &qe) {
			t.Fatalf("%s: %v, want an *Error", c.sql, err)
		}
		if !strings.Contains(qe.Detail, c.msg) || qe.Line != c.line || qe.Column != c.column {
			t.Errorf("%s:\n got %q at %d:%d\nwant %q at %d:%d", c.sql, qe.Detail, qe.Line, qe.Column, c.msg, c.line, c.column)
		}
	}
	if got := pullRows(t, e, `SELECT COUNT(*) FROM v`); len(got) != 1 || got[0][0] != plan.Int(0) {
		t.Fatalf("after the errors: %v, want one row of 0", got)
	}
}

// TestPullWithoutCheckpoints: a view without checkpoints has no committed
// rows, so a pull query at the default (committed) reads its latest rows,
// the only ones it has, where GET .../results?consistency=committed
// answers none.
func TestPullWithoutCheckpoints(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), EmitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exec(t, e, `CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT, channel VARCHAR(16), ts TIMESTAMP(3) NOT NULL)
		  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1h"}';
		CREATE VIEW v AS SELECT channel, COUNT(*) AS bids FROM bids GROUP BY channel`)
	pullBids(t, e, 0, 50)
	if _, err := e.Checkpoint(context.Background(), ""); err != nil { // a flush: publishes every row
		t.Fatal(err)
	}
	if _, committed, err := e.Results("v", true); err != nil || len(committed) != 0 {
		t.Fatalf("committed results without checkpoints: %v (err %v), want none", committed, err)
	}
	for _, sql := range []string{`SELECT SUM(bids) FROM v`, `SET consistency = 'latest'; SELECT SUM(bids) FROM v`} {
		if got := pullRows(t, e, sql); len(got) != 1 || got[0][0] != plan.Int(50) {
			t.Errorf("%s: %v, want 50", sql, got)
		}
	}
}
