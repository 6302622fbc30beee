#!/usr/bin/env bash
# Performs the Dockerfile's build and run steps outside a container, for machines without a
# container engine or without access to a container registry (the rust and debian base images):
#
#   1. checks the Dockerfile's promises (non-root user, /data volume, port 10002, health check,
#      0.0.0.0 listen address, entrypoint);
#   2. runs the builder stage's cargo command, taken from the Dockerfile itself, then
#      installs and strips the binary as the builder stage does;
#   3. lays out the runtime stage (binary, /data owned by the image's UID) in a scratch
#      folder and starts the binary as that UID (when run as root) with the image's ENV and
#      an Azurite-style command (`azurite-table --tableHost 0.0.0.0 -l <data>`);
#   4. checks `tablestore --healthcheck` (the HEALTHCHECK command) exits 0, a table round
#      trip, that the store is written under <data>/__tablestore__ by that UID, that SIGTERM
#      stops the server cleanly and that the health check then exits 1;
#   5. starts it through the image's `azurite` link, as Testcontainers modules that set the
#      entrypoint do, and checks the all-in-one readiness line.
#
# scripts/ci/docker.sh (a CI stage) calls this with --binary, then builds the image for real with
# podman (`--target prebuilt`, from that binary) and runs it: health check, SDK round trips,
# the documented commands, SIGTERM, volumes.
#
# Usage: scripts/verify-docker-build.sh                 (from anywhere in the repository)
#        scripts/verify-docker-build.sh --binary PATH   skip step 2's release build and lay out
#                                                       an already built binary (CI does this
#                                                       with the binary its tests built)
# Env:   VERIFY_WORK=dir  scratch folder (default: a fresh temporary folder, removed at exit)
#        CARGO_BUILD_JOBS is honoured as usual.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
dockerfile="$root/Dockerfile"
fail() { echo "verify-docker-build: FAIL: $*" >&2; exit 1; }
step() { echo "verify-docker-build: $*"; }

prebuilt=""
if [[ "${1:-}" == "--binary" ]]; then
  prebuilt=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
  [[ -x "$prebuilt" ]] || fail "$2 is not an executable"
fi

work=${VERIFY_WORK:-}
pid=""
# Stops the server and waits for it before the scratch folder is removed: a server still
# flushing into the folder while `rm -rf` runs left it behind.
cleanup() {
  if [[ -n "$pid" ]]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [[ -z "${VERIFY_WORK:-}" ]]; then rm -rf "$work"; fi
}
if [[ -z "$work" ]]; then
  work=$(mktemp -d)
fi
trap cleanup EXIT
mkdir -p "$work"

# 1. The Dockerfile's promises.
step "checking the Dockerfile"
[[ -f "$dockerfile" && -f "$root/.dockerignore" ]] || fail "Dockerfile or .dockerignore missing"
require() { grep -Eq -- "$1" "$dockerfile" || fail "Dockerfile lacks: $2"; }
require '^FROM rust:.* AS builder' 'a rust builder stage'
require '^FROM debian:.*-slim AS runtime$' 'a debian slim runtime stage named runtime'
require '^FROM runtime AS prebuilt$' 'the prebuilt target (the runtime stage with a built binary)'
[[ $(grep '^FROM ' "$dockerfile" | tail -n1) == "FROM runtime" ]] \
  || fail "the last stage (the default target) is not \`FROM runtime\` with the builder's binary"
require '^USER tablestore' 'a non-root USER'
require '^VOLUME \["/data"\]' 'the /data volume'
require '^EXPOSE 10002' 'EXPOSE 10002'
require 'TABLESTORE_HOST=0\.0\.0\.0' 'TABLESTORE_HOST=0.0.0.0'
require 'TABLESTORE_LOCATION=/data' 'TABLESTORE_LOCATION=/data'
require '^HEALTHCHECK ' 'a HEALTHCHECK'
require 'CMD \["tablestore", "--healthcheck"\]' 'the health check command'
require '^ENTRYPOINT \["tablestore"\]' 'the tablestore entrypoint'
require 'ln -s tablestore /usr/local/bin/azurite ' 'the azurite link'
require 'ln -s tablestore /usr/local/bin/azurite-table' 'the azurite-table link'
grep -Eq '^target$' "$root/.dockerignore" || fail ".dockerignore does not exclude target"
uid=$(sed -n 's/^ARG UID=\([0-9]*\)$/\1/p' "$dockerfile")
[[ -n "$uid" && "$uid" != 0 ]] || fail "no non-root ARG UID in the Dockerfile"

# 2. The builder stage's cargo command, as written in the Dockerfile.
cargo_cmd=$(grep -Eo 'cargo build [^\\&]*' "$dockerfile" | head -n1 | sed 's/[[:space:]]*$//')
[[ -n "$cargo_cmd" ]] || fail "no cargo build command in the Dockerfile"
built=target/release/tablestore
if [[ -n "$prebuilt" ]]; then
  step "builder: skipped ($cargo_cmd), packaging $prebuilt"
  built=$prebuilt
else
  step "builder: $cargo_cmd"
  # Same command; the target folder is the repository's own (the image build uses a cache mount).
  eval "$cargo_cmd"
