#!/usr/bin/env bash
# The project's one test command.
#
#   ./test.sh           everything CI runs (under 10 minutes from a fresh clone on two cores
#                       with the dependencies cached; CONTRIBUTING.md has the stage times)
#   ./test.sh --quick   the inner loop: cargo fmt --check, cargo clippy, the unit tests of
#                       every crate (cargo test --workspace --lib --bins); under two minutes
#                       once built
#
# Everything, in order:
#   0. the installs the later stages need (PostgreSQL and Chromium through apt, the SDK suites'
#      .venv and node_modules, the Azure CLI's venv) start in the background: they wait on the
#      network and the disk while the next steps use the cores
#      The supply-chain check (scripts/ci/deny.sh: cargo-deny's advisories, bans, licences
#      and sources checks of Cargo.lock and fuzz/Cargo.lock, offline, against the RustSec
#      database copy in ../shared/advisory-db) runs in the background too: little CPU, and its
#      result is shown after lint
#   1. in a fresh clone, the dependencies an earlier run on this machine compiled for the same
#      Cargo.lock and toolchain are copied into target/ (scripts/ci/cargo-cache.sh); then
#      scripts/ci/lint.sh: cargo fmt --check, cargo clippy --workspace --all-targets -D warnings,
#      cargo check of the fuzz targets; a failure stops the run here, within minutes; then the
#      supply-chain check's result (a failure there is recorded and the run goes on)
#   2. cargo test --workspace: every crate's unit tests, tests/it, the bench crate's, the doc
#      test (built first with --no-run, run once PostgreSQL is installed); the one
#      profile for the tests and the binary the later stages use: dev by default, see below
#   3. the suites, in two lanes (cargo test and each suite mostly wait on their servers, so
#      one at a time they left a core idle):
#      lane 2, from the end of the build, beside cargo test and lane 1:
#              scripts/ci/docs-walk.py (the shell commands README.md and docs/ mark with
#              `<!-- docs-walk -->`, run against the binary), scripts/ci/packages.sh (wheel and
#              npm package of the binary just built, installed fresh and exercised),
#              scripts/ci/docker.sh (the image built from that binary with Debian's podman,
#              which it installs with apt when missing, on a Debian base it makes with
#              debootstrap and caches; every documented `docker run` and Compose service of the
#              image run and checked; needs root),
#              scripts/ci/postgres.sh (the PostgreSQL store: Rust subset and SDK suites on a
#              PostgreSQL it starts), scripts/ci/console-browser.sh (the console in headless
#              Chromium)
#      lane 1, after cargo test: start target/debug/tablestore on a free loopback port and a
#              temp data dir, wait for GET /_health, run the Python and JS SDK suites against
#              it, stop it; the SDK documentation examples
#      either lane, whichever is done with the above first: scripts/ci/azure-cli.sh (the
#              Azure CLI scenario, about a core for 80 s; lane 2 starts a server of its own)
#   4. print a summary with each stage's time; exit non-zero if anything failed
#
# Why the dev (debug) profile: on the 2-core machine a clean debug build of the
# workspace, its dependencies and the test binaries takes a few minutes; the release
# profile took ~15 min (optimising + debuginfo). The SDK suites are client-bound, so a
# debug server runs them about as fast (Python suite ~15 s on disk either way).
# TABLESTORE_CARGO_PROFILE=release switches both steps to --release.
#
# Environment knobs (all optional):
#   TABLESTORE_CARGO_PROFILE=debug|release
#                               cargo profile for the build and the tests (default debug).
#   TABLESTORE_TEST_TARGET=tablestore|azurite
#                               what the SDK suites run against (default tablestore).
#                               azurite: skips cargo and starts `azurite-table` from PATH
#                               (or $AZURITE_TABLE) -- for comparison only, not used by CI.
#   TABLESTORE_ENDPOINT=http://127.0.0.1:N
#                               use an already running server; nothing is started.
#   TABLESTORE_TEST_STORE=disk|memory
#                               --location <tempdir> (default) or --in-memory.
#                               (In `cargo test`, a postgres://… URL here puts every
#                               Config::for_tests server on that database, each in a fresh
#                               schema; scripts/ci/postgres.sh runs its Rust subset so.)
#   TABLESTORE_PYTEST_ARGS="-m 'not batch'"
#                               extra pytest arguments (shell-quoted).
#   TABLESTORE_PYTEST_WORKERS=N run the Python suite with pytest-xdist on N workers.
#   TABLESTORE_SKIP="batch,query"
#                               JS groups to skip (the Python equivalent is -m).
#   TABLESTORE_SKIP_CARGO=1, TABLESTORE_SKIP_LINT=1, TABLESTORE_SKIP_PYTHON=1,
#   TABLESTORE_SKIP_JS=1, TABLESTORE_SKIP_EXAMPLES=1, TABLESTORE_SKIP_AZURE_CLI=1,
#   TABLESTORE_SKIP_PACKAGES=1, TABLESTORE_SKIP_DOCKER=1, TABLESTORE_SKIP_CONSOLE=1,
#   TABLESTORE_SKIP_DOCS=1, TABLESTORE_SKIP_POSTGRES=1, TABLESTORE_SKIP_SUPPLY=1  leave out a stage.
#   TABLESTORE_ADVISORY_DB=DIR  the RustSec database copy (default ../shared/advisory-db).
#   TABLESTORE_KEEP_GOING=1     go on after a lint failure (default: stop there).
#   TABLESTORE_SERIAL=1         run lane 2 after lane 1 instead of beside cargo test and it.
#   TABLESTORE_KEEP_LOGS=1      keep the temp dir (server log, junit xml, TAP) for inspection.
#   TABLESTORE_CARGO_CACHE=0    build the dependencies even when an earlier run on this
#                               machine left them compiled (scripts/ci/cargo-cache.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

