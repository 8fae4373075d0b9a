#!/usr/bin/env bash
# Runs `streamsql bench` for every Nexmark example, each RUNS times in its
# own process, and prints one JSON object per run (JSON lines) to stdout,
# with the median per query and setting summarised on stderr.
#
#   scripts/bench-nexmark.sh > runs.jsonl
#   EVENTS=3000000 RUNS=5 PARALLELISM="1 2" CHECKPOINT="1s" QUERIES="q5-core" scripts/bench-nexmark.sh
#
# Needs Go and jq. Run it on an otherwise idle machine: figures are per CPU
# second of the whole process (getrusage), but other load still skews them.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${EVENTS:-3000000}
RUNS=${RUNS:-5}
PARALLELISM=${PARALLELISM:-1}
CHECKPOINT=${CHECKPOINT:-1s}
# Default: every query of queries/examples/nexmark, in numeric order.
QUERIES=${QUERIES:-$(cd queries/examples/nexmark && ls *.sql | sed 's/\.sql$//' | sort -V | tr '\n' ' ')}
bin=$(mktemp -d)/streamsql
go build -o "$bin" ./cmd/streamsql
for q in $QUERIES; do
  for p in $PARALLELISM; do
    for c in $CHECKPOINT; do
      runs=()
      for _ in $(seq "$RUNS"); do
        r=$("$bin" bench --query "$q" --events "$EVENTS" --parallelism "$p" --checkpoint-interval "$c" --json)
        echo "$r"
        runs+=("$r")
      done
      printf '%s\n' "${runs[@]}" | jq -s -r --arg c "$c" '
        def med(f): map(f) | sort | .[length/2|floor];
        "\(.[0].query) p\(.[0].parallelism) ckpt=\($c): median of \(length): " +
        "\(med(.events_per_cpu_second)|floor) events/CPU-s, \(med(.events_per_second)|floor) events/s, " +
        "peak RSS \(med(.peak_rss_bytes)/1048576|floor) MiB, checkpoints p50 \(med(.checkpoint_p50_ms)) ms / p99 \(med(.checkpoint_p99_ms)) ms, " +
        "\(med(.checkpoint_p50_bytes)/1024|floor) KiB p50"' >&2
    done
  done
done
