#!/usr/bin/env bash
# The export benchmark (docs/export.md, "Speed"): ResNet-18 and BERT are tuned once, exported
# with that log as C libraries, and timed side by side in one run, 3 rounds alternating:
#   - `wmtune run MODEL --log LOG --bench` (wmtune's own graph executor, the median it prints)
#   - test/export/model_test.c's `bench` mode linked against the exported libNAME.so (median of
#     single runs after 3 warm-ups) and the time wm_model_open takes (median of 5 opens)
# with this machine's FMA peak measured before and after. Writes OUT/export-bench.md.
# usage: benchmarks/export_models.sh BUILD_DIR MODELS_DIR OUT_DIR [TRIALS_PER_MODEL] [SECONDS]
set -euo pipefail
BUILD="$1" MODELS="$2" OUT="$3" TRIALS="${4:-64}" SECONDS_PER="${5:-3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WM="$BUILD/apps/wmtune/wmtune"
PEAK="$BUILD/benchmarks/wm_fma_peak"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE # benchmark runs only (benchmarks/README.md)
mkdir -p "$OUT"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" - "$OUT" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
np.save(f"{sys.argv[1]}/resnet18.npy", rng.standard_normal((1, 3, 224, 224), dtype=np.float32))
np.save(f"{sys.argv[1]}/bert.npy", rng.standard_normal((1, 128, 768), dtype=np.float32))
PY

for m in resnet18 bert; do
  [ -s "$OUT/$m.jsonl" ] || "$WM" tune "$MODELS/$m.onnx" --trials "$TRIALS" --seed 0 \
    --log "$OUT/$m.jsonl" >"$OUT/$m.tune.txt" 2>&1
  "$WM" export "$MODELS/$m.onnx" --log "$OUT/$m.jsonl" -o "$OUT/$m.lib" --name net --force \
    >"$OUT/$m.export.txt" 2>&1
  cc -std=c99 -O2 -Wall -Werror -I"$HERE/../test/export" -I"$OUT/$m.lib" \
    "$HERE/../test/export/model_test.c" -L"$OUT/$m.lib" -lnet -lm -Wl,-rpath,"$OUT/$m.lib" \
    -lpthread -o "$OUT/$m.bench"
done

peak0=$("$PEAK" | awk '{print $2}')
rows=()
for round in 1 2 3; do
  for m in resnet18 bert; do
    ours=$("$WM" run "$MODELS/$m.onnx" --log "$OUT/$m.jsonl" --input "$OUT/$m.npy" --bench 2>&1 \
      | sed -n 's/^bench (.*): wmtune \([0-9.]*\) ms.*/\1/p')
    read -r open lib < <("$OUT/$m.bench" bench - 0 "$SECONDS_PER" "$OUT/$m.npy" \
      | awk '/^bench/ {print $3, $5}')
    ratio=$(awk -v a="$lib" -v b="$ours" 'BEGIN {printf "%.3f", a / b}')
    rows+=("| $round | $m | $ours | $lib | $ratio | $open |")
    echo "round $round $m: wmtune run $ours ms, library $lib ms, open $open ms"
  done
done
peak1=$("$PEAK" | awk '{print $2}')

{
  echo "| round | model | \`wmtune run --bench\` ms | exported library ms | library / run | wm_model_open ms |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "FMA peak $peak0 GFLOP/s before, $peak1 GFLOP/s after ($(nproc) threads); tuned with"
  echo "\`wmtune tune MODEL --trials $TRIALS --seed 0\`; $(date -u +%Y-%m-%d)."
} >"$OUT/export-bench.md"
cat "$OUT/export-bench.md"
