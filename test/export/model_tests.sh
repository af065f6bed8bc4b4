#!/usr/bin/env bash
# `wmtune export MODEL.onnx`: a C program (model_test.c, -std=c99 -Wall -Werror) links the
# exported library — shared and static, weights embedded and in a file — and runs the generated
# MLP, ResNet-18 and BERT models and a Gather model, compared with `wmtune run` on the same .npy
# inputs (max relative error <= 1e-5); two handles in two threads; a missing, damaged or foreign
# weights file and bad calls give an error code and a message; the library needs nothing beyond
# libc, libm and pthread and exports only wm_model_*; bad exports exit 2.
# usage: model_tests.sh PATH/TO/wmtune MODELS_DIR
set -u
WM="$1"
MODELS="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$HERE/../cli/lib.sh"
CC="${CC:-cc}"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
flags=(-std=c99 -Wall -Werror -I"$HERE")

# build_test DIR OUT [static]: the test program against DIR/net.h and libnet.so (or libnet.a)
build_test() {
  if [ "${3:-}" = static ]; then
    "$CC" "${flags[@]}" -I"$1" "$HERE/model_test.c" "$1/libnet.a" -lm -lpthread -o "$2" 2>"$TMP/cc.txt"
  else
    "$CC" "${flags[@]}" -I"$1" "$HERE/model_test.c" -L"$1" -lnet -lm -Wl,-rpath,"$1" -lpthread -o "$2" \
      2>"$TMP/cc.txt"
  fi && ok || { bad "model_test does not compile against $1 (${3:-shared})"; cat "$TMP/cc.txt"; }
}

# check_model NAME PROGRAM WEIGHTS INPUTS...: the program's outputs equal `wmtune run`'s
check_model() {
  local name="$1" prog="$2" weights="$3"
  shift 3
  local ins=() f i
  for f in "$@"; do ins+=(--input "$f"); done
  mkdir -p "$TMP/$name.out" "$TMP/$name.ref"
  "$prog" info "$weights" >"$TMP/$name.info" 2>&1 || { bad "$name: info failed"; cat "$TMP/$name.info"; return; }
  local nout
  nout=$(grep -c '^output' "$TMP/$name.info")
  local outs=()
  for ((i = 0; i < nout; i++)); do outs+=(--output "$TMP/$name.ref/out$i.npy"); done
  if [ ! -s "$TMP/$name.ref/out0.npy" ]; then
    "$WM" run "$MODELS_OR_FILE" "${ins[@]}" "${outs[@]}" $RUN_LOG >"$TMP/$name.run.txt" 2>&1 && ok \
      || { bad "$name: wmtune run failed"; tail "$TMP/$name.run.txt"; return; }
  fi
  "$prog" run "$weights" "$TMP/$name.out" "$@" >"$TMP/$name.prog.txt" 2>&1 && ok \
    || { bad "$name: the exported library's run failed"; cat "$TMP/$name.prog.txt"; return; }
  for ((i = 0; i < nout; i++)); do
    "$prog" compare "$TMP/$name.out/out$i.npy" "$TMP/$name.ref/out$i.npy" >>"$TMP/$name.cmp.txt" 2>&1 \
      && ok || { bad "$name: output $i differs from wmtune run"; cat "$TMP/$name.cmp.txt"; }
  done
}

# random inputs (seeded) in .npy
"$py" - "$TMP" <<'PY' || { bad "cannot write the inputs"; }
import sys, numpy as np
rng = np.random.default_rng(7)
d = sys.argv[1]
np.save(f"{d}/mlp.npy", rng.standard_normal((8, 256), dtype=np.float32))
np.save(f"{d}/resnet18.npy", rng.standard_normal((1, 3, 224, 224), dtype=np.float32))
np.save(f"{d}/bert.npy", rng.standard_normal((1, 128, 768), dtype=np.float32))
np.save(f"{d}/idx.npy", np.array([[3, 0], [9, 4], [-1, 7]], dtype=np.int64))
np.save(f"{d}/idx_bad.npy", np.array([[3, 0], [12, 4], [1, 7]], dtype=np.int64))
PY

