package e2e

// Hand-computed cases for the oracle and the comparison. They need no server.

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ev is an input row of the hand-computed cases: key k, value v, time ts.
func ev(k string, v int64, ts int64) Row {
	return Row{"k": k, "v": v, "ts": Timestamp(ts)}
}

var (
	countV = []Agg{{As: "n", Func: CountStar}, {As: "sum", Func: Sum, Arg: colRef("v")}}
	byK    = []string{"k"}
)

// win is an expected windowed row with aggregates n and sum.
func win(start, end int64, k string, n, sum int64) Row {
	return Row{"window_start": Timestamp(start), "window_end": Timestamp(end), "k": k, "n": n, "sum": sum}
}

// checkRows compares result rows with want as multisets of whole rows, and
// the late count.
func checkRows(t *testing.T, got Result, want []Row, wantLate int64) {
	t.Helper()
	canon := func(rows []Row) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			cols := make([]string, 0, len(r))
			for c := range r {
				cols = append(cols, c)
			}
			sort.Strings(cols)
			vals := make([]any, len(cols))
			for j, c := range cols {
				vals[j] = r[c]
			}
			out[i] = strings.Join(cols, ",") + "=" + canonKey(vals)
		}
		sort.Strings(out)
		return out
	}
	g, w := canon(got.Rows), canon(want)
	if !slices.Equal(g, w) {
		t.Errorf("rows:\n got  %s\n want %s", strings.Join(g, "\n      "), strings.Join(w, "\n      "))
	}
	if got.Late != wantLate {
		t.Errorf("late = %d, want %d", got.Late, wantLate)
	}
}

func TestOracleTumble(t *testing.T) {
	src := Source{TimeCol: "ts", WatermarkDelay: 2000, AllowedLateness: 1000}
	log := []Row{
		ev("a", 10, 1000),  // wm none            -> [0,10000)
		ev("a", 20, 12000), // wm -1000           -> [10000,20000)
		ev("a", 30, 9500),  // wm 10000: 11000 > 10000, not late -> [0,10000)
		ev("b", 40, 13000), // wm 10000           -> [10000,20000)
		ev("b", 50, 9999),  // wm 11000: 11000 <= 11000, late (boundary)
		ev("a", 60, 10000), // wm 11000: [10000,20000) ends 20000, fine
		ev("a", 70, 3000),  // filtered out by WHERE: not late
	}
	q := Query{Window: TumbleWindow(10_000), GroupBy: byK, Aggs: countV, Where: func(r Row) bool { return r["v"].(int64) != 70 }}

	checkRows(t, Evaluate(src, q, log), []Row{
		win(0, 10000, "a", 2, 40),
		win(10000, 20000, "a", 2, 80),
		win(10000, 20000, "b", 1, 40),
	}, 1)

	// Final watermark 13000 - 2000 = 11000 closes [0,10000) only.
	q.OnWindowClose = true
	checkRows(t, Evaluate(src, q, log), []Row{win(0, 10000, "a", 2, 40)}, 1)

	q.OnWindowClose = false
	q.Having = func(out Row) bool { return out["n"].(int64) > 1 }
	checkRows(t, Evaluate(src, q, log), []Row{
		win(0, 10000, "a", 2, 40),
		win(10000, 20000, "a", 2, 80),
	}, 1)

	// The late row is not late when the watermark is further back.
	checkRows(t, Evaluate(Source{TimeCol: "ts", WatermarkDelay: 2001, AllowedLateness: 1000}, Query{Window: TumbleWindow(10_000), GroupBy: byK, Aggs: countV}, log[:5]), []Row{
		win(0, 10000, "a", 2, 40),
		win(10000, 20000, "a", 1, 20),
		win(10000, 20000, "b", 1, 40),
		win(0, 10000, "b", 1, 50),
	}, 0)
}

