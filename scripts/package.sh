#!/usr/bin/env bash
# Builds this machine's packages of tablestore into dist/ of cargo's target directory
# (target/dist/ unless CARGO_TARGET_DIR or cargo's build.target-dir says otherwise), under the
# distribution name tablestore-server (`tablestore` on PyPI and npm is another project:
# docs/decisions.md); the command they install is `tablestore`:
#   tablestore_server-<version>-py3-none-<platform>.whl   (pip: `tablestore` on PATH + pytest plugin)
#   tablestore-server-<version>.tgz, tablestore-server-<os>-<cpu>-<version>.tgz
#                                                       (npm: launcher + platform binary)
#   tablestore-server-<version>-<os>-<cpu>.tar.gz and .sha256   (release archive)
#
#   scripts/package.sh                      # builds the release binary first (cargo build --release)
#                                           # and packages it from cargo's target directory
#   scripts/package.sh --binary PATH        # packages a binary that is already built (CI: the
#                                           # one the test command built; no second build)
#   scripts/package.sh --out DIR
#
# The binary is packaged with its debug info stripped. Other platforms: .github/workflows/release.yml.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BINARY=""
OUT=""
PYTHON="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# Where cargo puts what it builds, as cargo itself resolves it (CARGO_TARGET_DIR, then
# build.target-dir in any .cargo/config.toml or CARGO_BUILD_TARGET_DIR, then ./target).
target_dir() {
  cargo metadata --format-version 1 --no-deps \
    | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}

VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)"
if [ -z "$BINARY" ] || [ -z "$OUT" ]; then
  TARGET_DIR="$(target_dir)" || { echo "package.sh: 'cargo metadata' did not name a target directory" >&2; exit 1; }
  [ -n "$OUT" ] || OUT="$TARGET_DIR/dist"
fi
if [ -z "$BINARY" ]; then
  cargo build --release --locked --bin tablestore
  BINARY="$TARGET_DIR/release/tablestore"
fi
[ -x "$BINARY" ] || { echo "package.sh: $BINARY is not an executable: build it first" >&2; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) KEY=linux-x64 ;;
  Linux-aarch64|Linux-arm64) KEY=linux-arm64 ;;
  Darwin-x86_64) KEY=darwin-x64 ;;
  Darwin-arm64) KEY=darwin-arm64 ;;
  MINGW*-x86_64|MSYS*-x86_64|CYGWIN*-x86_64) KEY=win32-x64 ;;
  *) echo "package.sh: no package layout for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
EXE=tablestore; [ "$KEY" = win32-x64 ] && EXE=tablestore.exe

mkdir -p "$OUT"
STAGE="$(mktemp -d "${TMPDIR:-/tmp}/tablestore-package.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
RELEASE="tablestore-server-$VERSION-$KEY"
mkdir -p "$STAGE/$RELEASE"
STAGED="$STAGE/$RELEASE/$EXE"
cp "$BINARY" "$STAGED"
if command -v strip >/dev/null 2>&1 && [ "$KEY" != win32-x64 ]; then
  strip "$STAGED" 2>/dev/null || strip -S "$STAGED"
fi
chmod 0755 "$STAGED"

"$PYTHON" packaging/python/build_wheel.py --binary "$STAGED" --version "$VERSION" --out "$OUT"
"$PYTHON" packaging/npm/build_npm.py --version "$VERSION" --out "$OUT" --binary "$KEY=$STAGED"

# Release archive: the binary with README and LICENSE, and its checksum.
cp README.md LICENSE "$STAGE/$RELEASE/"
if [ "$KEY" = win32-x64 ] && command -v zip >/dev/null 2>&1; then
  ARCHIVE="$RELEASE.zip"
  (cd "$STAGE" && zip -qr "$OUT/$ARCHIVE" "$RELEASE")
else
  ARCHIVE="$RELEASE.tar.gz"
  tar -C "$STAGE" -czf "$OUT/$ARCHIVE" "$RELEASE"
fi
(cd "$OUT" && { sha256sum "$ARCHIVE" 2>/dev/null || shasum -a 256 "$ARCHIVE"; } >"$ARCHIVE.sha256")
echo "$OUT/$ARCHIVE"
