#!/usr/bin/env bash
# Runs `streamsql bench --kafka-format F` for every Kafka source format,
# RUNS rounds (each format once per round, the order rotated between
# rounds, each run in its own process), prints one JSON object per run
# (JSON lines) to stdout and the median per format on stderr.
#
#   scripts/bench-kafka-formats.sh > runs.jsonl
#   RECORDS=1000000 RUNS=3 FORMATS="json debezium_avro" scripts/bench-kafka-formats.sh
#
# Needs Go and jq. A new format is one more name in FORMATS once
# cmd/streamsql/benchkafka.go encodes it.
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-1000000}
RUNS=${RUNS:-3}
FORMATS=${FORMATS:-json avro protobuf upsert_json upsert_avro debezium_json debezium_avro}
read -r -a fs <<< "$FORMATS"
bin=$(mktemp -d)/streamsql
go build -o "$bin" ./cmd/streamsql
all=()
for round in $(seq 0 $((RUNS - 1))); do
  for i in "${!fs[@]}"; do
    f=${fs[$(( (i + round * 2) % ${#fs[@]} ))]}
    r=$("$bin" bench --kafka-format "$f" --records "$RECORDS" --json)
    echo "$r"
    all+=("$r")
  done
done
printf '%s\n' "${all[@]}" | jq -s -r '
  def med(f): map(f) | sort | .[length/2|floor];
  group_by(.format)[] |
  "\(.[0].format): median of \(length): \(med(.events_per_cpu_second)|floor) records/CPU-s, " +
  "\(med(.events_per_second)|floor) records/s, \(.[0].record_bytes / .[0].events | floor) bytes a record, " +
  "peak RSS \(med(.peak_rss_bytes)/1048576|floor) MiB, \(.[0].result_rows) result rows"' >&2
