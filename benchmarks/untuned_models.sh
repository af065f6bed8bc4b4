#!/usr/bin/env bash
# Untuned models side by side (docs/benchmarks.md, "Untuned models"): each generated model run
# by `wmtune run MODEL --bench` with no log under every --untuned choice, PyTorch (best of eager
# and TorchScript-frozen) and ONNX Runtime when installed, same threads, ROUNDS rounds
# alternating, with this machine's FMA peak measured before and after. Prints a Markdown table.
# usage: benchmarks/untuned_models.sh BUILD_DIR MODELS_DIR [ROUNDS] [CHOICES]
set -euo pipefail
BUILD="$1" MODELS="$2" ROUNDS="${3:-1}" CHOICES="${4:-heuristic guess naive}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WM="$BUILD/apps/wmtune/wmtune"
PEAK="$BUILD/benchmarks/wm_fma_peak"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE # benchmark runs only (benchmarks/README.md)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
threads=$(nproc)
peak0=$("$PEAK" | awk '{print $2}')
declare -A best
keep() { # keep the lowest of the rounds: key value
  local k="$1" v="$2"
  [ -n "$v" ] || return 0
  if [ -z "${best[$k]:-}" ] || awk -v a="$v" -v b="${best[$k]}" 'BEGIN{exit !(a<b)}'; then best[$k]="$v"; fi
}
models=(mlp resnet18 resnet50 mobilenetv2 bert vit)
for round in $(seq "$ROUNDS"); do
  for m in "${models[@]}"; do
    for c in $CHOICES; do
      keep "$m.$c" "$("$WM" run "$MODELS/$m.onnx" --bench --untuned "$c" 2>&1 \
        | sed -n 's/^bench (.*): wmtune \([0-9.]*\) ms.*/\1/p')"
    done
    keep "$m.pytorch" "$("$py" "$HERE/baselines/torch_model.py" "$MODELS/$m.onnx" --threads "$threads" \
      2>/dev/null | "$py" -c 'import json,sys; print(json.loads(sys.stdin.read())["ms"])' || true)"
    keep "$m.ort" "$("$py" "$HERE/baselines/ort_model.py" "$MODELS/$m.onnx" --threads "$threads" \
      2>/dev/null | "$py" -c 'import json,sys; print(json.loads(sys.stdin.read())["ms"])' || true)"
  done
done
peak1=$("$PEAK" | awk '{print $2}')
echo "FMA peak ${peak0} -> ${peak1} GFLOP/s, ${threads} threads, best of ${ROUNDS} round(s); ms"
echo
header="| model |"; rule="|---|"
for c in $CHOICES pytorch ort; do header+=" $c |"; rule+="---:|"; done
echo "$header"; echo "$rule"
for m in "${models[@]}"; do
  row="| $m |"
  for c in $CHOICES pytorch ort; do row+=" ${best[$m.$c]:-n/a} |"; done
  echo "$row"
done
