#!/usr/bin/env bash
# CLI tests: run the wmtune binary and check its output and exit codes.
# usage: cli_tests.sh PATH/TO/wmtune PATH/TO/test/schedule
set -u
WM="$1"
SCHED="$2/schedules"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"

expect 0 '^wmtune [0-9]+\.[0-9]+\.[0-9]+$' -- --version
expect 0 'workloads' -- --help
expect 0 'tasks' -- --help
expect 0 'Workload spec' -- tasks --help

# workloads lists every operator family the library has.
out=$("$WM" workloads)
for op in gemm dense batch_matmul conv1d conv2d depthwise_conv2d conv3d conv2d_transpose \
          max_pool2d avg_pool2d global_avg_pool2d bias_add relu clip relu6 sigmoid tanh gelu \
          add sub mul div batch_norm softmax layer_norm norm conv2d_bias_relu conv2d_cl_bias_relu \
          dense_bias_gelu; do
  if grep -qE "^$op " <<<"$out"; then ok; else bad "workloads does not list $op"; fi
done
expect 0 'conv2d_pad\[' -- workloads conv2d
expect 2 "unknown op 'nope'" -- workloads nope

# tasks: the documented conv2d spelling has 231,211,008 FLOPs; keys are 16 hex digits.
expect 0 'FLOPs  231,211,008' -- tasks -w conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1
expect 0 'key    [0-9a-f]{16}' -- tasks -w gemm:M=1024,N=1024,K=1024
expect 0 'C\[i, j\] = sum\(k < 1024\)' -- tasks -w gemm:M=1024,N=1024,K=1024
expect 0 'batch_matmul' -- tasks -w batch_matmul:B=12,M=128,N=128,K=64 -w softmax:M=128,N=1024
k1=$("$WM" tasks -w gemm:M=64,N=64,K=64 | grep key)
k2=$("$WM" tasks -w matmul:M=64,N=64,K=64 | grep key)
if [ "$k1" = "$k2" ] && [ -n "$k1" ]; then ok; else bad "gemm and matmul of one shape differ in key"; fi

# JSON output parses and carries the FLOPs.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if "$WM" tasks --json -w gemm:M=8,N=8,K=8 | "$py" -c \
    'import json,sys; d=json.load(sys.stdin); assert d[0]["flops"]==1024, d'; then ok; else bad "tasks --json"; fi

# Bad input: a message naming the bad part, exit code 2, no crash.
expect 2 "unknown op 'gemmm'" -- tasks -w gemmm:M=1
expect 2 "M=0 must be >= 1" -- tasks -w gemm:M=0,N=4,K=4
expect 2 "missing parameter 'K'" -- tasks -w gemm:M=4,N=4
expect 2 "workload 'conv2d:C=6,H=8,W=8,K=4,R=3,S=3,groups=4'" -- tasks -w conv2d:C=6,H=8,W=8,K=4,R=3,S=3,groups=4
expect 2 "workload" -- tasks
expect 2 "bogus" -- --bogus
expect 2 "" -- frobnicate
# A bad spec after a good one: nothing is printed for the good one.
out=$("$WM" tasks -w gemm:M=4,N=4,K=4 -w gemm:M=x 2>/dev/null)
if [ -z "$out" ]; then ok; else bad "partial output before a bad spec"; fi

