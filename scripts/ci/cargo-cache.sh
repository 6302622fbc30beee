#!/usr/bin/env bash
# The compiled dependencies of ./test.sh's builds, kept between runs on one machine as the Azure
# CLI's virtual environment is (scripts/ci/azure-cli.sh): a fresh clone then compiles only the
# workspace's own crates, not the ~400 crates under them (most of a cold build, and of
# clippy's).
#
# Usage: scripts/ci/cargo-cache.sh restore|save PROFILE_DIR      (PROFILE_DIR: target/debug)
#   restore  before the first build: copies the cache, if there is one, into PROFILE_DIR when
#            that holds no build yet (a fresh clone)
#   save     after a build and lint that passed, when restore found nothing: keeps
#            PROFILE_DIR's dependency artifacts (build, check and build-script outputs; not
#            those of the workspace's own crates, which a clone elsewhere rebuilds anyway) as
#            the cache
#
# The cache is a folder under $TABLESTORE_CACHE_DIR (default ~/.cache/tablestore) named after a
# hash of everything that decides the dependencies' artifacts: every Cargo.toml of the workspace
# (the root's and each crate's under crates/), Cargo.lock, the fuzz workspace's Cargo.toml and
# Cargo.lock, rust-toolchain.toml, `rustc -vV` and RUSTFLAGS. Any change
# to them is a miss, and the build is as cold as without a cache; a save keeps only the newest
# folder. Cargo still checks every artifact's fingerprint, so a stale one is rebuilt, not used.
# TABLESTORE_CARGO_CACHE=0 turns the cache off.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

action="${1:?usage: scripts/ci/cargo-cache.sh restore|save PROFILE_DIR}"
profile_dir="${2:?usage: scripts/ci/cargo-cache.sh restore|save PROFILE_DIR}"
if [ "${TABLESTORE_CARGO_CACHE:-1}" = "0" ]; then
  echo "cargo cache: off (TABLESTORE_CARGO_CACHE=0)"
  exit 0
fi

cache_root="${TABLESTORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tablestore}"
key="$({
  # A crate's manifest decides which features its dependencies are built with.
  cat Cargo.toml crates/*/Cargo.toml Cargo.lock fuzz/Cargo.toml fuzz/Cargo.lock rust-toolchain.toml
  rustc -vV
  echo "RUSTFLAGS=${RUSTFLAGS:-}"
} | sha256sum | cut -c1-16)"
cache="$cache_root/cargo-deps-$key"

case "$action" in
  restore)
    if [ -d "$profile_dir/deps" ]; then
      echo "cargo cache: $profile_dir already holds a build; using it as it is"
    elif [ -f "$cache/.complete" ]; then
      start=$SECONDS
      mkdir -p "$profile_dir"
      cp -a "$cache/." "$profile_dir/"
      rm -f "$profile_dir/.complete"
      echo "cargo cache: restored the dependencies from $cache in $((SECONDS - start)) s"
    else
      echo "cargo cache: none for this Cargo.lock and toolchain yet ($cache); the build is cold"
      mkdir -p "$profile_dir"
      touch "$profile_dir/.cargo-cache-miss"
    fi
    ;;
  save)
    [ -e "$profile_dir/.cargo-cache-miss" ] || exit 0 # restored, or saved already
    rm -f "$profile_dir/.cargo-cache-miss"
    [ -f "$cache/.complete" ] && exit 0 # another run saved it meanwhile
    start=$SECONDS
    mkdir -p "$cache_root"
    tmp="$(mktemp -d "$cache_root/.cargo-deps-$key.XXXXXX")"
    # The workspace's own artifacts: every member's package and target names (cargo metadata
    # --no-deps lists all members of a workspace), and the fuzz workspace's, as cargo spells
    # them in file names (- becomes _ in crate names).
    own="$(cargo metadata --no-deps --format-version 1 --manifest-path Cargo.toml
      cargo metadata --no-deps --format-version 1 --manifest-path fuzz/Cargo.toml)"
    mapfile -t names < <(printf '%s\n' "$own" | python3 -c '
import json, sys
names = set()
for line in sys.stdin:
    for p in json.loads(line)["packages"]:
        names.add(p["name"])
        names.update(t["name"] for t in p["targets"])
for n in sorted(names | {n.replace("-", "_") for n in names}):
    print(n)')
    for sub in deps build .fingerprint; do
      [ -d "$profile_dir/$sub" ] || continue
      mkdir -p "$tmp/$sub"
      find "$profile_dir/$sub" -mindepth 1 -maxdepth 1 -print0 |
        while IFS= read -r -d '' path; do
          base="${path##*/}"
          base="${base#lib}"
          for n in "${names[@]}"; do
            case "$base" in "$n"-*|"$n".*) continue 2 ;; esac
          done
          cp -a "$path" "$tmp/$sub/"
        done
    done
    touch "$tmp/.complete"
    if mv -T "$tmp" "$cache" 2>/dev/null; then
      # Keep only this key: older ones are for a Cargo.lock or toolchain no longer used here.
      for old in "$cache_root"/cargo-deps-*; do
        [ "$old" = "$cache" ] || rm -rf "$old"
      done
      echo "cargo cache: saved the dependencies to $cache ($(du -sh "$cache" | cut -f1)) in $((SECONDS - start)) s"
    else
      rm -rf "$tmp"
    fi
    ;;
  *)
    echo "usage: scripts/ci/cargo-cache.sh restore|save PROFILE_DIR" >&2
    exit 2
    ;;
esac
