#!/usr/bin/env bash
# The PostgreSQL store stage of ./test.sh.
#
# Usage:
#   scripts/ci/postgres.sh install       make sure PostgreSQL's server binaries are installed
#                                        (Debian's `postgresql` package through apt-get when
#                                        missing; the .debs stay in apt's cache). ./test.sh
#                                        runs this before `cargo test`, whose PostgreSQL tests
#                                        (tests/it/store_postgres.rs, tests/it/scale_out.rs) start
#                                        their own server.
#   scripts/ci/postgres.sh run BINARY    start one PostgreSQL for the stage (initdb into a temp
#                                        folder as an unprivileged user, a free loopback port),
#                                        then against it:
#                                        - a subset of the Rust integration tests, every test
#                                          server on the PostgreSQL store
#                                          (TABLESTORE_TEST_STORE=postgres://…: each server in
#                                          a fresh schema);
#                                        - BINARY --store postgres://… on a free port, with the
#                                          Python and JS SDK suites against it;
#                                        and stops everything.
#
# The Rust subset (about 35 s of tests; the binary is already built by the main cargo test):
# the modules of tests/it whose servers exercise the store end to end (entities, queries and paging,
# batches, tables and ACLs, service properties, accounts, concurrency, entity limits, the
# client shapes, insight, error answers, hostile batches, SAS scopes, the Rust SDK, the Cosmos
# flavour: its creation order and case-sensitive names on this store, about 13 s; reset,
# snapshots and accounts on demand, whose switch is one transaction here). Left to
# the main `cargo test` only: modules about the sled folder itself (persistence, durability,
# crash, soak, data folders: tests/it/data.rs alone took 197 s here), TLS, the command line, the
# HTTP layer, and tests/it/realism.rs, whose load test needs sled's in-process throughput
# (~5,000 writes/s into one partition in a debug build) that a database round trip per write
# does not reach. Running every module twice would add minutes for nothing.
#
# Last line: "postgres: N passed, N failed, N skipped" (read by ./test.sh). Exit 1 on failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-$ROOT/.venv}"
RUST_TESTS=(entities query batch tables service accounts concurrency rust_sdk limits
  client_shapes insight errors hostile_batch auth cosmos state)

find_bindir() {
  local d
  for d in "${TABLESTORE_PG_BINDIR:-}" "$(pg_config --bindir 2>/dev/null || true)" \
           $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then echo "$d"; return 0; fi
  done
  return 1
}

install() {
  if bindir="$(find_bindir)"; then
    echo "postgres: using $bindir"
    return 0
  fi
  if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null; then
    echo "postgres: PostgreSQL is not installed and cannot be installed here (needs root and apt-get): install Debian's postgresql package" >&2
    return 1
  fi
  echo "postgres: installing Debian's postgresql package (cold; apt keeps the .debs)"
  local start=$SECONDS
  # The package's post-install creates and starts a cluster of its own; keep it from starting.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >/dev/null; then
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >/dev/null || {
      rm -f /usr/sbin/policy-rc.d
      echo "postgres: apt-get install postgresql failed: install it by hand" >&2
      return 1
    }
  fi
  rm -f /usr/sbin/policy-rc.d
  echo "postgres: installed in $((SECONDS - start)) s: $(find_bindir)"
}

PASS=0; FAIL=0; SKIP=0
WORK=""; PG_BIN=""; PG_DATA=""; SERVER_PID=""; RUN_AS=()

stop_all() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "$PG_DATA" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
    "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" stop -m fast -w >/dev/null 2>&1 || true
  fi
  [ -n "$WORK" ] && rm -rf "$WORK"
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start_postgres() {
  PG_BIN="$(find_bindir)" || {
    echo "postgres: PostgreSQL is not installed (no initdb): run scripts/ci/postgres.sh install" >&2
    return 1
  }
  WORK="$(mktemp -d /tmp/tablestore-pgstage.XXXXXX)"
  PG_DATA="$WORK/data"
  if [ "$(id -u)" = "0" ]; then
    # PostgreSQL refuses to run as root: the package's `postgres` user, or one of our own.
    local user=postgres
    id -u "$user" >/dev/null 2>&1 || user=tablestore-pg
    id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    chown "$user" "$WORK"
    RUN_AS=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups)
  else
    RUN_AS=(env)
  fi
  "${RUN_AS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U tablestore --auth=trust --encoding=UTF8 \
    --locale=C --no-instructions >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log"; return 1; }
  PG_PORT="$(free_port)"
  cat >>"$PG_DATA/postgresql.auto.conf" <<CONF
port = $PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK'
max_connections = 300
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
  "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$WORK/postgres.log" start -w -t 60 >/dev/null || {
    tail -n 20 "$WORK/postgres.log"; return 1; }
  "${RUN_AS[@]}" "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U tablestore -d postgres \
    -c "CREATE DATABASE rust_tests" -c "CREATE DATABASE sdk_suites" >/dev/null
  echo "postgres: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT"
}

