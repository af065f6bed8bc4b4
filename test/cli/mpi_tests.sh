#!/usr/bin/env bash
# Distributed tuning over MPI on one machine (docs/distributed.md): 3 ranks, oversubscribed.
#  - measure mode: two workloads and the generated MLP give a complete log with records of
#    ranks 1 and 2, equal in content (times, host and rank aside) to a single-process run with
#    the same seed (costs from --simulated-costs: identical "measurements" in every process);
#  - task mode: every task tuned whole by some rank, one merged log, records naming their host;
#  - a worker rank killed with SIGKILL mid-run ends the job; the same command resumes exactly
#    (every finished record kept, no candidate measured twice, the budget met);
#  - refusals: no launcher, one rank, --distributed-mode alone, an error on rank 0 (workers
#    stop, exit 2, no hang), an error on every rank before the start (said, exit 2, no hang).
# usage: mpi_tests.sh PATH/TO/wmtune MODELS_DIR
set -u
WM="$1"
M="$2"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
py=/usr/bin/python3
[ -x "$py" ] || py=python3
. "$(dirname "$0")/lib.sh"
# One machine, as root, more ranks than cores; shared memory without ptrace (containers).
export OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
W=(-w gemm:M=64,N=64,K=64 -w conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1)

# The records' content without times, host and rank, sorted (the log keeps arrival order).
content() {
  "$py" - "$1" <<'PY'
import json, sys
out = []
for l in open(sys.argv[1]):
    r = json.loads(l)
    for k in ("time", "build_s", "run_s", "host", "rank"):
        r.pop(k, None)
    out.append(json.dumps(r, sort_keys=True))
print("\n".join(sorted(out)))
PY
}

# ---- measure mode against a single process
args=(tune "$M/mlp.onnx" "${W[@]}" --trials 48 --per-round 8 --population 128 --generations 2
      --cost-model ansor --seed 5 --simulated-costs)
"$WM" "${args[@]}" --log "$TMP/one.jsonl" >"$TMP/one.out" 2>&1 || bad "single-process run failed: $(tail -3 "$TMP/one.out")"
timeout 300 "${MPIRUN[@]}" -np 3 "$WM" "${args[@]}" --distributed mpi --log "$TMP/mpi.jsonl" \
  >"$TMP/mpi.out" 2>&1 || bad "3-rank run failed: $(tail -5 "$TMP/mpi.out")"
grep -q "distributed (measure mode).*2 workers" "$TMP/mpi.out" && ok || bad "no distributed banner: $(head -3 "$TMP/mpi.out")"
n1=$(grep -c . "$TMP/one.jsonl"); n3=$(grep -c . "$TMP/mpi.jsonl")
[ "$n3" -gt 48 ] && [ "$n1" -eq "$n3" ] && ok || bad "records: single $n1, distributed $n3"
if [ "$(content "$TMP/one.jsonl")" = "$(content "$TMP/mpi.jsonl")" ]; then ok; else
  bad "the 3-rank log differs from the single-process log"
  diff <(content "$TMP/one.jsonl") <(content "$TMP/mpi.jsonl") | head -4
fi
"$py" - "$TMP/mpi.jsonl" "$TMP/one.jsonl" <<'PY' && ok || bad "ranks and hosts of the records"
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
assert {r["rank"] for r in d} == {1, 2}, {r.get("rank") for r in d}
assert all(r["host"] for r in d)
assert all("rank" not in json.loads(l) for l in open(sys.argv[2]))  # single process: no rank
assert len({r["task"] for r in d}) >= 5  # the MLP's tasks and the two workloads
PY

# ---- task mode: whole tasks on the ranks, one merged log
timeout 300 "${MPIRUN[@]}" -np 3 "$WM" tune "${W[@]}" --trials 32 --per-round 8 --population 128 \
  --generations 2 --seed 5 --simulated-costs --distributed mpi --distributed-mode task \
  --log "$TMP/task.jsonl" --json "$TMP/task.json" >"$TMP/task.out" 2>&1 || bad "task mode failed: $(tail -5 "$TMP/task.out")"
"$py" - "$TMP/task.jsonl" "$TMP/task.json" <<'PY' && ok || bad "task mode log: $(tail -3 "$TMP/task.out")"
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
first = [r for r in d if not r.get("remeasure")]
by = {}
for r in first:
    by.setdefault(r["task"], []).append(r)
assert len(by) == 2 and all(len(v) == 16 for v in by.values()), {k: len(v) for k, v in by.items()}
for v in by.values():
    assert len({r["rank"] for r in v}) == 1  # a task is tuned whole by one rank
