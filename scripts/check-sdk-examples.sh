#!/usr/bin/env bash
# Runs the SDK examples of docs/sdk/ against a fresh tablestore, and syntax-checks those whose
# toolchain or SDK is not available here.
#
#   Python (azure-data-tables)  run     needs python3; installs the SDK into .venv if missing
#   JavaScript (@azure/data-tables) run needs node and npm; installs into docs/sdk/examples/javascript
#   Java                        syntax  needs java (parses without the SDK's jars)
#   Rust                        syntax  needs rustfmt
#   Go                          syntax  needs gofmt (skipped when absent)
#   C# (.NET)                   -       no .NET toolchain on this machine kind: not checked
#
# Usage: scripts/check-sdk-examples.sh [--binary PATH]
# Exits non-zero when an example fails. Prints "N passed, N failed, N skipped" at the end.
set -uo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
examples="$root/docs/sdk/examples"
binary=""
if [[ "${1:-}" == "--binary" ]]; then binary=$2; fi
if [[ -z "$binary" ]]; then
  cargo build --quiet --bin tablestore || exit 1
  binary="$root/target/debug/tablestore"
fi

passed=0
failed=0
skipped=0
skip() { skipped=$((skipped + 1)); echo "skip $1"; }
result() { # name status
  if [[ "$2" == 0 ]]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1"; fi
}

work=$(mktemp -d)
"$binary" --host 127.0.0.1 --port 0 --in-memory --silent >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  grep -q '^Connection string: ' "$work/server.log" && break
  sleep 0.1
done
TABLESTORE_CONNECTION_STRING=$(sed -n 's/^Connection string: //p' "$work/server.log")
[[ -n "$TABLESTORE_CONNECTION_STRING" ]] || { cat "$work/server.log"; echo "the server did not start"; exit 1; }
export TABLESTORE_CONNECTION_STRING
TABLESTORE_PORT=$(sed -n 's/^tablestore listening on http:\/\/[^:]*:\([0-9]*\)$/\1/p' "$work/server.log")
export TABLESTORE_PORT
echo "server: $TABLESTORE_CONNECTION_STRING"

# Python
python="$root/.venv/bin/python"
if [[ ! -x "$python" ]]; then python3 -m venv "$root/.venv" >/dev/null; fi
if ! "$python" -c 'import azure.data.tables' 2>/dev/null; then
  "$python" -m pip install --quiet -r "$examples/python/requirements.txt"
fi
"$python" "$examples/python/tables_example.py"
result "python: docs/sdk/examples/python/tables_example.py" $?

# JavaScript
if command -v node >/dev/null && command -v npm >/dev/null; then
  if [[ ! -d "$examples/javascript/node_modules/@azure/data-tables" ]]; then
    (cd "$examples/javascript" && npm install --silent --no-audit --no-fund >/dev/null)
  fi
  (cd "$examples/javascript" && node tables_example.mjs)
  result "javascript: docs/sdk/examples/javascript/tables_example.mjs" $?
else
  skip "javascript: node/npm not found"
fi

# Java (syntax only: the SDK's jars come from Maven Central, not reachable here)
if command -v java >/dev/null; then
  java "$root/scripts/JavaSyntaxCheck.java" "$examples/java/TablesExample.java" >/dev/null
  result "java (syntax): docs/sdk/examples/java/TablesExample.java" $?
else
  skip "java: java not found"
fi

# Rust (syntax only: azure_data_tables is a large download for one example)
if command -v rustfmt >/dev/null; then
  rustfmt --edition 2021 --emit stdout "$examples/rust/tables_example.rs" >/dev/null
  result "rust (syntax): docs/sdk/examples/rust/tables_example.rs" $?
else
  skip "rust: rustfmt not found"
fi

# Go (syntax only: Go modules cannot be fetched here)
gofmt_bin=$(command -v gofmt || ls /usr/lib/go-*/bin/gofmt 2>/dev/null | tail -n1 || true)
if [[ -n "$gofmt_bin" ]]; then
  "$gofmt_bin" -e -l "$examples/go/tables_example.go" >/dev/null
  result "go (syntax): docs/sdk/examples/go/tables_example.go" $?
else
  skip "go: gofmt not found"
fi

skip "dotnet: no .NET toolchain here (docs/sdk/examples/dotnet/TablesExample.cs is not checked)"
echo "sdk examples: $passed passed, $failed failed, $skipped skipped"
[[ "$failed" == 0 ]]
