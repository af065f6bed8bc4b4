#!/usr/bin/env bash
# Configures and builds wmtune into build/ (Ninja, ccache when present). Used by run.sh and
# test.sh; safe to run again (incremental).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WM_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build"
