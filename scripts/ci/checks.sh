# shellcheck shell=bash
# The checks of a stage that runs several (sourced by scripts/ci/lint.sh and
# scripts/ci/deny.sh): `check NAME COMMAND...` runs the command, prints
# "<CHECK_LABEL>: NAME ok|FAILED (N s)" and counts it in $pass or $fail.
pass=0
fail=0
check() { # name command...
  local name=$1
  shift
  printf '\n==> %s %s: %s\n' "$CHECK_LABEL" "$name" "$*"
  local start=$SECONDS
  if "$@"; then
    pass=$((pass + 1))
    echo "$CHECK_LABEL: $name ok ($((SECONDS - start)) s)"
  else
    fail=$((fail + 1))
    echo "$CHECK_LABEL: $name FAILED ($((SECONDS - start)) s)"
  fi
}
