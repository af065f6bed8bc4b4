#!/usr/bin/env bash
# Held-out ranking check of the world model (docs/world-model.md, "Offline evaluation"): splits
# a tuning log by task (in order of first appearance; fold F holds out the tasks whose index i
# has i % EVERY == F), trains a checkpoint on the other tasks per fold and seed, and runs
# `wmtune eval-model` on the held-out ones. Prints one line per fold and seed, and the means:
# pairwise accuracy; top-1 and top-5, TenSet's latency-weighted scores (one slow task
# dominates a fold: compare means over folds); top-1 and top-5 averaged over the tasks.
# usage: bash scripts/heldout.sh LOG OUT_DIR [WMTUNE] [SEEDS] [STEPS] [EVERY] [FOLDS]
#   defaults: build/apps/wmtune/wmtune, "1 2 3", 2000, 5, "4"
# TRAIN_FLAGS (environment): more flags for `wmtune train`, e.g. "--wm-dynamics 0"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
log="$1" out="$2"
wm="${3:-$root/build/apps/wmtune/wmtune}"
seeds="${4:-1 2 3}" steps="${5:-2000}" every="${6:-5}" folds="${7:-4}"
mkdir -p "$out"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
sum="" n=0
for f in $folds; do
  "$py" - "$log" "$out/fold$f" "$every" "$f" <<'PY'
import json, os, sys
log, out, every, fold = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
order, lines = [], []
with open(log) as f:
    for line in f:
        if not line.strip():
            continue
        task = json.loads(line)["task"]
        if task not in order:
            order.append(task)
        lines.append((task, line if line.endswith("\n") else line + "\n"))
held = {t for i, t in enumerate(order) if i % every == fold}
# written whole: temporary names, renamed once complete
with open(out + "/train.jsonl.tmp", "w") as a, open(out + "/heldout.jsonl.tmp", "w") as b:
    for task, line in lines:
        (b if task in held else a).write(line)
for name in ("train.jsonl", "heldout.jsonl"):
    os.replace(f"{out}/{name}.tmp", f"{out}/{name}")
print(f"fold {fold}: {len(order)} tasks, {len(held)} held out", file=sys.stderr)
PY
  for s in $seeds; do
    d="$out/fold$f"
    # shellcheck disable=SC2086
    "$wm" train "$d/train.jsonl" -o "$d/seed$s.pt" --steps "$steps" --seed "$s" ${TRAIN_FLAGS:-} \
      >/dev/null
    "$wm" eval-model --model "$d/seed$s.pt" "$d/heldout.jsonl" --json "$d/seed$s.json" >/dev/null
    line=$("$py" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["pairwise"], m["top1"], m["top5"], m["top1_task"], m["top5_task"])' "$d/seed$s.json")
    echo "fold $f seed $s: pairwise top-1 top-5 task-top-1 task-top-5 = $line"
    sum="$sum$line\n" n=$((n + 1))
  done
done
printf "$sum" | awk -v n="$n" '{p+=$1; a+=$2; b+=$3; c+=$4; d+=$5} END {
  printf "mean of %d: pairwise %.3f  top-1 %.3f  top-5 %.3f  task-top-1 %.3f  task-top-5 %.3f\n",
    n, p/n, a/n, b/n, c/n, d/n}'
