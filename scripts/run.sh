#!/usr/bin/env bash
# The main job on the default workload shipped in the repo (configs/default.workloads):
# installs what is missing, builds, and runs wmtune on it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh"
build="${WM_BUILD_DIR:-$root/build}"
args=()
while read -r spec; do
  case "$spec" in ""|\#*) continue ;; esac
  args+=(-w "$spec")
done <"$root/configs/default.workloads"
exec "$build/apps/wmtune/wmtune" tasks "${args[@]}"
