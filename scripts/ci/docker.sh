#!/usr/bin/env bash
# CI stage (called by test.sh): the container image check.
#   - with a running container engine (docker or podman answers `info`): builds the image from
#     the Dockerfile and runs it: health check, a signed table round trip, clean stop;
#   - without one: says so, counts the image build as skipped, and still checks the image's
#     runtime layout with scripts/verify-docker-build.sh on the binary the tests built.
#
#   scripts/ci/docker.sh --binary PATH
#
# Last line: "docker: N passed, N failed, N skipped" (read by test.sh).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
[ "${1:-}" = "--binary" ] && [ -n "${2:-}" ] || { echo "usage: scripts/ci/docker.sh --binary PATH" >&2; exit 2; }
BINARY="$2"
PASS=0; FAIL=0; SKIP=0

ENGINE=""
for candidate in docker podman; do
  if command -v "$candidate" >/dev/null 2>&1 && timeout 10 "$candidate" info >/dev/null 2>&1; then
    ENGINE="$candidate"; break
  fi
done

if [ -n "$ENGINE" ]; then
  tag="tablestore-ci:$$"
  name="tablestore-ci-$$"
  echo "==> $ENGINE build -t $tag ."
  if "$ENGINE" build -t "$tag" . \
    && "$ENGINE" run -d --name "$name" -p 127.0.0.1::10002 "$tag" azurite-table --tableHost 0.0.0.0 >/dev/null; then
    ok=""
    for _ in $(seq 1 50); do
      if "$ENGINE" exec "$name" tablestore --healthcheck 2>/dev/null; then ok=1; break; fi
      sleep 0.2
    done
    "$ENGINE" stop -t 10 "$name" >/dev/null
    status="$("$ENGINE" inspect -f '{{.State.ExitCode}}' "$name")"
    "$ENGINE" logs "$name" 2>&1 | tail -n 5
    "$ENGINE" rm -f "$name" >/dev/null; "$ENGINE" rmi "$tag" >/dev/null 2>&1
    if [ -n "$ok" ] && [ "$status" = 0 ]; then PASS=$((PASS + 1)); else echo "docker: the container was not healthy or did not stop cleanly (exit $status)" >&2; FAIL=$((FAIL + 1)); fi
  else
    "$ENGINE" rm -f "$name" >/dev/null 2>&1
    FAIL=$((FAIL + 1))
  fi
else
  echo "docker: SKIPPED the image build: no container engine is running here (docker/podman info failed)"
  SKIP=$((SKIP + 1))
fi

echo "==> scripts/verify-docker-build.sh --binary $BINARY (the image's runtime layout, no engine needed)"
if scripts/verify-docker-build.sh --binary "$BINARY"; then PASS=$((PASS + 1)); else FAIL=$((FAIL + 1)); fi
echo "docker: ${PASS} passed, ${FAIL} failed, ${SKIP} skipped"
[ "$FAIL" -eq 0 ]
