# Shared by the CLI test scripts: counters and `expect`. Needs WM (the wmtune binary).
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN -- ARGS...: exit code must be CODE and stdout+stderr must match PATTERN.
expect() {
  local code="$1" pattern="$2"
  shift 3
  local out rc
  out=$("$WM" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then
    bad "wmtune $* exited $rc, expected $code"
    echo "$out" | tail -n 8
  elif ! grep -qE -- "$pattern" <<<"$out"; then
    bad "wmtune $*: output does not match /$pattern/"
    echo "$out" | tail -n 8
  else
    ok
  fi
}
