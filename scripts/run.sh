#!/usr/bin/env bash
# The main job on the default workloads shipped in the repo: installs what is missing, builds,
# then
#  1. tunes configs/default.workloads (TRIALS measurements in all, default 32) into
#     out/tune.jsonl (resumed if present);
#  2. generates the small MLP test model (scripts/gen_models.py, random weights) into
#     out/models/, prints its fused tasks, tunes it (MODEL_TRIALS, default 16) into
#     out/mlp.jsonl, and runs the whole model with the tuned kernels, checked against the
#     libtorch reference executor.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh"
build="${WM_BUILD_DIR:-$root/build}"
wm="$build/apps/wmtune/wmtune"
args=()
while read -r spec; do
  case "$spec" in ""|\#*) continue ;; esac
  args+=(-w "$spec")
done <"$root/configs/default.workloads"
mkdir -p "$root/out/models"
"$wm" tasks "${args[@]}"
"$wm" tune "${args[@]}" --trials "${TRIALS:-32}" --log "$root/out/tune.jsonl" --json "$root/out/tune-summary.json"

/usr/bin/python3 "$root/scripts/gen_models.py" "$root/out/models" --only mlp
"$wm" tasks "$root/out/models/mlp.onnx"
"$wm" tune "$root/out/models/mlp.onnx" --trials "${MODEL_TRIALS:-16}" --log "$root/out/mlp.jsonl"
"$wm" run "$root/out/models/mlp.onnx" --log "$root/out/mlp.jsonl" --check --bench
