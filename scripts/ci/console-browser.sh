#!/usr/bin/env bash
# The web console in a real headless browser (Debian's chromium + chromium-driver, driven by
# Python selenium with the system driver). Called by test.sh; runnable alone:
#
#   scripts/ci/console-browser.sh --binary target/debug/tablestore
#   scripts/ci/console-browser.sh --install     only the installs (./test.sh runs them in
#                                               the background while it compiles)
#
# Installs what it needs (apt-get update once, then chromium chromium-driver; selenium into
# .venv-console), reports how long the installs took, starts its own server (authentication
# on, in memory) on a free loopback port, runs tests/console/test_console.py and prints
#   console browser: N passed, N failed, N skipped
# for test.sh's summary. Screenshots go to $TABLESTORE_CONSOLE_ARTIFACTS (default
# target/console-artifacts); the path is printed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BIN="target/debug/tablestore"
if [ "${1:-}" = "--binary" ] && [ -n "${2:-}" ]; then BIN="$2"; fi
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv-console"
ART="${TABLESTORE_CONSOLE_ARTIFACTS:-$ROOT/target/console-artifacts}"
SELENIUM="selenium==4.50.0"

report() { echo "console browser: $1 passed, $2 failed, $3 skipped"; }
fail_setup() { echo "console browser: $*" >&2; report 0 1 0; exit 1; }

t0=$(date +%s)
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo -n"; else
    fail_setup "chromium and chromium-driver are missing and this user cannot install them (apt-get install chromium chromium-driver)"
  fi
  echo "installing chromium and chromium-driver (apt-get)"
  $SUDO apt-get update -qq >/dev/null || fail_setup "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null \
    || fail_setup "apt-get install chromium chromium-driver failed"
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import selenium, pytest' 2>/dev/null; then
  "$PYTHON" -m venv "$VENV" || fail_setup "python3 -m venv failed (install python3-venv)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$SELENIUM" pytest==9.2.0 \
    || fail_setup "pip install $SELENIUM failed"
fi
echo "console browser: installs took $(( $(date +%s) - t0 ))s ($(chromium --version 2>/dev/null | head -n1))"
[ "${1:-}" = "--install" ] && exit 0

[ -x "$BIN" ] || fail_setup "server binary $BIN not found (cargo build first)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tablestore-console.XXXXXX")"
. scripts/ci/server-wait.sh  # free_port, wait_ready
PORT="$(free_port)"
ENDPOINT="http://127.0.0.1:$PORT"
"$BIN" --host 127.0.0.1 --port "$PORT" --in-memory --log-level warn >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
cleanup() { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
wait_ready "$ENDPOINT/_health" "$SERVER_PID" 30 || { cat "$WORK/server.log" >&2; fail_setup "the server did not start"; }

mkdir -p "$ART"
echo "console browser: screenshots in $ART"
TABLESTORE_ENDPOINT="$ENDPOINT" TABLESTORE_CONSOLE_ARTIFACTS="$ART" \
  "$VENV/bin/python" -m pytest tests/console -p no:cacheprovider -q --junitxml="$WORK/console.xml"
rc=$?
read -r pass failed skipped < <("$PYTHON" scripts/ci/junit-counts.py "$WORK/console.xml")
report "$pass" "$failed" "$skipped"
exit "$rc"
