#!/usr/bin/env bash
# The project's one test command.
#
#   1. cargo test, cargo build   (one profile for both: dev by default, see below);
#      then scripts/ci/lint.sh: cargo fmt --check, cargo clippy --all-targets -D warnings,
#      cargo check of the fuzz targets
#   2. .venv with the pinned azure-data-tables suite deps; npm ci for @azure/data-tables
#   3. start target/debug/tablestore on a free loopback port and a temp data dir,
#      wait for GET /_health, run the Python and JS SDK suites and the Azure CLI
#      scenario (scripts/ci/azure-cli.sh) against it, stop it
#   4. the SDK documentation examples; scripts/ci/docs-walk.py (the shell commands README.md and
#      docs/ mark with `<!-- docs-walk -->`, run against the binary); scripts/ci/packages.sh (wheel and npm package of the
#      binary just built, installed fresh and exercised) and scripts/ci/docker.sh (the image
#      built from that binary with Debian's podman, which it installs with apt when missing,
#      on a Debian base it makes with debootstrap and caches; every documented `docker run`
#      and Compose service of the image run and checked; needs root);
#      scripts/ci/postgres.sh (the PostgreSQL store: Rust subset and SDK suites on a
#      PostgreSQL it starts; `postgres.sh install` runs before cargo test)
#   5. print a summary; exit non-zero if anything failed
#
# Why the dev (debug) profile: on the 2-core machine a clean debug build of the
# crate, its dependencies and every test binary takes ~5 min; the release
# profile took ~15 min (optimising + debuginfo for every integration-test
# binary). The SDK suites are client-bound, so a debug server runs them about
# as fast (Python suite ~15 s on disk either way). TABLESTORE_CARGO_PROFILE=release
# switches both steps to --release.
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
#   TABLESTORE_SKIP_PACKAGES=1, TABLESTORE_SKIP_DOCKER=1, TABLESTORE_SKIP_CONSOLE=1, TABLESTORE_SKIP_DOCS=1,
#   TABLESTORE_SKIP_POSTGRES=1  leave out a stage.
#   TABLESTORE_KEEP_LOGS=1      keep the temp dir (server log, junit xml, TAP) for inspection.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

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
STEPS=()        # "name|status|detail"
TOTAL_PASS=0
TOTAL_FAIL=0
TOTAL_SKIP=0
FAILED=0

log() { printf '\n==> %s\n' "$*"; }

record() { # name status detail
  STEPS+=("$1|$2|$3")
  if [ "$2" != "ok" ] && [ "$2" != "skipped" ]; then FAILED=1; fi
}

add_counts() { # pass fail skip
  TOTAL_PASS=$((TOTAL_PASS + $1))
  TOTAL_FAIL=$((TOTAL_FAIL + $2))
  TOTAL_SKIP=$((TOTAL_SKIP + $3))
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

cleanup() {
  local rc=$?
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
  local entry name status detail
  for entry in "${STEPS[@]}"; do
    IFS='|' read -r name status detail <<<"$entry"
    printf '  %-22s %-8s %s\n' "$name" "$status" "$detail"
  done
  echo
  # Plain closing line, read by CI: "N passed, N failed, N skipped".
  echo "summary: ${TOTAL_PASS} passed, ${TOTAL_FAIL} failed, ${TOTAL_SKIP} skipped"
}

die_with_summary() { # message
  echo "test.sh: $1" >&2
  print_summary
  exit 1
}

# --- 1. Rust: build + unit/integration tests --------------------------------

PROFILE="${TABLESTORE_CARGO_PROFILE:-debug}"
case "$PROFILE" in
  debug) CARGO_FLAGS=() ;;
  release) CARGO_FLAGS=(--release) ;;
  *) echo "test.sh: TABLESTORE_CARGO_PROFILE must be 'debug' or 'release', not '$PROFILE'" >&2; exit 2 ;;
esac
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
SERVER_BIN="$TARGET_DIR/$PROFILE/tablestore"
if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_CARGO:-0}" != "1" ]; then
  # One profile for both steps. `cargo test` runs first because it
  # also builds the binary for the integration tests (CARGO_BIN_EXE_tablestore)
  # with the dev-dependency feature set; a separate `cargo build` before it
  # would compile the crates whose features differ a second time. The explicit
  # build below only runs when the test build did not produce the binary.
  # PostgreSQL for the store's tests: cargo test's PostgreSQL tests start their own server.
  if [ "${TABLESTORE_SKIP_POSTGRES:-0}" != "1" ]; then
    log "PostgreSQL install check (scripts/ci/postgres.sh install)"
    scripts/ci/postgres.sh install || echo "test.sh: PostgreSQL is missing; its tests will say so"
  fi
  touch "$WORK/cargo-start"
  log "cargo test ${CARGO_FLAGS[*]}"
  set +e
  cargo test "${CARGO_FLAGS[@]}" 2>&1 | tee "$WORK/cargo-test.log"
  cargo_rc=${PIPESTATUS[0]}
  set -e
  read -r c_pass c_fail c_skip < <(awk '
    /^test result:/ {
      for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed/)  p += $i
        if ($(i+1) ~ /^failed/)  f += $i
        if ($(i+1) ~ /^ignored/) s += $i
      }
    }
    END { printf "%d %d %d\n", p, f, s }' "$WORK/cargo-test.log")
  add_counts "$c_pass" "$c_fail" "$c_skip"
  if [ "$cargo_rc" -eq 0 ]; then
    record "cargo test" ok "$c_pass passed, $c_fail failed, $c_skip ignored"
  else
    record "cargo test" FAILED "exit $cargo_rc; $c_pass passed, $c_fail failed"
  fi

  if [ -x "$SERVER_BIN" ] && [ "$SERVER_BIN" -nt "$WORK/cargo-start" ]; then
    record "cargo build" ok "$PROFILE binary (built by cargo test)"
  else
    log "cargo build ${CARGO_FLAGS[*]}"
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

