package queries

import (
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"time"

	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime"
	"github.com/streamsql/streamsql/value"
)

// KafkaBenchConfig is one `streamsql bench --kafka-format` run: a topic
// that already holds Records Nexmark bids in Format, read by
// KafkaBenchQuery.
type KafkaBenchConfig struct {
	Format             string // a Kafka source format (json, avro, a change format)
	Brokers            string
	Registry           string // the schema registry's URL, for registry formats
	Topic              string
	Records            int64 // records in the topic: the run ends when the source has read them all
	CheckpointInterval time.Duration
	Dir                string    // scratch directory for the state stores
	CPUProfile         io.Writer // when set, a CPU profile of the timed part
}

// KafkaBenchQuery is the query of `streamsql bench --kafka-format`:
// Nexmark q5-core (bids per auction in a 10 s window sliding every 2 s).
const KafkaBenchQuery = `SELECT auction, COUNT(*) AS num, window_start, window_end FROM bid GROUP BY HOP(date_time, '2s', '10s'), auction`

// KafkaBenchTable is the bid table of a topic in format: the Nexmark bid
// columns, and for a change format an id column, its PRIMARY KEY (the
// record key).
func KafkaBenchTable(format, brokers, registry, topic string) string {
	cols, reg := "", ""
	if value.IsChangeFormat(format) {
		cols = "id BIGINT, "
	}
	if registry != "" {
		reg = fmt.Sprintf(`, "schema_registry": %q`, registry)
	}
	pk := ""
	if cols != "" {
		pk = ", PRIMARY KEY (id)"
	}
	return fmt.Sprintf(`CREATE TABLE bid (%sauction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256),
  date_time TIMESTAMP(3), extra VARCHAR(256)%s) ENGINE=kafka CONNECTION='%s'
  ENGINE_ATTRIBUTE='{"topic": %q, "format": %q, "event_time": "date_time"%s}'`, cols, pk, brokers, topic, format, reg)
}

// KafkaBench runs KafkaBenchQuery over the bids of cfg.Topic in-process,
// into results, with checkpoints to a real Badger store, until its
// source has read cfg.Records rows; it measures CPU time (getrusage) for
// the whole process from the query's start to its last checkpoint.
func KafkaBench(ctx context.Context, cfg KafkaBenchConfig) (BenchResult, error) {
	e, store, _, closeEngine, err := openBenchEngine(ctx, cfg.Dir, cfg.CheckpointInterval)
	if err != nil {
		return BenchResult{}, err
	}
	defer closeEngine()
	if _, err := e.Exec(ctx, KafkaBenchTable(cfg.Format, cfg.Brokers, cfg.Registry, cfg.Topic)); err != nil {
		return BenchResult{}, err
	}
	ex, err := splitExample("kafka", []byte(KafkaBenchQuery))
	if err != nil {
		return BenchResult{}, err
	}
	opts := e.defaults()
	opts.Parallelism = 1
	g, err := planner.Query(ex.Sel, e.planCatalog(), opts, "kafka-"+cfg.Format, plan.SinkResults)
	if err != nil {
		return BenchResult{}, err
	}
	if cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
			return BenchResult{}, err
		}
		defer pprof.StopCPUProfile()
	}
	before := CPUSeconds()
	start := time.Now()
	res := runtime.NewResults(store, 1)
	job, err := runtime.Start(g, e.deps(), runtime.StartOptions{QueryID: 1, Name: "kafka-" + cfg.Format, Results: res})
	if err != nil {
		return BenchResult{}, err
	}
	defer job.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		st := job.Status()
		if st.Err != nil {
			return BenchResult{}, st.Err
		}
		if st.RowsIn >= cfg.Records {
			break
		}
		select {
		case <-job.Done():
			return BenchResult{}, fmt.Errorf("the query ended after %d of %d records", job.Status().RowsIn, cfg.Records)
		case <-ctx.Done():
			return BenchResult{}, ctx.Err()
		case <-tick.C:
		}
	}
	// A checkpoint: every row read has gone through the query.
	if _, err := job.Checkpoint(ctx); err != nil {
		return BenchResult{}, err
	}
	wall := time.Since(start).Seconds()
	cpu := CPUSeconds() - before
	st := job.Status()
	if st.BadRecords > 0 {
		return BenchResult{}, fmt.Errorf("format %s: %d bad records: %+v", cfg.Format, st.BadRecords, st.RecentBad)
	}
	r := BenchResult{Query: "q5-core from Kafka, format " + cfg.Format, GeneratorEvents: cfg.Records, Events: st.RowsIn, RowsOut: st.RowsOut, Parallelism: 1,
		CheckpointMs: cfg.CheckpointInterval.Milliseconds(), WallSeconds: wall, CPUSeconds: cpu,
		EventsPerSecond: float64(st.RowsIn) / wall, EventsPerCPUSec: float64(st.RowsIn) / cpu, PeakRSSBytes: PeakRSSBytes()}
	benchStats(&r, job, res)
	return r, nil
}
