#!/usr/bin/env bash
# The GPU smoke run, one command on the device machine (CUDA driver, g++, Python with PyTorch;
# no LLVM, no Debian packages): builds cuda_smoke with the device's g++, runs every program of
# CASES (made here by wm_gpu_cases) checked and timed against PyTorch, writes OUT/gpu-smoke.md.
# usage: benchmarks/gpu/device_run.sh CASES OUT
set -euo pipefail
CASES="$1" OUT="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$HERE/../.."
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv || true; } >"$OUT/device.txt" 2>&1
CXX="${CXX:-$(command -v g++ || command -v c++ || command -v clang++ || echo g++)}"
"$CXX" -std=c++17 -O2 -I"$ROOT/lib/runtime/include" "$ROOT/lib/runtime/cuda_driver.cpp" \
  "$HERE/cuda_smoke.cpp" -ldl -o "$OUT/cuda_smoke"
PY="${PYTHON:-$(command -v python3 || command -v python || echo python3)}"
rc=0
"$PY" "$HERE/run_smoke.py" "$CASES" "$OUT" "$OUT/cuda_smoke" >"$OUT/run.log" 2>&1 || rc=$?
tail -n 40 "$OUT/run.log"
rm -rf "$OUT/data" "$OUT/cuda_smoke"
exit "$rc"
