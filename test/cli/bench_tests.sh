#!/usr/bin/env bash
# `wmtune bench`: configs/bench/smoke.yaml end to end (every output file checked, SVGs parsed
# as XML), a second run that skips every finished cell, --report re-rendering from
# results.jsonl alone, a kill -9 mid-cell that the next run resumes, --dry-run, and bad bench
# files (exit 2 naming file:line:column).
# usage: bench_tests.sh PATH/TO/wmtune REPO_ROOT
set -u
WM="$1"
ROOT="$2"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
cd "$ROOT"
OUT="$TMP/smoke"

# ---- the smoke bench, end to end ----
"$WM" bench configs/bench/smoke.yaml -o "$OUT" >"$TMP/run1.txt" 2>&1
rc=$?
[ $rc -eq 0 ] && ok || { bad "bench smoke.yaml exited $rc"; tail -20 "$TMP/run1.txt"; }
for f in results.jsonl summary.md summary.csv summary.json plots/speedup.svg; do
  [ -s "$OUT/$f" ] && ok || bad "bench: $f missing or empty"
done
[ "$(ls "$OUT"/plots/curve-*.svg 2>/dev/null | wc -l)" -eq 2 ] && ok || bad "bench: expected 2 curve plots"
[ "$(ls "$OUT"/logs/*.jsonl 2>/dev/null | wc -l)" -eq 4 ] && ok || bad "bench: expected 4 cell logs"
"$py" - "$OUT" <<'PY' && ok || bad "bench: outputs are not what they should be"
import csv, glob, json, sys, xml.dom.minidom
out = sys.argv[1]
recs = [json.loads(l) for l in open(out + "/results.jsonl")]
cells = [r for r in recs if r["type"] == "cell"]
assert len(cells) == 4, len(cells)
assert {(c["config"], c["workload"]) for c in cells} == {
    (c, w) for c in ("ansor", "random") for w in ("gemm:M=32,N=32,K=32", "conv2d:N=1,C=8,H=8,W=8,K=8,R=3,S=3,stride=1,pad=1,dilation=1,groups=1")}
for c in cells:
    assert c["best_s"] and c["best_s"] > 0, c
    assert len(c["curve"]) == 8, c["curve"]            # one point per trial
    finite = [v for v in c["curve"] if v is not None]
    assert finite == sorted(finite, reverse=True)       # best so far never gets worse
    assert c["search_s"] >= 0 and c["build_s"] > 0 and c["run_s"] > 0
run = [r for r in recs if r["type"] == "run"][0]
assert run["machine"]["peak_gflops"] > 0 and run["machine"]["cpu"]
assert [r for r in recs if r["type"] == "end"]
for svg in glob.glob(out + "/plots/*.svg"):
    doc = xml.dom.minidom.parse(svg)                    # well-formed XML
    assert doc.documentElement.tagName == "svg"
    assert doc.getElementsByTagName("text"), svg        # axes, labels, legend
curves = glob.glob(out + "/plots/curve-*.svg")
for svg in curves:
    doc = xml.dom.minidom.parse(svg)
    assert len(doc.getElementsByTagName("polyline")) == 2, svg   # one curve per config
    texts = " ".join(t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild)
    assert "trials" in texts and "ms" in texts and "ansor" in texts and "random" in texts
rows = list(csv.DictReader(open(out + "/summary.csv")))
tuned = [r for r in rows if not r["config"].startswith("baseline:")]
assert len(tuned) == 2 * 2 * 2, len(tuned)              # workloads x configs x budgets
assert all(float(r["latency_ms_geomean"]) > 0 for r in tuned)
assert len(rows) - len(tuned) == 2                      # the libtorch baseline per workload
base = [r for r in recs if r["type"] == "baseline"]
assert len(base) == 2 and all(b["name"] == "libtorch" for b in base)
# built with libtorch (as CI is): timed; without: said to be unavailable, with why
assert all(b.get("ms", 0) > 0 or "without libtorch" in b.get("unavailable", "") for b in base), base
s = json.load(open(out + "/summary.json"))
assert s["reference"] == "ansor" and len(s["workloads"]) == 2
assert abs(s["geomean_speedup_vs_reference"]["ansor"] - 1) < 1e-9
md = open(out + "/summary.md").read()
for needle in ("gemm:M=32,N=32,K=32", "conv2d:N=1,C=8,H=8,W=8,K=8,R=3,S=3", "ansor@8", "random@4", "Speed-up over",
               "Sample efficiency", "FMA peak", "plots/speedup.svg"):
    assert needle in md, needle
PY

