package httpapi

import (
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
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/streamsql/streamsql/queries"
)

// IngestBenchConfig is one `streamsql bench --ingest` run.
type IngestBenchConfig struct {
	Clients int    // concurrent HTTP clients, each with its own keep-alive connection
	Rows    int64  // rows in all
	Batch   int    // rows per request
	Dir     string // parent of the scratch data directory ("": the system's)
	// CPUProfile, when set, receives a CPU profile of the measured part
	// only: building the bodies before it would dominate a whole-run one.
	CPUProfile io.Writer
}

// IngestBenchResult is what an ingest run measured. CPU seconds are the
// whole process's (getrusage), so they include the in-process clients
// sending the requests, not only the server.
type IngestBenchResult struct {
	Rows               int64   `json:"rows"`
	Requests           int     `json:"requests"`
	Clients            int     `json:"clients"`
	Batch              int     `json:"batch"`
	BodyBytes          int64   `json:"body_bytes"`
	WallSeconds        float64 `json:"wall_seconds"`
	CPUSeconds         float64 `json:"cpu_seconds"`
	CPUIncludesClients bool    `json:"cpu_includes_clients"`
	RowsPerSecond      float64 `json:"rows_per_second"`
	RowsPerCPUSec      float64 `json:"rows_per_cpu_second"`
	LatencyP50Ms       float64 `json:"latency_p50_ms"`
	LatencyP99Ms       float64 `json:"latency_p99_ms"`
	PeakRSSBytes       int64   `json:"peak_rss_bytes"`
}

// IngestBench runs the server stack that `serve` runs (engine and API
// handler, no token) on a fresh data directory and a loopback port, posts
// cfg.Rows Nexmark bids as NDJSON from cfg.Clients concurrent clients in
// requests of cfg.Batch rows, each client waiting for its durable
// acknowledgement before sending the next, and measures from the first
// request to the last answer. The bodies are built before the clock starts.
func IngestBench(ctx context.Context, cfg IngestBenchConfig) (IngestBenchResult, error) {
	cfg.Clients, cfg.Batch = max(cfg.Clients, 1), max(cfg.Batch, 1)
	if cfg.Rows <= 0 {
		return IngestBenchResult{}, errors.New("ingest bench: rows must be positive")
	}
	dir, err := os.MkdirTemp(cfg.Dir, "streamsql-ingest-bench-")
	if err != nil {
		return IngestBenchResult{}, fmt.Errorf("ingest bench: %w", err)
	}
	defer os.RemoveAll(dir)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := queries.Open(queries.Config{DataDir: dir, CheckpointInterval: time.Second, Logger: logger})
	if err != nil {
		return IngestBenchResult{}, fmt.Errorf("ingest bench: %w", err)
	}
	defer eng.Close(context.WithoutCancel(ctx))
	if _, err := eng.Exec(ctx, queries.IngestBenchTable); err != nil {
		return IngestBenchResult{}, fmt.Errorf("ingest bench: create table: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return IngestBenchResult{}, fmt.Errorf("ingest bench: %w", err)
	}
	srv := &http.Server{Handler: New(eng, Options{Logger: logger}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	bodies, arena, err := benchBodies(cfg.Rows, cfg.Batch)
	if err != nil {
		return IngestBenchResult{}, fmt.Errorf("ingest bench: %w", err)
	}

	url := "http://" + ln.Addr().String() + "/v1/tables/bid/rows"
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: cfg.Clients, MaxConnsPerHost: cfg.Clients, DisableCompression: true,
	}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	lat := make([][]int64, cfg.Clients) // per client, microseconds
	if cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
			return IngestBenchResult{}, fmt.Errorf("ingest bench: %w", err)
		}
	}
	cpu0, t0 := queries.CPUSeconds(), time.Now()
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(bodies)) || ctx.Err() != nil {
					return
				}
				start := time.Now()
				if err := postRows(ctx, client, url, bodies[i]); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("request %d: %w", i, err); cancel() })
					return
				}
				lat[c] = append(lat[c], time.Since(start).Microseconds())
			}
		}()
	}
	wg.Wait()
	wall, cpu := time.Since(t0).Seconds(), queries.CPUSeconds()-cpu0
	if cfg.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if firstErr != nil {
		// The mapping stays: after a failed request the transport may still
		// be writing a body from it.
		return IngestBenchResult{}, fmt.Errorf("ingest bench: %w", firstErr)
	}
	// Every body was read in full by the server before it answered.
	syscall.Munmap(arena)
	// Every acknowledged row must be in the log: a bench of lost rows
	// measures nothing.
	info, err := eng.Table("bid")
	if err != nil {
		return IngestBenchResult{}, fmt.Errorf("ingest bench: %w", err)
	}
	if info.EndOffset == nil || *info.EndOffset != cfg.Rows {
		return IngestBenchResult{}, fmt.Errorf("ingest bench: log end offset %v after %d acknowledged rows", info.EndOffset, cfg.Rows)
	}
	var all []int64
	for _, l := range lat {
		all = append(all, l...)
	}
	var bodyBytes int64
	for _, b := range bodies {
		bodyBytes += int64(len(b.data))
	}
	return IngestBenchResult{
		Rows: cfg.Rows, Requests: len(bodies), Clients: cfg.Clients, Batch: cfg.Batch, BodyBytes: bodyBytes,
		WallSeconds: wall, CPUSeconds: cpu, CPUIncludesClients: true,
		RowsPerSecond: float64(cfg.Rows) / wall, RowsPerCPUSec: float64(cfg.Rows) / cpu,
		LatencyP50Ms: float64(queries.Percentile(all, 50)) / 1000, LatencyP99Ms: float64(queries.Percentile(all, 99)) / 1000,
		PeakRSSBytes: queries.PeakRSSBytes(),
	}, nil
}

// benchBody is one request: its NDJSON and how many rows it holds.
type benchBody struct {
	data []byte
	rows int
}

// benchBodies renders rows Nexmark bids as NDJSON requests of batch rows
// (queries.BidRenderer). The bytes live
// in one anonymous mapping outside the Go heap (returned, for Munmap): as
// heap they would be hundreds of megabytes of live data that make the
// server's garbage collections rarer than a real server's.
func benchBodies(rows int64, batch int) ([]benchBody, []byte, error) {
	r := queries.NewBidRenderer()
	// Size the mapping with a first pass; rendering is cheap next to the run.
	var size int64
	for i := range rows {
		size += int64(len(r.Line(i)))
	}
	arena, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes for the bodies: %w", size, err)
	}
	var bodies []benchBody
	off := 0
	for i := int64(0); i < rows; i += int64(batch) {
		start, n := off, int(min(int64(batch), rows-i))
		for j := range int64(n) {
			off += copy(arena[off:], r.Line(i+j))
		}
		bodies = append(bodies, benchBody{data: arena[start:off:off], rows: n})
	}
	return bodies, arena, nil
}

// postRows sends one body and checks the acknowledgement.
func postRows(ctx context.Context, client *http.Client, url string, b benchBody) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(b.data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	var ack struct {
		Accepted int `json:"accepted"`
	}
	if err := json.Unmarshal(body, &ack); err != nil {
		return fmt.Errorf("answer %s: %w", body, err)
	}
	if ack.Accepted != b.rows {
		return fmt.Errorf("accepted %d of %d rows", ack.Accepted, b.rows)
	}
	return nil
}
