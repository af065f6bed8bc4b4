#!/usr/bin/env bash
# `--target cuda` on a real GPU (CTest label cuda; exits 77, skipped, where there is none):
# measure checks every candidate against the CPU reference and times it by CUDA events; a
# kernel fault (illegal address) is Ansor's runtime_device error and the next candidate gets a
# fresh worker; tune writes GPU records; run -w and run MODEL --check agree with the references
# with default and tuned schedules. On the GPU machine, benchmarks/gpu/device_wmtune.sh runs it
# from the device pack (scripts/device_pack.sh).
# usage: cuda_tests.sh PATH/TO/wmtune [MODELS_DIR (scripts/gen_models.py's output)]
set -u
WM="$1"
MODELS="${2:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$HERE/lib.sh"

if ! "$WM" measure -w gemm:M=8,N=8,K=8 --target cuda >"$TMP/probe.txt" 2>&1; then
  if grep -q -- "--target cuda:" "$TMP/probe.txt"; then
    echo "*** cuda_tests: SKIPPED: $(head -n1 "$TMP/probe.txt") ***"
    exit 77
  fi
  bad "measure --target cuda on the smallest GEMM"
  cat "$TMP/probe.txt"
fi

# The default GPU schedule of several operators, checked against the CPU reference.
for spec in gemm:M=512,N=512,K=512 conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1 \
  depthwise_conv2d:C=32,H=112,W=112,R=3,S=3,pad=1 softmax:M=1536,N=128 \
  batch_matmul:B=12,M=128,N=128,K=64 layer_norm:M=128,N=768 max_pool2d:N=1,C=64,H=112,W=112,R=3,S=3,stride=2,pad=1; do
  expect 0 "check +max relative error .* \(ok\)" -- measure -w "$spec" --target cuda
done
# A tiled schedule with shared memory and barriers.
G="$HERE/../schedule/schedules/gemm_gpu_sssrrsrs.json"
expect 0 "check +max relative error .* \(ok\)" -- measure -w gemm:M=64,N=64,K=64 --schedule "$G" --target cuda
# A wrong result and a kernel fault: both reported, and the candidate after the fault is
# measured by a fresh worker.
expect 0 "injected wrong: wrong_answer: max relative error" -- \
  measure -w gemm:M=64,N=64,K=64 --target cuda --inject wrong
expect 0 "injected device_fault: runtime_device: .*illegal memory access" -- \
  measure -w gemm:M=64,N=64,K=64 --target cuda --inject device_fault
expect 0 "latency .* ms median" -- measure -w gemm:M=64,N=64,K=64 --target cuda --inject device_fault

# tune writes GPU records; run -w runs the best one.
expect 0 "best" -- tune -w gemm:M=256,N=256,K=256 --target cuda --trials 16 --cost-model ansor \
  --log "$TMP/g.jsonl"
n=$(grep -c '"error":"none"' "$TMP/g.jsonl" || true)
[ "$n" -ge 8 ] && ok || bad "tune --target cuda: only $n of 16 records measured without error"
grep -q '"target":"cuda -arch=sm_[0-9]*"' "$TMP/g.jsonl" && grep -q '"device":"[^"]' "$TMP/g.jsonl" \
  && ok || bad "the GPU records do not name the cuda target and the device"
expect 0 "check C: max relative error .* -> ok" -- \
  run -w gemm:M=256,N=256,K=256 --target cuda --log "$TMP/g.jsonl" --check
expect 0 "the best schedule of" -- run -w gemm:M=256,N=256,K=256 --target cuda --log "$TMP/g.jsonl"
expect 0 "check C: max relative error .* -> ok" -- run -w gemm:M=256,N=256,K=256 --target cuda --check

# Whole models on the GPU against the libtorch CPU reference.
if [ -n "$MODELS" ] && [ -f "$MODELS/mlp.onnx" ]; then
  expect 0 "check .* -> ok" -- run "$MODELS/mlp.onnx" --target cuda --check
  expect 0 "best" -- tune "$MODELS/mlp.onnx" --target cuda --trials 12 --log "$TMP/mlp.jsonl"
  expect 0 "check .* -> ok" -- run "$MODELS/mlp.onnx" --target cuda --log "$TMP/mlp.jsonl" --check
  expect 0 "[(][1-9][0-9]* tuned from the log" -- run "$MODELS/mlp.onnx" --target cuda \
    --log "$TMP/mlp.jsonl"
  expect 0 "bench \(cuda.*wmtune [0-9.]+ ms" -- run "$MODELS/mlp.onnx" --target cuda \
    --log "$TMP/mlp.jsonl" --bench
  for m in resnet18 bert; do
    [ -f "$MODELS/$m.onnx" ] || continue
    expect 0 "check .* -> ok" -- run "$MODELS/$m.onnx" --target cuda --check --tolerance 1e-3
  done
else
  echo "*** cuda_tests: no generated models given: the whole-model checks did not run ***"
fi

echo "cuda_tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
