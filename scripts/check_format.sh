#!/usr/bin/env bash
# Checks that every C and C++ file of the tree is formatted by .clang-format (clang-format 14, the
# version Debian 12 ships; scripts/setup.sh installs it). Run by CTest (unit: formatting);
# fix with: clang-format-14 -i $(git ls-files '*.h' '*.c' '*.cpp')
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then echo "clang-format is not installed (scripts/setup.sh installs it)"; exit 1; fi
cd "$root"
mapfile -t files < <(find lib apps test benchmarks -name '*.h' -o -name '*.c' -o -name '*.cpp' | sort)
if "$cf" --dry-run -Werror "${files[@]}"; then
  echo "formatting: ${#files[@]} files formatted"
else
  echo "formatting: run $cf -i on the files above"
  exit 1
fi