# ---- the MLP: a short tuning log, embedded weights, shared and static ----
LOG="$TMP/mlp.jsonl"
"$WM" tune "$MODELS/mlp.onnx" --trials 8 --cost-model random --seed 1 --min-ms 5 --log "$LOG" \
  >"$TMP/tune.txt" 2>&1 && ok || { bad "tune of the MLP failed"; tail "$TMP/tune.txt"; }
D="$TMP/mlp"
"$WM" export "$MODELS/mlp.onnx" --log "$LOG" -o "$D" --name net --static >"$TMP/export.txt" 2>&1 \
  && ok || { bad "export of the MLP failed"; cat "$TMP/export.txt"; }
for f in net.h libnet.so libnet.a net.o net.ll net.s manifest.json; do
  [ -s "$D/$f" ] && ok || bad "model export: $f missing or empty"
done
[ -z "$(ls -A "$D" | grep -v -E '^(net\.h|libnet\.so|libnet\.a|net\.o|net\.ll|net\.s|manifest\.json)$')" ] \
  && ok || bad "model export: stray files in the directory: $(ls -A "$D")"
grep -q "tuned from the log" "$TMP/export.txt" && ok || bad "model export: no summary line"
"$py" - "$D/manifest.json" "$LOG" <<'PY' && ok || bad "model export: manifest.json is not what it should be"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["format"] == 1 and m["kind"] == "model" and m["name"] == "net", m
assert [i["name"] for i in m["inputs"]] == ["input"] and m["inputs"][0]["shape"] == [8, 256]
assert m["inputs"][0]["dtype"] == "f32" and m["outputs"][0]["shape"] == [8, 10]
assert m["weights"]["bytes"] > 1_000_000 and m["weights"]["file"] is None
assert len(m["weights"]["fnv1a64"]) == 16
assert m["groups"] >= len(m["kernels"]) >= 3 and m["buffer_bytes"] > 0
tuned = [k for k in m["kernels"] if k["tuned"]]
assert tuned, "no kernel came from the log"
lines = open(sys.argv[2]).read().splitlines()
for k in tuned:
    rec = json.loads(lines[k["measured"]["line"] - 1])
    assert rec["task"] == k["key"] and k["measured"]["median_ms"] > 0, (rec["task"], k["key"])
for k in m["kernels"]:
    assert k["symbol"].startswith("net__task") and k["ops"] and k["schedule"] is not None
    assert all(a["role"] in ("input", "output") for a in k["arguments"])
PY
needed=$(readelf -d "$D/libnet.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
bad_needed=$(for n in $needed; do case "$n" in libc.so.*|libm.so.*|libpthread.so.*|ld-linux*) ;; *) echo "$n";; esac; done)
[ -n "$needed" ] && [ -z "$bad_needed" ] && ok || bad "libnet.so needs more than libc/libm/pthread: $needed"
ldd "$D/libnet.so" >"$TMP/ldd.txt" 2>&1
! grep -v -E 'linux-vdso|libc\.so|libm\.so|libpthread\.so|ld-linux' "$TMP/ldd.txt" | grep -q . \
  && ok || { bad "ldd libnet.so lists other libraries"; cat "$TMP/ldd.txt"; }
exported=$(nm -D --defined-only "$D/libnet.so" | awk '{print $3}' | grep -v '^wm_model_' | tr '\n' ' ')
[ -z "$exported" ] && ok || bad "libnet.so exports symbols outside wm_model_*: $exported"
nm -D --defined-only "$D/libnet.so" | grep -q ' wm_model_run_n$' && ok || bad "libnet.so lacks wm_model_run_n"

