#!/usr/bin/env bash
# Before/after throughput in one run (docs/performance.md, "The request path's budget"): the
# same tablestore-bench workloads against an old and a new tablestore binary, interleaved
# (old, new, old, new, …), with the HTTP floor each round and Azurite once, then one table of
# rates and ratios: new/old, new/floor, new/Azurite, server CPU per request, peak RSS and the
# data folder per live entity after each server stopped.
#
#   scripts/bench-ab.sh OLD_BINARY NEW_BINARY [tablestore-bench options...]
#   scripts/bench-ab.sh /tmp/tablestore-main target/release/tablestore --duration 5
#
# Environment:
#   ROUNDS        rounds of old, new and the floor (default 2)
#   OUT_DIR       results (default target/bench-ab/<UTC timestamp>)
#   SKIP_AZURITE=1  no Azurite run;  AZURITE_TABLE, AZURITE_VERSION, AZURITE_PREFIX as for
#                 scripts/bench-compare.sh (Azurite is installed under /tmp, never the repo)
#   BENCH_BIN     the load generator (default target/release/tablestore-bench); one client
#                 drives every server
#   TABLESTORE_ARGS  server options for both binaries (default --durability durable)
#
# The benchmark's options default to the standard set (100,000 entities of ~1 KiB in 100
# partitions, 32 requests in flight, 10 s per workload, every workload). The delete pool is
# fixed (--delete-pool, default 50,000) so that live entities can be counted.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { echo "usage: scripts/bench-ab.sh OLD_BINARY NEW_BINARY [bench options...]" >&2; exit 2; }
OLD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
NEW=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
shift 2
ROUNDS=${ROUNDS:-2}
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-ab/$(date -u +%Y%m%dT%H%M%SZ)}
BENCH=${BENCH_BIN:-$ROOT/target/release/tablestore-bench}
for b in "$OLD" "$NEW" "$BENCH"; do
    [[ -x "$b" ]] || { echo "bench-ab: $b is not an executable" >&2; exit 2; }
done
ARGS=("$@")
[[ " ${ARGS[*]-} " == *" --delete-pool "* ]] || ARGS+=(--delete-pool 50000)
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)

say() { printf '[bench-ab] %s\n' "$*" >&2; }

# One bench-compare.sh run of `$2` (tablestore, floor or azurite) into $OUT_DIR/$1.
one() {
    local label=$1 only=$2 bin=${3:-$NEW}
    say "round: $label"
    ONLY=$only SKIP_BUILD=1 TABLESTORE_BIN=$bin BENCH_BIN=$BENCH OUT_DIR="$OUT_DIR/$label" \
        "$ROOT/scripts/bench-compare.sh" ${ARGS[@]+"${ARGS[@]}"} >"$OUT_DIR/$label.log" 2>&1 ||
        { say "$label failed; see $OUT_DIR/$label.log"; return 1; }
}

for round in $(seq 1 "$ROUNDS"); do
    # Alternate which binary goes first, so neither always meets the warmer machine.
    if (( round % 2 == 1 )); then
        one "old-$round" tablestore "$OLD"
        one "new-$round" tablestore "$NEW"
    else
        one "new-$round" tablestore "$NEW"
        one "old-$round" tablestore "$OLD"
    fi
    one "floor-$round" floor
done
[[ "${SKIP_AZURITE:-}" == 1 ]] || one azurite azurite

POOL=50000
for ((i = 0; i < ${#ARGS[@]}; i++)); do
    if [[ "${ARGS[i]}" == --delete-pool ]]; then POOL=${ARGS[i + 1]}; fi
done
python3 "$ROOT/scripts/bench_ab_table.py" "$OUT_DIR" "$POOL" >"$OUT_DIR/ab.md"
cat "$OUT_DIR/ab.md"
say "results in $OUT_DIR"
