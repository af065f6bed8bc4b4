#!/usr/bin/env bash
# wmtune on the GPU machine, one command (docs/gpu.md "Device run"): unpacks the device pack
# (scripts/device_pack.sh, built and packed here), runs it with the machine's own PyTorch
# libraries, generates the test models (scripts/gen_models.py), runs the GPU tests
# (test/cli/cuda_tests.sh: what `ctest -L cuda` runs in a full build), then the GPU benchmark
# (bench_wmtune.py) within BENCH_SECONDS, with ResNet-18 at PER_TASK trials a task when given.
# Writes at most 7 files into OUT (what a device run brings back).
# usage: benchmarks/gpu/device_wmtune.sh PACK OUT [BENCH_SECONDS [PER_TASK [TRIALS]]]
set -uo pipefail
PACK="$1" OUT="$2" BENCH_SECONDS="${3:-240}" PER_TASK="${4:-0}" TRIALS="${5:-64}"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$HERE/../.."
mkdir -p "$OUT"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
PY="${PYTHON:-python3}"
# (Python's tarfile: the machine may have no xz)
"$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$PACK" "$W" || exit 1
chmod +x "$W/bin/wmtune"
TORCH_LIB="${WM_TORCH_LIB:-$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')}"
export LD_LIBRARY_PATH="$W/lib:$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export WMTUNE_MODELS="$W/models"
WM="$W/bin/wmtune"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
  "$PY" -c 'import torch; print("torch", torch.__version__)'
  "$WM" --version
  cat "$W/MANIFEST"
} >"$OUT/device.txt" 2>&1

t0=$(date +%s)
{
  "$PY" "$ROOT/scripts/gen_models.py" "$W/gen" 2>&1 | tail -n 3
  bash "$ROOT/test/cli/cuda_tests.sh" "$WM" "$W/gen"
} >"$OUT/cuda-tests.log" 2>&1
trc=$?
echo "cuda tests: exit $trc in $(($(date +%s) - t0)) s"
tail -n 25 "$OUT/cuda-tests.log"

brc=0
if [ "$BENCH_SECONDS" -gt 0 ]; then
  model=()
  [ "$PER_TASK" -gt 0 ] && model=(--model "$W/gen/resnet18.onnx" --trials-per-task "$PER_TASK")
  # (a cell started before the deadline may run on: at most a minute more, then it is cut)
  PYTHONUNBUFFERED=1 timeout $((BENCH_SECONDS + 60)) "$PY" "$HERE/bench_wmtune.py" "$WM" \
    "$W/bench" --trials "$TRIALS" --seconds "$BENCH_SECONDS" "${model[@]}" >"$OUT/bench.log" 2>&1
  brc=$?
  cp "$W/bench/gpu-bench.md" "$W/bench/gpu-bench.json" "$OUT/" 2>/dev/null
  tar -C "$W/bench" -czf "$OUT/bench-logs.tgz" logs 2>/dev/null
  echo "benchmark: exit $brc"
  tail -n 30 "$OUT/bench.log"
fi
[ "$trc" -eq 0 ] && [ "$brc" -eq 0 ]