fi
rootfs="$work/rootfs"
rm -rf "$rootfs"
install -D -m 0755 "$built" "$rootfs/out/tablestore"
strip "$rootfs/out/tablestore"
"$rootfs/out/tablestore" --version

# 3. The runtime stage's layout.
step "runtime: /usr/local/bin/tablestore (and its azurite links) and /data owned by $uid"
install -D -m 0755 "$rootfs/out/tablestore" "$rootfs/usr/local/bin/tablestore"
ln -s tablestore "$rootfs/usr/local/bin/azurite"
ln -s tablestore "$rootfs/usr/local/bin/azurite-table"
data="$rootfs/data"
mkdir -p "$data"
run_as=()
if [[ $(id -u) == 0 ]]; then
  chown "$uid:$uid" "$data"
  chmod 0755 "$work" "$rootfs"
  run_as=(setpriv --reuid "$uid" --regid "$uid" --clear-groups)
  "${run_as[@]}" true || fail "cannot switch to uid $uid (setpriv)"
else
  step "not root: running as $(id -u) instead of $uid"
fi
bin="$rootfs/usr/local/bin/tablestore"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The image's ENV, with a free port instead of 10002 so the check can run beside other servers.
image_env=(TABLESTORE_HOST=0.0.0.0 TABLESTORE_PORT="$port" TABLESTORE_LOCATION="$data")

# 4. Run it as the container would, with a command line written for the Azurite image.
log="$work/server.log"
(cd "$data" && exec env -i "${image_env[@]}" "${run_as[@]}" "$bin" azurite-table --tableHost 0.0.0.0 -l "$data") >"$log" 2>&1 &
pid=$!
healthy=""
for _ in $(seq 1 50); do
  if env -i "${image_env[@]}" "${run_as[@]}" "$bin" --healthcheck 2>/dev/null; then healthy=1; break; fi
  sleep 0.2
done
[[ -n "$healthy" ]] || { cat "$log" >&2; fail "the health check never passed"; }
step "health check passes on 0.0.0.0:$port"
# Signed requests (Shared Key Lite with the development account's key): the server answers
# unsigned table requests 403, as Azure does.
python3 - "$port" <<'PY' || fail "the table round trip failed"
import base64, email.utils, hashlib, hmac, json, sys, urllib.request
port = sys.argv[1]
account = "devstoreaccount1"
key = base64.b64decode("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
def call(method, path, body=None):
    date = email.utils.formatdate(usegmt=True)
    signature = base64.b64encode(hmac.new(key, f"{date}\n/{account}/{account}{path}".encode(), hashlib.sha256).digest()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/{account}{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"x-ms-date": date, "x-ms-version": "2019-02-02", "Content-Type": "application/json",
                 "Accept": "application/json;odata=nometadata", "Authorization": f"SharedKeyLite {account}:{signature}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read().decode()
status, _ = call("POST", "/Tables", {"TableName": "dockercheck"})
assert status == 201, f"create table answered {status}"
status, body = call("GET", "/Tables")
assert '"TableName":"dockercheck"' in body, f"query tables answered {body}"
PY
[[ -d "$data/__tablestore__" ]] || fail "no store in $data/__tablestore__"
owner=$(stat -c %u "$data/__tablestore__")
if [[ $(id -u) == 0 ]]; then
  [[ "$owner" == "$uid" ]] || fail "the store is owned by $owner, not $uid"
fi
step "table round trip ok; store in /data/__tablestore__ owned by $owner"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[[ "$status" == 0 ]] || { cat "$log" >&2; fail "the server exited with $status after SIGTERM"; }
if env -i "${image_env[@]}" "$bin" --healthcheck 2>/dev/null; then
  fail "the health check passes with the server stopped"
fi
# `azurite-table …` prints the standalone command's readiness line (Azurite src/table/main.ts).
grep -q "^Azurite Table service successfully started on 0.0.0.0:$port" "$log" \
  || { cat "$log" >&2; fail "no azurite-table readiness line in the log"; }
step "SIGTERM stops the server cleanly; the health check then fails"

# 5. An entrypoint set to `azurite` (Testcontainers for .NET, Node and Go) with the all-in-one
#    command's options: the link runs tablestore, which prints that command's Table line.
(cd "$data" && exec env -i "${image_env[@]}" "${run_as[@]}" "$rootfs/usr/local/bin/azurite" \
  --blobHost 0.0.0.0 --queueHost 0.0.0.0 --tableHost 0.0.0.0 -l "$data") >"$log" 2>&1 &
pid=$!
ready=""
for _ in $(seq 1 50); do
  if grep -q "^Azurite Table service is successfully listening at http://0.0.0.0:$port" "$log"; then ready=1; break; fi
  sleep 0.2
done
[[ -n "$ready" ]] || { cat "$log" >&2; fail "the azurite link printed no readiness line"; }
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[[ "$status" == 0 ]] || { cat "$log" >&2; fail "the server (as azurite) exited with $status after SIGTERM"; }
step "the azurite link serves with the all-in-one readiness line"
echo "verify-docker-build: OK"