func TestOracleHop(t *testing.T) {
	src := Source{TimeCol: "ts", WatermarkDelay: 2000, AllowedLateness: 1000}
	log := []Row{
		ev("a", 1, 20000), // -> [15000,25000) [20000,30000)
		ev("a", 2, 7000),  // wm 18000: [0,10000) and [5000,15000) both late: dropped, counted once
		ev("a", 3, 14000), // wm 18000: [5000,15000) late, [10000,20000) fine: counted once
		ev("a", 4, 19999), // -> [10000,20000) [15000,25000)
		ev("a", 5, 40000), // wm 18000 -> [35000,45000) [40000,50000)
	}
	q := Query{Window: HopWindow(5000, 10_000), GroupBy: byK, Aggs: countV}
	checkRows(t, Evaluate(src, q, log), []Row{
		win(10000, 20000, "a", 2, 7),
		win(15000, 25000, "a", 2, 5),
		win(20000, 30000, "a", 1, 1),
		win(35000, 45000, "a", 1, 5),
		win(40000, 50000, "a", 1, 5),
	}, 2)
	// Final watermark 38000: windows ending by 37000 are closed.
	q.OnWindowClose = true
	checkRows(t, Evaluate(src, q, log), []Row{
		win(10000, 20000, "a", 2, 7),
		win(15000, 25000, "a", 2, 5),
		win(20000, 30000, "a", 1, 1),
	}, 2)

	// Slide larger than size: rows between windows belong to none and are
	// not late.
	gaps := []Row{ev("a", 1, 1000), ev("a", 2, 5000), ev("a", 3, 12000), ev("a", 4, 13999), ev("a", 5, 14000)}
	checkRows(t, Evaluate(src, Query{Window: HopWindow(10_000, 4000), GroupBy: byK, Aggs: countV}, gaps), []Row{
		win(0, 4000, "a", 1, 1),
		win(10000, 14000, "a", 2, 7),
	}, 0)
}

func TestOracleAssignWindows(t *testing.T) {
	cases := []struct {
		w    Window
		ts   int64
		want []window
	}{
		{TumbleWindow(10_000), 0, []window{{0, 10000}}},
		{TumbleWindow(10_000), 9999, []window{{0, 10000}}},
		{TumbleWindow(10_000), -1, []window{{-10000, 0}}},
		{HopWindow(3000, 10_000), 10000, []window{{3000, 13000}, {6000, 16000}, {9000, 19000}}},
		{HopWindow(3000, 10_000), 0, []window{{-9000, 1000}, {-6000, 4000}, {-3000, 7000}, {0, 10000}}},
		{HopWindow(5000, 10_000), 5000, []window{{0, 10000}, {5000, 15000}}},
		{HopWindow(10_000, 4000), 3999, []window{{0, 4000}}},
		{HopWindow(10_000, 4000), 4000, nil},
	}
	for _, c := range cases {
		if got := assignWindows(c.w, c.ts); !slices.Equal(got, c.want) {
			t.Errorf("assignWindows(%+v, %d) = %v, want %v", c.w, c.ts, got, c.want)
		}
	}
}

func TestOracleSession(t *testing.T) {
	// No watermark delay, 500ms allowed lateness, gap 1s.
	src := Source{TimeCol: "ts", WatermarkDelay: 0, AllowedLateness: 500}
	log := []Row{
		ev("a", 1, 0),    // A = [0,1000)
		ev("a", 2, 2000), // wm 0: B = [2000,3000)
		ev("a", 3, 900),  // wm 2000: A closes (1500 <= 2000); [900,1900) overlaps only closed A: C = [900,1900)
		ev("a", 4, 1500), // wm 2000: [1500,2500) merges C and B: D = [900,3000)
		ev("a", 5, 5000), // wm 2000: E = [5000,6000)
		ev("a", 6, 100),  // wm 5000: D closes; [100,1100) alone, 1600 <= 5000: late
		ev("a", 7, 4200), // wm 5000: [4200,5200) merges E: F = [4200,6000)
	}
	q := Query{Window: SessionWindow(1000), GroupBy: byK, Aggs: countV}
	checkRows(t, Evaluate(src, q, log), []Row{
		win(0, 1000, "a", 1, 1),
		win(900, 3000, "a", 3, 9),
		win(4200, 6000, "a", 2, 12),
	}, 1)
	// Final watermark 5000: A (1500) and D (3500) are closed, F (6500) not.
	q.OnWindowClose = true
	checkRows(t, Evaluate(src, q, log), []Row{
		win(0, 1000, "a", 1, 1),
		win(900, 3000, "a", 3, 9),
	}, 1)

	// A row bridging two adjacent sessions merges them; keys are kept
	// apart; nothing closes under a 10s delay.
	src = Source{TimeCol: "ts", WatermarkDelay: 10_000}
	log = []Row{
		ev("a", 1, 0),    // [0,1000)
		ev("a", 2, 1000), // [1000,2000): adjacent, no overlap
		ev("b", 3, 700),  // another key: [700,1700)
		ev("a", 4, 500),  // [500,1500) overlaps both: [0,2000)
		ev("a", 5, 3000), // [3000,4000)
		ev("b", 6, 1699), // [1699,2699) overlaps b's: [700,2699)
	}
	q = Query{Window: SessionWindow(1000), GroupBy: byK, Aggs: countV}
	checkRows(t, Evaluate(src, q, log), []Row{
		win(0, 2000, "a", 3, 7),
		win(3000, 4000, "a", 1, 5),
		win(700, 2699, "b", 2, 9),
	}, 0)

	// A row WHERE removes is neither late nor in a session, but still
	// advances the watermark.
	src = Source{TimeCol: "ts"}
	log = []Row{ev("a", 1, 0), ev("z", 99, 10_000), ev("a", 2, 200), ev("a", 3, 500)}
	q = Query{Window: SessionWindow(1000), GroupBy: byK, Aggs: countV, Where: func(r Row) bool { return r["k"] == "a" }}
	checkRows(t, Evaluate(src, q, log), []Row{win(0, 1000, "a", 1, 1)}, 2)
}

