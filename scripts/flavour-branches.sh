#!/usr/bin/env bash
# Where the code branches on the service flavour (Table storage or Cosmos DB for Table), in the
# non-test Rust code of crates/*/src and src/ (a file's code up to its `#[cfg(test)] mod`;
# `tests.rs` files and comment lines left out). Prints the files with such a branch and the
# counts docs/architecture.md records ("A new Cosmos difference"). A branch is a line that
# names a flavour value (`Flavor::Cosmos`, `FlavorArg::Storage`, `is_cosmos()`) or compares or
# matches a flavour (`flavor ==`, `match ctx.flavor`). Run from the repository root.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
branch='Flavor::(Storage|Cosmos)|FlavorArg::(Storage|Cosmos)|is_cosmos\(\)|flavou?r(\(\))? *[!=]=|[!=]= *Flavor|match +\(?[A-Za-z_.]*flavou?r\b'
param='flavou?r: *Flavor\b'
words='flavou?r|cosmos'
files=$(git ls-files 'crates/*/src/*.rs' 'crates/*/src/**/*.rs' 'src/*.rs' 'src/**/*.rs' | sort -u)
code() {
    awk 'prev ~ /^[[:space:]]*#\[cfg\(test\)\]/ && /^[[:space:]]*(pub(\([a-z]+\))? )?mod /{exit}
         {prev=$0} !/^[[:space:]]*\/\//' "$1"
}
branch_files=0 branch_lines=0 params=0 word_files=0 word_lines=0 total=0
for f in $files; do
    total=$((total + 1))
    n=$(grep -ciE "$words" "$f" || true)
    if [ "$n" -gt 0 ]; then word_files=$((word_files + 1)) word_lines=$((word_lines + n)); fi
    case "$f" in */tests.rs | */tests/*) continue ;; esac
    b=$(code "$f" | grep -cE "$branch" || true)
    p=$(code "$f" | grep -cE "$param" || true)
    params=$((params + p))
    if [ "$b" -gt 0 ]; then
        printf '%4d  %s\n' "$b" "$f"
        branch_files=$((branch_files + 1)) branch_lines=$((branch_lines + b))
    fi
done
echo "files branching on the flavour: $branch_files ($branch_lines lines)"
echo "flavour parameters and fields (flavor: Flavor): $params"
echo "lines naming flavour or Cosmos: $word_lines in $word_files of $total files"
