#!/usr/bin/env bash
# The sanitizer runs developers do before resolving a reliability change (docs/reliability.md):
#   asan  build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer (libtorch on unless
#         WM_WITH_TORCH=OFF) and every CTest label
#   tsan  build-tsan/ with ThreadSanitizer (no libtorch: it is not built for TSan) and the
#         thread pool and JIT-kernel tests
# Every process (wmtune, its measurement workers, the test programs) writes its sanitizer
# reports to a file under out/sanitize/<kind>/; a run passes only when its tests pass and no
# report was written (a worker's report would otherwise only show as one failed measurement).
# usage: bash scripts/sanitize.sh [asan|tsan|all]   (default all; prints wall times)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-all}"
case "$what" in asan | tsan | all) ;; *) echo "sanitize.sh: asan, tsan or all, not '$what'" >&2; exit 2 ;; esac
jobs="$(nproc)"

run_kind() { # kind build-dir cmake-flags... -- ninja-targets... -- test-function
  local kind=$1 dir=$2
  shift 2
  local flags=() targets=()
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  while [ "$1" != -- ]; do targets+=("$1"); shift; done
  shift
  local reports="$root/out/sanitize/$kind"
  rm -rf "$reports"
  mkdir -p "$reports"
  local t0=$SECONDS
  cmake -S "$root" -B "$root/$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
  ninja -C "$root/$dir" -j "$jobs" "${targets[@]}" >/dev/null
  local built=$((SECONDS - t0))
  # libtorch leaks on its own error paths (not ours to fix)
  printf 'leak:libtorch\nleak:libc10\nleak:libtorch_cpu\nleak:libgomp\n' >"$reports/lsan.supp"
  local status=0
  (cd "$root/$dir" &&
    ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=1:allocator_may_return_null=1" \
      LSAN_OPTIONS="suppressions=$reports/lsan.supp" \
      UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1" \
      TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=1:second_deadlock_stack=1" \
      "$@") || status=$?
  # An allocation that fails in a process under an address-space limit (a worker running an
  # allocation bomb, the child that reads an absurd checkpoint) is what those limits are for:
  # ASan reports every failed `new` as "out-of-memory" and aborts where the normal build throws
  # bad_alloc. Such a report alone is listed, not a failure; any other report is.
  local oom found
  oom=$(grep -l "SUMMARY: AddressSanitizer: out-of-memory" "$reports"/asan.* 2>/dev/null || true)
  found=$(find "$reports" -type f ! -name lsan.supp | grep -vxF -f <(printf '%s\n' $oom) | head -20 || true)
  echo "sanitize $kind: build ${built} s, tests $((SECONDS - t0 - built)) s, tests exit $status"
  if [ -n "$oom" ]; then
    echo "sanitize $kind: allocations refused under an address-space limit (expected, not findings):"
    for f in $oom; do grep -m1 "allocator is out of memory" "$f"; done
  fi
  if [ -n "$found" ]; then
    echo "sanitize $kind: reports written:"
    echo "$found"
    head -40 $found
    return 1
  fi
  return "$status"
}

torch="${WM_WITH_TORCH:-ON}" # OFF: no libtorch (the oracle, world-model and model tests drop out)

asan_tests() {
  ctest -j "$jobs" --timeout 3000 --output-on-failure -E 'injected faults' || return
  # this test's worker raises SIGSEGV on purpose: ASan must not report that one
  ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0" ctest --timeout 3000 --output-on-failure -R 'injected faults'
}
tsan_tests() { test/wm_codegen_tests; }

failed=0
if [ "$what" = asan ] || [ "$what" = all ]; then
  run_kind asan build-asan -DWM_SANITIZE=address,undefined -DWM_WITH_TORCH="$torch" -- all -- \
    asan_tests || failed=1
fi
if [ "$what" = tsan ] || [ "$what" = all ]; then
  run_kind tsan build-tsan -DWM_SANITIZE=thread -DWM_WITH_TORCH=OFF -- wm_codegen_tests -- \
    tsan_tests || failed=1
fi
exit $failed
