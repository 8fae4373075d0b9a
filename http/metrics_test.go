package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// filterView keeps the bids above 50: of bidRows, 2 of 4 pass the source
// stage's Calc.
const filterView = `CREATE VIEW big AS SELECT window_start, window_end, auction, COUNT(*) AS n FROM bids WHERE price > 50 GROUP BY TUMBLE(ts, '10s'), auction`

// scrape parses GET /metrics with the Prometheus text parser.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	r := e.get("/metrics")
	if r.status != 200 {
		e.t.Fatalf("/metrics: %s", r)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		e.t.Fatalf("/metrics does not parse: %v\n%s", err, r.body)
	}
	return fams
}

// metric finds the series of family name whose labels include want (name,
// value pairs); nil when there is none.
func metric(fams map[string]*dto.MetricFamily, name string, want ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if have[want[i]] != want[i+1] {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a counter's or gauge's value (fails when the series is missing).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := metric(fams, name, labels...)
	if m == nil {
		t.Fatalf("no series %s%v", name, labels)
	}
	switch fams[name].GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s is a %v", name, fams[name].GetType())
	return 0
}

// TestMetricsScrape runs a query with ingest and a checkpoint, then
// parses /metrics and checks every family against what happened.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Hour, noSampler: true})
	e.sql(bidsDDL + ";\n" + filterView)
	e.ingest("bids", bidRows)
	e.checkpoint()
	fams := e.scrape()

	q := []string{"query", "big"}
	if v := value(t, fams, "streamsql_query_rows_in_total", q...); v != 4 {
		t.Errorf("query rows in %v, want 4", v)
	}
	if v := value(t, fams, "streamsql_ingest_rows_total", "table", "bids"); v != 4 {
		t.Errorf("ingest rows %v, want 4", v)
	}
	if v := value(t, fams, "streamsql_ingest_bytes_total", "table", "bids"); v != float64(len(bidRows)) {
		t.Errorf("ingest bytes %v, want %d", v, len(bidRows))
	}
	if v := value(t, fams, "streamsql_query_bad_records_total", q...); v != 0 {
		t.Errorf("bad records %v", v)
	}
	// Stage 0: Source, Calc (the filter); stage 1: Aggregate, Sink.
	op := func(name, stage, operator string) float64 {
		t.Helper()
		return value(t, fams, name, "query", "big", "stage", stage, "operator", operator)
	}
	if in, out := op("streamsql_operator_rows_in_total", "0", "0/Source"), op("streamsql_operator_rows_out_total", "0", "0/Source"); in != 4 || out != 4 {
		t.Errorf("source rows in %v out %v, want 4", in, out)
	}
	if in, out := op("streamsql_operator_rows_in_total", "0", "1/Calc"), op("streamsql_operator_rows_out_total", "0", "1/Calc"); in != 4 || out != 2 {
		t.Errorf("calc rows in %v out %v, want 4 and 2 (the rows above 50)", in, out)
	}
	if in := op("streamsql_operator_rows_in_total", "1", "0/Aggregate"); in != 2 {
		t.Errorf("aggregate rows in %v, want 2", in)
	}
	aggOut := op("streamsql_operator_rows_out_total", "1", "0/Aggregate")
	sinkIn := op("streamsql_operator_rows_in_total", "1", "1/Sink")
	if rowsOut := value(t, fams, "streamsql_query_rows_out_total", q...); aggOut == 0 || aggOut != sinkIn || sinkIn != rowsOut {
		t.Errorf("aggregate out %v, sink in %v, query rows out %v", aggOut, sinkIn, rowsOut)
	}
	// State bytes: for the aggregation (a stateful operator), not for the
	// source or the calc.
	if metric(fams, "streamsql_operator_state_bytes", "query", "big", "stage", "1", "operator", "0/Aggregate") == nil {
		t.Error("no state bytes for the aggregation")
	}
	if metric(fams, "streamsql_operator_state_bytes", "query", "big", "stage", "0", "operator", "1/Calc") != nil {
		t.Error("state bytes for a calc")
	}
	// Queue fill: stage 1 reads a queue, the source stage does not.
	if f := value(t, fams, "streamsql_queue_fill_ratio", "query", "big", "stage", "1"); f < 0 || f > 1 {
		t.Errorf("queue fill %v", f)
	}
	if metric(fams, "streamsql_queue_fill_ratio", "query", "big", "stage", "0") != nil {
		t.Error("a queue fill for the source stage")
	}
	// The window closed (the watermark passed it): no state left.
	if v, all := value(t, fams, "streamsql_stage_state_rows", "query", "big", "stage", "1"), value(t, fams, "streamsql_query_state_rows", q...); v != all {
		t.Errorf("stage 1 state rows %v, query %v", v, all)
	}
	// Checkpoints: the histogram has the forced one.
	h := metric(fams, "streamsql_checkpoint_duration_seconds", q...)
	if h == nil || fams["streamsql_checkpoint_duration_seconds"].GetType() != dto.MetricType_HISTOGRAM {
		t.Fatal("no checkpoint duration histogram")
	}
	hist := h.GetHistogram()
	finite, prev := 0, uint64(0)
	for _, b := range hist.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			finite++
		}
		if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > hist.GetSampleCount() {
			t.Errorf("bucket %v: count %d after %d (total %d)", b.GetUpperBound(), b.GetCumulativeCount(), prev, hist.GetSampleCount())
		}
		prev = b.GetCumulativeCount()
	}
	if hist.GetSampleCount() < 1 || finite < 10 || hist.GetSampleSum() <= 0 {
		t.Errorf("checkpoint histogram: count %d, sum %v, %d buckets", hist.GetSampleCount(), hist.GetSampleSum(), len(hist.GetBucket()))
	}
	// The alignment histogram sits beside it, one sample per completed
	// checkpoint (a stage of one input aligns nothing: about zero).
	a := metric(fams, "streamsql_checkpoint_alignment_seconds", q...)
	if a == nil || fams["streamsql_checkpoint_alignment_seconds"].GetType() != dto.MetricType_HISTOGRAM {
		t.Fatal("no checkpoint alignment histogram")
	}
	if ah := a.GetHistogram(); ah.GetSampleCount() != hist.GetSampleCount() || len(ah.GetBucket()) != len(hist.GetBucket()) || ah.GetSampleSum() < 0 {
		t.Errorf("alignment histogram: count %d (durations %d), sum %v, %d buckets", ah.GetSampleCount(), hist.GetSampleCount(), ah.GetSampleSum(), len(ah.GetBucket()))
	}
	if v := value(t, fams, "streamsql_checkpoint_bytes_total", q...); v <= 0 {
		t.Errorf("checkpoint bytes %v", v)
	}
	if v := value(t, fams, "streamsql_checkpoint_failures_total", q...); v != 0 {
		t.Errorf("checkpoint failures %v", v)
	}
	// The watermark is 2024-01-01T00:00:12.5Z: far behind the wall clock.
	if lag := value(t, fams, "streamsql_query_watermark_lag_seconds", q...); lag < float64(365*24*3600) {
		t.Errorf("watermark lag %v s", lag)
	}
	// The data directory's free space and the reserve kept there.
	if free, reserve := value(t, fams, "streamsql_disk_free_bytes"), value(t, fams, "streamsql_disk_reserve_bytes"); free <= 0 || reserve != 256<<20 {
		t.Errorf("disk free %v, reserve %v", free, reserve)
	}
	// No external sink: no sink series.
	if fams["streamsql_sink_pending_epochs"] != nil || fams["streamsql_sink_commit_lag_seconds"] != nil {
		t.Error("sink series without an external sink")
	}
}

