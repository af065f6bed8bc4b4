#!/usr/bin/env bash
# Reliability: hostile inputs get exit 2 and a message naming the bad part (never a signal,
# never exit 3), read-only commands never change a file, write errors are reported, files
# written whole survive a failed write, and one log has one writer. Each case is a
# reproduction from issue 14; docs/reliability.md says what is promised.
# usage: reliability.sh PATH/TO/wmtune
set -u
WM="$1"
TMP=$(mktemp -d)
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
G=gemm:M=16,N=16,K=16

# ---- schedules with absurd numbers (were SIGFPE, SIGSEGV or 10^12 iterations) ----
echo '[["SP",2,0,16,[4294967296,4294967296],1]]' >"$TMP/huge_split.json"
expect 2 "huge_split.json: step 0 .*split length 4294967296 is larger than any loop" -- compile -w $G --schedule "$TMP/huge_split.json" --check
echo '[["SP",2,0,16,[8,8],1]]' >"$TMP/over_split.json"
expect 2 "over_split.json: step 0 .*split lengths multiply to 64, more than the loop's extent 16" -- compile -w $G --schedule "$TMP/over_split.json" --check
echo '[["SA",2,0,9223372036854775807,0]]' >"$TMP/align.json"
expect 2 "align.json: step 0 .*storage_align factor 9223372036854775807" -- compile -w $G --schedule "$TMP/align.json" --check
echo '[["SP",4294967298,0,16,[4],1]]' >"$TMP/stage_wrap.json"
expect 2 "stage_wrap.json: .*stage.* 4294967298 is out of range" -- compile -w $G --schedule "$TMP/stage_wrap.json"
# ---- workload shapes that overflow (were SIGSEGV) ----
expect 2 "relu:shape=4294967296x4294967296.*elements" -- compile -w relu:shape=4294967296x4294967296 --check
expect 2 "gemm:M=4294967296,N=4294967296,K=4294967296.*elements" -- compile -w gemm:M=4294967296,N=4294967296,K=4294967296
expect 2 "depthwise_conv2d.*" -- tasks -w depthwise_conv2d:N=1,C=4611686018427387904,H=8,W=8,multiplier=4,R=3,S=3
expect 2 "dilation" -- tasks -w conv2d:N=1,C=4,H=8,W=8,K=4,R=3,S=3,dilation=4611686018427387904
expect 2 "shape_b.*dimension 0|dimension 0" -- tasks -w add:shape=3x4,shape_b=3x0

# ---- flags ----
expect 2 "bogus-cpu.*not a CPU" -- compile -w $G --emit asm --mcpu bogus-cpu
expect 2 "--mattr \+bogus: not a feature" -- compile -w $G --emit asm --mattr +bogus
expect 2 "repeat" -- measure -w $G --repeat 0 --min-ms 0
expect 2 "run-timeout" -- measure -w $G --run-timeout 0
expect 2 "build-timeout" -- measure -w $G --build-timeout -1

# ---- .npy inputs ----
mknpy() { # mknpy FILE HEADER-DICT [DATA-BYTES]
  "$py" - "$@" <<'PY'
import sys, struct
path, header = sys.argv[1], sys.argv[2]
data = int(sys.argv[3]) if len(sys.argv) > 3 else 0
h = header.encode()
while (10 + len(h) + 1) % 64:
    h += b" "
h += b"\n"
open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + b"\0" * data)
PY
}
# ---- a model to run ----
"$py" - "$TMP/relu.onnx" <<'PY' || bad "cannot build the test model (python onnx)"
import sys
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
M="$TMP/relu.onnx"
mknpy "$TMP/abc.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (1, abc), }"
expect 2 "abc.npy" -- run "$M" --input "$TMP/abc.npy"
mknpy "$TMP/neg.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }"
expect 2 "neg.npy" -- run "$M" --input "$TMP/neg.npy"
mknpy "$TMP/big.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }" 16
expect 2 "big.npy.*(bytes|holds)" -- run "$M" --input "$TMP/big.npy"

