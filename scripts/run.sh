#!/usr/bin/env bash
# The main job on the default workload shipped in the repo (configs/default.workloads):
# installs what is missing, builds, prints the tasks, then tunes them on this CPU
# (TRIALS measurements in all, default 32), logging to out/tune.jsonl (resumed if present).
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
mkdir -p "$root/out"
"$build/apps/wmtune/wmtune" tasks "${args[@]}"
exec "$build/apps/wmtune/wmtune" tune "${args[@]}" --trials "${TRIALS:-32}" \
  --log "$root/out/tune.jsonl" --json "$root/out/tune-summary.json"
