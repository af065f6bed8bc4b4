#!/usr/bin/env bash
# End-to-end tests on generated ONNX models: tasks, run --check (libtorch reference), tune on a
# model and run with its log, .npy inputs and outputs, malformed files.
# usage: model_tests.sh PATH/TO/wmtune MODELS_DIR [ONNX_NODE_TESTS_DIR]
#   (MODELS_DIR from scripts/gen_models.py; the node tests give the reference executor's edge cases)
set -u
WM="$1"
M="$2"
NODE="${3:-}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
py=/usr/bin/python3
[ -x "$py" ] || py=python3
. "$(dirname "$0")/lib.sh"

# tasks: sensible task tables. ResNet-18 has fewer tasks than convs (dedup); weights sum to the
# number of fused subgraphs; every model has anchors fused with their element-wise consumers.
check_tasks() { # model min_tasks max_tasks must_have_ops
  local model="$1" lo="$2" hi="$3" ops="$4"
  "$WM" tasks --json "$M/$model.onnx" >"$TMP/$model.json" 2>&1 || { bad "tasks $model failed"; return; }
  if "$py" - "$TMP/$model.json" "$lo" "$hi" "$ops" <<'PY'; then ok; else bad "tasks $model is not sensible"; fi
import json, sys
j = json.load(open(sys.argv[1]))
lo, hi, ops = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
tasks, groups = j["tasks"], j["groups"]
assert lo <= len(tasks) <= hi, len(tasks)
assert sum(t["weight"] for t in tasks) == len(groups), "weights do not sum to the subgraph count"
assert len({t["key"] for t in tasks}) == len(tasks)
names = {t["ops"] for t in tasks}
for o in ops:
    assert o in names, (o, sorted(names))
assert all(t["flops"] >= 0 and len(t["key"]) == 16 for t in tasks)
PY
}
check_tasks resnet18 10 19 "Conv+Relu,Conv+Add+Relu,MaxPool,GlobalAveragePool,Gemm"
check_tasks mobilenetv2 15 40 "Conv+Clip,Conv+Add,Gemm"
check_tasks bert 8 24 "Softmax,MatMul+Add+Add"
check_tasks mlp 3 4 "Gemm+Relu,Softmax"
convs=$("$py" -c "import onnx,sys; print(sum(n.op_type=='Conv' for n in onnx.load(sys.argv[1]).graph.node))" "$M/resnet18.onnx")
ntasks=$("$py" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['tasks']))" "$TMP/resnet18.json")
if [ "$ntasks" -lt "$convs" ]; then ok; else bad "resnet18: $ntasks tasks for $convs convs"; fi
expect 0 'fused subgraphs, [0-9]+ tasks' -- tasks "$M/resnet18.onnx"

# run --check: every generated model matches the libtorch reference executor
for model in resnet18 resnet50 mobilenetv2 bert vit mlp; do
  expect 0 'max abs error .* -> ok' -- run "$M/$model.onnx" --check
done
expect 0 'bench \(.*wmtune [0-9.]+ ms \(IQR [0-9.]+\), libtorch reference executor [0-9.]+ ms.*not a speed baseline' -- run "$M/mlp.onnx" --bench --repeat 3 --min-ms 5
expect 0 'kernels: 4 kernels timed alone sum to [0-9.]+ ms' -- run "$M/mlp.onnx" --bench --repeat 3 --min-ms 5
expect 0 '^ +[0-9.]+ ms +[0-9.]+% +[0-9.]+ GFLOP/s +x1 +heuristic +Gemm\+Relu' -- run "$M/mlp.onnx" --bench --repeat 3 --min-ms 5
# tasks without a record: the heuristic schedule (default), the world model's guess, or the
# naive schedule
expect 0 '4 tasks \(0 tuned from the log, 4 heuristic, 0 default schedules\)' -- run "$M/mlp.onnx"
expect 0 '4 tasks \(0 tuned from the log, 4 guessed by the world model in [0-9.]+ s, 0 default schedules\)' -- run "$M/mlp.onnx" --untuned guess
expect 0 '4 tasks \(0 tuned from the log, 4 default schedules\)' -- run "$M/mlp.onnx" --untuned naive
expect 2 "untuned" -- run "$M/mlp.onnx" --untuned best