build_test "$D" "$TMP/mlp_shared"
build_test "$D" "$TMP/mlp_static" static
MODELS_OR_FILE="$MODELS/mlp.onnx" RUN_LOG="--log $LOG"
check_model mlp "$TMP/mlp_shared" - "$TMP/mlp.npy"
check_model mlp_static "$TMP/mlp_static" - "$TMP/mlp.npy"
"$TMP/mlp_shared" info - | grep -q "^input 0 input f32 2 8192 8 256$" && ok || bad "info: the MLP's input"
"$TMP/mlp_shared" threads - "$TMP/mlp.npy" >"$TMP/threads.txt" 2>&1 && ok \
  || { bad "the MLP in two threads"; cat "$TMP/threads.txt"; }
"$TMP/mlp_shared" errors - "$TMP/mlp.npy" >"$TMP/errors.txt" 2>&1 && ok \
  || { bad "bad calls on the MLP"; cat "$TMP/errors.txt"; }
"$TMP/mlp_shared" open "$TMP/mlp.npy" 2>&1 | grep -q "weights are embedded in this library: give NULL" \
  && ok || bad "an embedded-weights library accepted a weights path"

# ---- ResNet-18: heuristic schedules (no log), embedded weights ----
D="$TMP/resnet"
"$WM" export "$MODELS/resnet18.onnx" -o "$D" --name net >"$TMP/export-r.txt" 2>&1 && ok \
  || { bad "export of ResNet-18 failed"; cat "$TMP/export-r.txt"; }
grep -q "no valid record" "$TMP/export-r.txt" && ok || bad "no warning for ResNet-18's untuned tasks"
"$py" -c '
import json, sys
ks = json.load(open(sys.argv[1]))["kernels"]
assert ks and all(k.get("guessed") is True and k.get("untuned") == "heuristic" and k["tuned"] is False for k in ks), ks
' "$D/manifest.json" && ok || bad "ResNet-18 export: untuned kernels are not the heuristic schedules"
build_test "$D" "$TMP/resnet_shared"
MODELS_OR_FILE="$MODELS/resnet18.onnx" RUN_LOG=""
check_model resnet18 "$TMP/resnet_shared" - "$TMP/resnet18.npy"

# ---- BERT: external weights; a missing, damaged, short or foreign weights file ----
D="$TMP/bert"
"$WM" export "$MODELS/bert.onnx" -o "$D" --name net --weights external >"$TMP/export-b.txt" 2>&1 \
  && ok || { bad "export of BERT failed"; cat "$TMP/export-b.txt"; }
[ -s "$D/net.weights" ] && ok || bad "no net.weights beside the BERT library"
sz=$(stat -c %s "$D/libnet.so")
[ "$sz" -lt 10000000 ] && ok || bad "the BERT library with external weights is $sz bytes: weights embedded anyway?"
build_test "$D" "$TMP/bert_shared"
MODELS_OR_FILE="$MODELS/bert.onnx" RUN_LOG=""
check_model bert "$TMP/bert_shared" "$D/net.weights" "$TMP/bert.npy"
"$TMP/bert_shared" open - 2>&1 | grep -q "not embedded in this library: give the path" && ok \
  || bad "an external-weights library opened without a weights file"
"$TMP/bert_shared" open "$TMP/none.weights" 2>&1 | grep -q "none.weights: cannot open the weights file" \
  && ok || bad "a missing weights file"
cp "$D/net.weights" "$TMP/damaged.weights"
printf '\x55' | dd of="$TMP/damaged.weights" bs=1 seek=100000 conv=notrunc status=none
"$TMP/bert_shared" open "$TMP/damaged.weights" 2>&1 | grep -q "wrong checksum" && ok \
  || bad "a damaged weights file was accepted"
head -c 1000000 "$D/net.weights" >"$TMP/short.weights"
"$TMP/bert_shared" open "$TMP/short.weights" 2>&1 | grep -q "not .* bytes of weights long" && ok \
  || bad "a short weights file was accepted"
