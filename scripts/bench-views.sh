#!/usr/bin/env bash
# Many small views over one table: starts the server, creates one HTTP
# table and VIEWS views over it (every other one a 10 s TUMBLE, the others
# running aggregates; each keeps the rows with k % VIEWS = i and groups them
# by g, 5 groups), posts RATE rows a second for DURATION seconds, then
# stops the server (SIGTERM), starts it again on the same data directory
# (every query restores at once) and measures again. Prints one JSON object
# per phase ("run", "restart") to stdout:
#
#   rss_mib, hwm_mib    VmRSS at the end of the phase and VmHWM (peak) so far
#   cpu                 CPU seconds (user + system) per wall second in the phase
#   ckpt_per_s_min/p50  completed checkpoints per second per query over the
#                       phase (from GET /v1/queries: checkpointing.completed)
#   failed              failed checkpoints in the phase, all queries
#   timed_out           "timed out" lines in the server log so far
#   ready_s             seconds until every query was running
#
#   scripts/bench-views.sh
#   BIN=/path/to/streamsql VIEWS=2000 DURATION=60 scripts/bench-views.sh
#
# Needs Go (unless BIN is given), curl and jq. Linux only (/proc).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
VIEWS=${VIEWS:-1000}
RATE=${RATE:-200}
DURATION=${DURATION:-60}
PORT=${PORT:-18471}
KEEP=${KEEP:-}
work=$(mktemp -d)
if [ -z "${BIN:-}" ]; then
  BIN=$work/streamsql
  go build -o "$BIN" ./cmd/streamsql
fi
S=http://127.0.0.1:$PORT
pid=
poster=
cleanup() {
  [ -n "$poster" ] && kill "$poster" 2>/dev/null || true
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  [ -z "$KEEP" ] && rm -rf "$work"
  [ -n "$KEEP" ] && echo "kept $work" >&2
  return 0
}
trap cleanup EXIT

start() {
  "$BIN" serve --data "$work/data" --addr "127.0.0.1:$PORT" >>"$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    curl -sf "$S/healthz" >/dev/null && return 0
    sleep 0.1
  done
  echo "server did not start" >&2
  exit 1
}

sql() {
  local out
  out=$(curl -s "$S/v1/sql" --data-binary @-)
  if echo "$out" | jq -e '.status? // empty | select(. >= 400)' >/dev/null 2>&1; then
    echo "$out" >&2
    exit 1
  fi
}

# cpu prints the server's CPU seconds (user + system) so far.
cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$pid/stat"
}
kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }

# completed prints the sum and each query's completed and failed
# checkpoints as "name completed failed" lines.
completed() {
  curl -s "$S/v1/queries" | jq -r '.queries[] | "\(.name) \(.checkpointing.completed // 0) \(.checkpointing.failed // 0) \(.state)"'
}

waitRunning() {
  local t0=$SECONDS
  for _ in $(seq 3000); do
    local n
    n=$(curl -s "$S/v1/queries" | jq '[.queries[] | select(.state == "running")] | length')
    [ "$n" -ge "$VIEWS" ] && { echo $((SECONDS - t0)); return 0; }
    sleep 1
  done
  echo "queries did not all start" >&2
  exit 1
}

post() {
  local i=0
  while true; do
    now=$(date +%s%3N)
    awk -v n="$RATE" -v i="$i" -v now="$now" -v views="$VIEWS" 'BEGIN {
      for (j = 0; j < n; j++) { k = (i + j) % views; printf "{\"k\": %d, \"g\": %d, \"v\": %d, \"ts\": %d}\n", k, (i + j) % 5, j, now - n + j }
    }' | curl -s -o /dev/null "$S/v1/tables/t/rows" -H 'Content-Type: application/x-ndjson' --data-binary @-
    i=$((i + RATE))
    sleep 1
  done
}

# measure runs one phase of DURATION seconds and prints its JSON.
measure() {
  local phase=$1 ready=$2
  local c0 c1 t0 t1
  completed >"$work/c0"
  c0=$(cpu)
  t0=$(date +%s.%N)
  sleep "$DURATION"
  completed >"$work/c1"
  c1=$(cpu)
  t1=$(date +%s.%N)
  local rss hwm tout
  rss=$(kib VmRSS)
  hwm=$(kib VmHWM)
  tout=$(grep -c 'timed out' "$work/log" || true)
  join "$work/c0" "$work/c1" | awk -v wall="$(echo "$t1 - $t0" | bc)" '{ print ($5 - $2) / wall, $6 - $3 }' | sort -g |
    awk '{ r[NR] = $1; failed += $2 } END { printf "%f %f %d\n", r[1], r[int((NR + 1) / 2)], failed }' >"$work/stats"
  read -r cmin cp50 failed <"$work/stats"
  jq -nc --arg phase "$phase" --argjson views "$VIEWS" --argjson rate "$RATE" \
    --argjson rss "$rss" --argjson hwm "$hwm" --argjson cpu "$(echo "($c1 - $c0) / ($t1 - $t0)" | bc -l)" \
    --argjson cmin "$cmin" --argjson cp50 "$cp50" --argjson failed "$failed" --argjson tout "$tout" --argjson ready "$ready" \
    '{phase: $phase, views: $views, rows_per_s: $rate, rss_mib: ($rss / 1024 | floor), hwm_mib: ($hwm / 1024 | floor),
      cpu: ($cpu * 100 | round / 100), ckpt_per_s_min: ($cmin * 100 | round / 100), ckpt_per_s_p50: ($cp50 * 100 | round / 100),
      failed: $failed, timed_out: $tout, ready_s: $ready}'
}

start
echo "CREATE TABLE t (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=http ENGINE_ATTRIBUTE='{\"event_time\": \"ts\", \"watermark_delay\": \"1s\"}';" | sql
for ((i = 0; i < VIEWS; i += 50)); do
  for ((j = i; j < i + 50 && j < VIEWS; j++)); do
    if ((j % 2 == 0)); then
      echo "CREATE VIEW v$j AS SELECT window_start, window_end, g, COUNT(*) AS n, SUM(v) AS s FROM t WHERE k % $VIEWS = $j GROUP BY TUMBLE(ts, '10s'), g;"
    else
      echo "CREATE VIEW v$j AS SELECT g, COUNT(*) AS n, SUM(v) AS s FROM t WHERE k % $VIEWS = $j GROUP BY g;"
    fi
  done | sql
done
ready=$(waitRunning)
post &
poster=$!
measure run "$ready"
kill "$poster"
wait "$poster" 2>/dev/null || true
poster=
kill "$pid"
wait "$pid" 2>/dev/null || true
start
ready=$(waitRunning)
post &
poster=$!
measure restart "$ready"
