#!/usr/bin/env bash
# Export/import speed (docs/performance.md, "Export and import"): N entities of ~1 KiB
# (a 900-character string, an Int64, a Double, a DateTime, a GUID; 1,000 per partition)
# imported from JSON Lines into a fresh data folder, then exported back, with the release
# binary. Prints each command's summary line (entities/s and peak memory).
#
#   scripts/data-bench.sh [N]        (default 200000)
#   TABLESTORE_BIN=path              binary to use (default target/release/tablestore)
set -euo pipefail
N=${1:-200000}
cd "$(dirname "$0")/.."
BIN=${TABLESTORE_BIN:-target/release/tablestore}
[ -x "$BIN" ] || cargo build --release --bin tablestore
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 - "$N" "$WORK/Bench.jsonl" <<'EOF'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
pad = "x" * 900
with open(path, "w") as f:
    for i in range(n):
        f.write('{"PartitionKey":"p%05d","RowKey":"%09d","Data":"%s","Big@odata.type":"Edm.Int64",'
                '"Big":"%d","Ratio":%d.25,"When@odata.type":"Edm.DateTime","When":"2024-02-29T12:34:56.1234567Z",'
                '"Id@odata.type":"Edm.Guid","Id":"12345678-1234-5678-9abc-%012d"}\n'
                % (i // 1000, i, pad, i * 7919, i, i))
EOF
echo "input: $N entities, $(du -m "$WORK/Bench.jsonl" | cut -f1) MiB of JSON Lines"
echo "import: $("$BIN" import --location "$WORK/data" -q "$WORK/Bench.jsonl")"
echo "export: $("$BIN" export --location "$WORK/data" -q --out "$WORK/out")"
echo "export (csv): $("$BIN" export --location "$WORK/data" -q --format csv --out "$WORK/csv")"