QUICK=0
case "${1:-}" in
  "") ;;
  --quick) QUICK=1 ;;
  -h|--help) sed -n '2,/^set -euo pipefail/{/^set /d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
  *) echo "test.sh: unknown argument '$1': run ./test.sh, or ./test.sh --quick for the inner loop" >&2; exit 2 ;;
esac

TARGET="${TABLESTORE_TEST_TARGET:-tablestore}"
STORE="${TABLESTORE_TEST_STORE:-disk}"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"
PY_DIR="tests/compat/python"
JS_DIR="tests/compat/js"
HEALTH_TIMEOUT="${TABLESTORE_HEALTH_TIMEOUT:-60}"

case "$TARGET" in
  tablestore|azurite) ;;
  *) echo "test.sh: TABLESTORE_TEST_TARGET must be 'tablestore' or 'azurite', not '$TARGET'" >&2; exit 2 ;;
esac

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tablestore-test.XXXXXX")"
SERVER_PID=""
SERVER_LOG=""
# What each stage recorded, in files: the two lanes of step 3 run in subshells.
STEPS_FILE="$WORK/steps"   # "name|status|detail|seconds" per line
COUNTS_FILE="$WORK/counts" # "passed failed skipped" per line
: >"$STEPS_FILE"
: >"$COUNTS_FILE"

STAGE_T0=$SECONDS
log() { printf '\n==> %s\n' "$*"; }
# A stage's heading; its record (below) carries the seconds since.
begin() { log "$@"; STAGE_T0=$SECONDS; }

record() { # name status detail
  printf '%s|%s|%s|%s\n' "$1" "$2" "$3" "$((SECONDS - STAGE_T0))" >>"$STEPS_FILE"
}

add_counts() { # pass fail skip
  echo "$1 $2 $3" >>"$COUNTS_FILE"
}

# Whether a stage recorded anything but ok or skipped.
any_failed() {
  awk -F'|' '$2 != "ok" && $2 != "skipped" { bad = 1 } END { exit !bad }' "$STEPS_FILE"
}

stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}

# Installs running in the background (step 0). Each leaves its output in
# $WORK/install-<name>.log and, when done, its exit status in install-<name>.rc, so a stage in
# either lane can wait for it; the log is shown then.
BG_PIDS=()
bg_start() { # name command...
  local name=$1
  shift
  (
    rc=0
    "$@" >"$WORK/install-$name.log" 2>&1 || rc=$?
    echo "$rc" >"$WORK/install-$name.rc"
  ) &
  echo $! >"$WORK/install-$name.pid"
  BG_PIDS+=($!)
}
bg_wait() { # name: waits for it, shows its output, returns its status
  local name=$1
  [ -e "$WORK/install-$name.pid" ] || return 0
  while [ ! -e "$WORK/install-$name.rc" ] && kill -0 "$(cat "$WORK/install-$name.pid")" 2>/dev/null; do
    sleep 1
  done
  sed "s/^/[$name] /" "$WORK/install-$name.log"
  return "$(cat "$WORK/install-$name.rc" 2>/dev/null || echo 1)"
}
# Stops a process and everything it started (each is paused first, so that none of its
# children is orphaned while it goes).
kill_tree() { # pid
  local child
  kill -STOP "$1" 2>/dev/null || return 0
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null || true
  kill -CONT "$1" 2>/dev/null || true
}
# Background processes of this script (installs, the second lane), stopped on exit.
bg_stop_all() {
  local pid
  for pid in "${BG_PIDS[@]}"; do
    kill_tree "$pid"
    wait "$pid" 2>/dev/null || true
  done
}