# the libtorch reference executor agrees with wmtune (whose kernels match ONNX's expected
# outputs) on padding, pooling and transposed-conv edge cases of the ONNX node tests
if [ -n "$NODE" ]; then
  for t in averagepool_2d_pads_count_include_pad averagepool_2d_pads averagepool_2d_ceil averagepool_2d_same_upper \
           averagepool_3d_default maxpool_2d_pads maxpool_2d_same_lower maxpool_2d_dilations maxpool_2d_ceil \
           conv_with_autopad_same conv_with_strides_and_asymmetric_padding convtranspose_pads \
           layer_normalization_4d_axis1 softmax_axis_1 gemm_all_attributes dropout_default_mask; do
    [ -f "$NODE/test_$t/model.onnx" ] || continue
    expect 0 'max abs error .* -> ok' -- run "$NODE/test_$t/model.onnx" --check
  done
fi

# .npy in and out: the same input file gives the same output file; a named output works
"$py" -c "import numpy as np; np.save('$TMP/x.npy', np.random.RandomState(0).randn(8, 256).astype(np.float32))"
expect 0 'output output f32\[8,10\]' -- run "$M/mlp.onnx" --input "$TMP/x.npy" --output "$TMP/y1.npy"
expect 0 'output' -- run "$M/mlp.onnx" --input "input=$TMP/x.npy" --output "output=$TMP/y2.npy"
if cmp -s "$TMP/y1.npy" "$TMP/y2.npy"; then ok; else bad "same input, different outputs"; fi
if "$py" -c "import numpy as np; y=np.load('$TMP/y1.npy'); assert y.shape==(8,10) and abs(y.sum(1)-1).max()<1e-5"; then ok; else bad "softmax output rows do not sum to 1"; fi
"$py" -c "import numpy as np; np.save('$TMP/bad.npy', np.zeros((3, 3), np.float32))"
expect 2 "shape does not match input 'input'" -- run "$M/mlp.onnx" --input "$TMP/bad.npy"
cp "$M/not_onnx.onnx" "$TMP/fake.npy"
expect 2 "not a .npy file" -- run "$M/mlp.onnx" --input "$TMP/fake.npy"
expect 2 "no such file" -- run "$M/mlp.onnx" --log "$TMP/none.jsonl"

# tune on a model: one log for all its tasks; run with that log uses the tuned kernels
expect 0 'trials  *errors' -- tune "$M/mlp.onnx" --trials 8 --per-round 2 --log "$TMP/mlp.jsonl" --population 64 --generations 1 --min-ms 5
if "$py" - "$TMP/mlp.jsonl" <<'PY'; then ok; else bad "model tuning log"; fi
import json, sys
all_recs = [json.loads(l) for l in open(sys.argv[1])]
recs = [r for r in all_recs if not r.get("remeasure")]
assert len(recs) == 8, len(recs)
# each task's best few were re-measured (states measured before, once each)
again = [json.dumps([r["task"], r["steps"]]) for r in all_recs if r.get("remeasure")]
assert again and len(set(again)) == len(again)
assert set(again) <= {json.dumps([r["task"], r["steps"]]) for r in recs}
assert all(r["workload"].startswith("onnx:") and r["workload"].endswith("#" + r["task"]) for r in recs)
assert len({r["task"] for r in recs}) == 4
assert any(r["error"] == "none" for r in recs)
PY
expect 0 '[1-4] tuned from the log' -- run "$M/mlp.onnx" --log "$TMP/mlp.jsonl" --check

