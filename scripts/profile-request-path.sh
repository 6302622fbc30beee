#!/usr/bin/env bash
# The request path's CPU budget per stage (docs/performance.md, "The request path's budget"):
# for a point read, an insert, an upsert, a merge, a delete and a `$batch` of 100 inserts, the
# server's instructions per request in each stage (connection and HTTP parse, admit, decode,
# execute, encode, response write, the layers beside them) counted by callgrind, converted to
# µs with the server's CPU per request measured natively in the same run; the same for the
# HTTP floor (`tablestore-bench floor`); and, with two binaries, the before/after table.
#
#   scripts/profile-request-path.sh [LABEL=TABLESTORE_BINARY ...]
#   scripts/profile-request-path.sh old=/tmp/tablestore-main new=target/release/tablestore
#
# Default: one binary, new=target/release/tablestore (built unless SKIP_BUILD=1).
#
# Why instruction counts: on a shared machine throughput and wall time are noisy; callgrind's
# count of the instructions each function executes (inclusive of what it calls) is the same
# from run to run. The conversion to µs multiplies a stage's share of the server's user-space
# instructions by the user CPU per request measured without valgrind (/proc/PID/stat, read by
# the benchmark's --phase-hook just before and after the measured phase); system time (the
# kernel's TCP, futex and fsync work) is a row of its own. `perf stat -e instructions` would
# count natively, but this machine's virtual CPU exposes no hardware counters.
#
# Environment:
#   OUT_DIR        results (default target/request-path/<UTC timestamp>)
#   BENCH_BIN      the load generator and floor (default target/release/tablestore-bench);
#                  the same client drives every binary
#   CG_OPS         single-entity requests counted per workload under callgrind (default 1000)
#   CG_BATCHES     `$batch` requests counted under callgrind (default 40)
#   NATIVE_OPS     single-entity requests per workload in the native CPU run (default 20000)
#   NATIVE_BATCHES `$batch` requests in the native CPU run (default 400)
#   CONCURRENCY    connections, one request in flight each (default 8)
#   ENTITIES       preloaded entities read and rewritten (default 10000, in 100 partitions)
#   TABLESTORE_ARGS extra server options (default: none; durable mode is the default)
#   SKIP_FLOOR=1   no floor runs;  SKIP_CALLGRIND=1 / SKIP_NATIVE=1: one half only
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$ROOT/target/request-path/$(date -u +%Y%m%dT%H%M%SZ)}
CG_OPS=${CG_OPS:-1000}
CG_BATCHES=${CG_BATCHES:-40}
NATIVE_OPS=${NATIVE_OPS:-20000}
NATIVE_BATCHES=${NATIVE_BATCHES:-400}
CONCURRENCY=${CONCURRENCY:-8}
ENTITIES=${ENTITIES:-10000}
read -r -a SERVER_ARGS <<<"${TABLESTORE_ARGS:-}"
SINGLES=insert,point-read,upsert,merge,delete

