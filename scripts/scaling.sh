#!/usr/bin/env bash
# Measures how throughput, latency and memory change with table size: for each size, a fresh
# tablestore (durable, on a temporary folder) is preloaded with that many entities and the
# read, query and insert workloads run against it. Results: one tablestore-bench JSON per
# size plus scaling.svg (scripts/plot_scaling.py) in OUT_DIR. See docs/performance.md.
#
#   scripts/scaling.sh                       # sizes 10000 100000 1000000
#   SIZES="10000 100000" scripts/scaling.sh  # other sizes
#
# Environment: OUT_DIR (default target/scaling/<UTC timestamp>), SIZES, DURATION (default 3),
# SKIP_BUILD=1 to reuse target/release.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${SIZES:-10000 100000 1000000}"
DURATION="${DURATION:-3}"
OUT_DIR="${OUT_DIR:-target/scaling/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT_DIR"
[ "${SKIP_BUILD:-0}" = "1" ] || cargo build --release --bins
work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for n in $SIZES; do
  rm -rf "$work/data"; mkdir -p "$work/data"
  target/release/tablestore --port 0 --location "$work/data" --silent >"$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do grep -q '^tablestore listening on' "$work/server.log" && break; sleep 0.1; done
  port=$(sed -n 's/^tablestore listening on http:\/\/[^:]*:\([0-9]*\)$/\1/p' "$work/server.log")
  echo "[scaling] $n entities (server pid $server, port $port)"
  target/release/tablestore-bench --endpoint "http://127.0.0.1:$port/devstoreaccount1" \
    --entities "$n" --partitions 100 --duration "$DURATION" --concurrency 32 \
    --workloads point-read,range-query,insert --server-pid "$server" \
    --data-dir "$work/data" --label "$n" --json "$OUT_DIR/scaling-$n.json" | tail -6
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
done
python3 scripts/plot_scaling.py "$OUT_DIR"/scaling-*.json -o "$OUT_DIR/scaling.svg"
echo "[scaling] results in $OUT_DIR"
