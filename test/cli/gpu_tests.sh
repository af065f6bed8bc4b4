#!/usr/bin/env bash
# `--target cuda` without a GPU: `compile --target cuda --emit ptx` works on any machine (every
# built-in workload's example spec; assembled by ptxas -arch=sm_90 when the CUDA toolkit is
# there, skipped loudly otherwise); `--check` runs the kernels in the GPU-semantics emulator;
# on a machine without libcuda.so.1, measure/tune/run --target cuda exit 2 saying so; bad
# --arch values and PTX for the CPU exit 2.
# usage: gpu_tests.sh PATH/TO/wmtune
set -u
WM="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$HERE/lib.sh"

PTXAS="${WM_PTXAS:-}"
[ -z "$PTXAS" ] && [ -x /usr/local/cuda/bin/ptxas ] && PTXAS=/usr/local/cuda/bin/ptxas
[ -z "$PTXAS" ] && command -v ptxas >/dev/null && PTXAS=ptxas
[ -z "$PTXAS" ] && echo "*** gpu_tests: SKIPPED assembling with ptxas: none found ***"

# Every built-in workload's example spec, as PTX.
mapfile -t specs < <("$WM" workloads | sed -n 's/^ *e\.g\. \(.*\)$/\1/p')
[ "${#specs[@]}" -ge 25 ] && ok || bad "only ${#specs[@]} example specs in wmtune workloads"
n=0
for spec in "${specs[@]}"; do
  n=$((n + 1))
  if "$WM" compile -w "$spec" --target cuda --emit ptx -o "$TMP/k$n.ptx" >"$TMP/out.txt" 2>&1 \
    && grep -q '^\.entry\|\.visible \.entry' "$TMP/k$n.ptx"; then
    ok
  else
    bad "compile --target cuda --emit ptx -w $spec"
    tail -3 "$TMP/out.txt"
    continue
  fi
  if [ -n "$PTXAS" ]; then
    "$PTXAS" -arch=sm_90 -o /dev/null "$TMP/k$n.ptx" 2>"$TMP/ptxas.txt" && [ ! -s "$TMP/ptxas.txt" ] \
      && ok || { bad "ptxas rejects the PTX of $spec"; head -5 "$TMP/ptxas.txt"; }
  fi
done

# A tiled schedule with shared memory: loops, emulator check, PTX with barriers.
G="$HERE/../schedule/schedules/gemm_gpu_sssrrsrs.json"
expect 0 "check \(GPU emulator, 1 kernels\): max relative error .* \(ok\)" -- \
  compile -w gemm:M=64,N=64,K=64 --schedule "$G" --target cuda --emit loops --check
expect 0 "block \([0-9]+, 1, 1\)" -- compile -w gemm:M=64,N=64,K=64 --schedule "$G" --target cuda
expect 0 "bar\.sync" -- compile -w gemm:M=64,N=64,K=64 --schedule "$G" --target cuda --emit ptx
expect 0 "llvm\.nvvm\.barrier0" -- compile -w gemm:M=64,N=64,K=64 --schedule "$G" --target cuda --emit llvm
expect 0 "\.target sm_80" -- compile -w gemm:M=8,N=8,K=8 --target cuda --arch sm_80 --emit ptx

# Refusals.
expect 2 "--arch sm_9x: not an SM version" -- compile -w gemm:M=8,N=8,K=8 --target cuda --arch sm_9x
expect 2 "--arch sm_90: only for --target cuda" -- compile -w gemm:M=8,N=8,K=8 --arch sm_90
expect 2 "--emit ptx: PTX is for --target cuda" -- compile -w gemm:M=8,N=8,K=8 --emit ptx
expect 2 "is bound to blockIdx.x: a GPU schedule; the CPU cannot run it" -- \
  compile -w gemm:M=64,N=64,K=64 --schedule "$G" --emit llvm
expect 2 "not an object file" -- compile -w gemm:M=8,N=8,K=8 --target cuda --emit obj -o "$TMP/x.o"
expect 2 "export --target cuda" -- export -w gemm:M=8,N=8,K=8 --target cuda -o "$TMP/exp"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  for cmd in "measure -w gemm:M=8,N=8,K=8" "tune -w gemm:M=8,N=8,K=8 --trials 1 --log $TMP/t.jsonl"; do
    # shellcheck disable=SC2086
    expect 2 "--target cuda: no libcuda\.so\.1 \(the NVIDIA driver is not installed\)" -- $cmd --target cuda
  done
  [ ! -e "$TMP/t.jsonl" ] && ok || bad "tune --target cuda without a device wrote a log"
else
  echo "gpu_tests: libcuda.so.1 is installed here; the no-driver messages were not checked"
fi

echo "gpu cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
