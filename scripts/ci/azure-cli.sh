#!/usr/bin/env bash
# The Azure CLI stage of ./test.sh: installs the pinned azure-cli into a cached virtual
# environment and runs scripts/ci/azure_cli_scenario.py against a running server.
#
# Usage: scripts/ci/azure-cli.sh ENDPOINT        (http://127.0.0.1:<port>)
#        scripts/ci/azure-cli.sh --install       only the install (./test.sh runs it in the
#                                                background while it compiles)
#
# The virtual environment lives in $TABLESTORE_CACHE_DIR (default ~/.cache/tablestore), in a
# folder named after the hash of scripts/ci/azure-cli-requirements.txt: a fresh clone on the
# same machine reuses it, and changing the pins makes a new one. It is only used once the
# install finished (a marker file), so an interrupted install is redone, not trusted.
#
# The CLI never leaves the machine: it gets the local connection string on every command, a
# throw-away config folder, telemetry/survey/upgrade checks off, no dynamic extension installs,
# and a proxy that refuses everything but loopback.
#
# Last line: "azure cli: N passed, N failed" (read by ./test.sh). Exit 1 on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
endpoint="${1:?usage: scripts/ci/azure-cli.sh http://127.0.0.1:<port> | --install}"
python="${PYTHON:-python3}"
req="$here/azure-cli-requirements.txt"
hash="$(sha256sum "$req" | cut -c1-16)"
cache="${TABLESTORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tablestore}"
venv="$cache/azure-cli-$hash"

mkdir -p "$cache"
# One installer at a time (two test runs on one machine share the cache).
exec 9>"$cache/azure-cli.lock"
flock 9
if [ ! -f "$venv/.installed" ]; then
  echo "azure-cli: installing $(grep -m1 '^azure-cli==' "$req") into $venv (cold; cached afterwards)"
  rm -rf "$venv"
  start=$SECONDS
  "$python" -m venv "$venv"
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"; then
    echo "azure-cli: pip install failed (PyPI unreachable?); nothing cached" >&2
    rm -rf "$venv"
    echo "azure cli: 0 passed, 1 failed"
    exit 1
  fi
  touch "$venv/.installed"
  echo "azure-cli: installed in $((SECONDS - start)) s"
else
  echo "azure-cli: using the cached environment $venv"
fi
flock -u 9
[ "$endpoint" = "--install" ] && exit 0

config="$(mktemp -d "${TMPDIR:-/tmp}/tablestore-azcli.XXXXXX")"
trap 'rm -rf "$config"' EXIT
export AZURE_CONFIG_DIR="$config"
export AZURE_CORE_COLLECT_TELEMETRY=false
export AZURE_CORE_SURVEY_MESSAGE=false
export AZURE_CORE_NO_COLOR=true
export AZURE_CORE_DISABLE_CONFIRM_PROMPT=true
export AZURE_CORE_ONLY_SHOW_ERRORS=true
export AZURE_AUTO_UPGRADE_ENABLE=no
export AZURE_EXTENSION_USE_DYNAMIC_INSTALL=no
# Anything not on loopback goes to a closed port and fails at once.
export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9
export http_proxy=$HTTP_PROXY https_proxy=$HTTPS_PROXY
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset AZURE_STORAGE_CONNECTION_STRING AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN

exec "$venv/bin/python" "$here/azure_cli_scenario.py" "$venv/bin/az" "$endpoint"
