#!/usr/bin/env bash
# Static checks, run by ./test.sh (and so by CI) first, before anything is built:
#   fmt     cargo fmt --check, for the crate and for the fuzz workspace (seconds; when it
#           fails the other checks are not run unless TABLESTORE_KEEP_GOING=1)
#   clippy  cargo clippy --all-targets -- -D warnings (the [lints] table in Cargo.toml included)
#   fuzz    cargo check of the fuzz targets (fuzz/, their own workspace) on the stable toolchain,
#           without linking libFuzzer (--no-default-features), in the crate's target folder so
#           the dependencies they share with the server are not checked twice; --locked, so
#           the check never rewrites the committed fuzz/Cargo.lock (a stale one fails with a hint)
# Prints one "lint: <check> ok|FAILED" line per check and a closing
# "lint: N passed, N failed" line that test.sh counts; exits non-zero when a check failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$PWD/$TARGET_DIR" ;; esac

CHECK_LABEL="lint"
. scripts/ci/checks.sh

fmt_all() {
  cargo fmt --all --check && cargo fmt --manifest-path fuzz/Cargo.toml --all --check
}

check fmt fmt_all
if [ "$fail" -ne 0 ] && [ "${TABLESTORE_KEEP_GOING:-0}" != "1" ]; then
  echo "lint: run 'cargo fmt' (and 'cargo fmt --manifest-path fuzz/Cargo.toml'); the other checks did not run"
  echo "lint: $pass passed, $fail failed"
  exit 1
fi
check clippy cargo clippy --all-targets -- -D warnings
fuzz_check() {
  CARGO_TARGET_DIR="$TARGET_DIR" cargo check --locked --manifest-path fuzz/Cargo.toml \
    --no-default-features --bins && return 0
  echo "lint: if cargo says fuzz/Cargo.lock needs updating (the crate's dependencies changed), run" \
    "'cargo update --manifest-path fuzz/Cargo.toml --workspace' and commit fuzz/Cargo.lock"
  return 1
}

check fuzz fuzz_check

echo "lint: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
