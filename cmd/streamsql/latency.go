package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	httpapi "github.com/streamsql/streamsql/http"
	"github.com/streamsql/streamsql/internal/kafkatest"
	"github.com/streamsql/streamsql/internal/pgtest"
)

// latencyFlags are bench --latency's flags, registered by bench.
type latencyFlags struct {
	on        *bool
	intervals *string
	duration  *time.Duration
	rate      *int
	outputs   *string
	plot      *string
	pgURL     *string
	brokers   *string
	stateKeys *int
	input     *string
}

func (c *cli) latencyFlags(cmd *command) latencyFlags {
	fs := cmd.fs
	return latencyFlags{
		on:        fs.Bool("latency", false, "benchmark end-to-end latency and CPU per checkpoint interval and output"),
		intervals: fs.String("intervals", "100ms,250ms,500ms,1s,2s,5s,10s", "--latency: checkpoint intervals"),
		duration:  fs.Duration("duration", 5*time.Second, "--latency: posting time per combination"),
		rate:      fs.Int("rate", 50_000, "--latency: input rows per second (HTTP ingest, one client)"),
		outputs:   fs.String("outputs", "builtin,changes", "--latency: outputs: builtin, changes, postgres, kafka"),
		pgURL:     fs.String("pg-url", "", "--latency: PostgreSQL for the postgres output (default: start a throwaway server)"),
		brokers:   fs.String("brokers", "", "--latency: Kafka brokers for the kafka output (default: start a throwaway broker)"),
		plot:      fs.String("plot", "", "--latency: write a plot of latency and CPU against interval (.png or .svg)"),
		stateKeys: fs.Int("state-keys", 100_000, "--latency: groups of a second view whose state each checkpoint writes (0: none)"),
		input:     fs.String("input", "http", "--latency: where rows come from: http (posted, latency from each request's acknowledgement) or generator (Nexmark bids, latency from generation)"),
	}
}

func benchLatency(out io.Writer, f latencyFlags, batch int, asJSON bool) error {
	if *f.stateKeys < 0 {
		return fmt.Errorf("--state-keys %d: want 0 or more", *f.stateKeys)
	}
	cfg := httpapi.LatencyBenchConfig{Duration: *f.duration, Rate: *f.rate, Batch: batch, PGURL: *f.pgURL, Brokers: *f.brokers, StateKeys: *f.stateKeys, Input: *f.input}
	for _, s := range strings.Split(*f.intervals, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return fmt.Errorf("--intervals: %q is not a positive duration", s)
		}
		cfg.Intervals = append(cfg.Intervals, d)
	}
	for _, s := range strings.Split(*f.outputs, ",") {
		cfg.Outputs = append(cfg.Outputs, strings.TrimSpace(s))
	}
	if *f.plot != "" {
		if ext := filepath.Ext(*f.plot); ext != ".png" && ext != ".svg" {
			return fmt.Errorf("--plot %q: the name must end in .png or .svg", *f.plot)
		}
	}
	// Throwaway servers, as the tests start them, unless given.
	if slices.Contains(cfg.Outputs, "postgres") && cfg.PGURL == "" {
		pg, err := pgtest.Start()
		if err != nil {
			return fmt.Errorf("start PostgreSQL for the postgres output (or give --pg-url): %w", err)
		}
		defer pg.Close()
		cfg.PGURL = pg.DSN("postgres")
	}
	if slices.Contains(cfg.Outputs, "kafka") && cfg.Brokers == "" {
		kdir, err := os.MkdirTemp("", "streamsql-latency-kafka-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(kdir)
		b, err := kafkatest.Start(kdir)
		if err != nil {
			return fmt.Errorf("start a Kafka broker for the kafka output (or give --brokers): %w", err)
		}
		defer kafkatest.Cleanup() // the broker binary it built
		defer b.Close()
		cfg.Brokers = b.Addr()
	}
	if isTerminal(os.Stderr) {
		cfg.Progress = func(iv time.Duration, rd string) { fmt.Fprintf(os.Stderr, "\r\033[Kinterval %s, %s", iv, rd) }
		defer fmt.Fprint(os.Stderr, "\r\033[K")
	}
	res, err := httpapi.LatencyBench(context.Background(), cfg)
	if err != nil {
		return err
	}
	if err := printLatency(out, f, batch, asJSON, res); err != nil {
		return err
	}
	if *f.plot != "" {
		return latencyPlot(*f.plot, res)
	}
	return nil
}

