# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The password checks of the auth tests (lib.sh sources this file). The
# caller sets secret (the right password), port (the server's port) and
# all_output (a file); AUTH_MESSAGE_RE is what a refusal must mention.
AUTH_MESSAGE_RE='auth|password|permi'

# auth_keep: remember what the last capture printed, for a final check
# that no password was ever printed.
auth_keep() { printf '%s\n%s\n' "$out" "$err" >>"$all_output"; }

# auth_works WHAT CMD...: a run through CMD succeeds; the job records what ps
# shows of dlock (its parent) and its environment. The password must be in
# neither.
auth_works() {
  local what=$1
  shift
  rm -f "$tmpdir/ps.txt" "$tmpdir/env.txt"
  capture "$@" run auth.run -- sh -c 'ps -ww -o args= -p "$PPID" >"$1/ps.txt"; env >"$1/env.txt"; echo "$DLOCK_FENCE"' \
    job "$tmpdir"
  auth_keep
  [ "$rc" = 0 ] || fail "$what: run exited $rc, expected 0; stderr: $err"
  [[ $out =~ ^[0-9]+$ ]] || fail "$what: the job saw DLOCK_FENCE='$out'"
  grep -q "127.0.0.1:$port" "$tmpdir/ps.txt" || fail "$what: ps does not show dlock's URL (is ps working?): $(cat "$tmpdir/ps.txt")"
  grep -qF -- "$secret" "$tmpdir/ps.txt" && fail "$what: the password shows in ps while the job runs: $(cat "$tmpdir/ps.txt")"
  local backend_env
  backend_env=$(grep '^DLOCK_BACKEND=' "$tmpdir/env.txt")
  case $backend_env in *"$secret"*) fail "$what: the job's DLOCK_BACKEND holds the password: $backend_env" ;; esac
  case $backend_env in *"127.0.0.1:$port"*) ;; *) fail "$what: the job's DLOCK_BACKEND does not name the server: $backend_env" ;; esac
}

# auth_refused WHAT CMD...: a run through CMD exits 77 with one line naming
# authentication or permission, and its job does not run.
auth_refused() {
  local what=$1
  shift
  rm -f "$tmpdir/ran"
  capture "$@" run auth.run -- touch "$tmpdir/ran"
  auth_keep
  [ "$rc" = 77 ] || fail "$what: exit $rc, expected 77; stdout: $out; stderr: $err"
  assert_one_line_message "$what" "$err"
  printf '%s\n' "$err" | grep -qiE "$AUTH_MESSAGE_RE" || fail "$what: the message names neither authentication nor permission: $err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
}
