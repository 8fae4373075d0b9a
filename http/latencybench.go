package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsql/streamsql/queries"
)

// LatencyOutputs are the outputs `streamsql bench --latency` can read, by
// the name --outputs takes, each with the readers (delivery modes or
// consistencies) it expands to. The one table of them.
var LatencyOutputs = []struct {
	Name    string
	Readers []string
}{
	{"builtin", []string{"results-latest", "results-committed", "results-at_most_once"}},
	{"changes", []string{"changes-latest", "changes-committed"}},
	{"postgres", []string{"postgres-exactly_once", "postgres-at_least_once", "postgres-at_most_once"}},
	{"kafka", []string{"kafka-exactly_once", "kafka-at_least_once", "kafka-at_most_once"}},
}

// LatencyBenchConfig is one `streamsql bench --latency` run.
type LatencyBenchConfig struct {
	Intervals  []time.Duration // checkpoint intervals, one run each
	Duration   time.Duration   // posting time per combination
	Rate       int             // rows per second posted
	Batch      int             // rows per request
	Outputs    []string        // names from LatencyOutputs
	PollPeriod time.Duration   // GET results poll period (bounds its resolution)
	// StateKeys > 0 runs a second view beside the measured one, a
	// running aggregate over StateKeys groups (lat_state), so that each
	// checkpoint has that state's changes to write: the cost a short
	// interval pays. Its checkpoints are the ones reported.
	StateKeys int
	Dir        string          // parent of the scratch data directories ("": the system's)
	// PGURL is the PostgreSQL server the postgres output writes to.
	PGURL string
	// Brokers is the Kafka cluster the kafka output writes to.
	Brokers string
	// Progress, when set, is called before each combination.
	Progress func(interval time.Duration, reader string)
}

// LatencyResult is one combination: a checkpoint interval and a reader.
type LatencyResult struct {
	Output             string  `json:"output"`
	Reader             string  `json:"reader"`
	IntervalMs         float64 `json:"checkpoint_interval_ms"`
	EmitIntervalMs     float64 `json:"emit_interval_ms"`
	Unsupported        string  `json:"unsupported,omitempty"`
	Rows               int64   `json:"rows"`
	Requests           int     `json:"requests"`
	RowsPerSecond      float64 `json:"rows_per_second"` // achieved input rate
	LatencyP50Ms       float64 `json:"latency_p50_ms"`
	LatencyP99Ms       float64 `json:"latency_p99_ms"`
	LatencyMaxMs       float64 `json:"latency_max_ms"`
	CPUSeconds         float64 `json:"cpu_seconds"`
	CPUSecPerMillion   float64 `json:"cpu_seconds_per_million_rows"`
	CPUIncludesClients bool    `json:"cpu_includes_clients"`
	Checkpoints        int     `json:"checkpoints"`
	CheckpointP50Ms    float64 `json:"checkpoint_p50_ms"`
	CheckpointMaxMs    float64 `json:"checkpoint_max_ms"`
	CheckpointP50Bytes int64   `json:"checkpoint_p50_bytes"`
	// CheckpointsOf is the query the checkpoint figures are of: the
	// state view when there is one, else the measured query.
	CheckpointsOf string `json:"checkpoints_of"`
	StateKeys     int    `json:"state_keys"`
}

// The workload: one key, so the view is one row whose m is the highest seq
// the output shows. Rows are posted by one client in seq order, each
// request after the previous one's durable acknowledgement, so m >= s
// means every row up to s is visible. g is seq modulo the state keys, the
// group of the state view.
const (
	latencyTable     = `CREATE TABLE lat (k BIGINT NOT NULL, seq BIGINT NOT NULL, g BIGINT NOT NULL) ENGINE=http`
	latencyView      = `CREATE VIEW lat_v AS SELECT k, MAX(seq) AS m FROM lat GROUP BY k`
	latencyViewAMO   = `CREATE VIEW lat_v AS SELECT /*+ SET_VAR(delivery='at_most_once') */ k, MAX(seq) AS m FROM lat GROUP BY k`
	latencyStateView = `CREATE VIEW lat_state AS SELECT g, COUNT(*) AS n, SUM(seq) AS s FROM lat GROUP BY g`
)

