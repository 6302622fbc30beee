#!/usr/bin/env bash
# CI stage (called by test.sh): the container image, built and run as users run it.
#
#   scripts/ci/docker.sh --binary PATH
#
# 1. scripts/verify-docker-build.sh --binary PATH: the Dockerfile's promises and the runtime
#    stage's layout, without an engine (the multi-stage build's own steps: run it without
#    --binary).
# 2. The engine: Debian's podman with runc, installed with apt-get when missing (root). Rootful,
#    with everything in a private folder of this run (storage, volumes, state), so the machine's
#    own podman images and containers are neither seen nor touched. Two settings, in the
#    containers.conf this script writes (CONTAINERS_CONF), not the machine's: cgroup_manager
#    "cgroupfs" (no systemd here; crun also refuses the hybrid cgroup layout, so runc) and
#    default_ulimits = [] (setrlimit from the runtime is refused on these machines).
# 3. The base image: no image registry is reachable from CI, so the runtime stage's
#    `debian:<release>-slim` is made here, by `debootstrap --variant=minbase <release>` from the
#    mirror apt uses, trimmed as the slim image is (no apt lists, man pages, locales, docs but
#    the copyright files), and `podman import`ed under that name. The root is cached as a tar in
#    $TABLESTORE_CACHE_DIR (default ~/.cache/tablestore), so later runs skip debootstrap.
# 4. The image: `podman build --target prebuilt -t tablestore` from the Dockerfile, with the
#    binary the tests built (its debug info stripped, ~215 MB -> ~43 MB; the symbols stay for
#    backtraces) as the only file of the build context. The runtime stage is the one
#    `docker build .` ends with; only where the binary comes from differs (the builder stage
#    needs the rust image from a registry).
# 5. scripts/ci/docker_checks.py runs the image: every `docker run` of it and every Compose
#    service of it written in README.md, docs/ and the Dockerfile, and the scenarios users meet
#    (health check, SDK round trips, /seed, Azurite command lines, --read-only, user 10002,
#    SIGTERM with writes in flight, data kept across stop/start and in the named volume). It
#    runs with a cached virtual environment (the pinned SDK and PyYAML, from
#    scripts/ci/docker-requirements.txt).
# Every container, volume and image of the run is removed at the end; only the cached base
# root and the virtual environment stay. Times on the 2-core CI machine: CONTRIBUTING.md.
#
# Each failed check prints one line, "docker: FAILED <check>: <why>"; there is no skipped check:
# a machine where the engine cannot run fails the stage and says what is missing.
# Last line: "docker: N passed, N failed, N skipped" (read by test.sh); exit 1 on failure.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
[ "${1:-}" = "--binary" ] && [ -n "${2:-}" ] || { echo "usage: scripts/ci/docker.sh --binary PATH" >&2; exit 2; }
BINARY="$2"
PYTHON="${PYTHON:-python3}"
CACHE="${TABLESTORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tablestore}"
PASS=0; FAIL=0; SKIP=0
START=$SECONDS
WORK=""

failed() { echo "docker: FAILED $*" >&2; FAIL=$((FAIL + 1)); }
passed() { echo "docker: ok $*"; PASS=$((PASS + 1)); }
last_line() { grep -v '^[[:space:]]*$' "$1" | tail -n 1; }

cleanup() {
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  if [ -f "$WORK/containers.conf" ] && command -v podman >/dev/null 2>&1; then
    podman rm --all --force --time 0 >/dev/null 2>&1
    podman volume rm --all --force >/dev/null 2>&1
    podman system reset --force >/dev/null 2>&1
  fi
  # Anything podman left mounted in the run's folder (a killed run) goes before the folder.
  findmnt -rn -o TARGET | grep -F "$WORK/" | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf --one-file-system "$WORK"
}
finish() {
  cleanup
  echo "docker: took $((SECONDS - START)) s"
  echo "docker: ${PASS} passed, ${FAIL} failed, ${SKIP} skipped"
  [ "$FAIL" -eq 0 ]
  exit $?
}
trap 'exit 130' INT TERM
trap cleanup EXIT

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tablestore-docker.XXXXXX")"

# --- 1. The Dockerfile and the runtime layout, without an engine ----------------------------
echo "==> scripts/verify-docker-build.sh --binary $BINARY"
if scripts/verify-docker-build.sh --binary "$BINARY" >"$WORK/verify.log" 2>&1; then
  passed "verify-docker-build: the Dockerfile's promises and the runtime layout"
else
  cat "$WORK/verify.log"
  failed "verify-docker-build: $(last_line "$WORK/verify.log" | sed 's/^verify-docker-build: FAIL: //')"
fi

# --- 2. The engine ---------------------------------------------------------------------------
t0=$SECONDS
if [ "$(id -u)" != 0 ]; then
  failed "engine: this stage runs podman as root, as CI does; run it as root (or TABLESTORE_SKIP_DOCKER=1 on a machine without root)"
  finish
fi
missing=()
for tool in podman runc debootstrap strip; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  packages=("${missing[@]/strip/binutils}")
  if ! command -v apt-get >/dev/null 2>&1; then
    failed "engine: ${missing[*]} missing and there is no apt-get here to install them: install Debian's ${packages[*]}"
    finish
  fi
  echo "==> apt-get install ${packages[*]} (cold; apt keeps the .debs)"
  apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      -o DPkg::Lock::Timeout=300 "${packages[@]}" </dev/null >>"$WORK/apt.log" 2>&1
  }
  if ! apt_install && ! { apt-get update -q </dev/null >>"$WORK/apt.log" 2>&1 && apt_install; }; then
    failed "engine: apt-get install ${packages[*]} failed: $(last_line "$WORK/apt.log")"
    finish
  fi
  echo "docker: installed ${packages[*]} in $((SECONDS - t0)) s"
