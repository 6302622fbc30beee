#!/usr/bin/env bash
# Runs the same tablestore-bench workloads against tablestore, against Azurite and against the
# HTTP floor (`tablestore-bench floor`: a trivial endpoint on tablestore's HTTP stack that stores
# nothing), one after the other, each on a free loopback port (the two servers with their data
# in a fresh temporary folder), and writes the JSON results and a markdown table of ratios:
# tablestore to Azurite and tablestore to the floor. Tables are kept (the data folders are
# temporary) so the folder sizes measured after each server stops include all the data.
# See docs/performance.md.
#
#   scripts/bench-compare.sh [tablestore-bench options...]
#   scripts/bench-compare.sh --workloads insert,point-read --duration 5
#
# Environment:
#   OUT_DIR            where results go (default target/bench-compare/<UTC timestamp>)
#   TABLESTORE_ARGS    extra server options (default: --durability durable)
#   AZURITE_TABLE      path of an azurite-table executable to use instead of installing one
#   AZURITE_VERSION    npm version installed when AZURITE_TABLE is unset (default 3.35)
#   AZURITE_PREFIX     npm prefix it is installed into (default /tmp/tablestore-bench-azurite;
#                      never inside the repository)
#   SKIP_BUILD=1       use the existing target/release binaries
#   TABLESTORE_BIN, BENCH_BIN   binaries to run instead of target/release's (with SKIP_BUILD=1)
#   KEEP_DATA=1        keep the temporary data folders
#   ONLY=tablestore|azurite|floor   run only these (comma separated, e.g. ONLY=tablestore,floor);
#                      a comparison is written when tablestore and another one ran
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$ROOT/target/bench-compare/$(date -u +%Y%m%dT%H%M%SZ)}
AZURITE_VERSION=${AZURITE_VERSION:-3.35}
AZURITE_PREFIX=${AZURITE_PREFIX:-/tmp/tablestore-bench-azurite}
read -r -a SERVER_ARGS <<<"${TABLESTORE_ARGS:---durability durable}"
BENCH_ARGS=("$@")
ONLY=${ONLY:-}

