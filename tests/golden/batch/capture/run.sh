#!/usr/bin/env bash
# Regenerates tests/golden/batch/{py,js}_*.{http,content-type,headers} and the hand-written
# fixtures (handwritten.py).
# Installs the SDKs into a throwaway directory (default /tmp/batchcap), starts the loopback
# capture server and runs both drivers.  Needs python3 (venv) and node >= 18 with npm.
# Note: boundaries, dates and signatures are random/time-based, so a rerun changes the bytes;
# the Rust tests assert structure, not boundaries.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(cd "$here/.." && pwd)"
work="${BATCHCAP_DIR:-/tmp/batchcap}"
mkdir -p "$work"
if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "azure-data-tables==${PY_SDK_VERSION:-12.7.0}"
fi
if [ ! -d "$work/js/node_modules/@azure/data-tables" ]; then
  mkdir -p "$work/js"
  (cd "$work/js" && npm init -y >/dev/null && npm install -q "@azure/data-tables@${JS_SDK_VERSION:-13.3.2}")
fi
cp "$here/js_driver.mjs" "$work/js/js_driver.mjs"
rm -f "$work/port"
python3 "$here/capture_server.py" "$out" "$work/port" &
srv=$!
trap 'kill "$srv" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port="$(cat "$work/port")"
"$work/venv/bin/python" "$here/py_driver.py" "$port"
(cd "$work/js" && node js_driver.mjs "$port")
python3 "$here/handwritten.py" "$out"
echo "fixtures written to $out"