fi

# The run's own podman: storage, state and volumes under $WORK; runc; no systemd.
cat >"$WORK/containers.conf" <<EOF
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
tmp_dir = "$WORK/libpod"
EOF
cat >"$WORK/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$WORK/storage"
runroot = "$WORK/run"
EOF
export CONTAINERS_CONF="$WORK/containers.conf" CONTAINERS_STORAGE_CONF="$WORK/storage.conf"
if ! podman info >"$WORK/info.log" 2>&1; then
  failed "engine: podman cannot run here: $(last_line "$WORK/info.log")"
  finish
fi
passed "engine: $(podman --version), $(runc --version | head -n1), ready in $((SECONDS - t0)) s"

# --- 3. The Python for the checks ------------------------------------------------------------
t0=$SECONDS
req="$ROOT/scripts/ci/docker-requirements.txt"
for pin in azure-data-tables azure-core; do
  want="$(grep -m1 "^$pin==" tests/compat/python/requirements.txt)"
  if ! grep -qx "$want" "$req"; then
    failed "checks venv: scripts/ci/docker-requirements.txt does not pin $want as tests/compat/python/requirements.txt does: update it"
    finish
  fi
done
VENV="$CACHE/docker-checks-$(sha256sum "$req" | cut -c1-16)"
mkdir -p "$CACHE"
exec 9>"$CACHE/docker-checks.lock"
flock 9
if [ ! -f "$VENV/.installed" ]; then
  echo "==> pip install -r scripts/ci/docker-requirements.txt into $VENV (cold; cached afterwards)"
  rm -rf "$VENV"
  if ! { "$PYTHON" -m venv "$VENV" \
    && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"; } >"$WORK/pip.log" 2>&1; then
    rm -rf "$VENV"
    failed "checks venv: pip install -r scripts/ci/docker-requirements.txt failed (PyPI unreachable?): $(last_line "$WORK/pip.log")"
    finish
  fi
  touch "$VENV/.installed"
  echo "docker: checks venv installed in $((SECONDS - t0)) s"
fi
flock -u 9

# --- 4. The base image -----------------------------------------------------------------------
t0=$SECONDS
release="$(sed -n 's/^ARG DEBIAN_RELEASE=//p' Dockerfile)"
base="docker.io/library/debian:${release}-slim"
base_tar="$CACHE/debian-${release}-minbase-$(dpkg --print-architecture).tar"
exec 8>"$CACHE/debian-base.lock"
flock 8
if [ ! -f "$base_tar" ]; then
  # The mirror apt already uses (CI reaches it; nothing else).
  mirror="$(apt-cache policy 2>/dev/null | awk -v suite="$release/main" '$3 == suite && $2 ~ /^https?:/ { print $2; exit }')"
  mirror="${mirror:-http://deb.debian.org/debian}"
  echo "==> debootstrap --variant=minbase $release from $mirror (cold; cached in $base_tar)"
  rootfs="$CACHE/debian-${release}-rootfs.partial"
  rm -rf --one-file-system "$rootfs"
  if ! debootstrap --variant=minbase "$release" "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
    rm -rf --one-file-system "$rootfs"
    failed "base image: debootstrap --variant=minbase $release $mirror failed: $(last_line "$WORK/debootstrap.log")"
    finish
  fi
  # Trimmed as the slim image is.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
  find "$rootfs/usr/share/doc" -mindepth 2 ! -type d ! -name copyright -delete
  if ! { tar --numeric-owner -C "$rootfs" -cf "$base_tar.partial" . && mv "$base_tar.partial" "$base_tar"; } 2>"$WORK/tar.log"; then
    rm -rf --one-file-system "$rootfs" "$base_tar.partial"
    failed "base image: packing the debootstrap root into $base_tar failed: $(last_line "$WORK/tar.log")"
    finish
  fi
  rm -rf --one-file-system "$rootfs"
  echo "docker: base root made in $((SECONDS - t0)) s"
fi
flock -u 8
# The Env and Cmd the registry's debian image has.
if ! podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$base_tar" "$base" >"$WORK/import.log" 2>&1; then
  failed "base image: podman import $base_tar failed: $(last_line "$WORK/import.log")"
  finish
fi
passed "base image: $base from $(basename "$base_tar") in $((SECONDS - t0)) s"

# --- 5. The image ----------------------------------------------------------------------------
t0=$SECONDS
context="$WORK/context"
mkdir -p "$context"
# `--format docker`: the OCI format has no HEALTHCHECK. `--pull=never`: nothing from a registry.
if ! { strip --strip-debug -o "$context/tablestore" "$BINARY" && chmod 0755 "$context/tablestore" \
    && podman build --format docker --pull=never --target prebuilt -t tablestore \
         -f "$ROOT/Dockerfile" "$context"; } >"$WORK/build.log" 2>&1; then
  cat "$WORK/build.log"
  failed "image build: podman build --target prebuilt failed: $(last_line "$WORK/build.log")"
  finish
fi
passed "image build: tablestore ($(du -m "$context/tablestore" | cut -f1) MB binary) in $((SECONDS - t0)) s"

# --- 6. Run it -------------------------------------------------------------------------------
"$VENV/bin/python" scripts/ci/docker_checks.py --work "$WORK" 2>&1 | tee "$WORK/checks.log"
read -r c_pass c_fail < <(sed -n 's/^checks: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$WORK/checks.log" | tail -n1)
if [ -z "${c_pass:-}" ]; then
  failed "checks: scripts/ci/docker_checks.py ended without its summary: $(last_line "$WORK/checks.log")"
else
  PASS=$((PASS + c_pass)); FAIL=$((FAIL + c_fail))
fi
finish
