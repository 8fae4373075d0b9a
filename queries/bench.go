package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries/examples"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/runtime/source/nexmark"
	"github.com/streamsql/streamsql/state"
)

// BenchConfig is one `streamsql bench` run.
type BenchConfig struct {
	Query              string // an example name (queries/examples)
	Events             int64  // generator events (all kinds; the bid table sees 46 of 50)
	CheckpointInterval time.Duration
	Parallelism        int
	Dir                string // scratch directory for the state stores
	// Progress, when set, is called about once a second while the query
	// runs (a terminal's progress line).
	Progress func(BenchProgress)
}

// BenchProgress is a running bench's position.
type BenchProgress struct {
	Events      int64 // read so far
	Expected    int64 // rows the sources will read in all (bounded tables)
	Checkpoints int
	Elapsed     time.Duration
}

// BenchResult is what a run measured.
//
// events counts the rows the query's sources read (a table read twice
// counts twice); generator_events is the --events bound.
type BenchResult struct {
	Query           string  `json:"query"`
	GeneratorEvents int64   `json:"generator_events"`
	Events          int64   `json:"events"`
	RowsOut         int64   `json:"rows_out"`
	Parallelism     int     `json:"parallelism"`
	CheckpointMs    int64   `json:"checkpoint_interval_ms"`
	Checkpoints     int     `json:"checkpoints"`
	CheckpointP50Ms int64   `json:"checkpoint_p50_ms"`
	CheckpointP99Ms int64   `json:"checkpoint_p99_ms"`
	CheckpointP50B  int64   `json:"checkpoint_p50_bytes"`
	CheckpointP99B  int64   `json:"checkpoint_p99_bytes"`
	WallSeconds     float64 `json:"wall_seconds"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	EventsPerCPUSec float64 `json:"events_per_cpu_second"`
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
	ResultRows      int     `json:"result_rows"`
}

// BenchQueries lists the example queries bench can run: the Nexmark ones
// (queries/examples/nexmark) by their name, the others too.
func BenchQueries() []string {
	var out []string
	for _, pat := range []string{"nexmark/*.sql", "*.sql"} {
		ents, _ := fs.Glob(examples.FS, pat)
		for _, e := range ents {
			out = append(out, strings.TrimSuffix(path.Base(e), ".sql"))
		}
	}
	sort.Strings(out)
	return out
}

// exampleSQL reads an example by name.
func exampleSQL(name string) ([]byte, error) {
	name = strings.TrimPrefix(name, "nexmark/")
	for _, p := range []string{"nexmark/" + name + ".sql", name + ".sql"} {
		if b, err := fs.ReadFile(examples.FS, p); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown query %q (have %s)", name, strings.Join(BenchQueries(), ", "))
}

// BenchTables are the Nexmark tables the examples read, bounded to the
// first events generator events (each table sees its kind's share).
func BenchTables(events int64) string {
	attrs := func(kind string) string {
		return fmt.Sprintf(`ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "%s", "event_time": "date_time", "events": %d}'`, kind, events)
	}
	return `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256),
  date_time TIMESTAMP(3), extra VARCHAR(256)) ` + attrs("bid") + `;
CREATE TABLE auction (id BIGINT, item_name VARCHAR(64), description VARCHAR(256), initial_bid BIGINT, reserve BIGINT,
  date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR(256)) ` + attrs("auction") + `;
CREATE TABLE person (id BIGINT, name VARCHAR(64), email_address VARCHAR(64), credit_card VARCHAR(64), city VARCHAR(64),
  state VARCHAR(8), date_time TIMESTAMP(3), extra VARCHAR(256)) ` + attrs("person")
}

// IngestBenchTable is the HTTP table `streamsql bench --ingest` posts to:
// shaped like the Nexmark bid, so that bodies of generator rows
// (BidRenderer) have realistic sizes and types.
const IngestBenchTable = `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256),
  date_time TIMESTAMP(3), extra VARCHAR(256)) ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "date_time"}'`