# --- 1b. Static checks: fmt, clippy -D warnings, fuzz targets (scripts/ci/lint.sh) ------

if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_LINT:-0}" != "1" ]; then
  log "Static checks (scripts/ci/lint.sh)"
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
  fi
elif [ "$TARGET" = "tablestore" ]; then
  record "lint" skipped "TABLESTORE_SKIP_LINT=1"
fi

# --- 2. SDK dependencies -----------------------------------------------------

RUN_PY=1; RUN_JS=1
[ "${TABLESTORE_SKIP_PYTHON:-0}" = "1" ] && RUN_PY=0
[ "${TABLESTORE_SKIP_JS:-0}" = "1" ] && RUN_JS=0

hash_of() { "$PYTHON" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

if [ "$RUN_PY" = "1" ]; then
  log "Python SDK deps (.venv)"
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
  fi
  req_hash="$(hash_of "$PY_DIR/requirements.txt")"
  if [ "$(cat "$VENV/.tablestore-requirements" 2>/dev/null || true)" != "$req_hash" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PY_DIR/requirements.txt"
    echo "$req_hash" >"$VENV/.tablestore-requirements"
  else
    echo "requirements unchanged; .venv is up to date"
  fi
fi

if [ "$RUN_JS" = "1" ]; then
  log "JS SDK deps (npm ci in $JS_DIR)"
  lock_hash="$(hash_of "$JS_DIR/package-lock.json")"
  if [ "$(cat "$JS_DIR/node_modules/.tablestore-lock" 2>/dev/null || true)" != "$lock_hash" ]; then
    (cd "$JS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_hash" >"$JS_DIR/node_modules/.tablestore-lock"
  else
    echo "package-lock.json unchanged; node_modules is up to date"
  fi
fi

# --- 3. Server ---------------------------------------------------------------

# free_port, wait_ready URL PID TIMEOUT
. "$ROOT/scripts/ci/server-wait.sh"

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

# --- 4. SDK suites -------------------------------------------------------------

if [ "$RUN_PY" = "1" ]; then
  log "Python SDK suite (pytest $PY_DIR)"
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
  log "JS SDK suite (node --test $JS_DIR)"
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

# The Azure CLI scripted against the same server (scripts/ci/azure-cli.sh: cached venv, no internet).
if [ "${TABLESTORE_SKIP_AZURE_CLI:-0}" != "1" ] && [ -n "${TABLESTORE_ENDPOINT:-}" ]; then
  log "Azure CLI scenario (scripts/ci/azure-cli.sh)"
  set +e
  PYTHON="$PYTHON" scripts/ci/azure-cli.sh "$TABLESTORE_ENDPOINT" 2>&1 | tee "$WORK/azure-cli.log"
  az_rc=${PIPESTATUS[0]}
  set -e
  read -r a_pass a_fail < <(sed -n 's/^azure cli: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$WORK/azure-cli.log" | tail -n1) || true
  add_counts "${a_pass:-0}" "${a_fail:-1}" 0
  if [ "$az_rc" -eq 0 ]; then
    record "azure cli" ok "${a_pass:-0} passed, ${a_fail:-0} failed"
  else
    record "azure cli" FAILED "exit $az_rc; ${a_pass:-0} passed, ${a_fail:-1} failed"
  fi
elif [ "${TABLESTORE_SKIP_AZURE_CLI:-0}" = "1" ]; then
  record "azure cli" skipped "TABLESTORE_SKIP_AZURE_CLI=1"
fi

if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_EXAMPLES:-0}" != "1" ] && [ -x "$SERVER_BIN" ]; then
  log "SDK documentation examples (scripts/check-sdk-examples.sh)"
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

# --- 5. Packages and the container image (scripts/ci/) --------------------------
# Each stage prints "<name>: N passed, N failed, N skipped" as its last line.
ci_stage() { # name script args...
  local name=$1 script=$2 rc=0 p f s
  shift 2
  log "$name ($script)"
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
    ci_stage postgres scripts/ci/postgres.sh run "$SERVER_BIN"
  fi
fi

if [ "$TARGET" = "tablestore" ] && [ "${TABLESTORE_SKIP_CONSOLE:-0}" != "1" ] && [ -x "$SERVER_BIN" ]; then
  log "Console in a headless browser (scripts/ci/console-browser.sh)"
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

stop_server
if [ "$FAILED" -ne 0 ] && [ -s "${SERVER_LOG:-}" ]; then
  log "Server log (last 40 lines of $SERVER_LOG)"
  tail -n 40 "$SERVER_LOG" || true
fi
print_summary
if [ "$FAILED" -ne 0 ]; then
  exit 1
fi