cleanup() {
  local rc=$?
  bg_stop_all
  stop_server
  if [ "${TABLESTORE_KEEP_LOGS:-0}" = "1" ]; then
    echo "test.sh: logs kept in $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

print_summary() {
  log "Summary (target: $TARGET)"
  local name status detail secs
  while IFS='|' read -r name status detail secs; do
    printf '  %-22s %-8s %5ss  %s\n' "$name" "$status" "$secs" "$detail"
  done <"$STEPS_FILE"
  echo "  total: $((SECONDS / 60)) min $((SECONDS % 60)) s"
  echo
  # Plain closing line, read by CI: "N passed, N failed, N skipped".
  awk '{ p += $1; f += $2; s += $3 } END { printf "summary: %d passed, %d failed, %d skipped\n", p, f, s }' "$COUNTS_FILE"
}

die_with_summary() { # message
  echo "test.sh: $1" >&2
  print_summary
  exit 1
}

# --- --quick: the inner loop ------------------------------------------------------------

# cargo test's "test result:" lines summed: "passed failed ignored".
cargo_counts() { # log file
  awk '
    /^test result:/ {
      for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed/)  p += $i
        if ($(i+1) ~ /^failed/)  f += $i
        if ($(i+1) ~ /^ignored/) s += $i
      }
    }
    END { printf "%d %d %d\n", p, f, s }' "$1"
}

# cargo test ARGS..., recorded as NAME with its counts.
run_cargo_test() { # name args...
  local name=$1 rc=0 p f s
  shift
  cargo test "$@" 2>&1 | tee "$WORK/cargo-test.log" || rc=$?
  read -r p f s < <(cargo_counts "$WORK/cargo-test.log")
  add_counts "$p" "$f" "$s"
  if [ "$rc" -eq 0 ]; then
    record "$name" ok "$p passed, $f failed, $s ignored"
  else
    record "$name" FAILED "exit $rc; $p passed, $f failed"
  fi
}

if [ "$QUICK" = "1" ]; then
  begin "cargo fmt --check"
  if cargo fmt --all --check; then record "fmt" ok ""; else record "fmt" FAILED "run cargo fmt"; fi
  begin "cargo clippy --workspace --all-targets -- -D warnings"
  if cargo clippy --workspace --all-targets -- -D warnings; then
    record "clippy" ok ""
  else
    record "clippy" FAILED "see output above"
  fi
  begin "cargo test --workspace --lib --bins"
  run_cargo_test "unit tests" --workspace --lib --bins
  print_summary
  ! any_failed || exit 1
  exit 0
fi

# --- 0. Installs in the background ------------------------------------------------------
# Network and disk, little CPU: they run while lint and the build use the cores, and each
# stage that needs one waits for it. apt-get takes one lock, so PostgreSQL and Chromium are
# installed one after the other; "$WORK/postgres.installed" tells cargo test PostgreSQL's turn
# is over.

RUN_PY=1; RUN_JS=1
[ "${TABLESTORE_SKIP_PYTHON:-0}" = "1" ] && RUN_PY=0
[ "${TABLESTORE_SKIP_JS:-0}" = "1" ] && RUN_JS=0

hash_of() { "$PYTHON" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

# (Each step says `|| return 1`: errexit does not apply inside a command run as `cmd || …`.)
python_deps() {
  # A venv without pip is one whose creation was cut short (Ctrl-C, a failed first run): make
  # it again rather than fail on every later run.
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import pip' 2>/dev/null; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || return 1
  fi
  local req_hash
  req_hash="$(hash_of "$PY_DIR/requirements.txt")" || return 1
  if [ "$(cat "$VENV/.tablestore-requirements" 2>/dev/null || true)" != "$req_hash" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PY_DIR/requirements.txt" || return 1
    echo "$req_hash" >"$VENV/.tablestore-requirements"
  else
    echo "requirements unchanged; .venv is up to date"
  fi
}

js_deps() {
  local lock_hash
  lock_hash="$(hash_of "$JS_DIR/package-lock.json")" || return 1
  if [ "$(cat "$JS_DIR/node_modules/.tablestore-lock" 2>/dev/null || true)" != "$lock_hash" ]; then
    (cd "$JS_DIR" && npm ci --no-audit --no-fund --loglevel=error) || return 1
    echo "$lock_hash" >"$JS_DIR/node_modules/.tablestore-lock"
  else
    echo "package-lock.json unchanged; node_modules is up to date"
  fi
}

system_packages() {
  if [ "${TABLESTORE_SKIP_POSTGRES:-0}" != "1" ]; then
    scripts/ci/postgres.sh install || echo "test.sh: PostgreSQL is missing; its tests will say so"
  fi
  touch "$WORK/postgres.installed"
  if [ "${TABLESTORE_SKIP_CONSOLE:-0}" != "1" ]; then
    scripts/ci/console-browser.sh --install || true # the stage says what is missing
  fi
}

# Waits until system_packages is past PostgreSQL (or gone).
wait_for_postgres_install() {
  [ -e "$WORK/install-system.pid" ] || return 0
  while [ ! -e "$WORK/postgres.installed" ] && kill -0 "$(cat "$WORK/install-system.pid")" 2>/dev/null; do
    sleep 1
  done
}

log "Installs in the background (logs shown when a stage needs them)"
if [ "$TARGET" = "tablestore" ]; then
  bg_start system system_packages
  if [ "${TABLESTORE_SKIP_AZURE_CLI:-0}" != "1" ]; then
    bg_start azure-cli env PYTHON="$PYTHON" scripts/ci/azure-cli.sh --install
  fi
fi
if [ "$RUN_PY" = "1" ]; then bg_start python python_deps; fi
if [ "$RUN_JS" = "1" ]; then bg_start js js_deps; fi
RUN_SUPPLY=0
if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_SUPPLY:-0}" != "1" ]; then
  RUN_SUPPLY=1
  bg_start supply env PYTHON="$PYTHON" scripts/ci/deny.sh
fi

PROFILE="${TABLESTORE_CARGO_PROFILE:-debug}"
case "$PROFILE" in
  debug) CARGO_FLAGS=() ;;
  release) CARGO_FLAGS=(--release) ;;
  *) echo "test.sh: TABLESTORE_CARGO_PROFILE must be 'debug' or 'release', not '$PROFILE'" >&2; exit 2 ;;
