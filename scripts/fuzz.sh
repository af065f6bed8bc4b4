#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-19, ASan+UBSan) in build-fuzz/ and runs each
# for SECONDS (default 600), two at a time, starting from the checked-in seeds, going on after a
# finding (fork mode); prints one line per target (executions, coverage, findings). New corpus entries stay under out/fuzz/<name>/;
# findings (crash-*, leak-*, timeout-*) under out/fuzz/findings/ — replay one with
# build/test/wm_fuzz_<name>_replay FILE, fix, and add it to test/fuzz/corpus/<name>/ as finding-*.
# usage: [FUZZ_FORKS=N] bash scripts/fuzz.sh [SECONDS] [TARGET...]   (N parallel processes per target)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(spec schedule log npy onnx checkpoint bench_yaml bench_results)
command -v clang++-19 >/dev/null || { echo "fuzz.sh: needs clang-19 and libfuzzer-19-dev (apt)"; exit 2; }
cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-19 -DWM_FUZZ=ON -DWM_SANITIZE=address,undefined -DWM_WITH_TORCH=ON >/dev/null
ninja -C "$root/build-fuzz" $(printf 'test/wm_fuzz_%s ' "${targets[@]}") >/dev/null
out="$root/out/fuzz"
mkdir -p "$out/findings"
run_one() {
  local t=$1 secs=$2 root=$3 out=$4
  mkdir -p "$out/$t"
  # libtorch leaks on its own error paths (not ours to fix): suppressed for the checkpoint target
  printf 'leak:libtorch\nleak:libc10\nleak:libtorch_cpu\n' >"$out/lsan.supp"
  # a log line is under 4 KB; longer inputs only repeat lines and run 4x slower
  local maxlen=65536
  [ "$t" = log ] && maxlen=4096
  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions="$out/lsan.supp" UBSAN_OPTIONS=print_stacktrace=1 \
    "$root/build-fuzz/test/wm_fuzz_$t" "$out/$t" "$root/test/fuzz/corpus/$t" \
    -max_total_time="$secs" -rss_limit_mb=4096 -timeout=30 -max_len=$maxlen \
    -fork="${FUZZ_FORKS:-1}" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
    -artifact_prefix="$out/findings/$t-" >"$out/$t.log" 2>&1 || true
  # fork mode keeps going after a finding; its status lines read "#EXECS: cov: N ft: ..."
  local execs cov
  execs=$(grep -oE '^#[0-9]+' "$out/$t.log" | tail -1 | tr -d '#')
  cov=$(grep -oE 'cov: [0-9]+' "$out/$t.log" | tail -1 | grep -oE '[0-9]+')
  echo "$t: ${secs} s, ${execs} executions, coverage ${cov}, findings $(ls "$out/findings" | grep -c "^$t-" || true)"
}
export -f run_one
printf '%s\n' "${targets[@]}" | xargs -P 2 -I{} bash -c "run_one {} $secs '$root' '$out'"
