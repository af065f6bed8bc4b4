#!/usr/bin/env bash
# `wmtune export` of kernels: a C program (kernels_test.c, -std=c99 -Wall -Werror) links the
# exported library — shared and static — and runs every built-in kernel family, compared with
# `wmtune run -w SPEC` on the same .npy inputs; the library needs nothing beyond libc, libm and
# pthread and exports only NAME_*; the manifest names each kernel's record; bad exports exit 2
# and leave no library behind.
# usage: export_tests.sh PATH/TO/wmtune
set -u
WM="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$HERE/../cli/lib.sh"
CC="${CC:-cc}"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
D="$TMP/k"
LOG="$TMP/tune.jsonl"

# ---- a log with a tuned gemm, then the export ----
"$WM" tune -w gemm:M=64,N=48,K=32 --trials 8 --cost-model random --seed 1 --min-ms 5 \
  --log "$LOG" >"$TMP/tune.txt" 2>&1 && ok || { bad "tune for the export log failed"; tail "$TMP/tune.txt"; }
# the workloads of kernels_test.c, in its order (k_conv2d_0 before k_conv2d_1)
specs=(-w gemm:M=64,N=48,K=32 -w conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1
  -w conv2d:N=1,C=8,H=10,W=10,K=8,R=3,S=3,pad=1,groups=4
  -w depthwise_conv2d:N=1,C=8,H=12,W=12,R=3,S=3,pad=1 -w batch_matmul:B=3,M=16,N=24,K=8
  -w softmax:M=8,N=100 -w norm:B=1,M=16,N=32)
"$WM" export "${specs[@]}" --log "$LOG" -o "$D" --name k --static >"$TMP/export.txt" 2>&1 \
  && ok || { bad "export failed"; cat "$TMP/export.txt"; }
for f in k.h libk.so libk.a k.o k.ll k.s manifest.json; do
  [ -s "$D/$f" ] && ok || bad "export: $f missing or empty"
done
[ -z "$(ls -A "$D" | grep -v -E '^(k\.h|libk\.so|libk\.a|k\.o|k\.ll|k\.s|manifest\.json)$')" ] \
  && ok || bad "export: stray files in the directory: $(ls -A "$D")"
grep -q "k_gemm  gemm:M=64,N=48,K=32  tuned" "$TMP/export.txt" && ok || bad "export: gemm is not the tuned record"
grep -q "k_softmax  softmax:M=8,N=100  default schedule" "$TMP/export.txt" && ok \
  || bad "export: softmax should be a default schedule"
grep -q "no valid record" "$TMP/export.txt" && ok || bad "export: no warning for untuned workloads"

# ---- the manifest ----
"$py" - "$D/manifest.json" "$LOG" <<'PY' && ok || bad "export: manifest.json is not what it should be"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["format"] == 1 and m["kind"] == "kernels" and m["name"] == "k", m
assert m["target"]["triple"] and m["target"]["cores"] >= 1
ks = {k["symbol"]: k for k in m["kernels"]}
assert sorted(ks) == sorted(["k_gemm", "k_conv2d_0", "k_conv2d_1", "k_depthwise_conv2d",
                             "k_batch_matmul", "k_softmax", "k_norm"]), sorted(ks)
g = ks["k_gemm"]
assert g["tuned"] and g["measured"]["median_ms"] > 0 and g["measured"]["log"] == sys.argv[2]
line = open(sys.argv[2]).read().splitlines()[g["measured"]["line"] - 1]
rec = json.loads(line)
assert rec["task"] == g["key"], (rec["task"], g["key"])          # the line is the record
assert [a["role"] for a in g["arguments"]] == ["input", "input", "output"]
assert g["arguments"][0]["shape"] == [64, 32] and g["arguments"][2]["dtype"] == "f32"
assert isinstance(g["schedule"], list) and g["schedule"]
assert not ks["k_softmax"]["tuned"] and "measured" not in ks["k_softmax"]
PY

# ---- what the library depends on and exports ----
needed=$(readelf -d "$D/libk.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
bad_needed=$(for n in $needed; do case "$n" in libc.so.*|libm.so.*|libpthread.so.*|ld-linux*) ;; *) echo "$n";; esac; done)
[ -n "$needed" ] && [ -z "$bad_needed" ] && ok || bad "libk.so needs more than libc/libm/pthread (and the loader, for thread-local storage): $needed"
ldd "$D/libk.so" >"$TMP/ldd.txt" 2>&1
! grep -v -E 'linux-vdso|libc\.so|libm\.so|libpthread\.so|ld-linux' "$TMP/ldd.txt" | grep -q . \
  && ok || { bad "ldd libk.so lists other libraries"; cat "$TMP/ldd.txt"; }
exported=$(nm -D --defined-only "$D/libk.so" | awk '{print $3}' | grep -v '^k_' | tr '\n' ' ')
[ -z "$exported" ] && ok || bad "libk.so exports symbols outside k_*: $exported"

