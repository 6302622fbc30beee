#!/usr/bin/env bash
# scripts/package.sh packages the binary from cargo's target directory, wherever cargo puts it:
# CARGO_TARGET_DIR, and cargo's build.target-dir setting (given here as CARGO_BUILD_TARGET_DIR),
# as `cargo metadata` reports them. The release build is stood in for by a `cargo` first on
# PATH that answers `cargo build` by placing a small program where cargo would put the binary
# (a real release build takes minutes); every other cargo command is the real one.
#
#   tests/packaging/package_target_dir.sh      # exit 0 when both cases hold; called by
#                                              # scripts/ci/packages.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
REAL_CARGO="$(command -v cargo)" || { echo "package_target_dir: cargo is not on PATH" >&2; exit 1; }
STAND_IN=""
for candidate in /bin/echo /usr/bin/echo; do
  if [ -x "$candidate" ]; then STAND_IN="$candidate"; break; fi
done
[ -n "$STAND_IN" ] || { echo "package_target_dir: no /bin/echo to stand in for the binary" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tablestore-package-target.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin"
cat >"$WORK/bin/cargo" <<STUB
#!/bin/sh
# Stand-in for \`cargo build --release\`: puts $STAND_IN where cargo would put the binary.
if [ "\$1" = build ]; then
  dir="\$("$REAL_CARGO" metadata --format-version 1 --no-deps | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
  mkdir -p "\$dir/release" && cp "$STAND_IN" "\$dir/release/tablestore"
  exit \$?
fi
exec "$REAL_CARGO" "\$@"
STUB
chmod +x "$WORK/bin/cargo"

failures=0
check() { # NAME VAR=VALUE TARGET_DIR
  local name="$1" setting="$2" dir="$3" archive
  if ! (cd "$ROOT" && env PATH="$WORK/bin:$PATH" "$setting" scripts/package.sh >"$WORK/$name.log" 2>&1); then
    echo "package_target_dir: FAILED ($name): scripts/package.sh exited non-zero:" >&2
    tail -n 20 "$WORK/$name.log" >&2
    failures=$((failures + 1)); return
  fi
  archive="$(ls "$dir"/dist/tablestore-*.tar.gz 2>/dev/null | head -n1)"
  if [ -z "$archive" ]; then
    echo "package_target_dir: FAILED ($name): no release archive in $dir/dist" >&2
    failures=$((failures + 1)); return
  fi
  mkdir -p "$WORK/$name-x" && tar -C "$WORK/$name-x" -xzf "$archive"
  # The packaged program is the stand-in from $dir, not a tablestore built elsewhere.
  if [ "$("$WORK/$name-x"/tablestore-*/tablestore packaged-from-the-target-dir)" != packaged-from-the-target-dir ]; then
    echo "package_target_dir: FAILED ($name): $archive does not hold the binary from $dir/release" >&2
    failures=$((failures + 1)); return
  fi
  ls "$dir"/dist/tablestore_server-*.whl "$dir"/dist/tablestore-server-*.tgz >/dev/null \
    || { echo "package_target_dir: FAILED ($name): wheel or npm tarballs missing from $dir/dist" >&2; failures=$((failures + 1)); return; }
  echo "package_target_dir: ok ($name): packaged $dir/release/tablestore into $dir/dist"
}

check cargo-target-dir "CARGO_TARGET_DIR=$WORK/target-a" "$WORK/target-a"
check build-target-dir "CARGO_BUILD_TARGET_DIR=$WORK/target-b" "$WORK/target-b"
[ "$failures" -eq 0 ]
