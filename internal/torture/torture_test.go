package torture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/streamsql/streamsql/internal/kafkatest"
	"github.com/streamsql/streamsql/internal/pgtest"
)

// The short runs of the README's test command share one server binary,
// one PostgreSQL and one broker (each run has its own topics, schemas and
// data directory).
var (
	setupOnce sync.Once
	shared    struct {
		dir    string
		bin    string
		pg     *pgtest.Server
		broker *kafkatest.Broker
		err    error
	}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.pg != nil {
		shared.pg.Close()
	}
	if shared.broker != nil {
		shared.broker.Close()
	}
	kafkatest.Cleanup()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func sharedConfig(t *testing.T) Config {
	t.Helper()
	setupOnce.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "torture-test-"); shared.err != nil {
			return
		}
		if shared.bin, shared.err = Build(shared.dir); shared.err != nil {
			return
		}
		if shared.pg, shared.err = pgtest.Start(); shared.err != nil {
			return
		}
		shared.broker, shared.err = kafkatest.Start(filepath.Join(shared.dir, "kafka"))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return Config{ServerBin: shared.bin, PG: shared.pg, Broker: shared.broker, Log: testLog{t}}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func runOK(t *testing.T, cfg Config) Report {
	t.Helper()
	rep, err := Run(context.Background(), cfg)
	var b strings.Builder
	rep.Print(&b)
	t.Logf("report:\n%s", b.String())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatal("an output differs from the oracle (report above)")
	}
	// Every output of the workload was compared: the ingest log, each
	// view, each sink.
	if want := 2 + len(queries) + len(sinks); len(rep.Outputs) != want {
		t.Fatalf("%d outputs compared, want %d", len(rep.Outputs), want)
	}
	return rep
}

// TestTortureKills: a short torture run (SIGKILL at random moments under
// load; STREAMSQL_TORTURE_CYCLES for more).
func TestTortureKills(t *testing.T) {
	cfg := sharedConfig(t)
	cfg.Cycles, cfg.Seed = 4, 11
	if n, err := strconv.Atoi(os.Getenv("STREAMSQL_TORTURE_CYCLES")); err == nil && n > 0 {
		cfg.Cycles = n
	}
	rep := runOK(t, cfg)
	if rep.Kills != cfg.Cycles || rep.KillsUnderLoad == 0 {
		t.Fatalf("kills %d (under load %d), want %d under load", rep.Kills, rep.KillsUnderLoad, cfg.Cycles)
	}
}

// TestTortureFaultPoints is the table of fault point × output: for each
// named point, a run whose server is killed once and restarted with the
// point armed until it fires there, restarted without it, and every
// output (the ingest log, the views' built-in results, PostgreSQL and
// Kafka sinks in the three delivery modes) compared with the oracle.
func TestTortureFaultPoints(t *testing.T) {
	base := sharedConfig(t)
	table := map[string]Report{}
	points := PointMatrix()
	for i, point := range points {
		t.Run(point, func(t *testing.T) {
			cfg := base
			// 5,000 rows at 400/s keep the load on (and the sink points
			// reachable) for 12 s, well past the crash and the restart
			// with the point armed, also on a busy machine.
			cfg.Cycles, cfg.Seed, cfg.Faults, cfg.Rows = 1, uint64(100+i), []string{point}, 5000
			rep := runOK(t, cfg)
			if rep.FaultsFired[point] != 1 {
				t.Fatalf("%s armed but never reached", point)
			}
			table[point] = rep
		})
	}
	if len(table) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s", "point \\ output")
	for _, o := range table[points[0]].Outputs {
		fmt.Fprintf(&b, " %s", o.Name)
	}
	for _, p := range points {
		rep, ok := table[p]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n%-32s", p)
		for _, o := range rep.Outputs {
			mark := "exact"
			if !o.OK() {
				mark = "WRONG"
			}
			fmt.Fprintf(&b, " %s", mark)
		}
	}
	t.Logf("fault point × output:\n%s", b.String())
}

// The oracle's pieces, checked by hand.

