package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamsql/streamsql/queries"
)

// collector exports per-query metrics at scrape time, from the engine's
// snapshots (queries.Engine.Queries for every query, running or not;
// queries.Engine.Metrics for running ones). Counters of operators,
// checkpoints and sinks restart at zero with each run of a query (a
// restart, a resume, CREATE OR REPLACE): Prometheus sees a counter reset.
type collector struct {
	e                                        *queries.Engine
	rowsIn, rowsOut, late, checkpoint, state *prometheus.Desc

	bad, outOfRange, wmLag    *prometheus.Desc
	opIn, opOut, opState      *prometheus.Desc
	stateBytes                *prometheus.Desc
	queueFill, stageState     *prometheus.Desc
	ckptDur, ckptBytes, ckptF *prometheus.Desc
	ckptAlign                 *prometheus.Desc
	sinkPending, sinkLag      *prometheus.Desc
	diskFree, diskReserve     *prometheus.Desc
	tableCorrupt, lostRows    *prometheus.Desc
}

func newCollector(e *queries.Engine) *collector {
	l := []string{"query"}
	op := []string{"query", "stage", "operator"}
	stage := []string{"query", "stage"}
	sink := []string{"query", "sink"}
	return &collector{e: e,
		rowsIn:     prometheus.NewDesc("streamsql_query_rows_in_total", "Rows read by the query's sources.", l, nil),
		rowsOut:    prometheus.NewDesc("streamsql_query_rows_out_total", "Result changes written by the query's sinks.", l, nil),
		late:       prometheus.NewDesc("streamsql_query_late_rows_total", "Rows dropped from at least one window as late.", l, nil),
		checkpoint: prometheus.NewDesc("streamsql_query_last_checkpoint", "Id of the query's last completed checkpoint.", l, nil),
		state:      prometheus.NewDesc("streamsql_query_state_rows", "Open groups and held join rows in the query's operators.", l, nil),
		stateBytes: prometheus.NewDesc("streamsql_query_state_bytes", "Estimated heap bytes the query's operators' state takes (groups, keys, windows, COUNT(DISTINCT) members, held join rows).", l, nil),
		bad:        prometheus.NewDesc("streamsql_query_bad_records_total", "Source records that could not be decoded.", l, nil),
		outOfRange: prometheus.NewDesc("streamsql_query_out_of_range_total", "Arithmetic results beyond their type's range (BIGINT overflow, TIMESTAMP arithmetic past 0001-9999), NULL in the rows.", l, nil),
		wmLag: prometheus.NewDesc("streamsql_query_watermark_lag_seconds",
			"Wall clock minus the query's watermark (event-time queries with a watermark).", l, nil),
		opIn: prometheus.NewDesc("streamsql_operator_rows_in_total",
			"Rows into an operator, summed over its stage's subtasks (operator: <index in the stage's EXPLAIN>/<name>).", op, nil),
		opOut: prometheus.NewDesc("streamsql_operator_rows_out_total",
			"Rows out of an operator, summed over its stage's subtasks.", op, nil),
		opState: prometheus.NewDesc("streamsql_operator_state_bytes",
			"Estimated heap bytes a stateful operator's state takes (groups, keys, windows, COUNT(DISTINCT) members, held join rows), summed over its stage's subtasks.", op, nil),
		queueFill: prometheus.NewDesc("streamsql_queue_fill_ratio",
			"Fill (length / capacity) of the fullest input queue of the stage's tasks; 1: its producer is blocked (backpressure).", stage, nil),
		stageState: prometheus.NewDesc("streamsql_stage_state_rows", "Open groups and held join rows in the stage's operators.", stage, nil),
		ckptDur:    prometheus.NewDesc("streamsql_checkpoint_duration_seconds", "Duration of completed checkpoints.", l, nil),
		ckptBytes:  prometheus.NewDesc("streamsql_checkpoint_bytes_total", "Bytes written by completed checkpoints.", l, nil),
		ckptF:      prometheus.NewDesc("streamsql_checkpoint_failures_total", "Checkpoints that failed or timed out.", l, nil),
		ckptAlign: prometheus.NewDesc("streamsql_checkpoint_alignment_seconds",
			"Alignment time of completed checkpoints: how long the slowest task held the barrier up, aligning it across its inputs or, at an external sink, waiting for room (backpressure).", l, nil),
		sinkPending: prometheus.NewDesc("streamsql_sink_pending_epochs",
			"External sink: epochs journaled and not committed (exactly_once), batches handed over and not applied (at_least_once).", sink, nil),
		diskFree: prometheus.NewDesc("streamsql_disk_free_bytes",
			"Free space on the data directory's file system: ingest is refused (507) below streamsql_disk_reserve_bytes, checkpoints below half of it.", nil, nil),
		diskReserve: prometheus.NewDesc("streamsql_disk_reserve_bytes", "The free space kept on the data directory's file system (--disk-reserve).", nil, nil),
		tableCorrupt: prometheus.NewDesc("streamsql_table_corrupt",
			"1 when the table's ingest log lost acknowledged rows (GET /v1/tables/{table}: state corrupt, the ranges lost), else 0; stays until DROP TABLE.", []string{"table"}, nil),
		lostRows: prometheus.NewDesc("streamsql_ingest_lost_rows",
			"Offsets of the table's ingest log whose acknowledged rows were lost (found at a start; never reused).", []string{"table"}, nil),
		sinkLag: prometheus.NewDesc("streamsql_sink_commit_lag_seconds",
			"External sink: age of the oldest completed checkpoint not yet committed (exactly_once), of the batch being applied (at_least_once); 0 when caught up.", sink, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rowsIn, c.rowsOut, c.late, c.checkpoint, c.state, c.stateBytes, c.bad, c.outOfRange, c.wmLag, c.opIn, c.opOut, c.opState,
		c.queueFill, c.stageState, c.ckptDur, c.ckptBytes, c.ckptF, c.ckptAlign, c.sinkPending, c.sinkLag, c.diskFree, c.diskReserve, c.tableCorrupt, c.lostRows} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if free, reserve := c.e.DiskSpace(); free >= 0 {
		ch <- prometheus.MustNewConstMetric(c.diskFree, prometheus.GaugeValue, float64(free))
		ch <- prometheus.MustNewConstMetric(c.diskReserve, prometheus.GaugeValue, float64(reserve))
	}
	for _, t := range c.e.Tables() {
		if t.Engine != "http" {
			continue
		}
		corrupt := 0.0
		if t.State == queries.TableCorrupt {
			corrupt = 1
		}
		ch <- prometheus.MustNewConstMetric(c.tableCorrupt, prometheus.GaugeValue, corrupt, t.Name)
		ch <- prometheus.MustNewConstMetric(c.lostRows, prometheus.GaugeValue, float64(t.LostRows), t.Name)
	}
	for _, q := range c.e.Queries() {
		ch <- prometheus.MustNewConstMetric(c.rowsIn, prometheus.CounterValue, float64(q.Counters["rows_in"]), q.Name)
		ch <- prometheus.MustNewConstMetric(c.rowsOut, prometheus.CounterValue, float64(q.Counters["rows_out"]), q.Name)
		ch <- prometheus.MustNewConstMetric(c.late, prometheus.CounterValue, float64(q.Counters["late_rows"]), q.Name)
		ch <- prometheus.MustNewConstMetric(c.checkpoint, prometheus.GaugeValue, float64(q.LastCheckpoint), q.Name)
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(q.StateSize["rows"]), q.Name)
		if b, ok := q.StateSize["bytes"]; ok {
			ch <- prometheus.MustNewConstMetric(c.stateBytes, prometheus.GaugeValue, float64(b), q.Name)
		}
	}
	now := time.Now()
	for _, q := range c.e.Metrics() {
		c.collectQuery(ch, q, now)
	}
}