"$TMP/bert_shared" open "$MODELS/bert.onnx" 2>&1 | grep -q "not a wmtune weights file" && ok \
  || bad "an ONNX file was accepted as weights"
"$WM" export "$MODELS/mlp.onnx" -o "$TMP/mlpx" --name net --weights external >/dev/null 2>&1 && ok \
  || bad "export of the MLP with external weights failed"
"$TMP/bert_shared" open "$TMP/mlpx/net.weights" 2>&1 | grep -q "the weights of another export" && ok \
  || bad "another model's weights file was accepted"

# ---- Gather: int64 indices, checked against the table at run time ----
"$py" - "$TMP/gather.onnx" <<'PY' || bad "cannot write the Gather model"
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4) * 0.5, "table")
g = helper.make_graph(
    [helper.make_node("Gather", ["table", "idx"], ["g"], axis=0, name="lookup"),
     helper.make_node("Relu", ["g"], ["y"])],
    "gather", [helper.make_tensor_value_info("idx", TensorProto.INT64, [3, 2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2, 4])], initializer=[table])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
D="$TMP/gather"
"$WM" export "$TMP/gather.onnx" -o "$D" --name net >"$TMP/export-g.txt" 2>&1 && ok \
  || { bad "export of the Gather model failed"; cat "$TMP/export-g.txt"; }
build_test "$D" "$TMP/gather_shared"
MODELS_OR_FILE="$TMP/gather.onnx" RUN_LOG=""
check_model gather "$TMP/gather_shared" - "$TMP/idx.npy"
"$TMP/gather_shared" run - "$TMP" "$TMP/idx_bad.npy" 2>&1 | grep -q "node lookup: index 12 is out of range \[-10, 9\]" \
  && ok || bad "an out-of-range index was not refused: $("$TMP/gather_shared" run - "$TMP" "$TMP/idx_bad.npy" 2>&1)"

# ---- the complete program of docs/export.md's model section, as written ----
DOC="$HERE/../../docs/export.md"
awk '/^## A complete model program/{f=1} f&&/^```c$/{g=1;next} g&&/^```$/{exit} g' "$DOC" >"$TMP/app.c"
grep -q "wm_model_open" "$TMP/app.c" && ok || bad "docs/export.md: no model example program found"
"$CC" -std=c99 -Wall -Werror -I"$TMP/mlp" "$TMP/app.c" -L"$TMP/mlp" -lnet -Wl,-rpath,"$TMP/mlp" \
  -o "$TMP/app" 2>"$TMP/cc4.txt" && ok || { bad "the docs model example does not compile"; cat "$TMP/cc4.txt"; }
"$TMP/app" >"$TMP/app.txt" 2>&1 && grep -q "output 0" "$TMP/app.txt" && ok \
  || { bad "the docs model example failed"; cat "$TMP/app.txt"; }

# ---- refusals: exit 2 ----
expect 2 "give a model or -w SPEC, not both" -- export "$MODELS/mlp.onnx" -w gemm:M=8,N=8,K=8 -o "$TMP/r1"
expect 2 "--weights external: only a model has weights" -- export -w gemm:M=8,N=8,K=8 --weights external -o "$TMP/r2"
expect 2 "--weights" -- export "$MODELS/mlp.onnx" --weights packed -o "$TMP/r3"
expect 2 "no valid record.*--require-tuned" -- export "$MODELS/mlp.onnx" -o "$TMP/r4" --require-tuned
expect 2 "missing.onnx" -- export "$TMP/missing.onnx" -o "$TMP/r5"
expect 2 "truncated.onnx" -- export "$MODELS/truncated.onnx" -o "$TMP/r6"
expect 2 "not empty.*--force" -- export "$MODELS/mlp.onnx" -o "$TMP/mlp" --name net
[ -z "$(ls -A "$TMP/r4" 2>/dev/null)" ] && ok || bad "a refused export left files behind: $(ls -A "$TMP/r4")"

echo "model export tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