rust_subset() {
  # One filter per module of the integration-test binary: a test runs when its name
  # (`module::test`) contains one of them.
  local filters=() t
  for t in "${RUST_TESTS[@]}"; do filters+=("$t::"); done
  echo "postgres: cargo test ${CARGO_FLAGS:-} --test it ${filters[*]} (every test server on PostgreSQL)"
  set +e
  TABLESTORE_TEST_STORE="postgres://tablestore@127.0.0.1:$PG_PORT/rust_tests" \
    cargo test ${CARGO_FLAGS:-} --test it -- "${filters[@]}" 2>&1 | tee "$WORK/cargo.log"
  local rc=${PIPESTATUS[0]}
  set -e
  read -r p f s < <(awk '
    /^test result:/ { for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) s += $i } }
    END { printf "%d %d %d\n", p, f, s }' "$WORK/cargo.log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  PASS=$((PASS + p)); FAIL=$((FAIL + f)); SKIP=$((SKIP + s))
  echo "postgres: rust subset: $p passed, $f failed, $s ignored"
}

sdk_suites() {
  local bin=$1 port endpoint
  port="$(free_port)"
  endpoint="http://127.0.0.1:$port"
  "$bin" --host 127.0.0.1 --port "$port" \
    --store "postgres://tablestore@127.0.0.1:$PG_PORT/sdk_suites" >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  local deadline=$((SECONDS + 60))
  until "$PYTHON" -c 'import sys, urllib.request
sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=2).status == 200 else 1)' "$endpoint/_health" 2>/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "postgres: the server on the PostgreSQL store did not become ready:" >&2
      tail -n 20 "$WORK/server.log" >&2
      FAIL=$((FAIL + 1)); return
    fi
    sleep 0.2
  done
  grep -m1 '^Storage:' "$WORK/server.log" || true
  export TABLESTORE_ENDPOINT="$endpoint" TABLESTORE_BIN="$bin"
  if [ -x "$VENV/bin/python" ] && [ "${TABLESTORE_SKIP_PYTHON:-0}" != "1" ]; then
    echo "postgres: Python SDK suite against $endpoint"
    set +e
    "$VENV/bin/python" -m pytest tests/compat/python -q -p no:cacheprovider --junitxml="$WORK/pytest.xml"
    set -e
    read -r p f s < <("$PYTHON" scripts/ci/junit-counts.py "$WORK/pytest.xml")
    PASS=$((PASS + p)); FAIL=$((FAIL + f)); SKIP=$((SKIP + s))
    echo "postgres: python sdk: $p passed, $f failed, $s skipped"
  else
    echo "postgres: python sdk skipped (no .venv; ./test.sh creates it)"
    SKIP=$((SKIP + 1))
  fi
  if [ -d tests/compat/js/node_modules ] && [ "${TABLESTORE_SKIP_JS:-0}" != "1" ]; then
    echo "postgres: JS SDK suite against $endpoint"
    set +e
    node --test --test-reporter=tap --test-reporter-destination="$WORK/node.tap" tests/compat/js/ >/dev/null 2>&1
    set -e
    read -r p f s < <(awk '
      /^# pass / { p = $3 } /^# fail / { f = $3 } /^# skipped / { s += $3 }
      /^# todo / { s += $3 } /^# cancelled / { f += $3 }
      END { printf "%d %d %d\n", p, f, s }' "$WORK/node.tap" 2>/dev/null || echo "0 1 0")
    if [ "$f" -ne 0 ]; then grep -B2 -A12 '^not ok' "$WORK/node.tap" | head -80 || true; fi
    PASS=$((PASS + p)); FAIL=$((FAIL + f)); SKIP=$((SKIP + s))
    echo "postgres: js sdk: $p passed, $f failed, $s skipped"
  else
    echo "postgres: js sdk skipped (no node_modules; ./test.sh installs them)"
    SKIP=$((SKIP + 1))
  fi
}

case "${1:-}" in
  install)
    install
    ;;
  run)
    bin="${2:?usage: scripts/ci/postgres.sh run BINARY}"
    trap stop_all EXIT
    start=$SECONDS
    if start_postgres; then
      rust_subset
      sdk_suites "$bin"
    else
      FAIL=$((FAIL + 1))
    fi
    echo "postgres: stage took $((SECONDS - start)) s"
    echo "postgres: $PASS passed, $FAIL failed, $SKIP skipped"
    [ "$FAIL" -eq 0 ]
    ;;
  *)
    echo "usage: scripts/ci/postgres.sh install | run BINARY" >&2
    exit 2
    ;;
esac