esac
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
SERVER_BIN="$TARGET_DIR/$PROFILE/tablestore"

# The dependencies, compiled by an earlier run on this machine for the same Cargo.lock and
# toolchain (scripts/ci/cargo-cache.sh; lint and the build below use the debug folder).
if [ "$TARGET" = "tablestore" ] && { [ "${TABLESTORE_SKIP_LINT:-0}" != "1" ] || [ "${TABLESTORE_SKIP_CARGO:-0}" != "1" ]; }; then
  scripts/ci/cargo-cache.sh restore "$TARGET_DIR/debug" || echo "test.sh: the cargo cache could not be restored; building cold"
fi

# --- 1. Static checks first: fmt, clippy -D warnings, fuzz targets (scripts/ci/lint.sh) --------

if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_LINT:-0}" != "1" ]; then
  begin "Static checks (scripts/ci/lint.sh)"
  set +e
  scripts/ci/lint.sh 2>&1 | tee "$WORK/lint.log"
  lint_rc=${PIPESTATUS[0]}
  set -e
  read -r l_pass l_fail < <(sed -n 's/^lint: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$WORK/lint.log" | tail -n1)
  l_pass=${l_pass:-0}; l_fail=${l_fail:-0}
  if [ "$lint_rc" -ne 0 ] && [ "$l_fail" -eq 0 ]; then l_fail=1; fi
  add_counts "$l_pass" "$l_fail" 0
  if [ "$lint_rc" -eq 0 ]; then
    record "lint" ok "$l_pass passed (fmt, clippy, fuzz check)"
  else
    record "lint" FAILED "$l_fail failed: $(sed -n 's/^lint: \([a-z]*\) FAILED.*/\1/p' "$WORK/lint.log" | paste -sd, -)"
    if [ "${TABLESTORE_KEEP_GOING:-0}" != "1" ]; then
      die_with_summary "lint failed; stopping before the tests (fix it, or TABLESTORE_KEEP_GOING=1 to go on)"
    fi
  fi
elif [ "$TARGET" = "tablestore" ]; then
  record "lint" skipped "TABLESTORE_SKIP_LINT=1"
fi

# The supply-chain check, started in the background in step 0 (scripts/ci/deny.sh).
if [ "$RUN_SUPPLY" = "1" ]; then
  begin "Supply chain: cargo deny check (scripts/ci/deny.sh, ran in the background)"
  supply_rc=0
  bg_wait supply || supply_rc=$?
  read -r s_pass s_fail < <(sed -n 's/^supply chain: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$WORK/install-supply.log" | tail -n1) || true
  s_pass=${s_pass:-0}; s_fail=${s_fail:-0}
  if [ "$supply_rc" -ne 0 ] && [ "$s_fail" -eq 0 ]; then s_fail=1; fi
  add_counts "$s_pass" "$s_fail" 0
  s_time="$(sed -n 's/^supply chain: took \([0-9]*\) s.*/\1/p' "$WORK/install-supply.log" | tail -n1)"
  if [ "$supply_rc" -eq 0 ]; then
    record "supply chain" ok "$s_pass passed (advisories, bans, licences, sources); ${s_time:-?} s in the background"
  else
    record "supply chain" FAILED "$s_fail failed: $(sed -n 's/^supply chain: \([a-z]*\) FAILED.*/\1/p' "$WORK/install-supply.log" | paste -sd, -) (output above)"
  fi
elif [ "$TARGET" = "tablestore" ]; then
  record "supply chain" skipped "TABLESTORE_SKIP_SUPPLY=1"
fi

# --- The suites after the build, in two lanes ------------------------------------------------
# cargo test and each suite wait on their servers (timeouts, fsync, child processes, one
# client process per suite) more than they compute: one at a time they kept about half a core
# busy. So lane 2 runs beside cargo test and lane 1, in the background (its output is shown
# when they are done); TABLESTORE_SERIAL=1 runs everything one after the other.
#   lane 1 (after cargo test): the server on a temp data dir; the Python and JS SDK suites
#           against it; the SDK documentation examples
#   lane 2: the docs walk, packages, the container image, the PostgreSQL store (a Rust subset
#           and the SDK suites on a PostgreSQL of its own), the console in headless Chromium
#   then the Azure CLI scenario in the lane that gets there first

# free_port, wait_ready URL PID TIMEOUT
. "$ROOT/scripts/ci/server-wait.sh"

# A stage of scripts/ci/ whose last line is "<name>: N passed, N failed, N skipped".
ci_stage() { # name script args...
  local name=$1 script=$2 rc=0 p f s
  shift 2
  begin "$name ($script)"
  "$script" "$@" 2>&1 | tee "$WORK/$name.log" || rc=$?
  read -r p f s < <(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p" "$WORK/$name.log" | tail -n1)
  [ -n "${p:-}" ] || { p=0; f=1; s=0; }
  add_counts "$p" "$f" "$s"
  if [ "$rc" -eq 0 ] && [ "$f" -eq 0 ]; then
    record "$name" ok "$p passed, $f failed, $s skipped"
  else
    record "$name" FAILED "exit $rc; $p passed, $f failed, $s skipped"
  fi
}

sdk_lane() {
  if [ "$RUN_PY" = "1" ] || [ "$RUN_JS" = "1" ]; then
    if [ -n "${TABLESTORE_ENDPOINT:-}" ]; then
      ENDPOINT="${TABLESTORE_ENDPOINT%/}"
      log "Using the running server at $ENDPOINT"
      record "server" ok "external: $ENDPOINT"
    else
      PORT="$(free_port)"
      ENDPOINT="http://127.0.0.1:$PORT"
      SERVER_LOG="$WORK/server.log"
      if [ "$TARGET" = "tablestore" ]; then
        [ -x "$SERVER_BIN" ] || die_with_summary "$SERVER_BIN not found (build it, or unset TABLESTORE_SKIP_CARGO)"
        args=(--host 127.0.0.1 --port "$PORT")
        if [ "$STORE" = "memory" ]; then
          args+=(--in-memory)
        else
          mkdir -p "$WORK/data"
          args+=(--location "$WORK/data")
        fi
        log "Starting tablestore ${args[*]}"
        export TABLESTORE_BIN="$SERVER_BIN"  # SDK tests that start their own server (HTTPS, accounts)
        "$SERVER_BIN" "${args[@]}" >"$SERVER_LOG" 2>&1 &
        SERVER_PID=$!
        health_url="$ENDPOINT/_health"
      else
        AZURITE_TABLE="${AZURITE_TABLE:-$(command -v azurite-table || true)}"
        [ -n "$AZURITE_TABLE" ] || die_with_summary "azurite-table not found: put it on PATH or set AZURITE_TABLE"
        log "Starting azurite-table on port $PORT"
        "$AZURITE_TABLE" --tableHost 127.0.0.1 --tablePort "$PORT" --inMemoryPersistence --loose \
          --skipApiVersionCheck --disableTelemetry >"$SERVER_LOG" 2>&1 &
        SERVER_PID=$!
        # Azurite has no /_health; its table listing answers 403 to an unsigned
        # request once it listens, so probe with a TCP connect instead.
        health_url=""
      fi

      ready=1
      why="not ready within ${HEALTH_TIMEOUT}s at $ENDPOINT"
      if [ -n "$health_url" ]; then
        wait_rc=0
        wait_ready "$health_url" "$SERVER_PID" "$HEALTH_TIMEOUT" || wait_rc=$?
        if [ "$wait_rc" -ne 0 ]; then
          ready=0
          if [ "$wait_rc" -eq 2 ]; then
            server_rc=0
            wait "$SERVER_PID" 2>/dev/null || server_rc=$?
            SERVER_PID=""
            why="exited with status $server_rc before $health_url answered 200"
          fi
        fi
      else
        deadline=$((SECONDS + HEALTH_TIMEOUT)); ready=0
        while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$SERVER_PID" 2>/dev/null; do
          if "$PYTHON" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$PORT" 2>/dev/null; then
            ready=1; break
          fi
          sleep 0.2
        done
      fi
      if [ "$ready" != "1" ]; then
        echo "--- server log (last 50 lines) ---"
        tail -n 50 "$SERVER_LOG" || true
        echo "----------------------------------"
        record "server" FAILED "$why"
        die_with_summary "the server did not become ready"
      fi
      record "server" ok "$TARGET at $ENDPOINT (store: $([ "$TARGET" = azurite ] && echo memory || echo "$STORE"))"
    fi
    export TABLESTORE_ENDPOINT="$ENDPOINT"
  fi

  if [ "$RUN_PY" = "1" ]; then
    begin "Python SDK suite (pytest $PY_DIR)"
    mapfile -t extra < <("$PYTHON" -c 'import os, shlex
  for a in shlex.split(os.environ.get("TABLESTORE_PYTEST_ARGS", "")): print(a)')
    if [ -n "${TABLESTORE_PYTEST_WORKERS:-}" ]; then
      extra=(-n "$TABLESTORE_PYTEST_WORKERS" --dist loadfile "${extra[@]}")
    fi
    set +e
    "$VENV/bin/python" -m pytest "$PY_DIR" -p no:cacheprovider --junitxml="$WORK/pytest.xml" "${extra[@]}"
    py_rc=$?
    set -e
    read -r p_pass p_fail p_skip < <("$PYTHON" scripts/ci/junit-counts.py "$WORK/pytest.xml" 0)
    add_counts "$p_pass" "$p_fail" "$p_skip"
    if [ "$py_rc" -eq 0 ]; then
      record "python sdk" ok "$p_pass passed, $p_fail failed, $p_skip skipped"
    elif [ "$py_rc" -eq 5 ]; then
      record "python sdk" FAILED "no tests were collected (check TABLESTORE_PYTEST_ARGS)"
    else
      record "python sdk" FAILED "exit $py_rc; $p_pass passed, $p_fail failed, $p_skip skipped"
    fi
  fi

  if [ "$RUN_JS" = "1" ]; then
    begin "JS SDK suite (node --test $JS_DIR)"
    set +e
    node --test --test-reporter=spec --test-reporter-destination=stdout \
      --test-reporter=tap --test-reporter-destination="$WORK/node.tap" \
      "$JS_DIR/"
    js_rc=$?
    set -e
    read -r j_pass j_fail j_skip < <(awk '
      /^# pass /      { p = $3 }
      /^# fail /      { f = $3 }
      /^# skipped /   { s += $3 }
      /^# todo /      { s += $3 }
      /^# cancelled / { f += $3 }
      END { printf "%d %d %d\n", p, f, s }' "$WORK/node.tap" 2>/dev/null || echo "0 0 0")
    add_counts "$j_pass" "$j_fail" "$j_skip"
    if [ "$js_rc" -eq 0 ]; then
      record "js sdk" ok "$j_pass passed, $j_fail failed, $j_skip skipped"
    else
      record "js sdk" FAILED "exit $js_rc; $j_pass passed, $j_fail failed, $j_skip skipped"
    fi
  fi

  if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_EXAMPLES:-0}" != "1" ] && [ -x "$SERVER_BIN" ]; then
    begin "SDK documentation examples (scripts/check-sdk-examples.sh)"
    # The JS example runs with the suite's installed SDK instead of a second npm install.
    if [ ! -e docs/sdk/examples/javascript/node_modules ] && [ -d "$JS_DIR/node_modules/@azure/data-tables" ]; then
      ln -s "../../../../$JS_DIR/node_modules" docs/sdk/examples/javascript/node_modules
    fi
    set +e
    scripts/check-sdk-examples.sh --binary "$SERVER_BIN" 2>&1 | tee "$WORK/examples.log"
    ex_rc=${PIPESTATUS[0]}
    set -e
    read -r e_pass e_fail e_skip < <(sed -n 's/^sdk examples: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$WORK/examples.log" | tail -n1)
    add_counts "${e_pass:-0}" "${e_fail:-0}" "${e_skip:-0}"
    if [ "$ex_rc" -eq 0 ]; then
      record "sdk doc examples" ok "${e_pass:-0} passed, ${e_fail:-0} failed, ${e_skip:-0} skipped"
    else
      record "sdk doc examples" FAILED "exit $ex_rc; ${e_pass:-0} passed, ${e_fail:-0} failed, ${e_skip:-0} skipped"
    fi
  fi

  # The Azure CLI scenario on this lane's server, unless lane 2 got to it first (against
  # Azurite, a comparison run with no lane 2, always here).
  if [ -n "${TABLESTORE_ENDPOINT:-}" ] && { [ "$TARGET" = "azurite" ] || claim_azure_cli; }; then
    azure_cli_stage "$TABLESTORE_ENDPOINT"
  fi
  stop_server
}

# The Azure CLI scripted against ENDPOINT (scripts/ci/azure-cli.sh: cached venv, no internet).
# About one core for 80 s (each of its ~50 `az` calls is a new Python process): whichever lane
# finishes its own stages first runs it (claim_azure_cli), so neither waits on the other.
azure_cli_stage() { # endpoint (empty: none, the stage is skipped)
  local endpoint=$1 az_rc a_pass a_fail
  if [ "${TABLESTORE_SKIP_AZURE_CLI:-0}" = "1" ]; then
    record "azure cli" skipped "TABLESTORE_SKIP_AZURE_CLI=1"
    return 0
  fi
  [ -n "$endpoint" ] || return 0
  begin "Azure CLI scenario (scripts/ci/azure-cli.sh)"
  bg_wait azure-cli || true # the stage installs again, or says why it cannot
  set +e
  PYTHON="$PYTHON" scripts/ci/azure-cli.sh "$endpoint" 2>&1 | tee "$WORK/azure-cli.log"
  az_rc=${PIPESTATUS[0]}
  set -e
  read -r a_pass a_fail < <(sed -n 's/^azure cli: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$WORK/azure-cli.log" | tail -n1) || true
  add_counts "${a_pass:-0}" "${a_fail:-1}" 0
  if [ "$az_rc" -eq 0 ]; then
    record "azure cli" ok "${a_pass:-0} passed, ${a_fail:-0} failed"
  else
    record "azure cli" FAILED "exit $az_rc; ${a_pass:-0} passed, ${a_fail:-1} failed"
  fi
}

# True for the first lane to ask (mkdir is atomic): that lane runs the Azure CLI stage.
claim_azure_cli() {
  mkdir "$WORK/azure-cli.claimed" 2>/dev/null
}

# Lane 2's Azure CLI stage: on the server TABLESTORE_ENDPOINT names when one was given,
# otherwise on a server of its own (the binary on a free port and a temp data dir).
side_azure_cli() {
  local port pid rc=0
  if [ "${TABLESTORE_SKIP_AZURE_CLI:-0}" = "1" ] || [ -n "${TABLESTORE_ENDPOINT:-}" ]; then
    azure_cli_stage "${TABLESTORE_ENDPOINT:-}"
    return 0
  fi
  port="$(free_port)"
  mkdir -p "$WORK/azure-cli-data"
  "$SERVER_BIN" --host 127.0.0.1 --port "$port" --location "$WORK/azure-cli-data" \
    >"$WORK/azure-cli-server.log" 2>&1 &
  pid=$!
  wait_ready "http://127.0.0.1:$port/_health" "$pid" "$HEALTH_TIMEOUT" || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 20 "$WORK/azure-cli-server.log" || true
    STAGE_T0=$SECONDS
    add_counts 0 1 0
    record "azure cli" FAILED "its server on port $port was not ready (log above)"
  else
    azure_cli_stage "http://127.0.0.1:$port"
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

side_lane() {
  if [ "$TARGET" = "tablestore" ] && [ -x "$SERVER_BIN" ]; then
    # The guides' marked commands, so the docs cannot drift from the program.
    if [ "${TABLESTORE_SKIP_DOCS:-0}" != "1" ]; then
      ci_stage docs scripts/ci/docs-walk.py --binary "$SERVER_BIN"
    fi
    if [ "${TABLESTORE_SKIP_PACKAGES:-0}" != "1" ]; then
      ci_stage packages scripts/ci/packages.sh --binary "$SERVER_BIN" --work "$WORK" --sdk-venv "$VENV"
    fi
    if [ "${TABLESTORE_SKIP_DOCKER:-0}" != "1" ]; then
      ci_stage docker scripts/ci/docker.sh --binary "$SERVER_BIN"
    fi
    # The PostgreSQL store: a Rust subset and the SDK suites on one PostgreSQL (scripts/ci/postgres.sh).
    if [ "${TABLESTORE_SKIP_POSTGRES:-0}" != "1" ]; then
      wait_for_postgres_install
      ci_stage postgres scripts/ci/postgres.sh run "$SERVER_BIN"
    fi
  fi

  if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_CONSOLE:-0}" != "1" ] && [ -x "$SERVER_BIN" ]; then
    begin "Console in a headless browser (scripts/ci/console-browser.sh)"
    bg_wait system || true # the stage says what is missing
    set +e
    scripts/ci/console-browser.sh --binary "$SERVER_BIN" 2>&1 | tee "$WORK/console.log"
    co_rc=${PIPESTATUS[0]}
    set -e
    read -r c_pass c_fail c_skip < <(sed -n 's/^console browser: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$WORK/console.log" | tail -n1)
    add_counts "${c_pass:-0}" "${c_fail:-0}" "${c_skip:-0}"
    if [ "$co_rc" -eq 0 ]; then
      record "console browser" ok "${c_pass:-0} passed; $(sed -n 's/^console browser: installs took //p' "$WORK/console.log" | tail -n1) installing"
    else
      record "console browser" FAILED "exit $co_rc; ${c_pass:-0} passed, ${c_fail:-1} failed"
    fi
  fi

  if [ "$TARGET" = "tablestore" ] && [ -x "$SERVER_BIN" ] && claim_azure_cli; then
    side_azure_cli
  fi
}

# Starts lane 2 in the background (once; not with TABLESTORE_SERIAL=1).
LANE2_PID=""
start_lane2() {
  [ "${TABLESTORE_SERIAL:-0}" != "1" ] && [ -z "$LANE2_PID" ] || return 0
  side_lane >"$WORK/lane2.log" 2>&1 &
  LANE2_PID=$!
  BG_PIDS+=("$LANE2_PID")
}

# --- 2. Rust: build, then unit and integration tests ---------------------------------------

if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_CARGO:-0}" != "1" ]; then
  # One profile for both. `cargo test` also builds the binary the later stages run
  # (CARGO_BIN_EXE_tablestore) with the dev-dependency feature set; a separate `cargo build`
  # before it would compile the crates whose features differ a second time. The explicit
  # build below only runs when the test build did not produce the binary.
  touch "$WORK/cargo-start"
  begin "cargo test --workspace ${CARGO_FLAGS[*]} --no-run (the build)"
  if cargo test --workspace "${CARGO_FLAGS[@]}" --no-run; then
    record "cargo build" ok "tests and the $PROFILE binary"
    # cargo test's PostgreSQL tests start their own server from the installed package.
    wait_for_postgres_install
    if ! any_failed; then
      scripts/ci/cargo-cache.sh save "$TARGET_DIR/debug" || echo "test.sh: the cargo cache was not saved"
    fi
    start_lane2
    begin "cargo test --workspace ${CARGO_FLAGS[*]}"
    # Four tests at a time on two cores: most of them wait (on their servers, child processes,
    # fsync and timeouts); two at a time kept about half a core busy.
    RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" run_cargo_test "cargo test" --workspace "${CARGO_FLAGS[@]}"
  else
    add_counts 0 1 0
    record "cargo build" FAILED "the tests do not build; see output above"
  fi

  if ! { [ -x "$SERVER_BIN" ] && [ "$SERVER_BIN" -nt "$WORK/cargo-start" ]; }; then
    begin "cargo build ${CARGO_FLAGS[*]}"
    if cargo build "${CARGO_FLAGS[@]}"; then
      record "cargo build" ok "$PROFILE binary"
    else
      record "cargo build" FAILED "see output above"
      die_with_summary "cargo build failed"
    fi
  fi
elif [ "$TARGET" = "tablestore" ]; then
  record "cargo" skipped "TABLESTORE_SKIP_CARGO=1"
fi

# --- SDK dependencies (installed in the background since step 0) ----------------------------

if [ "$RUN_PY" = "1" ]; then
  begin "Python SDK deps (.venv)"
  if ! bg_wait python; then
    record "python sdk" FAILED "installing $PY_DIR/requirements.txt into .venv failed (output above)"
    RUN_PY=0
  fi
fi
if [ "$RUN_JS" = "1" ]; then
  begin "JS SDK deps (npm ci in $JS_DIR)"
  if ! bg_wait js; then
    record "js sdk" FAILED "npm ci in $JS_DIR failed (output above)"
    RUN_JS=0
  fi
fi


start_lane2 # when cargo did not start it (TABLESTORE_SKIP_CARGO=1, a failed build)
sdk_lane
if [ "${TABLESTORE_SERIAL:-0}" = "1" ]; then
  side_lane
elif [ -n "$LANE2_PID" ]; then
  lane2_rc=0
  wait "$LANE2_PID" || lane2_rc=$?
  log "Lane 2 (docs, packages, docker, postgres, console, Azure CLI), which ran beside the above"
  cat "$WORK/lane2.log"
  if [ "$lane2_rc" -ne 0 ]; then
    STAGE_T0=$SECONDS
    record "lane 2" FAILED "exited with status $lane2_rc (output above)"
  fi
fi

if any_failed && [ -s "${SERVER_LOG:-}" ]; then
  log "Server log (last 40 lines of $SERVER_LOG)"
  tail -n 40 "$SERVER_LOG" || true
fi
print_summary
if any_failed; then
  exit 1
fi
