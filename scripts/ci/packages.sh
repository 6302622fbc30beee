#!/usr/bin/env bash
# CI stage (called by test.sh): packages the binary the test command already built (no second
# build), installs the wheel into a fresh venv and the npm tarballs into a fresh npm project,
# and runs a short SDK scenario through the installed command, Azurite's command names
# (`azurite-table`, `azurite`), the pytest fixture (in both flavours) and the JS helper, and
# docs/realism.md's pytest and JS examples as written with the realism fixtures
# the packages ship (tests/packaging/); then checks that package.sh without --binary takes the
# binary from cargo's target directory wherever it is (tests/packaging/package_target_dir.sh).
#
#   scripts/ci/packages.sh --binary PATH --work DIR [--sdk-venv DIR]
#
# --sdk-venv: a venv that already holds the pinned SDK and pytest (test.sh's .venv). The fresh
# venv then gets only the wheel, and sees that venv's packages through a .pth file instead of
# a second download and install (~1 min on the 2-core CI machine).
#
# Last line: "packages: N passed, N failed, N skipped" (read by test.sh); exit 1 on failure.
# Installs: the SDKs' pinned versions (from tests/compat) through pip's and npm's caches.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BINARY=""; WORK=""; SDK_VENV=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --sdk-venv) SDK_VENV="$2"; shift 2 ;;
    *) echo "packages.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$BINARY" ] && [ -n "$WORK" ] || { echo "usage: scripts/ci/packages.sh --binary PATH --work DIR" >&2; exit 2; }
PYTHON="${PYTHON:-python3}"
PASS=0; FAIL=0; SKIP=0
START=$SECONDS

finish() {
  echo "packages: took $((SECONDS - START)) s"
  echo "packages: ${PASS} passed, ${FAIL} failed, ${SKIP} skipped"
  [ "$FAIL" -eq 0 ]
  exit $?
}
step_failed() { echo "packages: FAILED: $*" >&2; FAIL=$((FAIL + 1)); }

DIST="$WORK/dist"
echo "==> scripts/package.sh --binary $BINARY"
if ! scripts/package.sh --binary "$BINARY" --out "$DIST"; then
  step_failed "scripts/package.sh"
  finish
fi
echo "packages: built in $((SECONDS - START)) s"

# --- Python: a fresh venv with only the wheel, pytest and the SDK -------------------------
t0=$SECONDS
VENV="$WORK/pkg-venv"
WHEEL="$(ls "$DIST"/tablestore_server-*.whl | head -n1)"
echo "==> fresh venv: $WHEEL"
py_reqs=()
while read -r req; do py_reqs+=("$req"); done < <(grep -E '^(azure-data-tables|azure-core|pytest)==' tests/compat/python/requirements.txt)
install_sdk() {
  if [ -n "$SDK_VENV" ] && [ -x "$SDK_VENV/bin/python" ]; then
    local own theirs
    own="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    theirs="$("$SDK_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$theirs" >"$own/tablestore-suite-sdk.pth"
  else
    venv_pip install --quiet --disable-pip-version-check "${py_reqs[@]}"
  fi
}
# pip >= 22.3 installs into another environment (--python): the fresh venv needs no pip of
# its own (ensurepip alone took ~20 s on the busy CI machine). Older pip: a venv with pip.
if "$PYTHON" -c 'import sys, pip; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))' 2>/dev/null; then
  make_venv() { "$PYTHON" -m venv --without-pip "$VENV"; }
  venv_pip() { "$PYTHON" -m pip --python "$VENV/bin/python" "$@"; }
else
  make_venv() { "$PYTHON" -m venv "$VENV"; }
  venv_pip() { "$VENV/bin/python" -m pip "$@"; }
fi
if make_venv \
  && venv_pip install --quiet --disable-pip-version-check --no-index "$WHEEL" \
  && install_sdk; then
  echo "packages: venv ready in $((SECONDS - t0)) s"
  (cd tests/packaging/python \
    && "$VENV/bin/python" -m pytest -p no:xdist test_installed.py test_realism_guide.py test_state.py \
         --junitxml="$WORK/pkg-pytest.xml" -q \
    && "$VENV/bin/python" -m pytest -p no:xdist test_function_scope.py --tablestore-scope function \
         --junitxml="$WORK/pkg-pytest-function.xml" -q \
    && "$VENV/bin/python" -m pytest -p no:xdist test_cosmos_fixture.py -o "tablestore_args=--flavor cosmos" \
         --junitxml="$WORK/pkg-pytest-cosmos.xml" -q)
  for xml in "$WORK/pkg-pytest.xml" "$WORK/pkg-pytest-function.xml" "$WORK/pkg-pytest-cosmos.xml"; do
    read -r p f s < <("$PYTHON" scripts/ci/junit-counts.py "$xml")
    PASS=$((PASS + p)); FAIL=$((FAIL + f)); SKIP=$((SKIP + s))
  done
else
  step_failed "installing the wheel into a fresh venv"
fi
echo "packages: python took $((SECONDS - t0)) s"

# --- npm: a fresh project with the packed tarballs and the SDK ----------------------------
t0=$SECONDS
PROJECT="$WORK/pkg-npm"
mkdir -p "$PROJECT"
printf '{ "name": "tablestore-package-check", "version": "0.0.0", "private": true, "type": "module" }\n' >"$PROJECT/package.json"
sdk_version="$(sed -n 's/.*"@azure\/data-tables": "\([^"]*\)".*/\1/p' tests/compat/js/package.json)"
main_tgz="$(ls "$DIST"/tablestore-server-[0-9]*.tgz | head -n1)"
platform_tgz="$(ls "$DIST"/tablestore-server-*-*-[0-9]*.tgz | head -n1)"
echo "==> fresh npm project: $(basename "$platform_tgz") $(basename "$main_tgz") @azure/data-tables@$sdk_version"
if (cd "$PROJECT" && npm install --prefer-offline --no-audit --no-fund --loglevel=error \
      "$platform_tgz" "$main_tgz" "@azure/data-tables@$sdk_version"); then
  echo "packages: npm project ready in $((SECONDS - t0)) s"
  cp tests/packaging/js/installed.test.mjs "$PROJECT/"
  # The realism guide's JS examples run in this project, as a user would run them.
  (cd "$PROJECT" && TABLESTORE_REALISM_GUIDE="$ROOT/docs/realism.md" \
     node --test --test-reporter=spec --test-reporter-destination=stdout \
     --test-reporter=tap --test-reporter-destination="$WORK/pkg-node.tap" installed.test.mjs)
  read -r p f s < <(awk '
    /^# pass /      { p = $3 }
    /^# fail /      { f = $3 }
    /^# cancelled / { f += $3 }
    /^# skipped /   { s += $3 }
    /^# todo /      { s += $3 }
    END { printf "%d %d %d\n", p, f, s }' "$WORK/pkg-node.tap" 2>/dev/null || echo "0 1 0")
  [ "$((p + f + s))" -gt 0 ] || f=1
  PASS=$((PASS + p)); FAIL=$((FAIL + f)); SKIP=$((SKIP + s))
else
  step_failed "installing the npm tarballs into a fresh project"
fi
echo "packages: npm took $((SECONDS - t0)) s"

# --- scripts/package.sh without --binary: cargo's target directory, wherever it is ---------
t0=$SECONDS
echo "==> tests/packaging/package_target_dir.sh"
if tests/packaging/package_target_dir.sh; then
  PASS=$((PASS + 1))
else
  step_failed "tests/packaging/package_target_dir.sh"
fi
echo "packages: target directory took $((SECONDS - t0)) s"
finish