// LatencyBench runs each interval × reader in turn, each on a fresh data
// directory and a fresh in-process server (the stack `serve` runs).
func LatencyBench(ctx context.Context, cfg LatencyBenchConfig) ([]LatencyResult, error) {
	if cfg.Rate <= 0 || cfg.Duration <= 0 || len(cfg.Intervals) == 0 {
		return nil, errors.New("latency bench: rate, duration and intervals must be given")
	}
	cfg.Batch = max(cfg.Batch, 1)
	if cfg.PollPeriod <= 0 {
		cfg.PollPeriod = 10 * time.Millisecond
	}
	for _, o := range []struct{ name, addr string }{{"postgres", cfg.PGURL}, {"kafka", cfg.Brokers}} {
		if slices.Contains(cfg.Outputs, o.name) && o.addr == "" {
			return nil, fmt.Errorf("latency bench: the %s output needs its server's address", o.name)
		}
	}
	var out []LatencyResult
	for _, iv := range cfg.Intervals {
		for _, name := range cfg.Outputs {
			found := false
			for _, o := range LatencyOutputs {
				if o.Name != name {
					continue
				}
				found = true
				for _, rd := range o.Readers {
					if cfg.Progress != nil {
						cfg.Progress(iv, rd)
					}
					r, err := latencyRun(ctx, cfg, iv, o.Name, rd)
					if err != nil {
						return out, fmt.Errorf("latency bench: interval %s, %s: %w", iv, rd, err)
					}
					out = append(out, r)
				}
			}
			if !found {
				return nil, fmt.Errorf("latency bench: unknown output %q", name)
			}
		}
	}
	return out, nil
}