# ---- ONNX models: sizes checked before allocation, run-time indices checked ----
"$py" - "$TMP" <<'PY' || bad "cannot build the ONNX test models"
import sys, struct
import numpy as np
import onnx
from onnx import helper, TensorProto
d = sys.argv[1]
def save(nodes, inputs, outputs, inits, name):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}")
# an initializer declaring 2^27 floats that holds 16 bytes
w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 27], raw_data=b"\0" * 16)
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 27])
save([helper.make_node("Relu", ["w"], ["y"])], [], [y], [w], "short_init.onnx")
# an input whose shape overflows when multiplied
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 32, 1 << 32])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 32, 1 << 32])
save([helper.make_node("Relu", ["x"], ["y"])], [x], [y], [], "huge_shape.onnx")
# Gather with indices that are a graph input
data = helper.make_tensor("data", TensorProto.FLOAT, [4, 3], np.arange(12, dtype=np.float32).tobytes(), raw=True)
i = helper.make_tensor_value_info("i", TensorProto.INT64, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
save([helper.make_node("Gather", ["data", "i"], ["y"], axis=0)], [i], [y], [data], "gather.onnx")
np.save(f"{d}/idx_ok.npy", np.array([3, -4], dtype=np.int64))
np.save(f"{d}/idx_bad.npy", np.array([1, 7], dtype=np.int64))
np.save(f"{d}/idx_neg.npy", np.array([-5, 0], dtype=np.int64))
PY
expect 2 "short_init.onnx.*w.*holds 4 values, the shape needs 134217728" -- run "$TMP/short_init.onnx"
expect 2 "huge_shape.onnx|x.*more elements" -- run "$TMP/huge_shape.onnx"
expect 0 "output y f32\[2,3\] sum 33" -- run "$TMP/gather.onnx" --input "$TMP/idx_ok.npy"
expect 2 "gather.onnx: node .*index 7 .* out of range \[-4, 3\]" -- run "$TMP/gather.onnx" --input "$TMP/idx_bad.npy"
expect 2 "index -5 .* out of range" -- run "$TMP/gather.onnx" --input "$TMP/idx_neg.npy"

# ---- read-only commands never change a log ----
expect 0 "" -- tune -w $G --trials 4 --per-round 4 --population 32 --min-ms 1 --log "$TMP/ro.jsonl" --seed 1
head -c -20 "$TMP/ro.jsonl" >"$TMP/torn.jsonl" # a torn last line
cp "$TMP/torn.jsonl" "$TMP/torn.orig"
chmod 0444 "$TMP/torn.jsonl"
expect 0 "" -- eval-model "$TMP/torn.jsonl" --model random
expect 0 "" -- run "$M" --log "$TMP/torn.jsonl"
expect 0 "" -- tune -w $G --trials 2 --per-round 2 --population 16 --min-ms 1 --log "$TMP/ws.jsonl" --warm-start "$TMP/torn.jsonl"
if "$WM" train --help >/dev/null 2>&1; then
  expect 0 "wrote" -- train "$TMP/torn.jsonl" -o "$TMP/ck.pt" --steps 5 --wm-latent 8 --wm-hidden 16
fi
if cmp -s "$TMP/torn.jsonl" "$TMP/torn.orig"; then ok; else bad "a read-only command changed the log"; fi
chmod 0644 "$TMP/torn.jsonl"

# ---- train -o never leaves a broken checkpoint: killed mid-run, or on a full disk ----
if [ -s "$TMP/ck.pt" ]; then
  cp "$TMP/ck.pt" "$TMP/ck.orig"
  "$WM" train "$TMP/ro.jsonl" -o "$TMP/ck.pt" --steps 1000000 --wm-latent 8 --wm-hidden 16 >/dev/null 2>&1 &
  tpid=$!
  sleep 3
  kill -9 "$tpid" 2>/dev/null
  wait "$tpid" 2>/dev/null
  if cmp -s "$TMP/ck.pt" "$TMP/ck.orig"; then ok; else bad "train killed mid-run changed the checkpoint"; fi
  mkdir "$TMP/small"
  if mount -t tmpfs -o size=32k tmpfs "$TMP/small" 2>/dev/null; then
    head -c 20000 /dev/urandom >"$TMP/small/ck.pt"
    cp "$TMP/small/ck.pt" "$TMP/small.orig"
    expect 2 "small/ck.pt: cannot (write|flush)" -- train "$TMP/ro.jsonl" -o "$TMP/small/ck.pt" --steps 5 --wm-latent 8 --wm-hidden 16
    if cmp -s "$TMP/small/ck.pt" "$TMP/small.orig"; then ok; else bad "a full disk changed the old checkpoint"; fi
    if [ -z "$(ls "$TMP/small" | grep tmp)" ]; then ok; else bad "a temporary file was left on the full disk"; fi
    umount "$TMP/small"
  fi
fi

# A log holding a record with absurd steps (was SIGFPE in every reader): the record is refused
# or skipped, nothing crashes, and a read-only reader leaves the file alone.
"$py" - "$TMP/ro.jsonl" "$TMP/bad_rec.jsonl" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
r["steps"] = [["SP", 2, 0, 16, [4294967296, 4294967296], 1]]
open(sys.argv[2], "w").write(json.dumps(r) + "\n")
PY
cp "$TMP/bad_rec.jsonl" "$TMP/bad_rec.orig"
for cmd in "run $M --log $TMP/bad_rec.jsonl" "eval-model $TMP/bad_rec.jsonl --model random" \
           "tune -w $G --trials 2 --per-round 2 --population 16 --min-ms 1 --log $TMP/bad_rec.jsonl" \
           "tune -w $G --trials 2 --per-round 2 --population 16 --min-ms 1 --log $TMP/w.jsonl --warm-start $TMP/bad_rec.orig"; do
  # shellcheck disable=SC2086
  "$WM" $cmd >"$TMP/cmd.out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then ok; else bad "wmtune $cmd exited $rc"; tail -3 "$TMP/cmd.out"; fi
done

# ---- write errors are reported, before long work where possible ----
# A private /dev/full where we may make one (a regression must not replace the real one).
FULL=/dev/full
mknod "$TMP/full" c 1 7 2>/dev/null && FULL="$TMP/full"
if [ -w "$FULL" ]; then
  expect 2 "$FULL: cannot write" -- run "$M" --output "$FULL"
  expect 2 "$FULL: cannot write" -- compile -w $G --emit obj -o "$FULL"
  expect 2 "$FULL: cannot write" -- eval-model "$TMP/ro.jsonl" --model random --json "$FULL"
  expect 2 "$FULL: cannot write" -- tune -w $G --trials 4 --per-round 4 --population 32 --min-ms 1 --json "$FULL" --log "$TMP/full.jsonl"
  out=$("$WM" tasks -w $G --json 2>&1 >"$FULL")
  rc=$?
  if [ "$rc" -eq 2 ] && grep -q "stdout: cannot write" <<<"$out"; then ok; else bad "tasks >full: exit $rc: $out"; fi
  if [ -c "$FULL" ]; then ok; else bad "$FULL is no longer a device"; fi
fi
mkdir "$TMP/ro_dir" && chmod 0555 "$TMP/ro_dir"
if ! touch "$TMP/ro_dir/probe" 2>/dev/null; then # (root writes anywhere)
  start=$(date +%s)
  expect 2 "ro_dir/s.json" -- tune -w $G --trials 64 --per-round 8 --min-ms 1 --log "$TMP/ro_dir.jsonl" --json "$TMP/ro_dir/s.json"
  [ $(($(date +%s) - start)) -lt 20 ] && ok || bad "tune checked its --json path after the run"
fi

# ---- one writer per log ----
LOG="$TMP/lock.jsonl"
"$WM" tune -w $G --trials 400 --per-round 8 --population 32 --min-ms 1 --log "$LOG" --seed 1 >"$TMP/first.out" 2>&1 &
first=$!
for _ in $(seq 1 200); do [ -s "$LOG" ] && break; sleep 0.1; done
expect 2 "lock.jsonl.*another wmtune" -- tune -w $G --trials 4 --log "$LOG" --seed 1
kill "$first" 2>/dev/null
wait "$first" 2>/dev/null
# The log's descriptor does not leak into the measurement workers (they run generated code).
"$WM" tune -w $G --trials 400 --per-round 8 --population 32 --min-ms 1 --log "$LOG" --seed 2 >"$TMP/second.out" 2>&1 &
second=$!
leaked="" checked="" tuner_holds=""
holds() { for fd in /proc/"$1"/fd/*; do [ "$(readlink "$fd" 2>/dev/null)" = "$LOG" ] && return 0; done; return 1; }
for _ in $(seq 1 200); do
  holds "$second" && tuner_holds=yes # the control: the tuner itself holds its log
  for w in $(pgrep -P "$second" 2>/dev/null); do
    holds "$w" && leaked=yes
    checked=yes
  done
  [ -n "$checked" ] && [ -n "$tuner_holds" ] && break
  sleep 0.1
done
kill "$second" 2>/dev/null
wait "$second" 2>/dev/null
if [ -z "$checked" ] || [ -z "$tuner_holds" ]; then
  bad "could not observe the tuner and a worker (worker seen: ${checked:-no}, log held by the tuner: ${tuner_holds:-no})"
elif [ -n "$leaked" ]; then
  bad "a measurement worker holds the tuning log open"
else
  ok
fi

echo "reliability: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