# ---- the C program, shared and static, against wmtune run ----
flags=(-std=c99 -Wall -Werror -I"$D" -I"$HERE")
"$CC" "${flags[@]}" "$HERE/kernels_test.c" -L"$D" -lk -Wl,-rpath,"$D" -lm -lpthread -o "$TMP/shared" \
  2>"$TMP/cc1.txt" && ok || { bad "the test program does not compile against k.h/libk.so"; cat "$TMP/cc1.txt"; }
"$CC" "${flags[@]}" "$HERE/kernels_test.c" "$D/libk.a" -lm -lpthread -o "$TMP/static" \
  2>"$TMP/cc2.txt" && ok || { bad "the test program does not link libk.a"; cat "$TMP/cc2.txt"; }
mkdir -p "$TMP/data"
"$TMP/shared" gen "$TMP/data" && ok || bad "kernels_test gen failed"
while read -r name spec nin; do
  ins=()
  for ((i = 0; i < nin; i++)); do ins+=(--input "$TMP/data/$name.in$i.npy"); done
  "$WM" run -w "$spec" --log "$LOG" "${ins[@]}" --output "$TMP/data/$name.ref.npy" --check \
    >"$TMP/run-$name.txt" 2>&1 && ok || { bad "wmtune run -w $spec failed"; cat "$TMP/run-$name.txt"; }
done < <("$TMP/shared" list)
"$TMP/shared" check "$TMP/data" >"$TMP/check1.txt" 2>&1 && ok \
  || { bad "the shared library's kernels differ from wmtune run"; cat "$TMP/check1.txt"; }
"$TMP/static" check "$TMP/data" >"$TMP/check2.txt" 2>&1 && ok \
  || { bad "the static archive's kernels differ from wmtune run"; cat "$TMP/check2.txt"; }
[ "$(grep -c 'max relative error' "$TMP/check1.txt")" -ge 14 ] && ok || bad "kernels_test checked too few kernels"

# ---- the complete program of docs/export.md, as written ----
DOC="$HERE/../../docs/export.md"
awk '/^## A complete program/{f=1} f&&/^```c$/{g=1;next} g&&/^```$/{exit} g' "$DOC" >"$TMP/app.c"
grep -q "mm_gemm" "$TMP/app.c" && ok || bad "docs/export.md: no example program found"
"$WM" export -w gemm:M=128,N=128,K=128 -o "$TMP/mm" --name mm >/dev/null 2>&1 && ok || bad "export of the docs example failed"
"$CC" -std=c99 -Wall -Werror -I"$TMP/mm" "$TMP/app.c" -L"$TMP/mm" -lmm -Wl,-rpath,"$TMP/mm" -lm -o "$TMP/app" \
  2>"$TMP/cc3.txt" && ok || { bad "the docs example does not compile"; cat "$TMP/cc3.txt"; }
"$TMP/app" | grep -q "max relative error" && ok || bad "the docs example failed"

# ---- refusals: exit 2, and no library left behind ----
expect 2 "not empty.*--force" -- export -w gemm:M=8,N=8,K=8 -o "$D" --name k
"$WM" export -w gemm:M=8,N=8,K=8 -o "$D" --name k --force >/dev/null 2>&1 && ok || bad "export --force failed"
grep -q '"workload": "gemm:M=8,N=8,K=8"' "$D/manifest.json" && ok || bad "export --force did not replace the manifest"
expect 2 "--name 9k: not a C identifier" -- export -w gemm:M=8,N=8,K=8 -o "$TMP/n1" --name 9k
expect 2 "--name m: libm is a system library" -- export -w gemm:M=8,N=8,K=8 -o "$TMP/n1" --name m
expect 2 "missing.jsonl" -- export -w gemm:M=8,N=8,K=8 -o "$TMP/n2" --log "$TMP/missing.jsonl"
expect 2 "no valid record.*--require-tuned" -- export -w softmax:M=8,N=100 --log "$LOG" -o "$TMP/n3" --require-tuned
expect 2 "the same workload as" -- export -w gemm:M=8,N=8,K=8 -w gemm:M=8,N=8,K=8 -o "$TMP/n4"
expect 2 "nothing to export" -- export -o "$TMP/n5"
expect 2 "exists and is not a directory" -- export -w gemm:M=8,N=8,K=8 -o "$LOG"
CC=false expect 2 "'false -shared.*' failed" -- export -w gemm:M=8,N=8,K=8 -o "$TMP/n6"
[ -z "$(ls -A "$TMP/n6" 2>/dev/null)" ] && ok || bad "a failed link left files behind: $(ls -A "$TMP/n6")"
CC=/nonexistent/cc expect 2 "cannot run '/nonexistent/cc'.*set CC" -- export -w gemm:M=8,N=8,K=8 -o "$TMP/n7"

echo "export tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
