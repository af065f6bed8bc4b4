#!/usr/bin/env bash
# Determinism: the same `tune --seed` in two processes proposes the same candidates, round after
# round, for every cost model. Costs come from --simulated-costs (a hash of the schedule), so
# the second round depends on the first round's "measurements" identically in both processes;
# a third run with another seed must differ (the check can fail).
# usage: determinism.sh PATH/TO/wmtune [cost models...]
set -u
WM="$1"
shift
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(random ansor wm)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"

for m in "${MODELS[@]}"; do
  # 3 rounds of 8 over two tasks (round 3 is the second round of the first task).
  args=(tune -w gemm:M=64,N=64,K=64 -w conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1 --trials 24 --per-round 8
        --population 256 --generations 2 --cost-model "$m" --simulated-costs)
  for run in a b; do
    "$WM" "${args[@]}" --seed 7 --log "$TMP/$m-$run.jsonl" >"$TMP/$m-$run.out" 2>&1 || bad "$m run $run failed: $(tail -3 "$TMP/$m-$run.out")"
  done
  "$WM" "${args[@]}" --seed 8 --log "$TMP/$m-c.jsonl" >"$TMP/$m-c.out" 2>&1 || bad "$m run c failed"
  # The candidates (task and steps, in order) of each run.
  for run in a b c; do
    /usr/bin/python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if not r.get("remeasure"): print(r["task"], json.dumps(r["steps"]))' "$TMP/$m-$run.jsonl" >"$TMP/$m-$run.cands"
  done
  n=$(wc -l <"$TMP/$m-a.cands")
  if [ "$n" -eq 24 ]; then ok; else bad "$m: $n candidates, expected 24"; fi
  if cmp -s "$TMP/$m-a.cands" "$TMP/$m-b.cands"; then ok; else
    bad "$m: two processes with --seed 7 proposed different candidates"
    diff "$TMP/$m-a.cands" "$TMP/$m-b.cands" | head -4
  fi
  if ! cmp -s "$TMP/$m-a.cands" "$TMP/$m-c.cands"; then ok; else bad "$m: --seed 8 proposed the same candidates as --seed 7"; fi
done
echo "determinism: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
