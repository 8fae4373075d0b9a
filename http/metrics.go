package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamsql/streamsql/queries"
)

// collector exports per-query counters at scrape time.
type collector struct {
	e                                        *queries.Engine
	rowsIn, rowsOut, late, checkpoint, state *prometheus.Desc
}

func newCollector(e *queries.Engine) *collector {
	l := []string{"query"}
	return &collector{e: e,
		rowsIn:     prometheus.NewDesc("streamsql_query_rows_in_total", "Rows read by the query's sources.", l, nil),
		rowsOut:    prometheus.NewDesc("streamsql_query_rows_out_total", "Result changes written by the query's sinks.", l, nil),
		late:       prometheus.NewDesc("streamsql_query_late_rows_total", "Rows dropped from at least one window as late.", l, nil),
		checkpoint: prometheus.NewDesc("streamsql_query_last_checkpoint", "Id of the query's last completed checkpoint.", l, nil),
		state:      prometheus.NewDesc("streamsql_query_state_rows", "Open groups and held join rows in the query's operators.", l, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rowsIn
	ch <- c.rowsOut
	ch <- c.late
	ch <- c.checkpoint
	ch <- c.state
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.e.Queries() {
		ch <- prometheus.MustNewConstMetric(c.rowsIn, prometheus.CounterValue, float64(q.Counters["rows_in"]), q.Name)
		ch <- prometheus.MustNewConstMetric(c.rowsOut, prometheus.CounterValue, float64(q.Counters["rows_out"]), q.Name)
		ch <- prometheus.MustNewConstMetric(c.late, prometheus.CounterValue, float64(q.Counters["late_rows"]), q.Name)
		ch <- prometheus.MustNewConstMetric(c.checkpoint, prometheus.GaugeValue, float64(q.LastCheckpoint), q.Name)
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(q.StateSize["rows"]), q.Name)
	}
}