func TestOracleAggregates(t *testing.T) {
	rows := []Row{
		{"g": "x", "v": int64(3), "s": "b", "ts": Timestamp(0)},
		{"g": "x", "v": int64(5), "s": nil, "ts": Timestamp(0)},
		{"g": "x", "v": int64(3), "s": "a", "ts": Timestamp(0)},
		{"g": "y", "v": int64(7), "s": nil, "ts": Timestamp(0)},
	}
	null := func(Row) any { return nil }
	q := Query{
		GroupBy: []string{"g"},
		Aggs: []Agg{
			{As: "n", Func: CountStar},
			{As: "ns", Func: Count, Arg: colRef("s")},
			{As: "nds", Func: CountDistinct, Arg: colRef("s")},
			{As: "ndv", Func: CountDistinct, Arg: colRef("v")},
			{As: "sum", Func: Sum, Arg: colRef("v")},
			{As: "avg", Func: Avg, Arg: colRef("v")},
			{As: "mins", Func: Min, Arg: colRef("s")},
			{As: "maxs", Func: Max, Arg: colRef("s")},
			{As: "sumnull", Func: Sum, Arg: null},
			{As: "avgnull", Func: Avg, Arg: null},
			{As: "maxv", Func: Max, Arg: colRef("v"), Hidden: true},
		},
	}
	res := Evaluate(Source{TimeCol: "ts"}, q, rows)
	x := Row{"g": "x", "n": int64(3), "ns": int64(2), "nds": int64(2), "ndv": int64(2), "sum": int64(11),
		"avg": 11.0 / 3, "mins": "a", "maxs": "b", "sumnull": nil, "avgnull": nil}
	y := Row{"g": "y", "n": int64(1), "ns": int64(0), "nds": int64(0), "ndv": int64(1), "sum": int64(7),
		"avg": 7.0, "mins": nil, "maxs": nil, "sumnull": nil, "avgnull": nil}
	checkRows(t, res, []Row{x, y}, 0)
	if want := []string{"g", "n", "ns", "nds", "ndv", "sum", "avg", "mins", "maxs", "sumnull", "avgnull"}; !slices.Equal(res.Columns, want) {
		t.Errorf("columns %v, want %v", res.Columns, want)
	}
	if !slices.Equal(res.Key, []string{"g"}) {
		t.Errorf("key %v, want [g]", res.Key)
	}

	// HAVING over a hidden aggregate, which is then not an output column.
	q.Having = func(out Row) bool { return out["maxv"].(int64) > 5 }
	checkRows(t, Evaluate(Source{TimeCol: "ts"}, q, rows), []Row{y}, 0)

	// Without aggregation: one row per row passing WHERE, duplicates kept.
	p := Query{
		Where:   func(r Row) bool { return r["v"].(int64) < 7 },
		Project: []Column{{As: "v2", Expr: func(r Row) any { return r["v"].(int64) * 2 }}, {As: "s", Expr: colRef("s")}},
	}
	res = Evaluate(Source{TimeCol: "ts"}, p, append(rows, rows[0]))
	checkRows(t, res, []Row{
		{"v2": int64(6), "s": "b"}, {"v2": int64(10), "s": nil}, {"v2": int64(6), "s": "a"}, {"v2": int64(6), "s": "b"},
	}, 0)
	if res.Key != nil {
		t.Errorf("append-only key %v, want nil", res.Key)
	}
}