# compile: lowering, checking, pass printing, and bad schedule files.
expect 0 'C\[i, j\] = C\[i, j\] \+ A\[i, k\] \* B\[k, j\]' -- compile -w gemm:M=8,N=8,K=4 --emit loops
expect 0 'check: max relative error .* \(ok\)' -- compile -w gemm:M=64,N=64,K=64 --schedule "$SCHED/gemm_cpu_ssrsrs.json" --check
expect 0 'allocate A.shared: f32\[16, 8\] shared' -- compile -w gemm:M=64,N=64,K=64 --schedule "$SCHED/gemm_gpu_sssrrsrs.json"
expect 0 '\(ok\)' -- compile -w conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1 --schedule "$SCHED/conv2d_cpu_ssrsrs.json" --check
expect 0 '// after remove_no_ops' -- compile -w relu:shape=4 --print-after-all
# --schedule heuristic: run's untuned schedule; a prime row count gets partial tiles whose
# guards hoist_guards tests once per tile (an else branch), and it computes the reference.
# The register tile follows the target's vector registers (AVX-512: 4 rows of 4 vectors;
# AVX2: 6 of 2), named here so the test does not depend on this machine's CPU.
expect 0 'SP\(stage 2, loop 0, extent 197, \[1, 5, 4\]' -- compile -w gemm:M=197,N=64,K=16 --schedule heuristic --emit steps --mcpu x86-64-v4
expect 0 'SP\(stage 2, loop 0, extent 197, \[1, 11, 6\]' -- compile -w gemm:M=197,N=64,K=16 --schedule heuristic --emit steps --mcpu x86-64-v3
expect 0 '^  else$' -- compile -w gemm:M=197,N=64,K=16 --schedule heuristic --emit loops
expect 0 'check: max relative error .* \(ok\)' -- compile -w gemm:M=197,N=64,K=16 --schedule heuristic --check
expect 2 '--schedule heuristic: CPU targets only' -- compile -w gemm:M=8,N=8,K=8 --schedule heuristic --target cuda
expect 0 'pass simplify' -- compile -w relu:shape=4 --time-passes
expect 0 '0: CHW\(stage 2, local\)' -- compile -w gemm:M=64,N=64,K=64 --schedule "$SCHED/gemm_cpu_ssrsrs.json" --emit steps
expect 0 'C.local \(local\) = ' -- compile -w gemm:M=64,N=64,K=64 --schedule "$SCHED/gemm_cpu_ssrsrs.json" --emit state
expect 2 "$TMP/none.json: cannot read" -- compile -w gemm:M=8,N=8,K=8 --schedule "$TMP/none.json"
echo '[["SP",2,0,8,[2],1],' >"$TMP/trunc.json"
expect 2 "trunc.json: invalid JSON" -- compile -w gemm:M=8,N=8,K=8 --schedule "$TMP/trunc.json"
echo '[["SP",2,0,8,[2],1],["SP",2,9,8,[2],1]]' >"$TMP/bad.json"
expect 2 "bad.json: step 1 \(SP\(stage 2, loop 9.*loop 9 out of range" -- compile -w gemm:M=8,N=8,K=8 --schedule "$TMP/bad.json"
echo '[["CA",0,2,0]]' >"$TMP/ph.json"
expect 2 "ph.json: step 0 .*is a placeholder" -- compile -w gemm:M=8,N=8,K=8 --schedule "$TMP/ph.json"
echo '[["SP",2,0,8,[null],1]]' >"$TMP/open.json"
expect 2 "unknown extent" -- compile -w gemm:M=8,N=8,K=8 --schedule "$TMP/open.json"
expect 2 "emit" -- compile -w gemm:M=8,N=8,K=8 --emit pdf

# compile to machine code, and measure.
expect 0 'define void @C\(ptr' -- compile -w gemm:M=8,N=8,K=8 --emit llvm
expect 0 'vfmadd[0-9]+ps' -- compile -w gemm:M=64,N=64,K=64 --schedule "$SCHED/gemm_cpu_ssrsrs.json" --emit asm --mcpu x86-64-v4
expect 2 'give -o FILE' -- compile -w gemm:M=8,N=8,K=8 --emit obj
expect 0 '' -- compile -w gemm:M=8,N=8,K=8 --emit obj -o "$TMP/k.o"
if [ "$(head -c 4 "$TMP/k.o" | od -An -c | tr -d ' ')" = "177ELF" ]; then ok; else bad "--emit obj did not write an ELF object"; fi
expect 0 'check    max relative error .* \(ok\)' -- measure -w gemm:M=64,N=64,K=64 --schedule "$SCHED/gemm_cpu_ssrsrs.json" --min-ms 5
expect 0 'GFLOP/s' -- measure -w relu:shape=1000 --min-ms 5 --threads 1
expect 0 '"error": "none"' -- measure -w softmax:M=16,N=64 --min-ms 5 --json
expect 2 "unknown op 'nope'" -- measure -w nope:x=1
expect 2 "$TMP/none.json: cannot read" -- measure -w gemm:M=8,N=8,K=8 --schedule "$TMP/none.json"

# tune: kill -9 in the middle of a run, then rerun with the same log: exactly the requested
# number of distinct measured states, none repeated.
LOG="$TMP/kill.jsonl"
TUNE=(tune -w gemm:M=32,N=32,K=32 --trials 12 --per-round 4 --population 64 --min-ms 1 --log "$LOG" --seed 3)
"$WM" "${TUNE[@]}" >"$TMP/tune1.out" 2>&1 &
tpid=$!
for _ in $(seq 1 300); do
  [ -f "$LOG" ] && [ "$(wc -l <"$LOG")" -ge 3 ] && break
  sleep 0.1
done
kill -9 "$tpid" 2>/dev/null
wait "$tpid" 2>/dev/null
before=$(wc -l <"$LOG")
if [ "$before" -ge 3 ] && [ "$before" -lt 12 ]; then ok; else bad "kill -9 came at $before records"; fi
expect 0 'trials  *errors' -- "${TUNE[@]}"
if "$py" - "$LOG" <<'PY'; then ok; else bad "resumed log is not 12 distinct records"; fi
import json, sys
recs = [r for r in (json.loads(l) for l in open(sys.argv[1])) if not r.get("remeasure")]
keys = [json.dumps(r["steps"]) for r in recs]
assert len(recs) == 12, len(recs)
assert len(set(keys)) == 12
PY
expect 0 'trials' -- "${TUNE[@]}" --json "$TMP/s.json"
if grep -q '"best_latency_s"' "$TMP/s.json" && grep -q '"trials": 12' "$TMP/s.json"; then ok; else bad "tune --json"; fi
expect 2 "not a tuning record" -- tune -w gemm:M=8,N=8,K=8 --trials 1 --log "$TMP/trunc.json"

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