// BidRenderer renders Nexmark bids (the default generator) as NDJSON lines
// for IngestBenchTable, timestamps as RFC 3339 strings like results.
type BidRenderer struct {
	g    *nexmark.Generator
	cols [][]byte // the quoted column names
	row  plan.Row
	line []byte
}

// NewBidRenderer returns a renderer.
func NewBidRenderer() *BidRenderer {
	r := &BidRenderer{g: nexmark.New(nexmark.Config{})}
	for _, c := range nexmark.Columns(nexmark.Bid) {
		k, _ := json.Marshal(c.Name)
		r.cols = append(r.cols, k)
	}
	return r
}

// Line returns bid idx as one NDJSON line (with its newline), valid until
// the next call.
func (r *BidRenderer) Line(idx int64) []byte {
	r.row = r.g.Fill(nexmark.Bid, uint64(idx), nil, r.row)
	b := append(r.line[:0], '{')
	for i, v := range r.row {
		if i > 0 {
			b = append(b, ',')
		}
		x, err := json.Marshal(JSONValue(v))
		if err != nil {
			panic(err) // generator values are plain numbers and strings
		}
		b = append(append(append(b, r.cols[i]...), ':'), x...)
	}
	r.line = append(b, '}', '\n')
	return r.line
}

// Bench runs an example query over a bounded Nexmark stream in-process,
// into a discarding sink, with checkpoints to a real Badger store, and
// measures CPU time (getrusage) for the whole process.
func Bench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	ex, err := exampleQuery(cfg.Query)
	if err != nil {
		return BenchResult{}, err
	}
	e, store, dir, closeEngine, err := openBenchEngine(ctx, cfg.Dir, cfg.CheckpointInterval)
	if err != nil {
		return BenchResult{}, err
	}
	defer closeEngine()
	if err := WriteExampleFiles(dir); err != nil {
		return BenchResult{}, err
	}
	if _, err := e.Exec(ctx, BenchTables(cfg.Events)+";\n"+ex.Setup); err != nil {
		return BenchResult{}, err
	}
	opts := e.defaults()
	opts.Parallelism = max(cfg.Parallelism, 1)
	g, err := benchPlan(e, ex, cfg.Query, opts)
	if err != nil {
		return BenchResult{}, err
	}
	before := CPUSeconds()
	start := time.Now()
	var res *runtime.Results // an INSERT's rows go to its sink table (q10: files)
	sinkID := ""
	if ex.Sink == "" {
		res = runtime.NewResults(store, 1)
	} else {
		sinkID = "bench/1/" + ex.Sink
	}
	job, err := runtime.Start(g, e.deps(), runtime.StartOptions{QueryID: 1, Name: cfg.Query, Results: res, SinkID: sinkID})
	if err != nil {
		return BenchResult{}, err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	expected := benchExpected(g, cfg.Events)
wait:
	for {
		select {
		case <-job.Done():
			break wait
		case <-ctx.Done():
			job.Stop()
			return BenchResult{}, ctx.Err()
		case <-tick.C:
			if cfg.Progress != nil {
				st := job.Status()
				cfg.Progress(BenchProgress{Events: st.RowsIn, Expected: expected, Checkpoints: len(job.History()), Elapsed: time.Since(start)})
			}
		}
	}
	if cfg.CheckpointInterval > 0 {
		// A last checkpoint commits what the end of input released.
		if _, err := job.Checkpoint(ctx); err != nil {
			job.Stop()
			return BenchResult{}, err
		}
	}
	wall := time.Since(start).Seconds()
	cpu := CPUSeconds() - before
	st := job.Status()
	job.Stop()
	if st.Err != nil {
		return BenchResult{}, st.Err
	}
	r := BenchResult{Query: cfg.Query, GeneratorEvents: cfg.Events, Events: st.RowsIn, RowsOut: st.RowsOut, Parallelism: g.Options.Parallelism,
		CheckpointMs: cfg.CheckpointInterval.Milliseconds(), WallSeconds: wall, CPUSeconds: cpu,
		EventsPerSecond: float64(st.RowsIn) / wall, EventsPerCPUSec: float64(st.RowsIn) / cpu, PeakRSSBytes: PeakRSSBytes()}
	benchStats(&r, job, res)
	return r, nil
}