func (c *collector) collectQuery(ch chan<- prometheus.Metric, q queries.QueryMetrics, now time.Time) {
	name, m := q.Name, q.Metrics
	ch <- prometheus.MustNewConstMetric(c.bad, prometheus.CounterValue, float64(m.BadRecords), name)
	ch <- prometheus.MustNewConstMetric(c.outOfRange, prometheus.CounterValue, float64(m.OutOfRange), name)
	if lag, ok := m.WatermarkLag(now); ok {
		ch <- prometheus.MustNewConstMetric(c.wmLag, prometheus.GaugeValue, lag.Seconds(), name)
	}
	for _, s := range m.Stages {
		stage := strconv.Itoa(s.Stage)
		for _, o := range s.Operators {
			ch <- prometheus.MustNewConstMetric(c.opIn, prometheus.CounterValue, float64(o.RowsIn), name, stage, o.Name())
			ch <- prometheus.MustNewConstMetric(c.opOut, prometheus.CounterValue, float64(o.RowsOut), name, stage, o.Name())
			if o.Stateful {
				ch <- prometheus.MustNewConstMetric(c.opState, prometheus.GaugeValue, float64(o.StateBytes), name, stage, o.Name())
			}
		}
		if s.HasQueue {
			ch <- prometheus.MustNewConstMetric(c.queueFill, prometheus.GaugeValue, s.QueueFill, name, stage)
		}
		ch <- prometheus.MustNewConstMetric(c.stageState, prometheus.GaugeValue, float64(s.StateRows), name, stage)
	}
	cp := m.Checkpoints
	buckets := make(map[float64]uint64, len(cp.Bounds))
	align := make(map[float64]uint64, len(cp.Bounds))
	for i, b := range cp.Bounds {
		buckets[b] = cp.Buckets[i]
		align[b] = cp.AlignmentBuckets[i]
	}
	ch <- prometheus.MustNewConstHistogram(c.ckptDur, cp.Completed, cp.DurationSum, buckets, name)
	ch <- prometheus.MustNewConstHistogram(c.ckptAlign, cp.Completed, cp.AlignmentSum, align, name)
	ch <- prometheus.MustNewConstMetric(c.ckptBytes, prometheus.CounterValue, float64(cp.Bytes), name)
	ch <- prometheus.MustNewConstMetric(c.ckptF, prometheus.CounterValue, float64(cp.Failed), name)
	for _, s := range m.Sinks {
		ch <- prometheus.MustNewConstMetric(c.sinkPending, prometheus.GaugeValue, float64(s.PendingEpochs), name, s.Table)
		ch <- prometheus.MustNewConstMetric(c.sinkLag, prometheus.GaugeValue, s.CommitLag.Seconds(), name, s.Table)
	}
}

// queryMetrics serves a query's recent samples for the console's charts.
func (s *server) queryMetrics(w http.ResponseWriter, r *http.Request) {
	h, err := s.e.QueryMetrics(param(r, "name"))
	if err != nil {
		problem(w, err)
		return
	}
	writeJSON(w, 200, h)
}