# run --bench-json: the timings as JSON, written whole; without --bench it is refused
expect 0 'bench \(' -- run "$M/mlp.onnx" --log "$TMP/mlp.jsonl" --bench --bench-json "$TMP/run.json" --repeat 3 --min-ms 5
"$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ms"] > 0 and j["kernels_sum_ms"] > 0 and j["kernels"] >= 4 and j["reference_executor_ms"] > 0, j' "$TMP/run.json" && ok || bad "run --bench-json"
expect 2 'needs --bench' -- run "$M/mlp.onnx" --bench-json "$TMP/run2.json"

# bench of a model: the cell's whole model is run with its log and that run is what the
# baselines are compared with; a rerun keeps it; a missing whole-model record is made again
cat >"$TMP/mb.yaml" <<YAML
name: mb
target: llvm
threads: 1
trials: [2]
per-task: true
seeds: [1]
workloads:
  - model: $M/mlp.onnx
tune:
  min-ms: 5
  population: 64
  generations: 1
configs:
  ansor: {cost-model: ansor}
baselines:
  - name: fixed
    command: "echo '{\"ms\": 1.5}'"
YAML
"$WM" bench "$TMP/mb.yaml" -o "$TMP/mb" >"$TMP/mb.txt" 2>&1 && ok || { bad "bench of a model failed"; tail "$TMP/mb.txt"; }
check_model_bench() { # expected number of model_run records
  "$py" - "$TMP/mb" "$1" <<'PY'
import json, sys
out, want = sys.argv[1], int(sys.argv[2])
recs = [json.loads(l) for l in open(out + "/results.jsonl")]
cells = [r for r in recs if r["type"] == "cell"]
runs = [r for r in recs if r["type"] == "model_run"]
assert len(cells) == 1 and len(runs) == want, (len(cells), len(runs))
r = runs[-1]
assert r["id"] == cells[0]["id"] and "error" not in r, r
assert r["ms"] > 0 and r["kernels_sum_ms"] > 0 and r["reference_executor_ms"] > 0, r
md = open(out + "/summary.md").read()
assert "## Whole models, end to end" in md and "(whole model)" in md, md
s = json.load(open(out + "/summary.json"))
wm = s["workloads"][0]["whole_model"]["ansor"]
assert abs(wm["latency_s_geomean"] - r["ms"] * 1e-3) < 1e-9 * max(1, r["ms"]), (wm, r)
# the baseline ratio is the whole model's: 1.5 ms / its ms
line = [l for l in md.splitlines() if "(whole model)" in l][0]
ratio = float(line.split("|")[2])
assert abs(ratio - 1.5 / r["ms"]) <= 0.006 * max(1, 1.5 / r["ms"]), (line, r["ms"])
assert any(",whole-model:ansor," in l for l in open(out + "/summary.csv")), "csv row"
PY
}
check_model_bench 1 && ok || bad "bench of a model: whole-model run not recorded or reported"
"$WM" bench "$TMP/mb.yaml" -o "$TMP/mb" >"$TMP/mb2.txt" 2>&1 && ok || bad "bench rerun failed"
check_model_bench 1 && ok || bad "bench rerun ran the whole model again"
grep -v '"model_run"' "$TMP/mb/results.jsonl" >"$TMP/r.jsonl" && mv "$TMP/r.jsonl" "$TMP/mb/results.jsonl"
"$WM" bench "$TMP/mb.yaml" -o "$TMP/mb" >"$TMP/mb3.txt" 2>&1 && ok || bad "bench rerun failed"
check_model_bench 1 && ok || bad "bench rerun did not make the missing whole-model run"
grep -q 'whole model' "$TMP/mb3.txt" && ok || bad "bench did not say it ran the whole model"