say() { printf '[profile-request-path] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

BINARIES=("$@")
if [[ ${#BINARIES[@]} -eq 0 ]]; then
    if [[ "${SKIP_BUILD:-}" != 1 ]]; then
        say "building release binaries"
        (cd "$ROOT" && cargo build --release --bin tablestore --bin tablestore-bench)
    fi
    BINARIES=("new=$ROOT/target/release/tablestore")
fi
BENCH=${BENCH_BIN:-$ROOT/target/release/tablestore-bench}
[[ -x "$BENCH" ]] || die "missing $BENCH (build it, or set BENCH_BIN)"
for spec in "${BINARIES[@]}"; do
    [[ "$spec" == *=* ]] || die "name each binary as LABEL=PATH (got $spec)"
    [[ -x "${spec#*=}" ]] || die "${spec#*=} is not an executable"
done
if [[ "${SKIP_CALLGRIND:-}" != 1 ]]; then
    command -v valgrind >/dev/null && command -v callgrind_control >/dev/null &&
        command -v callgrind_annotate >/dev/null ||
        die "valgrind (callgrind_control, callgrind_annotate) is needed, or SKIP_CALLGRIND=1"
fi

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/request-path.XXXXXX")
SERVER_PID=""

stop_server() {
    # Stops the server this script started, by its pid only.
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 600); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$SERVER_PID" 2>/dev/null && kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}
cleanup() {
    stop_server
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The phase hooks (tablestore-bench --phase-hook CMD: `CMD start|end WORKLOAD`). The native
# one records the server's utime and stime (clock ticks) around the measured phase; the
# callgrind one zeroes the counters at the start and dumps them at the end.
cat >"$WORK/native-hook" <<'EOF'
#!/usr/bin/env bash
set -eu
read -r -a f < <(sed 's/.*) //' "/proc/$HOOK_PID/stat")
echo "$1 $2 ${f[11]} ${f[12]}" >>"$HOOK_OUT"
EOF
cat >"$WORK/callgrind-hook" <<'EOF'
#!/usr/bin/env bash
set -eu
if [[ $1 == start ]]; then
    callgrind_control -i on "$HOOK_PID" >/dev/null
    callgrind_control -z "$HOOK_PID" >/dev/null
else
    callgrind_control -d "$2" "$HOOK_PID" >/dev/null
    callgrind_control -i off "$HOOK_PID" >/dev/null
fi
EOF
chmod +x "$WORK/native-hook" "$WORK/callgrind-hook"

# Drives the server in $SERVER_PID on port $1 with the phase hook $2, writing $3.*.json.
drive() {
    local port=$1 hook=$2 out=$3 ops=$4 batches=$5
    local common=(--endpoint "http://127.0.0.1:$port/devstoreaccount1" --wait-ready 120
        --concurrency "$CONCURRENCY" --entities "$ENTITIES" --partitions 100 --warmup 2
        --duration 600 --timeout 120 --quiet --phase-hook "$hook")
    HOOK_PID=$SERVER_PID "$BENCH" "${common[@]}" --workloads "$SINGLES" --ops "$ops" \
        --json "$out.singles.json" >"$out.singles.txt"
    HOOK_PID=$SERVER_PID "$BENCH" "${common[@]}" --workloads batch-insert --ops "$batches" \
        --json "$out.batch.json" >"$out.batch.txt"
}

# Starts `$@` (a server listening on port $PORT) in the background as SERVER_PID.
start() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 &
    SERVER_PID=$!
}

server_cmd() {
    local bin=$1 port=$2 data=$3
    if [[ $bin == floor ]]; then
        echo "$BENCH" floor --host 127.0.0.1 --port "$port"
    else
        echo "$bin" --host 127.0.0.1 --port "$port" --location "$data" --log-level warn \
            ${SERVER_ARGS[@]+"${SERVER_ARGS[@]}"}
    fi
}

profile() {
    local label=$1 bin=$2 port data
    if [[ "${SKIP_NATIVE:-}" != 1 ]]; then
        port=$(free_port)
        data="$WORK/$label-native"
        mkdir -p "$data"
        say "$label: native CPU run (port $port)"
        # shellcheck disable=SC2046
        start "$OUT_DIR/$label.native.log" $(server_cmd "$bin" "$port" "$data")
        rm -f "$OUT_DIR/$label.native.cpu"
        HOOK_OUT="$OUT_DIR/$label.native.cpu" drive "$port" "$WORK/native-hook" \
            "$OUT_DIR/$label.native" "$NATIVE_OPS" "$NATIVE_BATCHES"
        stop_server
        rm -rf "$data"
    fi
    if [[ "${SKIP_CALLGRIND:-}" != 1 ]]; then
        port=$(free_port)
        data="$WORK/$label-callgrind"
        mkdir -p "$data" "$OUT_DIR/$label.callgrind"
        say "$label: callgrind run (port $port; slow)"
        # shellcheck disable=SC2046
        start "$OUT_DIR/$label.callgrind.log" valgrind --tool=callgrind --instr-atstart=no \
            --separate-threads=yes --callgrind-out-file="$OUT_DIR/$label.callgrind/cg.out" \
            $(server_cmd "$bin" "$port" "$data")
        drive "$port" "$WORK/callgrind-hook" "$OUT_DIR/$label.callgrind/bench" \
            "$CG_OPS" "$CG_BATCHES"
        stop_server
        rm -rf "$data"
    fi
}

for spec in "${BINARIES[@]}"; do
    profile "${spec%%=*}" "${spec#*=}"
done
[[ "${SKIP_FLOOR:-}" == 1 ]] || profile floor floor

labels=()
for spec in "${BINARIES[@]}"; do labels+=("${spec%%=*}"); done
python3 "$ROOT/scripts/request_path_budget.py" "$OUT_DIR" "${labels[@]}" >"$OUT_DIR/budget.md"
say "wrote $OUT_DIR/budget.md"
cat "$OUT_DIR/budget.md"