func latencyRun(ctx context.Context, cfg LatencyBenchConfig, interval time.Duration, output, reader string) (LatencyResult, error) {
	emit := min(200*time.Millisecond, interval)
	res := LatencyResult{Output: output, Reader: reader, IntervalMs: ms(interval), EmitIntervalMs: ms(emit), CPUIncludesClients: true, StateKeys: cfg.StateKeys}
	dir, err := os.MkdirTemp(cfg.Dir, "streamsql-latency-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := queries.Open(queries.Config{DataDir: dir, CheckpointInterval: interval, EmitInterval: emit, Logger: logger})
	if err != nil {
		return res, err
	}
	defer eng.Close(context.WithoutCancel(ctx))
	if _, err := eng.Exec(ctx, latencyTable); err != nil {
		return res, fmt.Errorf("create table: %w", err)
	}
	if cfg.StateKeys > 0 {
		if _, err := eng.Exec(ctx, latencyStateView); err != nil {
			return res, fmt.Errorf("create the state view: %w", err)
		}
	}
	query := "lat_v"
	if mode, ok := strings.CutPrefix(reader, "postgres-"); ok {
		query = fmt.Sprintf("lat_pg_%s_%d", mode, time.Now().UnixNano())
		create := fmt.Sprintf(`CREATE TABLE %s (k BIGINT NOT NULL, m BIGINT NOT NULL, PRIMARY KEY (k)) ENGINE=postgres CONNECTION='%s'
  ENGINE_ATTRIBUTE='{"table": "%s", "delivery": "%s", "create_table": true}'`, query, cfg.PGURL, query, mode)
		if _, err := eng.Exec(ctx, create); err != nil {
			res.Unsupported = err.Error()
			return res, nil
		}
		if _, err := eng.Exec(ctx, "INSERT INTO "+query+" SELECT k, MAX(seq) FROM lat GROUP BY k"); err != nil {
			res.Unsupported = err.Error()
			return res, nil
		}
	} else if mode, ok := strings.CutPrefix(reader, "kafka-"); ok {
		query = fmt.Sprintf("lat_k_%s_%d", mode, time.Now().UnixNano())
		if err := createTopic(ctx, cfg.Brokers, query); err != nil {
			return res, err
		}
		create := fmt.Sprintf(`CREATE TABLE %s (k BIGINT NOT NULL, m BIGINT NOT NULL, PRIMARY KEY (k)) ENGINE=kafka CONNECTION='%s'
  ENGINE_ATTRIBUTE='{"topic": "%s", "delivery": "%s"}'`, query, cfg.Brokers, query, mode)
		if _, err := eng.Exec(ctx, create); err != nil {
			res.Unsupported = err.Error()
			return res, nil
		}
		if _, err := eng.Exec(ctx, "INSERT INTO "+query+" SELECT k, MAX(seq) FROM lat GROUP BY k"); err != nil {
			res.Unsupported = err.Error()
			return res, nil
		}
	} else {
		view := latencyView
		if reader == "results-at_most_once" {
			view = latencyViewAMO
		}
		if _, err := eng.Exec(ctx, view); err != nil {
			return res, fmt.Errorf("create view: %w", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: New(eng, Options{Logger: logger}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// seen is the highest m the reader has observed; the reader records
	// the time each new maximum was first seen.
	var (
		mu   sync.Mutex
		obs  []observation
		seen atomic.Int64
	)
	seen.Store(-1)
	see := func(m int64, at time.Time) {
		if m <= seen.Load() {
			return
		}
		seen.Store(m)
		mu.Lock()
		obs = append(obs, observation{m, at})
		mu.Unlock()
	}
	readErr := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		readErr <- readLatency(ctx, client, base, cfg.PGURL, cfg.Brokers, query, reader, cfg.PollPeriod, see, ready)
	}()
	select {
	case <-ready:
	case err := <-readErr:
		return res, fmt.Errorf("reader: %w", err)
	}

	cpu0, t0 := queries.CPUSeconds(), time.Now()
	acks, err := postPaced(ctx, client, base+"/v1/tables/lat/rows", cfg.Rate, cfg.Batch, max(cfg.StateKeys, 1), cfg.Duration)
	if err != nil {
		return res, fmt.Errorf("post: %w", err)
	}
	wall := time.Since(t0)
	last := int64(len(acks))*int64(cfg.Batch) - 1
	deadline := time.Now().Add(2*interval + 10*time.Second)
	for seen.Load() < last {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("seq %d not visible in %s %s after the last acknowledgement (saw %d)", last, reader, time.Until(deadline)+2*interval+10*time.Second, seen.Load())
		}
		select {
		case err := <-readErr:
			return res, fmt.Errorf("reader: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cpu := queries.CPUSeconds() - cpu0
	cancel()

	// Each request's latency: the first observation with m >= its last seq,
	// minus its acknowledgement.
	mu.Lock()
	lat := make([]int64, 0, len(acks))
	j := 0
	for i, at := range acks {
		s := int64(i+1)*int64(cfg.Batch) - 1
		for obs[j].m < s {
			j++
		}
		lat = append(lat, obs[j].at.Sub(at).Microseconds())
	}
	mu.Unlock()
	res.Requests, res.Rows = len(acks), int64(len(acks))*int64(cfg.Batch)
	res.RowsPerSecond = float64(res.Rows) / wall.Seconds()
	res.LatencyP50Ms = float64(queries.Percentile(lat, 50)) / 1000
	res.LatencyP99Ms = float64(queries.Percentile(lat, 99)) / 1000
	res.LatencyMaxMs = float64(queries.Percentile(lat, 100)) / 1000
	res.CPUSeconds = cpu
	res.CPUSecPerMillion = cpu / float64(res.Rows) * 1e6
	res.CheckpointsOf = query
	if cfg.StateKeys > 0 {
		res.CheckpointsOf = "lat_state"
	}
	if err := checkpointStats(client, base, res.CheckpointsOf, &res); err != nil {
		return res, err
	}
	return res, nil
}

type observation struct {
	m  int64
	at time.Time
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// postPaced posts rows {k: 0, seq, g: seq % groups} in requests of batch rows, one request
// per tick of rate/batch per second, for d, and returns each request's
// acknowledgement time. One client, each request after the previous one's
// answer: a slow answer delays the next tick (the achieved rate is
// reported).
func postPaced(ctx context.Context, client *http.Client, url string, rate, batch, groups int, d time.Duration) ([]time.Time, error) {
	period := time.Duration(float64(time.Second) * float64(batch) / float64(rate))
	tick := time.NewTicker(period)
	defer tick.Stop()
	end := time.Now().Add(d)
	var acks []time.Time
	var buf []byte
	for seq := int64(0); time.Now().Before(end); {
		buf = buf[:0]
		for range batch {
			buf = append(buf, `{"k":0,"seq":`...)
			buf = strconv.AppendInt(buf, seq, 10)
			buf = append(buf, `,"g":`...)
			buf = strconv.AppendInt(buf, seq%int64(groups), 10)
			buf = append(buf, "}\n"...)
			seq++
		}
		if err := postRows(ctx, client, url, benchBody{data: buf, rows: batch}); err != nil {
			return nil, fmt.Errorf("request %d: %w", len(acks), err)
		}
		acks = append(acks, time.Now())
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return acks, nil
}

// readLatency reads the view's m through one reader until ctx ends,
// calling see with each value and when it was read; it closes ready once
// it reads.
func readLatency(ctx context.Context, client *http.Client, base, pgURL, brokers, query, reader string, poll time.Duration, see func(int64, time.Time), ready chan<- struct{}) error {
	if strings.HasPrefix(reader, "postgres-") {
		// The sink creates the table at its first write: until then the
		// SELECT fails with undefined_table, which reads as nothing yet.
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			return fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		close(ready)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			var m *int64
			err := conn.QueryRow(ctx, "SELECT max(m) FROM "+query).Scan(&m)
			now := time.Now()
			if ctx.Err() != nil {
				return nil
			}
			var pe *pgconn.PgError
			if err != nil && !(errors.As(err, &pe) && pe.Code == "42P01") {
				return fmt.Errorf("poll %s: %w", query, err)
			}
			if err == nil && m != nil {
				see(*m, now)
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil
			}
		}
	}
	if strings.HasPrefix(reader, "kafka-") {
		return readKafka(ctx, brokers, query, see, ready)
	}
	switch reader {
	case "results-latest", "results-committed", "results-at_most_once":
		consistency := reader[len("results-"):]
		if reader == "results-at_most_once" {
			consistency = "latest" // the view's delivery is at_most_once
		}
		url := base + "/v1/queries/lat_v/results?consistency=" + consistency
		close(ready)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			var body struct {
				Rows []struct {
					M int64 `json:"m"`
				} `json:"rows"`
			}
			if err := getJSON(ctx, client, url, &body); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			now := time.Now()
			for _, r := range body.Rows {
				see(r.M, now)
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil
			}
		}
	case "changes-latest", "changes-committed":
		url := base + "/v1/queries/lat_v/changes?consistency=" + reader[len("changes-"):]
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, b)
		}
		close(ready)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.Contains(line, []byte(`"change"`)) {
				continue
			}
			now := time.Now()
			var rec struct {
				Type string `json:"type"`
				Op   string `json:"op"`
				Row  struct {
					M int64 `json:"m"`
				} `json:"row"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				return fmt.Errorf("change record %s: %w", line, err)
			}
			if rec.Type == "change" && rec.Op == "upsert" {
				see(rec.Row.M, now)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := sc.Err(); err != nil {
			return err
		}
		return errors.New("the changes stream ended")
	}
	return fmt.Errorf("unknown reader %q", reader)
}

func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// checkpointStats fills the checkpoint figures from the query's recent
// checkpoints (GET /v1/queries/{query}/checkpoints, completed ones only).
func checkpointStats(client *http.Client, base, query string, res *LatencyResult) error {
	var body struct {
		Checkpoints []struct {
			Status     string `json:"status"`
			DurationMs int64  `json:"duration_ms"`
			Bytes      int64  `json:"bytes"`
		} `json:"checkpoints"`
	}
	if err := getJSON(context.Background(), client, base+"/v1/queries/"+query+"/checkpoints", &body); err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	var durs, sizes []int64
	for _, c := range body.Checkpoints {
		if c.Status == "completed" {
			durs, sizes = append(durs, c.DurationMs), append(sizes, c.Bytes)
		}
	}
	res.Checkpoints = len(durs)
	res.CheckpointP50Ms = float64(queries.Percentile(durs, 50))
	res.CheckpointMaxMs = float64(queries.Percentile(durs, 100))
	res.CheckpointP50Bytes = queries.Percentile(sizes, 50)
	return nil
}

// createTopic creates the sink's topic (one partition, compacted) before
// the sink starts, so that the consumer reads it from its first record.
func createTopic(ctx context.Context, brokers, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	compact := "compact"
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// readKafka consumes the sink's topic read_committed from its start: a
// record is visible to it only once its transaction (exactly_once) is
// committed.
func readKafka(ctx context.Context, brokers, topic string, see func(int64, time.Time), ready chan<- struct{}) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(10*time.Millisecond))
	if err != nil {
		return fmt.Errorf("kafka consumer: %w", err)
	}
	defer cl.Close()
	close(ready)
	for {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err) })
		if ferr != nil {
			return ferr
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if r.Value == nil {
				return
			}
			var row struct {
				M int64 `json:"m"`
			}
			if err := json.Unmarshal(r.Value, &row); err != nil {
				bad = fmt.Errorf("record %s: %w", r.Value, err)
				return
			}
			see(row.M, now)
		})
		if bad != nil {
			return bad
		}
	}
}