// openBenchEngine opens an engine over a new temporary data directory
// under base, checkpointing every ckpt (0: never); closeEngine closes it
// and removes the directory.
func openBenchEngine(ctx context.Context, base string, ckpt time.Duration) (e *Engine, store *state.BadgerVersioned, dir string, closeEngine func(), err error) {
	dir, err = os.MkdirTemp(base, "streamsql-bench-")
	if err != nil {
		return nil, nil, "", nil, err
	}
	meta, err := state.OpenMeta(filepath.Join(dir, "meta"), state.MetaOptions{})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, "", nil, err
	}
	store, err = state.OpenVersioned(filepath.Join(dir, "state"))
	if err != nil {
		meta.Close()
		os.RemoveAll(dir)
		return nil, nil, "", nil, err
	}
	// Barriers go out every emit interval (200 ms by default), and a
	// checkpoint rides on one: a shorter checkpoint interval needs as short
	// an emit interval.
	emit := 200 * time.Millisecond
	if ckpt > 0 {
		emit = min(emit, ckpt)
	}
	e, err = OpenWith(Config{DataDir: dir, CheckpointInterval: ckpt, EmitInterval: emit}, meta, store)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, "", nil, err
	}
	return e, store, dir, func() { e.Close(ctx); os.RemoveAll(dir) }, nil
}

// benchStats fills r's checkpoint figures from job's history and its
// result rows from res (nil: a query into a sink).
func benchStats(r *BenchResult, job *runtime.Job, res *runtime.Results) {
	var durs, sizes []int64
	for _, h := range job.History() {
		if h.Status == "completed" {
			durs, sizes = append(durs, h.Duration), append(sizes, h.Bytes)
		}
	}
	r.Checkpoints = len(durs)
	r.CheckpointP50Ms, r.CheckpointP99Ms = Percentile(durs, 50), Percentile(durs, 99)
	r.CheckpointP50B, r.CheckpointP99B = Percentile(sizes, 50), Percentile(sizes, 99)
	if res != nil {
		if rows, err := res.Rows(false); err == nil {
			r.ResultRows = len(rows)
		}
	}
}

// benchPlan plans the example's query: a SELECT into results, an INSERT
// into its sink table.
func benchPlan(e *Engine, ex exampleParts, name string, opts plan.Options) (*plan.Graph, error) {
	if ex.Sink == "" {
		return planner.Query(ex.Sel, e.planCatalog(), opts, name, plan.SinkResults)
	}
	t, ok := e.planCatalog().Table(ex.Sink)
	if !ok {
		return nil, fmt.Errorf("example %s: no table %s", name, ex.Sink)
	}
	return planner.Insert(ex.Sel, t, e.planCatalog(), opts)
}

// benchExpected is how many rows the query's sources read in all: each
// bounded generator table's share of the events.
func benchExpected(g *plan.Graph, events int64) int64 {
	var n int64
	for _, v := range g.Vertices {
		for _, op := range v.Ops {
			if src, ok := op.(*plan.Source); ok {
				if k, err := nexmark.ParseKind(src.Attrs["kind"]); err == nil {
					n += int64(nexmark.Count(k, uint64(events)))
				}
			}
		}
	}
	return n
}

// Percentile is the p-th percentile (nearest rank) of xs; 0 when empty.
func Percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// CPUSeconds is the user plus system CPU time of the whole process so far
// (getrusage): every goroutine counts, the benchmark's own included.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// PeakRSSBytes is the process's peak resident set size (getrusage).
func PeakRSSBytes() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss * 1024 // Linux reports kilobytes
}
