package queries

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/planner/plan"
)

// TestResultsOrder: pull results come ordered by the result's key, by
// value (not by the bytes of its encoding, where 128 sorts before 127 and
// -1 after 1): windowed views by window_start, window_end, then the GROUP
// BY values (NULL first); running aggregates by the GROUP BY values;
// append-only views by row id (the source offset). Latest and committed
// reads, and SELECT without ORDER BY, alike; ORDER BY overrides.
func TestResultsOrder(t *testing.T) {
	ctx := context.Background()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour, EmitInterval: 10 * time.Millisecond, NoSampler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	exec(t, e, `CREATE TABLE t (k BIGINT, s VARCHAR(8), ts TIMESTAMP(3) NOT NULL) ENGINE=http
		ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "1h"}';
		CREATE VIEW win AS SELECT window_start, k, COUNT(*) AS n FROM t GROUP BY TUMBLE(ts, '10s'), k;
		CREATE VIEW run AS SELECT s, COUNT(*) AS n FROM t GROUP BY s;
		CREATE VIEW app AS SELECT k FROM t`)
	ks := []int64{-300, -129, -128, -1, 0, 1, 63, 64, 127, 128, 255, 256, 1 << 40}
	ss := []string{"", "a", "ab", "b", "ba", "z"}
	type in struct {
		k  *int64
		s  *string
		ts int64
	}
	var rows []in
	for _, ts := range []int64{15000, 1000, 25000} {
		rows = append(rows, in{nil, nil, ts})
		for i := range ks {
			rows = append(rows, in{&ks[i], &ss[i%len(ss)], ts})
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	var b strings.Builder
	for _, r := range rows {
		k, s := "null", "null"
		if r.k != nil {
			k = fmt.Sprint(*r.k)
		}
		if r.s != nil {
			s = fmt.Sprintf("%q", *r.s)
		}
		fmt.Fprintf(&b, `{"k": %s, "s": %s, "ts": %d}`+"\n", k, s, r.ts)
	}
	ingest(t, e, "t", b.String())
	if _, err := e.Checkpoint(ctx, ""); err != nil {
		t.Fatal(err)
	}

	text := func(v plan.Value) string {
		if v.IsNull() {
			return "NULL"
		}
		return fmt.Sprint(v.JSON())
	}
	var wantWin, wantRun, wantApp []string
	for _, w := range []int64{0, 10000, 20000} {
		wantWin = append(wantWin, fmt.Sprintf("%s NULL", text(plan.Value{K: plan.TypeTimestamp, I: w})))
		for _, k := range ks {
			wantWin = append(wantWin, fmt.Sprintf("%s %d", text(plan.Value{K: plan.TypeTimestamp, I: w}), k))
		}
	}
	wantRun = append(wantRun, "NULL")
	wantRun = append(wantRun, ss...)
	for _, r := range rows {
		if r.k == nil {
			wantApp = append(wantApp, "NULL")
		} else {
			wantApp = append(wantApp, fmt.Sprint(*r.k))
		}
	}
	keyOf := func(view string, r []plan.Value) string {
		switch view {
		case "win":
			return text(r[0]) + " " + text(r[1])
		}
		return text(r[0])
	}
	for _, c := range []struct {
		view string
		want []string
	}{{"win", wantWin}, {"run", wantRun}, {"app", wantApp}} {
		for _, committed := range []bool{true, false} {
			_, got, err := e.Results(c.view, committed)
			if err != nil {
				t.Fatal(err)
			}
			keys := make([]string, len(got))
			for i, r := range got {
				keys[i] = keyOf(c.view, r)
			}
			if !slices.Equal(keys, c.want) {
				t.Errorf("%s (committed %v): rows in the order\n%q\nwant\n%q", c.view, committed, keys, c.want)
			}
		}
		res := exec(t, e, "SELECT * FROM "+c.view)
		keys := make([]string, len(res[0].Rows))
		for i, o := range res[0].Rows {
			vals := make([]plan.Value, len(o.Vals))
			for j, v := range o.Vals {
				vals[j] = jsonToValue(v)
			}
			keys[i] = keyOf(c.view, vals)
		}
		if !slices.Equal(keys, c.want) {
			t.Errorf("SELECT * FROM %s: rows in the order\n%q\nwant\n%q", c.view, keys, c.want)
		}
	}
	res := exec(t, e, "SELECT k FROM app ORDER BY k DESC LIMIT 3")
	if got := fmt.Sprint(res[0].Rows[0].Vals, res[0].Rows[1].Vals, res[0].Rows[2].Vals); got != "[1099511627776] [1099511627776] [1099511627776]" {
		t.Errorf("ORDER BY k DESC: %s", got)
	}
}

// jsonToValue is the value a result's JSON member shows, for comparing
// with plan values as text.
func jsonToValue(v any) plan.Value {
	switch v := v.(type) {
	case nil:
		return plan.Null
	case int64:
		return plan.Int(v)
	case string:
		return plan.Str(v)
	}
	return plan.Str(fmt.Sprint(v))
}