# the world model: tune records `wm` as the model; train writes a checkpoint that tune and
# eval-model read; a file that is not a checkpoint is refused
expect 0 'trials  *errors' -- tune -w gemm:M=64,N=64,K=64 --cost-model wm --trials 12 --per-round 6 --log "$TMP/wm.jsonl" --population 64 --generations 1 --min-ms 5
if "$py" -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; f=[x for x in r if not x.get('remeasure')]; assert len(f)==12 and all(x['model']=='wm' for x in r)" "$TMP/wm.jsonl"; then ok; else bad "wm records"; fi
expect 0 'wrote .*wm.pt' -- train "$TMP/wm.jsonl" "$TMP/mlp.jsonl" --onnx "$M/mlp.onnx" -o "$TMP/wm.pt" --steps 20 --wm-latent 16 --wm-hidden 32
expect 0 'trials  *errors' -- tune -w gemm:M=64,N=64,K=32 --cost-model wm --init "$TMP/wm.pt" --trials 4 --log "$TMP/wm2.jsonl" --population 32 --generations 1 --min-ms 5
expect 0 'pairwise accuracy +[0-9.]+' -- eval-model --model "$TMP/wm.pt" "$TMP/mlp.jsonl" --onnx "$M/mlp.onnx"
# a log is data: its onnx: workloads resolve only among the models given with --onnx
expect 2 'names the model .*mlp.onnx, which was not given' -- eval-model --model random "$TMP/mlp.jsonl"
expect 0 'also in the training logs' -- eval-model --model ansor --train "$TMP/wm.jsonl" "$TMP/wm.jsonl"
expect 2 'not a world-model checkpoint' -- tune -w gemm:M=64,N=64,K=64 --cost-model wm --init "$M/not_onnx.onnx" --trials 1 --log "$TMP/x.jsonl"
expect 2 'no such file' -- tune -w gemm:M=64,N=64,K=64 --cost-model wm --init "$TMP/none.pt" --trials 1 --log "$TMP/x.jsonl"
expect 2 'no such file' -- train "$TMP/none.jsonl" -o "$TMP/x.pt"

# malformed files: exit 2 and a message naming the problem
for cmd in tasks run tune; do
  expect 2 "truncated.onnx: not an ONNX model" -- $cmd "$M/truncated.onnx"
  expect 2 "not_onnx.onnx: not an ONNX model" -- $cmd "$M/not_onnx.onnx"
  expect 2 "cycle.onnx: the graph has a cycle: node 'first'" -- $cmd "$M/cycle.onnx"
  expect 2 "missing_initializer.onnx: node 'proj' \(MatMul\) reads 'w'.*missing initializer" -- $cmd "$M/missing_initializer.onnx"
done
expect 2 "cannot open" -- tasks "$TMP/nope.onnx"

# The default GPU schedule of every task of every model (what `run --target cuda` uses without
# a log) compiles to PTX that ptxas accepts (model tasks' names are no PTX identifiers as they
# are); the MLP's also run in the GPU-semantics emulator.
PTXAS="${WM_PTXAS:-}"
[ -z "$PTXAS" ] && [ -x /usr/local/cuda/bin/ptxas ] && PTXAS=/usr/local/cuda/bin/ptxas
[ -z "$PTXAS" ] && echo "*** model_tests: SKIPPED assembling with ptxas: none found ***"
for model in mlp resnet18 bert mobilenetv2 vit; do
  keys=$("$WM" tasks --json "$M/$model.onnx" | "$py" -c 'import json, sys
print(" ".join(t["key"] for t in json.load(sys.stdin)["tasks"]))')
  for k in $keys; do
    spec="onnx:$M/$model.onnx#$k"
    if ! "$WM" compile -w "$spec" --schedule default --target cuda --emit ptx -o "$TMP/k.ptx" \
      >"$TMP/out.txt" 2>&1; then
      bad "compile -w $spec --schedule default --target cuda"
      tail -2 "$TMP/out.txt"
      continue
    fi
    ok
    if [ -n "$PTXAS" ]; then
      "$PTXAS" -arch=sm_90 -o /dev/null "$TMP/k.ptx" && ok || bad "ptxas rejects the PTX of $spec"
    fi
    if [ "$model" = mlp ]; then
      expect 0 "check \(GPU emulator, [0-9]+ kernels\): max relative error .* \(ok\)" -- \
        compile -w "$spec" --schedule default --target cuda --emit loops --check
    fi
  done
done

echo "models: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