// served decodes rows as the harness does.
func served(t *testing.T, s string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	if err := d.Decode(&rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestDiffResult(t *testing.T) {
	want := Result{
		Columns: []string{"window_start", "window_end", "k", "n", "avg"},
		Key:     []string{"window_start", "window_end", "k"},
		Rows: []Row{
			{"window_start": Timestamp(0), "window_end": Timestamp(10000), "k": "a", "n": int64(2), "avg": 1.5},
			{"window_start": Timestamp(0), "window_end": Timestamp(10000), "k": nil, "n": int64(1), "avg": 1.0 / 3},
		},
	}
	cols := want.Columns
	equal := served(t, `[
	  {"k": null, "window_start": "1970-01-01T00:00:00.000Z", "window_end": "1970-01-01T00:00:10.000Z", "n": 1, "avg": 0.33333333333333337},
	  {"window_end": "1970-01-01T00:00:10.000Z", "window_start": "1970-01-01T00:00:00.000Z", "k": "a", "n": 2, "avg": 1.5000000000001}
	]`)
	if d := diffResult(want, cols, equal); len(d) != 0 {
		t.Errorf("equal results differ: %q", d)
	}

	bad := served(t, `[
	  {"window_start": "1970-01-01T00:00:00Z", "window_end": "1970-01-01T00:00:10.000Z", "k": null, "n": 1, "avg": 0.3333},
	  {"window_start": "1970-01-01T00:00:00.000Z", "window_end": "1970-01-01T00:00:10.000Z", "k": "a", "n": 2.0, "avg": 1.5},
	  {"window_start": "1970-01-01T00:00:00.000Z", "window_end": "1970-01-01T00:00:10.000Z", "k": "a", "n": 2, "avg": 1.5}
	]`)
	d := diffResult(want, []string{"window_start", "window_end", "k", "n"}, bad)
	joined := strings.Join(d, "\n")
	for _, frag := range []string{"columns:", "missing:", "unexpected:", "key served 2 times", "n: got 2.0, want 2"} {
		if !strings.Contains(joined, frag) {
			t.Errorf("diffs lack %q:\n%s", frag, joined)
		}
	}

	// Append-only: a multiset; extra served columns (row ids) are ignored.
	ao := Result{Columns: []string{"p2", "ts"}, Rows: []Row{
		{"p2": int64(4), "ts": Timestamp(1)}, {"p2": int64(4), "ts": Timestamp(1)}, {"p2": int64(6), "ts": Timestamp(2)},
	}}
	got := served(t, `[
	  {"_row_id": "x1", "p2": 4, "ts": "1970-01-01T00:00:00.001Z"},
	  {"_row_id": "x2", "p2": 6, "ts": "1970-01-01T00:00:00.002Z"},
	  {"_row_id": "x3", "p2": 4, "ts": "1970-01-01T00:00:00.001Z"}
	]`)
	if d := diffResult(ao, []string{"_row_id", "p2", "ts"}, got); len(d) != 0 {
		t.Errorf("equal append-only results differ: %q", d)
	}
	if d := diffResult(ao, []string{"_row_id", "p2", "ts"}, got[:2]); len(d) != 1 || !strings.Contains(d[0], "count 1, want 2") {
		t.Errorf("a missing duplicate: diffs %q", d)
	}
}

func TestTimestampFormat(t *testing.T) {
	if got, want := Timestamp(baseTime+10_000).String(), "2024-01-01T00:00:10.000Z"; got != want {
		t.Errorf("Timestamp.String() = %q, want %q", got, want)
	}
	b, _ := json.Marshal(Row{"ts": Timestamp(5)})
	if got, want := string(b), `{"ts":"1970-01-01T00:00:00.005Z"}`; got != want {
		t.Errorf("json = %s, want %s", got, want)
	}
}
