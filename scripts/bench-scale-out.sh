#!/usr/bin/env bash
# The same tablestore-bench workloads against three set-ups, one after the other, all on
# loopback with fresh data: tablestore on sled (one node), one node over PostgreSQL, and two
# nodes over the same PostgreSQL database (the load generator spreads its connections over
# both with `--endpoint A,B`). Writes each JSON result and a markdown table (scale-out.md).
# See docs/performance.md ("Several nodes over PostgreSQL").
#
#   scripts/bench-scale-out.sh [tablestore-bench options...]
#
# PostgreSQL is started here: initdb into a temporary folder (as the `postgres` user when run
# as root), a free loopback port, PostgreSQL's default durability (fsync and synchronous
# commit on, like tablestore's durable mode), removed at the end.
#
# Environment:
#   OUT_DIR        where results go (default target/bench-scale-out/<UTC timestamp>)
#   PG_BINDIR      folder holding initdb/pg_ctl (default: pg_config --bindir)
#   SKIP_BUILD=1   use the existing target/release binaries
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-scale-out/$(date -u +%Y%m%dT%H%M%SZ)}
DEFAULT_ARGS=(--workloads insert,point-read,upsert,merge,batch-insert,range-query
    --entities 20000 --partitions 100 --duration 5 --concurrency 32)
if [[ $# -gt 0 ]]; then BENCH_ARGS=("$@"); else BENCH_ARGS=("${DEFAULT_ARGS[@]}"); fi

say() { printf '[bench-scale-out] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-scale-out.XXXXXX")
chmod 755 "$WORK"
PIDS=()
PG_UP=""

as_pg() { # runs a PostgreSQL program as an unprivileged user when we are root
    if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop_nodes() {
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    PIDS=()
}

cleanup() {
    stop_nodes
    if [[ -n "$PG_UP" ]]; then as_pg "$PG_BINDIR/pg_ctl" -D "$WORK/pg" stop -m fast -w >/dev/null 2>&1 || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- binaries and PostgreSQL ------------------------------------------------------------
if [[ "${SKIP_BUILD:-}" != 1 ]]; then
    say "building release binaries"
    (cd "$ROOT" && cargo build --release --bin tablestore --bin tablestore-bench)
fi
TABLESTORE="$ROOT/target/release/tablestore"
BENCH="$ROOT/target/release/tablestore-bench"
[[ -x "$TABLESTORE" && -x "$BENCH" ]] || die "missing $TABLESTORE or $BENCH (run without SKIP_BUILD=1)"

PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir 2>/dev/null || true)}
[[ -x "$PG_BINDIR/initdb" ]] || die "PostgreSQL is not installed: install it with apt-get install postgresql (or set PG_BINDIR)"
if [[ $(id -u) == 0 ]]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' user to run PostgreSQL as"
    chown postgres "$WORK"
fi
PG_PORT=$(free_port)
as_pg "$PG_BINDIR/initdb" -D "$WORK/pg" -U tablestore --auth=trust --encoding=UTF8 --locale=C >/dev/null
printf "port = %s\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nmax_connections = 200\n" \
    "$PG_PORT" "$WORK" >>"$WORK/pg/postgresql.auto.conf"
as_pg "$PG_BINDIR/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w start >/dev/null
PG_UP=1
say "PostgreSQL $("$PG_BINDIR/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT (fsync on)"

# Starts a node over store $1; sets ENDPOINT (no subshell, so PIDS keeps its pid). Only sled
# keeps its data in a folder: a PostgreSQL node gets no --location (it would ignore it, and
# say so in its log).
start_node() {
    local store=$1 port
    local folder=()
    port=$(free_port)
    [[ $store == sled ]] && folder=(--location "$(mktemp -d "$WORK/node.XXXXXX")")
    "$TABLESTORE" --host 127.0.0.1 --port "$port" "${folder[@]}" --store "$store" \
        --log-level warn >>"$OUT_DIR/servers.log" 2>&1 &
    PIDS+=($!)
    ENDPOINT="http://127.0.0.1:$port/devstoreaccount1"
}

# Runs the workloads against endpoint list $1 with label $2 (server CPU of the first node).
run_bench() {
    local endpoints=$1 label=$2
    say "benchmarking $label ($endpoints)"
    "$BENCH" --endpoint "$endpoints" --wait-ready 60 --server-pid "${PIDS[0]}" --label "$label" \
        --json "$OUT_DIR/$label.json" "${BENCH_ARGS[@]}" | tee "$OUT_DIR/$label.txt"
}

# ---- the three set-ups ------------------------------------------------------------------
start_node sled
run_bench "$ENDPOINT" sled
stop_nodes

as_pg "$PG_BINDIR/createdb" -h 127.0.0.1 -p "$PG_PORT" -U tablestore one_node
start_node "postgres://tablestore@127.0.0.1:$PG_PORT/one_node"
run_bench "$ENDPOINT" postgres-1-node
stop_nodes

as_pg "$PG_BINDIR/createdb" -h 127.0.0.1 -p "$PG_PORT" -U tablestore two_nodes
URL="postgres://tablestore@127.0.0.1:$PG_PORT/two_nodes"
start_node "$URL"
E1=$ENDPOINT
start_node "$URL"
run_bench "$E1,$ENDPOINT" postgres-2-nodes
stop_nodes

# ---- the table --------------------------------------------------------------------------
python3 - "$OUT_DIR" >"$OUT_DIR/scale-out.md" <<'EOF'
import json, sys, os
out = sys.argv[1]
labels = ["sled", "postgres-1-node", "postgres-2-nodes"]
runs = {l: json.load(open(os.path.join(out, l + ".json"))) for l in labels}
names = [w["name"] for w in runs["sled"]["workloads"]]
print("| workload | " + " | ".join(labels) + " | 2 nodes / 1 node |")
print("|---|" + "---:|" * (len(labels) + 1))
for n in names:
    row, vals = [], {}
    for l in labels:
        w = next((w for w in runs[l]["workloads"] if w["name"] == n), None)
        if w is None:
            row.append("–"); continue
        per = "entities/s" if n in ("batch-insert", "bulk-load") else "ops/s"
        v = w["entities_per_s"] if per == "entities/s" else w["ops_per_s"]
        vals[l] = v
        cell = f"{v:,.0f} (p99 {w['latency']['p99_ms']:.1f} ms)"
        if w["failed"]:
            cell += f", {w['failed']} failed"
        row.append(cell)
    one, two = vals.get("postgres-1-node"), vals.get("postgres-2-nodes")
    ratio = f"{two / one:.2f}×" if one and two else "–"
    print(f"| {n} ({per}) | " + " | ".join(row) + f" | {ratio} |")
EOF
cat "$OUT_DIR/scale-out.md"
say "results in $OUT_DIR"
