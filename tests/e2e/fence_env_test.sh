#!/usr/bin/env bash
# DLOCK_FENCE strictly increases run after run; the child's environment has
# DLOCK_NAME, DLOCK_TOKEN, DLOCK_BACKEND and not DLOCK_PASSWORD.
SCENARIO="fences and child environment"
. "$(dirname "$0")/lib.sh"

: >"$tmpdir/fences"
for ((i = 0; i < 100; i++)); do
  "${DL[@]}" run f -- sh -c 'echo $DLOCK_FENCE' </dev/null >>"$tmpdir/fences" 2>>"$tmpdir/err" ||
    fail "run $i of f failed; stderr: $(cat "$tmpdir/err")"
done
[ ! -s "$tmpdir/err" ] || fail "dlock printed on stderr: $(head -3 "$tmpdir/err")"
python3 - "$tmpdir/fences" <<'PY' || fail "fences are not 100 strictly increasing decimal integers: $(head -3 "$tmpdir/fences" | tr '\n' ' ')..."
import re, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == ""
lines = lines[:-1]
assert len(lines) == 100, len(lines)
assert all(re.fullmatch(r"[0-9]+", x) for x in lines), lines
values = [int(x) for x in lines]
assert all(0 < v < 2**64 for v in values)
assert all(b > a for a, b in zip(values, values[1:]))
PY

# Another name has its own sequence but also a valid fence.
capture "${DL[@]}" run g -- sh -c 'echo $DLOCK_FENCE'
[[ $out =~ ^[0-9]+$ ]] || fail "fence of g is not a decimal integer: '$out'"

# The child's environment.
capture env DLOCK_PASSWORD=sekrit-pw-e2e DLOCK_NAME=stale KEEP_ME=kept "${DL[@]}" -v -v run env.name -- sh -c 'env >"$1"' sh "$tmpdir/env"
[ "$rc" = 0 ] || fail "run env.name exited $rc; stderr: $err"
get() { sed -n "s/^$1=//p" "$tmpdir/env"; }
[ "$(get DLOCK_NAME)" = env.name ] || fail "DLOCK_NAME in the child is '$(get DLOCK_NAME)', expected env.name (once)"
[ "$(get KEEP_ME)" = kept ] || fail "KEEP_ME in the child is '$(get KEEP_ME)', expected it passed on as kept"
[ "$(get DLOCK_BACKEND)" = "$BACKEND" ] || fail "DLOCK_BACKEND in the child is '$(get DLOCK_BACKEND)', expected $BACKEND"
[[ $(get DLOCK_FENCE) =~ ^[0-9]+$ ]] || fail "DLOCK_FENCE in the child is '$(get DLOCK_FENCE)'"
token=$(get DLOCK_TOKEN)
[ -n "$token" ] || fail "DLOCK_TOKEN is missing or empty in the child's environment"
! grep -q '^DLOCK_PASSWORD=' "$tmpdir/env" || fail "DLOCK_PASSWORD leaked into the child's environment"
! grep -q 'sekrit-pw-e2e' "$tmpdir/env" || fail "the password value appears in the child's environment"
case "$out$err" in *"$token"*) fail "dlock printed the token (stdout/stderr with -vv): $out $err" ;; esac
case "$out$err" in *sekrit-pw-e2e*) fail "dlock printed the password: $out $err" ;; esac

# The backend given via DLOCK_BACKEND (no -b) is passed on as given.
capture env DLOCK_BACKEND="$BACKEND" "$DLOCK_BIN" run env.name -- sh -c 'echo "$DLOCK_BACKEND"'
[ "$out" = "$BACKEND" ] || fail "with DLOCK_BACKEND in dlock's environment the child saw DLOCK_BACKEND='$out'"

# Stale DLOCK_* values in dlock's own environment do not reach the child.
capture env DLOCK_NAME=stale DLOCK_FENCE=1 DLOCK_TOKEN=stale-token "${DL[@]}" run env.two -- sh -c 'echo "$DLOCK_NAME $DLOCK_FENCE $DLOCK_TOKEN"'
set -- $out
[ "${1:-}" = env.two ] && [ "${2:-}" != 1 ] && [ "${3:-}" != stale-token ] && [ -n "${3:-}" ] ||
  fail "the child saw stale DLOCK_* values: $out"

# While the lock is held, the token is nowhere in the lock directory, nor in
# status/list output, nor in dlock's command line.
start_holder h tok
token=$(cat "$tmpdir/h.token")
[ -n "$token" ] || fail "holder got no DLOCK_TOKEN"
! grep -rqF -- "$token" "$LOCKDIR" || fail "the release token is stored in the lock directory (readable by others)"
! tr '\0' ' ' <"/proc/$HOLDER_PID/cmdline" | grep -qF -- "$token" || fail "the token is in dlock's command line"
capture "${DL[@]}" status tok --json
case $out in *"$token"*) fail "status --json prints the token" ;; esac
release_holder h
wait_exit "$HOLDER_PID"
pass