// TestQueryMetricsSamples drives the sampler with its own clock and reads
// the samples back through GET /v1/queries/{name}/metrics.
func TestQueryMetricsSamples(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Hour, noSampler: true})
	e.sql(bidsDDL + ";\n" + filterView)
	t0 := time.Now()
	e.eng.SampleMetrics(t0)
	e.ingest("bids", bidRows)
	e.checkpoint()
	e.eng.SampleMetrics(t0.Add(2 * time.Second))
	r := e.get("/v1/queries/big/metrics")
	e.ok(r)
	var h struct {
		IntervalMS int64 `json:"interval_ms"`
		Samples    []struct {
			T                string   `json:"t"`
			RowsInPerS       float64  `json:"rows_in_per_s"`
			RowsOutPerS      float64  `json:"rows_out_per_s"`
			WatermarkLagS    *float64 `json:"watermark_lag_s"`
			LastCheckpointMS *int64   `json:"checkpoint_ms"`
			QueueFillMax     *float64 `json:"queue_fill"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatal(err)
	}
	if h.IntervalMS != 1000 || len(h.Samples) != 2 {
		t.Fatalf("%s", r.body)
	}
	first, last := h.Samples[0], h.Samples[1]
	if _, err := time.Parse(time.RFC3339, last.T); err != nil || first.T >= last.T {
		t.Errorf("times %q, %q", first.T, last.T)
	}
	if first.RowsInPerS != 0 || first.WatermarkLagS != nil || first.LastCheckpointMS != nil {
		t.Errorf("first sample (before any row) %s", r.body)
	}
	if last.RowsInPerS != 2 || last.RowsOutPerS <= 0 || last.WatermarkLagS == nil || last.LastCheckpointMS == nil ||
		last.QueueFillMax == nil {
		t.Errorf("second sample (4 rows in 2 s, a checkpoint) %s", r.body)
	}
	e.problem(e.get("/v1/queries/nope/metrics"), 404, "nope")
}

// TestStateBytesMetric: a running COUNT(DISTINCT) over 20,000 distinct
// values reports the bytes its state takes per operator in /metrics
// (streamsql_operator_state_bytes), per query (streamsql_query_state_bytes
// and state_size.bytes of GET /v1/queries/{name}, equal to the sum over its
// operators) and in the plan's graph: at least the members' bytes and
// their index, growing with the members. streamsql_query_state_rows says 1
// (one group), as before.
func TestStateBytesMetric(t *testing.T) {
	t.Parallel()
	e := start(t, config{checkpoint: time.Hour, noSampler: true})
	e.sql(bidsDDL + ";\nCREATE VIEW d AS SELECT channel, COUNT(DISTINCT price) AS n FROM bids GROUP BY channel")
	scrape := func() (op, query float64) {
		fams := e.scrape()
		return value(t, fams, "streamsql_operator_state_bytes", "query", "d", "stage", "1", "operator", "0/Aggregate"),
			value(t, fams, "streamsql_query_state_bytes", "query", "d")
	}
	var prev float64
	for round := range 2 {
		var b strings.Builder
		for i := range 10_000 {
			fmt.Fprintf(&b, "{\"auction\": 1, \"price\": %d, \"channel\": \"web\", \"ts\": \"2024-01-01T00:00:01.000Z\"}\n", round*10_000+i)
		}
		e.ingest("bids", b.String())
		e.checkpoint()
		op, query := scrape()
		members := float64((round + 1) * 10_000)
		if op != query || op < members*(4+8) || op > members*200 || op <= prev {
			t.Errorf("after %v distinct values: operator state bytes %v, query %v (want them equal, between 12 and 200 bytes a value, growing from %v)", members, op, query, prev)
		}
		prev = op
		info := e.ok(e.get("/v1/queries/d"))
		size, _ := info["state_size"].(map[string]any)
		if fmt.Sprint(size["rows"]) != "1" || fmt.Sprint(size["bytes"]) != fmt.Sprint(query) {
			t.Errorf("state_size %v, want 1 row and %v bytes", size, query)
		}
		graph, _ := info["graph"].(map[string]any)
		stages, _ := graph["stages"].([]any)
		if len(stages) < 2 {
			t.Fatalf("graph %v", graph)
		}
		ops, _ := stages[1].(map[string]any)["operators"].([]any)
		if agg, _ := ops[0].(map[string]any); agg["name"] != "Aggregate" || fmt.Sprint(agg["state_bytes"]) != fmt.Sprint(op) {
			t.Errorf("graph stage 1 operator 0: %v, want the Aggregate with state_bytes %v", agg, op)
		}
	}
}