func TestOracleWindows(t *testing.T) {
	got := hop(2000, 6000)(5500)
	want := []window{{4000, 10000}, {2000, 8000}, {0, 6000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hop(2s, 6s)(5.5s) = %v, want %v", got, want)
	}
	if got := hop(2000, 6000)(-1); !reflect.DeepEqual(got, []window{{-2000, 4000}, {-4000, 2000}, {-6000, 0}}) {
		t.Fatalf("hop of a negative time: %v", got)
	}
	if got := tumble(5000)(-1); !reflect.DeepEqual(got, []window{{-5000, 0}}) {
		t.Fatalf("tumble(-1) = %v", got)
	}
	// Sessions of gap 10: 0,5 merge ([0,15)); 15 only touches: apart;
	// 30 alone; other keys apart.
	rows := []inRow{{ID: 1, K: "a", TS: 5}, {ID: 2, K: "a", TS: 0}, {ID: 3, K: "a", TS: 15}, {ID: 4, K: "a", TS: 30}, {ID: 5, K: "b", TS: 3}}
	out := sessions(rows, 10, func(r outRow, rs []inRow) { r["n"] = int64(len(rs)) })
	var s []string
	for _, r := range out {
		s = append(s, fmt.Sprintf("%s[%d,%d)×%d", r["k"], r["window_start"], r["window_end"], r["n"]))
	}
	sort.Strings(s)
	if want := "a[0,15)×2 a[15,25)×1 a[30,40)×1 b[3,13)×1"; strings.Join(s, " ") != want {
		t.Fatalf("sessions: %s, want %s", strings.Join(s, " "), want)
	}
}

func TestOracleAggregates(t *testing.T) {
	one, two := int64(1), int64(2)
	rows := []inRow{{K: "a", V: &two, TS: 1}, {K: "a", TS: 2}, {K: "a", V: &one, TS: 3}, {K: "a", V: &two, TS: 4}}
	got := queryByName("tumble_all").oracle(input{ev: rows})
	want := outRow{"window_start": int64(0), "window_end": int64(5000), "k": "a", "n": int64(4), "nv": int64(3), "dv": int64(2),
		"s": int64(5), "a": 5.0 / 3, "lo": int64(1), "hi": int64(2)}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("tumble_all = %v, want %v", got, want)
	}
	// All NULL: SUM/AVG/MIN/MAX are NULL, HAVING MAX(v) < 900 drops it.
	nulls := []inRow{{K: "b", TS: 1}}
	if got := queryByName("hop_having").oracle(input{ev: nulls}); len(got) != 0 {
		t.Fatalf("hop_having kept a group whose MAX is NULL: %v", got)
	}
}

// TestCompare: compare counts what it is for.
func TestCompare(t *testing.T) {
	q := queryByName("running_k")
	row := func(k string, n int64, a float64) outRow { return outRow{"k": k, "n": n, "s": n, "a": a} }
	want := []outRow{row("a", 1, 0.1), row("b", 2, 0.2), row("c", 3, 0.3)}
	got := []outRow{row("a", 1, 0.1+1e-12), row("b", 5, 0.2), row("d", 1, 0), row("d", 1, 0)}
	var rep SinkReport
	compare(&rep, q, want, got)
	if rep.Missing != 1 || rep.Mismatched != 1 || rep.Unexpected != 1 || rep.Duplicated != 1 || rep.OK() {
		t.Fatalf("compare: %+v", rep)
	}
	var exact SinkReport
	compare(&exact, q, want, want)
	if !exact.OK() {
		t.Fatalf("compare of equal rows: %+v", exact)
	}
	var ep SinkReport
	checkEpochs(&ep, []int64{1, 2, 2, 3})
	if ep.Duplicated != 1 {
		t.Fatalf("checkEpochs: %+v", ep)
	}
}

