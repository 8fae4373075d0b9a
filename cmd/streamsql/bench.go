package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	httpapi "github.com/streamsql/streamsql/http"
	"github.com/streamsql/streamsql/queries"
)

const benchUsage = `usage: streamsql bench [flags]

Runs a Nexmark query in-process over generated events and reports events
per CPU second, checkpoint times and peak memory; with --ingest, posts
NDJSON bids to an in-process server over loopback HTTP with durable
acknowledgements and reports rows per CPU second. docs/benchmarks.md has
the figures. With --latency, posts rows at a fixed rate for each checkpoint
interval and output, and reports the latency from a row's durable
acknowledgement to its first visibility in that output, CPU seconds per
million rows and checkpoint durations and sizes. With --kafka-format F,
produces --records Nexmark bids in format F (json, avro, upsert_json,
upsert_avro, debezium_json, debezium_avro) into an in-process Kafka
broker (and Schema Registry) first, untimed, then runs q5-core from that
Kafka source and reports records per CPU second.
`

func (c *cli) bench(args []string) error {
	cmd := newCommand("bench", benchUsage)
	fs := cmd.fs
	query := fs.String("query", "q0", "example query: "+strings.Join(queries.BenchQueries(), ", "))
	events := fs.Int64("events", 10_000_000, "generator events")
	ckpt := fs.Duration("checkpoint-interval", time.Second, "checkpoint interval (0: off)")
	par := fs.Int("parallelism", 1, "parallelism of keyed stages")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file")
	ingest := fs.Bool("ingest", false, "benchmark HTTP ingest instead of a query: POST NDJSON bids to an in-process server")
	clients := fs.Int("clients", 4, "--ingest: concurrent HTTP clients")
	rows := fs.Int64("rows", 2_000_000, "--ingest: rows to post")
	batch := fs.Int("batch", 1000, "--ingest, --latency: rows per request (--latency: 500 unless set)")
	kafkaFormat := fs.String("kafka-format", "", "benchmark a Kafka source's decoding in this format: "+kafkaBenchFormatNames())
	records := fs.Int64("records", 1_000_000, "--kafka-format: bids to produce and read")
	lat := c.latencyFlags(cmd)
	rest, err := cmd.parse(c, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cmd.fail("bench takes no arguments, got %q", rest)
	}
	*query = strings.TrimPrefix(*query, "nexmark/") // the examples' directory, as the issue names them
	if !slices.Contains(queries.BenchQueries(), *query) {
		return cmd.fail("--query %q: use one of %s", *query, strings.Join(queries.BenchQueries(), ", "))
	}
	if *kafkaFormat != "" {
		var prof io.Writer
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			prof = f
		}
		return benchKafka(c.stdout, *kafkaFormat, *records, *ckpt, *asJSON, prof)
	}
	if *lat.on {
		n := 500
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "batch" {
				n = *batch
			}
		})
		return benchLatency(c.stdout, lat, n, *asJSON)
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
		return benchIngest(c.stdout, cfg, *asJSON)
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
	out := c.stdout
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
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "query %s: %d events in, %d changes out, %d result rows, parallelism %d, checkpoint interval %s\n",
		res.Query, res.Events, res.RowsOut, res.ResultRows, res.Parallelism, *ckpt)
	fmt.Fprintf(out, "wall %.2fs, cpu %.2fs, peak rss %.0f MiB\n", res.WallSeconds, res.CPUSeconds, float64(res.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(out, "%.0f events per CPU second, %.0f per second\n", res.EventsPerCPUSec, res.EventsPerSecond)
	fmt.Fprintf(out, "%d checkpoints: p50 %d ms / %d bytes, p99 %d ms / %d bytes\n", res.Checkpoints, res.CheckpointP50Ms, res.CheckpointP50B, res.CheckpointP99Ms, res.CheckpointP99B)
	return nil
}

// isTerminal reports whether f is a terminal, where bench draws its
// progress line (/dev/null is a character device, not a terminal).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

func benchIngest(out io.Writer, cfg httpapi.IngestBenchConfig, asJSON bool) error {
	res, err := httpapi.IngestBench(context.Background(), cfg)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "ingest: %d rows in %d requests of %d (%.0f MiB NDJSON) from %d clients, durable acknowledgements\n",
		res.Rows, res.Requests, res.Batch, float64(res.BodyBytes)/(1<<20), res.Clients)
	fmt.Fprintf(out, "wall %.2fs, cpu %.2fs (the whole process: server and the in-process clients), peak rss %.0f MiB (bodies included)\n",
		res.WallSeconds, res.CPUSeconds, float64(res.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(out, "%.0f rows per CPU second, %.0f per second\n", res.RowsPerCPUSec, res.RowsPerSecond)
	fmt.Fprintf(out, "request latency p50 %.1f ms, p99 %.1f ms\n", res.LatencyP50Ms, res.LatencyP99Ms)
	return nil
}
