#!/usr/bin/env bash
# The scaling benchmark of docs/distributed.md: replays a real ResNet-18 tuning log (64 trials
# per task; tune it first if there is none) through the tuner with 1..64 simulated workers and
# draws the curve. Run on an otherwise idle machine: rank 0's search time is measured for real.
# usage: bash benchmarks/distributed/scaling.sh [LOG.jsonl] [OUT_DIR]
#   LOG: default out/distributed/resnet18.jsonl, made with
#        wmtune tune out/models/resnet18.onnx --trials $((64*TASKS)) --cost-model ansor --seed 1
#        (about 7 minutes here)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${WM_BUILD_DIR:-$root/build}"
out="${2:-$root/out/distributed}"
log="${1:-$out/resnet18.jsonl}"
model="$root/out/models/resnet18.onnx"
mkdir -p "$out"
[ -f "$model" ] || /usr/bin/python3 "$root/scripts/gen_models.py" "$root/out/models"
if [ ! -f "$log" ]; then
  tasks=$("$build/apps/wmtune/wmtune" tasks --json "$model" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["tasks"]))')
  unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
  "$build/apps/wmtune/wmtune" tune "$model" --trials $((64 * tasks)) --cost-model ansor --seed 1 --log "$log"
fi
# The log's own cost model (ansor: every candidate replayed), then wm and random (their
# candidates differ: costs hashed, times the task's median).
for m in ansor wm random; do
  "$build/benchmarks/wm_bench_distributed" "$model" "$log" --workers 1,2,4,8,16,64 --cost-model $m \
    --json "$out/scaling-$m.json" | tee "$out/scaling-$m.txt"
done
/usr/bin/python3 "$root/benchmarks/distributed/plot.py" "$out/scaling.svg" "$out"/scaling-{ansor,wm,random}.json
echo "wrote $out/scaling-*.txt, scaling-*.json, scaling.svg"