// TestOracleUpdating: the queries over updating inputs, by hand.
func TestOracleUpdating(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	// a: 3 rows (n 3, b 3), b: 1 row (b 1), c: 1 row of NULL (b 1), d: 4
	// rows (b 0).
	ev := []inRow{
		{K: "a", V: v(10)}, {K: "b", V: v(700)}, {K: "a", V: v(990)}, {K: "c"}, {K: "a", V: v(5)},
		{K: "d", V: v(1)}, {K: "d", V: v(2)}, {K: "d"}, {K: "d", V: v(3)},
	}
	byB := func(rows []outRow) map[int64]outRow {
		m := map[int64]outRow{}
		for _, r := range rows {
			m[r["b"].(int64)] = r
		}
		return m
	}
	got := byB(queryByName("run_agg").oracle(input{ev: ev}))
	want := map[int64]outRow{
		3: {"b": int64(3), "nk": int64(1), "total": int64(1005), "lo": int64(5), "hi": int64(990), "dn": int64(1)},
		// c's s, lo and hi are NULL: only b's count.
		1: {"b": int64(1), "nk": int64(2), "total": int64(700), "lo": int64(700), "hi": int64(700), "dn": int64(1)},
		0: {"b": int64(0), "nk": int64(1), "total": int64(6), "lo": int64(1), "hi": int64(3), "dn": int64(1)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run_agg = %v, want %v", got, want)
	}
	// AVG: a 335, b 700, c NULL, d 2: a and d pass a < 500.
	pos := queryByName("run_pos").oracle(input{ev: ev})
	sort.Slice(pos, func(i, j int) bool { return pos[i]["k"].(string) < pos[j]["k"].(string) })
	if want := []outRow{{"k": "a", "n": int64(3), "a": 335.0}, {"k": "d", "n": int64(4), "a": 2.0}}; !reflect.DeepEqual(pos, want) {
		t.Fatalf("run_pos = %v, want %v", pos, want)
	}
	// dim: x 5 -> 6 (b 2), y 9 then deleted, z 1 (b 1), w 2 (b 2), y
	// deleted again; a delete of a key never seen.
	dim := []dimRow{{K: "x", Label: v(5)}, {K: "y", Label: v(9)}, {K: "x", Label: v(6)}, {K: "z", Label: v(1)},
		{K: "y"}, {K: "w", Label: v(2)}, {K: "y"}, {K: "never"}}
	got = byB(queryByName("dim_agg").oracle(input{dim: dim}))
	want = map[int64]outRow{
		2: {"b": int64(2), "n": int64(2), "s": int64(8), "lo_k": "w", "hi": int64(6)},
		1: {"b": int64(1), "n": int64(1), "s": int64(1), "lo_k": "z", "hi": int64(1)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dim_agg = %v, want %v", got, want)
	}
}

// TestWorkloadTakesBack: over the short runs' input, from the oracle's
// view, the queries over updating inputs have rows taken back from their
// outputs: a key of run_pos passes at some prefix of ev and not at the
// end; a bucket of run_agg holds another set of keys at some prefix
// (rows of the buckets updated, MIN and MAX taken back); a key of dim is
// deleted or changes its bucket of dim_agg. Without them the final
// comparison would pass against an engine that never takes back.
func TestWorkloadTakesBack(t *testing.T) {
	in := genInput(11, 4000)
	keysOf := func(rows []outRow, col string) map[string]bool {
		m := map[string]bool{}
		for _, r := range rows {
			m[fmt.Sprint(r[col])] = true
		}
		return m
	}
	final := keysOf(queryByName("run_pos").oracle(in), "k")
	left, moved := 0, 0
	finalAgg := map[string]bool{}
	for _, r := range queryByName("run_agg").oracle(in) {
		finalAgg[fmt.Sprint(r)] = true
	}
	for n := 200; n < len(in.ev); n += 200 {
		prefix := input{ev: in.ev[:n]}
		for k := range keysOf(queryByName("run_pos").oracle(prefix), "k") {
			if !final[k] {
				left++
			}
		}
		for _, r := range queryByName("run_agg").oracle(prefix) {
			if !finalAgg[fmt.Sprint(r)] {
				moved++
			}
		}
	}
	dimTaken := 0
	seen := map[string]int64{}
	for _, d := range in.dim {
		if old, ok := seen[d.K]; ok && (d.Label == nil || *d.Label%4 != old%4) {
			dimTaken++
		}
		if d.Label == nil {
			delete(seen, d.K)
		} else {
			seen[d.K] = *d.Label
		}
	}
	t.Logf("run_pos: keys passing at a prefix, not at the end: %d; run_agg: bucket rows of a prefix not final: %d; dim: versions taking a row out of its bucket: %d", left, moved, dimTaken)
	if left == 0 || moved == 0 || dimTaken == 0 {
		t.Fatal("the input does not take rows back from every query over an updating input")
	}
}
