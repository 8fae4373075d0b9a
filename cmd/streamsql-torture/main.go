// Command streamsql-torture proves exactly-once under crashes: it runs the
// real server with a Kafka-protocol broker and PostgreSQL, drives ingest
// over HTTP and Kafka, kills the server (SIGKILL, or a named fault point)
// for N cycles, and compares the built-in results, the PostgreSQL tables
// and a read_committed read of the Kafka sink topics with an oracle. See
// internal/torture and RELIABILITY.md.
//
//	go run ./cmd/streamsql-torture --cycles 200
//	go run ./cmd/streamsql-torture --faults all --cycles 26 --fault-every 2
//	go run ./cmd/streamsql-torture --duration 4h          # soak
//
// It exits 0 when every output equals the oracle, 1 when one does not, 2
// when the run could not be carried out. Run it from inside the module
// (it builds the server and the broker with the go command).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/internal/kafkatest"
	"github.com/streamsql/streamsql/internal/torture"
)

func main() {
	var cfg torture.Config
	var faults, jsonOut string
	flag.IntVar(&cfg.Cycles, "cycles", 20, "crash cycles")
	flag.DurationVar(&cfg.Duration, "duration", 0, "soak: crash cycles until this much time has passed (overrides --cycles)")
	flag.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()%1e6), "seed of the input and of the crash moments")
	flag.IntVar(&cfg.Rate, "rate", 400, "rows per second posted over HTTP and produced to Kafka, each")
	flag.IntVar(&cfg.Rows, "rows", 0, "rows per source (default: enough to keep loading through the cycles)")
	flag.DurationVar(&cfg.Up, "up", 2500*time.Millisecond, "longest uptime between crashes (uniform in [up/5, up])")
	flag.StringVar(&faults, "faults", "", "fault points to crash at, comma-separated (a sink point may name an engine: sink.before_commit/postgres), or \"all\": every point, sink points once per engine ("+strings.Join(fault.Points, ", ")+")")
	flag.IntVar(&cfg.FaultEvery, "fault-every", 1, "every n-th cycle restarts with the next fault point armed")
	flag.DurationVar(&cfg.FaultWait, "fault-wait", 30*time.Second, "how long an armed fault point may take to fire")
	flag.DurationVar(&cfg.CheckpointInterval, "checkpoint-interval", 300*time.Millisecond, "the server's checkpoint interval")
	flag.StringVar(&cfg.Dir, "dir", "", "work directory (default: a temporary one)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the work directory (server data and log)")
	flag.StringVar(&cfg.ServerBin, "server", "", "the streamsql binary (default: built from this module)")
	flag.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	flag.Parse()
	switch faults {
	case "":
	case "all":
		cfg.Faults = torture.PointMatrix()
	default:
		cfg.Faults = strings.Split(faults, ",")
	}
	cfg.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := torture.Run(ctx, cfg)
	kafkatest.Cleanup()
	if err == nil || rep.Kills > 0 {
		rep.Print(os.Stdout) // what was found before a failure too
	}
	if jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if werr := os.WriteFile(jsonOut, b, 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, "streamsql-torture:", werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "streamsql-torture:", err)
		os.Exit(2)
	}
	if !rep.OK() {
		os.Exit(1)
	}
}
