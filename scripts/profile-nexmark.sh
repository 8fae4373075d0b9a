#!/usr/bin/env bash
# Profiles `streamsql bench` for every Nexmark example (or QUERIES) and
# prints, per query, the components with the largest share of the CPU
# samples (cumulative: a component's share includes what it calls), the
# bench's final read of the results (outside its CPU seconds) left out.
#
#   EVENTS=3000000 scripts/profile-nexmark.sh
#   QUERIES="q16 q19" scripts/profile-nexmark.sh
#
# Needs Go and python3. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${EVENTS:-3000000}
QUERIES=${QUERIES:-$(cd queries/examples/nexmark && ls *.sql | sed 's/\.sql$//' | sort -V | tr '\n' ' ')}
dir=$(mktemp -d)
bin=$dir/streamsql
go build -o "$bin" ./cmd/streamsql
for q in $QUERIES; do
  "$bin" bench --query "$q" --events "$EVENTS" --checkpoint-interval 1s --cpuprofile "$dir/$q.prof" --json > "$dir/$q.json"
  go tool pprof -top -cum -nodecount=400 "$bin" "$dir/$q.prof" 2>/dev/null | python3 -c '
import re, sys, json
q = sys.argv[1]
res = json.load(open(sys.argv[2]))
components = [
    ("generator", r"runtime/source/nexmark\."),
    ("GC", r"^runtime\.gcBgMarkWorker$"),
    ("aggregation", r"runtime/op\.\(\*hashAgg\)\.(Process|Barrier|Watermark)$"),
    ("CUMULATE", r"runtime/op\.\(\*cumAgg\)\.(Process|Barrier|Watermark)$"),
    ("Top-N", r"runtime/op\.\(\*topN\)\.(Process|Barrier|Watermark)$"),
    ("OVER", r"runtime/op\.\(\*overOp\)\.(Process|Barrier|Watermark)$"),
    ("join", r"runtime/op\.\(\*(intervalJoin|changelogJoin|temporalJoin)\)\.(ProcessSide|WatermarkSide)$"),
    ("calc", r"runtime/op\.\(\*calc\)\.Process$"),
    ("exchange", r"^github.com/streamsql/streamsql/runtime\.\(\*output\)\.Emit$"),
    ("results sink", r"runtime\.\(\*(upsertResults|appendResults)\)\.(Barrier|Emit|publish)$"),
    ("file sink", r"runtime/sink/file\."),
    ("operator snapshots", r"runtime/op\.\(\*\w+\)\.Snapshot$"),
    ("state writes", r"runtime\.\(\*taskBase\)\.writeLoop$"),
]
shares = {}
total_excl = 0.0
for line in sys.stdin:
    m = re.match(r"\s*[0-9.]+\w*s?\s+[0-9.]+%\s+[0-9.]+%\s+[0-9.]+\w*\s+([0-9.]+)%\s+(.*)$", line)
    if not m:
        continue
    cum, name = float(m.group(1)), m.group(2).strip()
    if name.endswith("runtime.(*Results).Rows"):
        total_excl = max(total_excl, cum)
    for comp, pat in components:
        if re.search(pat, name):
            shares[comp] = max(shares.get(comp, 0), cum)
scale = 100.0 / (100.0 - total_excl) if total_excl < 100 else 1
top = sorted(shares.items(), key=lambda kv: -kv[1])[:4]
print("%s\t%d events/CPU-s\t%s" % (q, res["events_per_cpu_second"], ", ".join("%s %d%%" % (c, round(s * scale)) for c, s in top)))
' "$q" "$dir/$q.json"
done