# ---- a second run skips every finished cell; --report re-renders the same report ----
cp "$OUT/summary.md" "$TMP/summary1.md"
cp "$OUT/results.jsonl" "$TMP/results1.jsonl"
"$WM" bench configs/bench/smoke.yaml -o "$OUT" >"$TMP/run2.txt" 2>&1 && ok || bad "bench rerun failed"
grep -q "0 of 4 cells to run" "$TMP/run2.txt" && ok || { bad "bench rerun ran cells again"; cat "$TMP/run2.txt"; }
[ "$(grep -c '"type":"cell"' "$OUT/results.jsonl")" -eq 4 ] && ok || bad "bench rerun added cells"
rm "$OUT/summary.md" "$OUT/summary.csv" "$OUT"/plots/*.svg
"$WM" bench --report "$OUT" >/dev/null 2>&1 && ok || bad "bench --report failed"
[ -s "$OUT/summary.md" ] && [ -s "$OUT/summary.csv" ] && [ -s "$OUT/plots/speedup.svg" ] && ok ||
  bad "bench --report did not write the report"
# (the rerun added machine rows; the tables of results must be the same)
"$py" - "$TMP/summary1.md" "$OUT/summary.md" <<'PY' && ok || bad "bench --report changed the results tables"
import sys
def tables(p):
    lines = open(p).read().split("## Best latency")[1].split("## Plots")[0]
    return lines
assert tables(sys.argv[1]) == tables(sys.argv[2])
PY
expect 2 "results.jsonl: missing or empty" -- bench --report "$TMP/nowhere"

# ---- --dry-run ----
expect 0 "bench smoke: 4 cells, 32 trials \(0 cells, 0 trials left\)" -- bench configs/bench/smoke.yaml -o "$OUT" --dry-run
expect 0 "4 cells, 32 trials \(4 cells, 32 trials left\)" -- bench configs/bench/smoke.yaml -o "$TMP/fresh" --dry-run
[ ! -e "$TMP/fresh" ] && ok || bad "bench --dry-run created its output folder"

# ---- kill -9 mid-cell, then resume: nothing finished is lost, no cell is measured twice ----
K="$TMP/killed"
"$WM" bench configs/bench/smoke.yaml -o "$K" -q >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do # until the first cell's log holds a record
  f=$(ls "$K"/logs/*.jsonl 2>/dev/null | head -1)
  [ -n "$f" ] && [ -s "$f" ] && break
  sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
sleep 0.5 # the tuner child dies with it (PR_SET_PDEATHSIG)
"$WM" bench configs/bench/smoke.yaml -o "$K" -q >"$TMP/resume.txt" 2>&1 && ok ||
  { bad "bench resume after kill -9 failed"; tail -5 "$TMP/resume.txt"; }
"$py" - "$K" <<'PY' && ok || bad "bench resume: wrong cells or trials"
import glob, json, sys
out = sys.argv[1]
cells = [json.loads(l) for l in open(out + "/results.jsonl") if '"type":"cell"' in l]
assert len(cells) == 4, len(cells)
assert any(c["resumed"] for c in cells), "no cell was resumed"
for log in glob.glob(out + "/logs/*.jsonl"):
    trials = [json.loads(l) for l in open(log) if l.strip()]
    keys = [json.dumps(r["steps"]) for r in trials if not r.get("remeasure")]
    assert len(keys) == len(set(keys)) == 8, (log, len(keys), len(set(keys)))
PY

# ---- bad bench files: exit 2, file:line:column ----
bf() { printf '%s\n' "$2" >"$TMP/$1.yaml"; }
base='name: t
workloads:
  - gemm:M=8,N=8,K=8'
bf unknown_key "$base
configs: {a: {cost-model: ansor}}
colour: red"
expect 2 "unknown_key.yaml:5:1: unknown key 'colour'" -- bench "$TMP/unknown_key.yaml" --dry-run
bf bad_flag "$base
configs:
  a: {cost-modle: ansor}"
expect 2 "bad_flag.yaml:5:7: 'cost-modle' is not a flag of .wmtune tune" -- bench "$TMP/bad_flag.yaml" --dry-run
bf bad_value "$base
configs:
  a: {cost-model: best}"
expect 2 "bad_value.yaml:5:19: bad value for tune flag 'cost-model'" -- bench "$TMP/bad_value.yaml" --dry-run
bf bad_type "$base
trials: [64, many]
configs: {a: {}}"
expect 2 "bad_type.yaml:4:14: 'trials' must be an integer" -- bench "$TMP/bad_type.yaml" --dry-run
bf twice "$base
configs:
  a: {cost-model: ansor}
  a: {cost-model: random}"
expect 2 "twice.yaml:6:3: config 'a' given twice" -- bench "$TMP/twice.yaml" --dry-run
bf no_model "name: t
workloads:
  - model: $TMP/missing.onnx
configs: {a: {}}"
expect 2 "^\[error\] [^ ]*no_model.yaml:3:12: model '[^ ]*missing.onnx' does not exist$" -- bench "$TMP/no_model.yaml" --dry-run
bf bad_spec "name: t
workloads:
  - gemm:M=8,N=8
configs: {a: {}}"
expect 2 "bad_spec.yaml:3:5: .*K" -- bench "$TMP/bad_spec.yaml" --dry-run
bf owned "$base
configs: {a: {log: x.jsonl}}"
expect 2 "owned.yaml:4:15: 'log' is set by bench itself" -- bench "$TMP/owned.yaml" --dry-run
bf ref "$base
configs: {a: {}}
compare: {reference: b}"
expect 2 "ref.yaml:5:22: reference 'b' is not one of the configs" -- bench "$TMP/ref.yaml" --dry-run
bf no_warm "$base
configs:
  a: {warm-start: $TMP/nowhere.jsonl}"
expect 2 "no_warm.yaml:5:19: 'warm-start': no such file" -- bench "$TMP/no_warm.yaml" --dry-run
bf bad_baseline "$base
configs: {a: {}}
baselines: [pytorch]"
expect 2 "bad_baseline.yaml:5:13: unknown built-in baseline 'pytorch'" -- bench "$TMP/bad_baseline.yaml" --dry-run
bf syntax "name: t
workloads: [gemm
configs: {a: {}}"
expect 2 "syntax.yaml:[0-9]+:[0-9]+: not valid YAML" -- bench "$TMP/syntax.yaml" --dry-run
expect 2 "nothere.yaml: no such file" -- bench "$TMP/nothere.yaml" --dry-run

echo "bench tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
