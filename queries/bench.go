package queries

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/queries/examples"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/state"
)

// BenchConfig is one `streamsql bench` run.
type BenchConfig struct {
	Query              string // an example name (queries/examples)
	Events             int64  // generator events (all kinds; the bid table sees 46 of 50)
	CheckpointInterval time.Duration
	Parallelism        int
	Dir                string // scratch directory for the state stores
}

// BenchResult is what a run measured.
type BenchResult struct {
	Query            string  `json:"query"`
	Events           int64   `json:"events"`
	RowsIn           int64   `json:"rows_in"`
	RowsOut          int64   `json:"rows_out"`
	Parallelism      int     `json:"parallelism"`
	CheckpointMs     int64   `json:"checkpoint_interval_ms"`
	Checkpoints      uint64  `json:"last_checkpoint"`
	WallSeconds      float64 `json:"wall_seconds"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	EventsPerCPUSec  float64 `json:"events_per_cpu_second"`
	EventsPerWallSec float64 `json:"events_per_wall_second"`
	MaxRSSMiB        float64 `json:"max_rss_mib"`
}

// BenchQueries lists the example queries bench can run.
func BenchQueries() []string {
	ents, _ := fs.Glob(examples.FS, "*.sql")
	more, _ := fs.Glob(examples.FS, "nexmark/*.sql")
	var out []string
	for _, e := range append(ents, more...) {
		out = append(out, strings.TrimSuffix(e, ".sql"))
	}
	sort.Strings(out)
	return out
}

// BenchTable is the Nexmark bid table the examples read.
func BenchTable(events int64) string {
	return fmt.Sprintf(`CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256),
  date_time TIMESTAMP(3), extra VARCHAR(256)) ENGINE=nexmark
  ENGINE_ATTRIBUTE='{"kind": "bid", "event_time": "date_time", "events": %d}'`, events)
}

// Bench runs an example query over a bounded Nexmark stream in-process,
// into a discarding sink, with checkpoints to a real Badger store, and
// measures CPU time (getrusage) for the whole process.
func Bench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	text, err := fs.ReadFile(examples.FS, cfg.Query+".sql")
	if err != nil {
		return BenchResult{}, fmt.Errorf("unknown query %q (have %s)", cfg.Query, strings.Join(BenchQueries(), ", "))
	}
	dir, err := os.MkdirTemp(cfg.Dir, "streamsql-bench-")
	if err != nil {
		return BenchResult{}, err
	}
	defer os.RemoveAll(dir)
	meta, err := state.OpenMeta(filepath.Join(dir, "meta"), state.MetaOptions{})
	if err != nil {
		return BenchResult{}, err
	}
	store, err := state.OpenVersioned(filepath.Join(dir, "state"))
	if err != nil {
		meta.Close()
		return BenchResult{}, err
	}
	e, err := OpenWith(Config{DataDir: dir, CheckpointInterval: cfg.CheckpointInterval}, meta, store)
	if err != nil {
		return BenchResult{}, err
	}
	defer e.Close(ctx)
	if _, err := e.Exec(ctx, BenchTable(cfg.Events)); err != nil {
		return BenchResult{}, err
	}
	stmts, err := parser.Parse(string(text))
	if err != nil {
		return BenchResult{}, fmt.Errorf("example %s: %w", cfg.Query, err)
	}
	sel, ok := stmts[0].Stmt.(*parser.Select)
	if !ok {
		return BenchResult{}, fmt.Errorf("example %s is not a SELECT", cfg.Query)
	}
	opts := e.defaults()
	opts.Parallelism = max(cfg.Parallelism, 1)
	e.mu.RLock()
	g, err := planner.Query(sel, catalog{e}, opts, cfg.Query, plan.SinkDiscard)
	e.mu.RUnlock()
	if err != nil {
		return BenchResult{}, err
	}
	before := cpuSeconds()
	start := time.Now()
	job, err := runtime.Start(g, e.deps(), runtime.StartOptions{QueryID: 1, Name: cfg.Query})
	if err != nil {
		return BenchResult{}, err
	}
	select {
	case <-job.Done():
	case <-ctx.Done():
		job.Stop()
		return BenchResult{}, ctx.Err()
	}
	wall := time.Since(start).Seconds()
	cpu := cpuSeconds() - before
	st := job.Status()
	job.Stop()
	if st.Err != nil {
		return BenchResult{}, st.Err
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return BenchResult{Query: cfg.Query, Events: cfg.Events, RowsIn: st.RowsIn, RowsOut: st.RowsOut, Parallelism: g.Options.Parallelism,
		CheckpointMs: cfg.CheckpointInterval.Milliseconds(), Checkpoints: st.LastCheckpoint, WallSeconds: wall, CPUSeconds: cpu,
		EventsPerCPUSec: float64(st.RowsIn) / cpu, EventsPerWallSec: float64(st.RowsIn) / wall, MaxRSSMiB: float64(ru.Maxrss) / 1024}, nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