assert {r["rank"] for r in d} == {1, 2}
assert all(r["host"] for r in d)
s = json.load(open(sys.argv[2]))
assert all(t["trials"] == 16 and t["best_latency_s"] > 0 for t in s["tasks"]), s["tasks"]
PY
before=$(grep -c . "$TMP/task.jsonl")
timeout 300 "${MPIRUN[@]}" -np 3 "$WM" tune "${W[@]}" --trials 32 --per-round 8 --population 128 \
  --generations 2 --seed 5 --simulated-costs --distributed mpi --distributed-mode task \
  --log "$TMP/task.jsonl" >"$TMP/task2.out" 2>&1 || bad "task mode rerun failed"
[ "$(grep -c . "$TMP/task.jsonl")" -eq "$before" ] && ok || bad "a finished task-mode run measured more on rerun"

# ---- a worker rank killed mid-run: the job ends, the same command resumes exactly
kargs=(tune "${W[@]}" --trials 40 --per-round 8 --population 128 --generations 2 --seed 3
       --min-ms 5 --distributed mpi --log "$TMP/kill.jsonl")
"${MPIRUN[@]}" -np 3 "$WM" "${kargs[@]}" >"$TMP/kill.out" 2>&1 &
job=$!
victim=""
for _ in $(seq 1 600); do
  [ -f "$TMP/kill.jsonl" ] && [ "$(grep -c . "$TMP/kill.jsonl")" -ge 6 ] && break
  sleep 0.1
done
for p in $(pgrep -f "wmtune tune .*kill.jsonl"); do
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2"; then victim=$p; fi
done
if [ -n "$victim" ]; then
  kill -9 "$victim"
  ok
else
  bad "found no rank-2 process to kill"
fi
timeout 120 tail --pid=$job -f /dev/null
wait $job
rc=$?
[ "$rc" -ne 0 ] && ok || bad "the job went on after a rank was killed (exit $rc)"
cp "$TMP/kill.jsonl" "$TMP/killed.jsonl"
k=$(grep -c . "$TMP/killed.jsonl")
[ "$k" -ge 6 ] && [ "$k" -lt 40 ] && ok || bad "$k records when the rank was killed (want 6..39)"
timeout 600 "${MPIRUN[@]}" -np 3 "$WM" "${kargs[@]}" >"$TMP/resume.out" 2>&1 || bad "the resumed run failed: $(tail -5 "$TMP/resume.out")"
"$py" - "$TMP/killed.jsonl" "$TMP/kill.jsonl" <<'PY' && ok || bad "the resumed log is not exact"
import json, sys
before = open(sys.argv[1]).read()
after = open(sys.argv[2]).read()
cut = before[: before.rfind("\n") + 1]  # a truncated last line may be dropped
assert after.startswith(cut), "a finished record was lost or changed"
recs = [json.loads(l) for l in after.splitlines() if l]
first = [(r["task"], json.dumps(r["steps"])) for r in recs if not r.get("remeasure")]
assert len(first) == 40, len(first)
assert len(set(first)) == 40, "a candidate was measured twice"
PY

# ---- refusals
expect 2 "not started by an MPI launcher" -- tune "${W[@]}" --trials 4 --distributed mpi --log "$TMP/x.jsonl"
expect 2 "needs --distributed mpi" -- tune "${W[@]}" --trials 4 --distributed-mode task --log "$TMP/x.jsonl"
expect 2 "distributed" -- tune "${W[@]}" --trials 4 --distributed tcp --log "$TMP/x.jsonl"
out=$(timeout 120 "${MPIRUN[@]}" -np 1 "$WM" tune "${W[@]}" --trials 4 --distributed mpi --log "$TMP/x.jsonl" 2>&1)
rc=$?
[ "$rc" -eq 2 ] && grep -q "at least 2 ranks" <<<"$out" && ok || bad "one rank: exit $rc: $(tail -3 <<<"$out")"
mkdir "$TMP/dir.jsonl"
out=$(timeout 120 "${MPIRUN[@]}" -np 3 "$WM" tune "${W[@]}" --trials 4 --simulated-costs --distributed mpi --log "$TMP/dir.jsonl" 2>&1)
rc=$?
[ "$rc" -eq 2 ] && grep -q "dir.jsonl" <<<"$out" && ok || bad "an error on rank 0: exit $rc (124: hung): $(tail -3 <<<"$out")"
# an error every rank meets before the workers are told anything (a bad spec): said, exit 2
out=$(timeout 120 "${MPIRUN[@]}" -np 3 "$WM" tune -w gemm:M=0,N=8,K=8 --trials 4 --distributed mpi --log "$TMP/x.jsonl" 2>&1)
rc=$?
[ "$rc" -eq 2 ] && grep -q "gemm" <<<"$out" && ok || bad "a bad spec under mpirun: exit $rc (124: hung): $(tail -3 <<<"$out")"
[ ! -e "$TMP/x.jsonl" ] && ok || bad "a refused run wrote a log"

echo "mpi: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