func printLatency(out io.Writer, f latencyFlags, batch int, asJSON bool, res []httpapi.LatencyResult) error {
	if asJSON {
		enc := json.NewEncoder(out)
		for _, r := range res {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if *f.input == "generator" {
		fmt.Fprintf(out, "latency from a row's generation (a Nexmark bid table at %d events/s) to its first visibility, %s per combination; CPU of the whole process (server and reader in-process)\n",
			*f.rate, *f.duration)
	} else {
		fmt.Fprintf(out, "latency from a row's durable acknowledgement to its first visibility; %d rows/s asked in requests of %d, %s per combination; CPU of the whole process (server, poster and reader in-process)\n",
			*f.rate, batch, *f.duration)
	}
	if *f.stateKeys > 0 {
		fmt.Fprintf(out, "beside the measured view, lat_state keeps a running aggregate over %d groups; the checkpoint figures are its\n", *f.stateKeys)
	}
	fmt.Fprintf(out, "%-9s %-23s %9s %9s %9s %9s %11s %6s %9s %10s\n", "interval", "reader", "rows/s", "p50 ms", "p99 ms", "max ms", "cpu s/Mrow", "ckpts", "ckpt ms", "ckpt bytes")
	for _, r := range res {
		iv := time.Duration(r.IntervalMs * float64(time.Millisecond))
		if r.Unsupported != "" {
			fmt.Fprintf(out, "%-9s %-23s unsupported: %s\n", iv, r.Reader, r.Unsupported)
			continue
		}
		fmt.Fprintf(out, "%-9s %-23s %9.0f %9.1f %9.1f %9.1f %11.2f %6d %9.0f %10d\n", iv, r.Reader, r.RowsPerSecond,
			r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs, r.CPUSecPerMillion, r.Checkpoints, r.CheckpointP50Ms, r.CheckpointP50Bytes)
	}
	return nil
}

// latencyPlot draws two panels side by side: p50 (solid) and p99 (dashed)
// latency against the checkpoint interval per reader, both axes log; and
// CPU seconds per million rows against the interval.
func latencyPlot(file string, res []httpapi.LatencyResult) error {
	var readers []string
	by := map[string][]httpapi.LatencyResult{}
	for _, r := range res {
		if r.Unsupported != "" {
			continue
		}
		if _, ok := by[r.Reader]; !ok {
			readers = append(readers, r.Reader)
		}
		by[r.Reader] = append(by[r.Reader], r)
	}
	lat, cpu := plot.New(), plot.New()
	lat.Title.Text, cpu.Title.Text = "latency: ack to first visibility", "CPU overhead"
	lat.X.Label.Text, cpu.X.Label.Text = "checkpoint interval (ms)", "checkpoint interval (ms)"
	lat.Y.Label.Text, cpu.Y.Label.Text = "latency (ms), p50 solid, p99 dashed", "CPU s per million rows"
	for _, p := range []*plot.Plot{lat, cpu} {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		p.Legend.Top, p.Legend.Left = true, true
	}
	lat.Y.Scale, lat.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	for i, rd := range readers {
		var p50, p99, c plotter.XYs
		for _, r := range by[rd] {
			p50 = append(p50, plotter.XY{X: r.IntervalMs, Y: math.Max(r.LatencyP50Ms, 0.1)})
			p99 = append(p99, plotter.XY{X: r.IntervalMs, Y: math.Max(r.LatencyP99Ms, 0.1)})
			c = append(c, plotter.XY{X: r.IntervalMs, Y: r.CPUSecPerMillion})
		}
		col := plotutil.Color(i)
		for j, xy := range []plotter.XYs{p50, p99, c} {
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return fmt.Errorf("plot %s: %w", rd, err)
			}
			l.Color, pts.Color = col, col
			pts.Shape = plotutil.Shape(i)
			if j == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			if j == 2 {
				cpu.Add(l, pts)
				cpu.Legend.Add(rd, l, pts)
				continue
			}
			lat.Add(l, pts)
			if j == 0 {
				lat.Legend.Add(rd, l, pts)
			}
		}
	}
	const w, h = 11 * vg.Inch, 4.5 * vg.Inch
	format := strings.TrimPrefix(filepath.Ext(file), ".")
	cv, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4}
	canvases := plot.Align([][]*plot.Plot{{lat, cpu}}, tiles, draw.New(cv))
	lat.Draw(canvases[0][0])
	cpu.Draw(canvases[0][1])
	fh, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := cv.WriteTo(fh); err != nil {
		fh.Close()
		return fmt.Errorf("plot %s: %w", file, err)
	}
	return fh.Close()
}