say() { printf '[bench-compare] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# Whether this run includes $1 (tablestore, azurite or floor).
runs() { [[ -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }
IFS=, read -r -a ONLY_LIST <<<"$ONLY"
for name in ${ONLY_LIST[@]+"${ONLY_LIST[@]}"}; do
    case "$name" in
        tablestore | azurite | floor) ;;
        *) die "ONLY=$ONLY: name tablestore, azurite or floor, comma separated" ;;
    esac
done

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX")
SERVER_PID=""

stop_server() {
    # Stops the server this script started (by its pid only) with signal $1 (default TERM;
    # Azurite shuts down and saves its database on INT), then KILL after 30 s.
    local sig=${1:-TERM}
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "-$sig" "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$SERVER_PID" 2>/dev/null; then
            say "server $SERVER_PID did not stop in 30 s; killing it"
            kill -KILL "$SERVER_PID" 2>/dev/null || true
        fi
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}

cleanup() {
    stop_server
    if [[ "${KEEP_DATA:-}" == 1 ]]; then
        say "data kept in $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
        return
    fi
    # Fallback: a random high port nobody answers on (bounded number of tries).
    for _ in $(seq 1 50); do
        local p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    die "no free port found"
}

# ---- binaries ---------------------------------------------------------------------------
if [[ "${SKIP_BUILD:-}" != 1 ]]; then
    say "building release binaries"
    (cd "$ROOT" && cargo build --release --bin tablestore --bin tablestore-bench)
fi
TABLESTORE="${TABLESTORE_BIN:-$ROOT/target/release/tablestore}"
BENCH="${BENCH_BIN:-$ROOT/target/release/tablestore-bench}"
[[ -x "$BENCH" ]] || die "missing $BENCH (run without SKIP_BUILD=1)"
! runs tablestore || [[ -x "$TABLESTORE" ]] || die "missing $TABLESTORE (run without SKIP_BUILD=1)"

if runs azurite; then
    AZ=${AZURITE_TABLE:-$AZURITE_PREFIX/node_modules/.bin/azurite-table}
    if [[ ! -x "$AZ" ]]; then
        [[ -z "${AZURITE_TABLE:-}" ]] || die "AZURITE_TABLE=$AZURITE_TABLE is not executable"
        command -v npm >/dev/null 2>&1 || die "npm is needed to install Azurite (or set AZURITE_TABLE)"
        case "$AZURITE_PREFIX" in "$ROOT"|"$ROOT"/*) die "AZURITE_PREFIX must be outside the repository" ;; esac
        say "installing azurite@$AZURITE_VERSION into $AZURITE_PREFIX"
        mkdir -p "$AZURITE_PREFIX"
        npm install --prefix "$AZURITE_PREFIX" --no-audit --no-fund "azurite@$AZURITE_VERSION" >&2
    fi
fi

# Runs the benchmark against the server in $SERVER_PID at port $1, data folder $2 (empty for
# none: the floor), label $3.
run_bench() {
    local port=$1 data=$2 label=$3
    local data_args=()
    [[ -z "$data" ]] || data_args=(--data-dir "$data")
    say "benchmarking $label (pid $SERVER_PID, port $port)"
    "$BENCH" --endpoint "http://127.0.0.1:$port/devstoreaccount1" --wait-ready 60 \
        --server-pid "$SERVER_PID" ${data_args[@]+"${data_args[@]}"} --label "$label" --keep-tables \
        --json "$OUT_DIR/$label.json" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} | tee "$OUT_DIR/$label.txt"
}

# Size of a data folder once its server has stopped (and flushed), in bytes.
disk_after_stop() {
    du -sb "$1" 2>/dev/null | cut -f1 >"$OUT_DIR/$2.disk-bytes" || true
}

# ---- tablestore -------------------------------------------------------------------------
if runs tablestore; then
    PORT=$(free_port)
    mkdir -p "$WORK/tablestore"
    say "starting tablestore on 127.0.0.1:$PORT (${SERVER_ARGS[*]})"
    "$TABLESTORE" --host 127.0.0.1 --port "$PORT" --location "$WORK/tablestore" \
        --log-level warn "${SERVER_ARGS[@]}" >"$OUT_DIR/tablestore-server.log" 2>&1 &
    SERVER_PID=$!
    run_bench "$PORT" "$WORK/tablestore" tablestore
    stop_server
    disk_after_stop "$WORK/tablestore" tablestore
fi

# ---- Azurite ----------------------------------------------------------------------------
if runs azurite; then
    PORT=$(free_port)
    mkdir -p "$WORK/azurite"
    say "starting $("$AZ" --version 2>/dev/null | head -n1 | sed 's/^/Azurite /') on 127.0.0.1:$PORT (disk persistence)"
    "$AZ" --tableHost 127.0.0.1 --tablePort "$PORT" --location "$WORK/azurite" \
        --skipApiVersionCheck --loose --silent --disableTelemetry \
        >"$OUT_DIR/azurite-server.log" 2>&1 &
    SERVER_PID=$!
    # The npm shim execs node, so $! is the node process itself; if a wrapper was given
    # instead, measure its node child.
    if [[ -r "/proc/$SERVER_PID/comm" ]]; then
        sleep 0.5
        if [[ "$(cat "/proc/$SERVER_PID/comm" 2>/dev/null)" != node ]]; then
            CHILD=$(pgrep -P "$SERVER_PID" -x node | head -n1 || true)
            [[ -z "$CHILD" ]] || { say "measuring node child $CHILD of $SERVER_PID"; MEASURE_PID=$CHILD; }
        fi
    fi
    if [[ -n "${MEASURE_PID:-}" ]]; then
        WRAPPER=$SERVER_PID
        SERVER_PID=$MEASURE_PID
        run_bench "$PORT" "$WORK/azurite" azurite
        SERVER_PID=$WRAPPER
    else
        run_bench "$PORT" "$WORK/azurite" azurite
    fi
    stop_server INT
    disk_after_stop "$WORK/azurite" azurite
fi

# ---- the HTTP floor ---------------------------------------------------------------------
# The same load generator against a trivial endpoint on tablestore's HTTP stack (tokio, hyper
# HTTP/1.1 keep-alive, the same settings and allocator) that answers without storing anything:
# what the machine allows before any server does its work. No data folder.
if runs floor; then
    PORT=$(free_port)
    say "starting the HTTP floor (tablestore-bench floor) on 127.0.0.1:$PORT"
    "$BENCH" floor --host 127.0.0.1 --port "$PORT" >"$OUT_DIR/floor-server.log" 2>&1 &
    SERVER_PID=$!
    run_bench "$PORT" "" floor
    stop_server
fi

# ---- comparison -------------------------------------------------------------------------
# tablestore against Azurite, with the floor's columns beside; or against the floor alone.
if runs tablestore && { runs azurite || runs floor; }; then
    COMPARE=(--candidate "$OUT_DIR/tablestore.json")
    if runs azurite; then
        COMPARE+=(--baseline "$OUT_DIR/azurite.json")
        ! runs floor || COMPARE+=(--floor "$OUT_DIR/floor.json")
    else
        COMPARE+=(--baseline "$OUT_DIR/floor.json")
    fi
    "$BENCH" compare "${COMPARE[@]}" --out "$OUT_DIR/comparison.md"
    TS_DISK=$(cat "$OUT_DIR/tablestore.disk-bytes" 2>/dev/null || true)
    AZ_DISK=$(cat "$OUT_DIR/azurite.disk-bytes" 2>/dev/null || true)
    if [[ -n "$TS_DISK" && -n "$AZ_DISK" ]]; then
        # The resource table has a floor column when the floor ran; it holds no data folder.
        FLOOR_CELL=""
        ! runs floor || FLOOR_CELL=" – |"
        awk -v t="$TS_DISK" -v a="$AZ_DISK" -v f="$FLOOR_CELL" 'BEGIN {
            r = (t > 0) ? sprintf("%.2f×", a / t) : "–";
            printf("| data folder after the server stopped, MiB | %.1f | %.1f | %s |%s\n", t / 1048576, a / 1048576, r, f) }' \
            >>"$OUT_DIR/comparison.md"
    fi
    cat "$OUT_DIR/comparison.md"
fi
say "results in $OUT_DIR"
