// Command streamsql is the streamsql server and its command-line client:
// `streamsql serve` runs the server, `streamsql sql` sends SQL to one, and
// `streamsql bench` runs a Nexmark query in-process. Flags, wiring and
// signals only: the logic lives in the packages.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	httpapi "github.com/streamsql/streamsql/http"
	"github.com/streamsql/streamsql/queries"
	"github.com/streamsql/streamsql/web"
)

const usage = `usage: streamsql <command> [flags]

commands:
  serve   run the server (streamsql serve --help)
  sql     send SQL to a server: streamsql sql [--addr A] [--token T] 'SQL' (or SQL on stdin)
  bench   run a Nexmark query in-process and report events per CPU second;
          bench --ingest: durable NDJSON ingest over loopback HTTP, rows per CPU second
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sql":
		err = sqlCmd(os.Args[2:])
	case "bench":
		err = bench(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "streamsql: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "streamsql:", err)
		os.Exit(1)
	}
}

// parseSize parses 64MiB, 1KiB, 4096 and the like.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			n, err := strconv.ParseInt(strings.TrimSuffix(s, u.suffix), 10, 64)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("bad size %q", s)
			}
			return n * u.mult, nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (use e.g. 64MiB)", s)
	}
	return n, nil
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address; anything but loopback requires --token")
	data := fs.String("data", "./streamsql-data", "data directory (embedded Badger stores)")
	ckpt := fs.Duration("checkpoint-interval", time.Second, "checkpoint interval; 0 turns checkpoints off (barriers still flow)")
	emit := fs.Duration("emit-interval", 200*time.Millisecond, "barrier interval: how often changes are emitted")
	token := fs.String("token", "", "bearer token required on every API request")
	maxBody := fs.String("max-body", "64MiB", "largest request body")
	idem := fs.Duration("idempotency-window", 24*time.Hour, "how long an Idempotency-Key is remembered")
	demo := fs.Bool("demo", false, "create throttled Nexmark tables and example views at the first start")
	diskReserve := fs.String("disk-reserve", "256MiB", "free space kept on the data directory's file system: ingest is refused (507) below it, checkpoints below half of it; 0 turns the check off")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mb, err := parseSize(*maxBody)
	if err != nil {
		return fmt.Errorf("--max-body: %w", err)
	}
	reserve := int64(-1) // 0: no checks
	if *diskReserve != "0" {
		if reserve, err = parseSize(*diskReserve); err != nil {
			return fmt.Errorf("--disk-reserve: %w", err)
		}
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	if ip := net.ParseIP(host); *token == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--addr %s is not loopback: set --token", *addr)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	eng, err := queries.Open(queries.Config{DataDir: *data, CheckpointInterval: *ckpt, EmitInterval: *emit, IdempotencyWindow: *idem, DiskReserve: reserve, Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		// SIGTERM: every query takes a final checkpoint, so the next start
		// resumes without replaying anything.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		eng.Close(ctx)
		logger.Info("stopped")
	}()
	if *demo {
		if err := eng.Demo(context.Background()); err != nil {
			logger.Warn("demo setup", "err", err)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: httpapi.New(eng, httpapi.Options{Token: *token, MaxBody: mb, Logger: logger, Web: web.FS()}), ReadHeaderTimeout: 10 * time.Second}
	logger.Info("streamsql serving", "addr", ln.Addr().String(), "data", *data)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func sqlCmd(args []string) error {
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "server address")
	token := fs.String("token", os.Getenv("STREAMSQL_TOKEN"), "bearer token (default $STREAMSQL_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	if text == "" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		text = string(b)
	}
	req, err := http.NewRequest("POST", "http://"+*addr+"/v1/sql", strings.NewReader(text))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/sql")
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		body = pretty.Bytes()
	}
	os.Stdout.Write(append(body, '\n'))
	if resp.StatusCode != 200 {
		return errors.New(resp.Status)
	}
	return nil
}

func bench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	query := fs.String("query", "q0", "example query: "+strings.Join(queries.BenchQueries(), ", "))
	events := fs.Int64("events", 10_000_000, "generator events")
	ckpt := fs.Duration("checkpoint-interval", time.Second, "checkpoint interval (0: off)")
	par := fs.Int("parallelism", 1, "parallelism of keyed stages")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file")
	ingest := fs.Bool("ingest", false, "benchmark HTTP ingest instead of a query: POST NDJSON bids to an in-process server")
	clients := fs.Int("clients", 4, "--ingest: concurrent HTTP clients")
	rows := fs.Int64("rows", 2_000_000, "--ingest: rows to post")
	batch := fs.Int("batch", 1000, "--ingest: rows per request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ingest {
		cfg := httpapi.IngestBenchConfig{Clients: *clients, Rows: *rows, Batch: *batch}
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			cfg.CPUProfile = f
		}
		return benchIngest(cfg, *asJSON)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cfg := queries.BenchConfig{Query: *query, Events: *events, CheckpointInterval: *ckpt, Parallelism: *par}
	tty := isTerminal(os.Stderr)
	if tty {
		cfg.Progress = func(p queries.BenchProgress) {
			pct := 0.0
			if p.Expected > 0 {
				pct = 100 * float64(p.Events) / float64(p.Expected)
			}
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %d of %d events (%.0f%%), %.0f events/s, %d checkpoints, %s",
				*query, p.Events, p.Expected, pct, float64(p.Events)/p.Elapsed.Seconds(), p.Checkpoints, p.Elapsed.Round(time.Second))
		}
	}
	res, err := queries.Bench(context.Background(), cfg)
	if tty {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("query %s: %d events in, %d changes out, %d result rows, parallelism %d, checkpoint interval %s\n",
		res.Query, res.Events, res.RowsOut, res.ResultRows, res.Parallelism, *ckpt)
	fmt.Printf("wall %.2fs, cpu %.2fs, peak rss %.0f MiB\n", res.WallSeconds, res.CPUSeconds, float64(res.PeakRSSBytes)/(1<<20))
	fmt.Printf("%.0f events per CPU second, %.0f per second\n", res.EventsPerCPUSec, res.EventsPerSecond)
	fmt.Printf("%d checkpoints: p50 %d ms / %d bytes, p99 %d ms / %d bytes\n", res.Checkpoints, res.CheckpointP50Ms, res.CheckpointP50B, res.CheckpointP99Ms, res.CheckpointP99B)
	return nil
}

// isTerminal reports whether f is a terminal (a character device), where
// bench draws its progress line.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func benchIngest(cfg httpapi.IngestBenchConfig, asJSON bool) error {
	res, err := httpapi.IngestBench(context.Background(), cfg)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("ingest: %d rows in %d requests of %d (%.0f MiB NDJSON) from %d clients, durable acknowledgements\n",
		res.Rows, res.Requests, res.Batch, float64(res.BodyBytes)/(1<<20), res.Clients)
	fmt.Printf("wall %.2fs, cpu %.2fs (the whole process: server and the in-process clients), peak rss %.0f MiB (bodies included)\n",
		res.WallSeconds, res.CPUSeconds, float64(res.PeakRSSBytes)/(1<<20))
	fmt.Printf("%.0f rows per CPU second, %.0f per second\n", res.RowsPerCPUSec, res.RowsPerSecond)
	fmt.Printf("request latency p50 %.1f ms, p99 %.1f ms\n", res.LatencyP50Ms, res.LatencyP99Ms)
	return nil
}
