#!/usr/bin/env bash
# Regenerates the shipped world-model checkpoint (models/wm-cpu-x86_64.pt):
#  1. builds a training set by tuning configs/train-cpu.workloads (shapes disjoint from the
#     evaluation suite) with the `ansor` model, TRIALS measurements per workload (default 48),
#     into out/pretrain/train.jsonl (resumed if present);
#  2. trains the world model on it (STEPS Adam steps, default 3000) and writes the checkpoint.
# usage: bash scripts/pretrain.sh [OUTPUT.pt]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WM_BUILD_DIR:-$root/build}"
wm="$build/apps/wmtune/wmtune"
out="${1:-$root/models/wm-cpu-x86_64.pt}"
mkdir -p "$root/out/pretrain" "$(dirname "$out")"
args=()
n=0
while read -r spec; do
  case "$spec" in ""|\#*) continue ;; esac
  args+=(-w "$spec")
  n=$((n + 1))
done <"$root/configs/train-cpu.workloads"
trials=$((n * ${TRIALS:-48}))
"$wm" tune "${args[@]}" --trials "$trials" --per-round 16 --strategy round-robin --cost-model ansor \
  --min-ms 20 --seed "${SEED:-7}" --log "$root/out/pretrain/train.jsonl"
"$wm" train "$root/out/pretrain/train.jsonl" -o "$out" --steps "${STEPS:-3000}" --seed "${SEED:-7}"
