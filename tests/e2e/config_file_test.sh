#!/usr/bin/env bash
# The config file as an operator uses it fleet-wide, and `dlock config`:
#   - a comment after a value is a comment (not part of a directory name);
#   - a bad value is 78 naming FILE:LINE, even in a key the command does
#     not use (ttl for ping and status), and connect_timeout = 0 too;
#   - the keys for fleet-wide settings work: password_file, max_runtime,
#     kill_after, conflict_exit_code, lost_exit_code, quiet, log, metrics_file;
#   - `dlock config` prints every setting and where it came from (flag,
#     environment, FILE:LINE, default), never a secret, and exits 78 on
#     any error in the file; -v names the file read.
SCENARIO="config file: comments, FILE:LINE errors, fleet-wide keys, dlock config"
. "$(dirname "$0")/lib.sh"
unset DLOCK_BACKEND
conf=$tmpdir/dlock.conf
D=("$DLOCK_BIN" --config "$conf")

# A comment after a value.
printf 'backend = file://%s # prod\nnamespace = ops\t# the ops team\n' "$LOCKDIR" >"$conf"
capture "${D[@]}" run c -- true
[ "$rc" = 0 ] || fail "run with a commented config exited $rc: $err"
[ -e "$LOCKDIR/ops/c.lock" ] || fail "the lock was not taken in $LOCKDIR/ops: $(find "$tmpdir" -name c.lock)"
[ ! -e "$LOCKDIR # prod" ] || fail "the comment became part of the directory name"

# Bad values: 78 naming FILE:LINE, whatever the command.
printf 'backend = file://%s\n# the lease\nttl = 5 minutes\n' "$LOCKDIR" >"$conf"
for command in "ping" "status x" "list" "config" "run x -- true" "run x --ttl 5s -- true"; do
  # shellcheck disable=SC2086 # the command's words
  capture "${D[@]}" $command
  [ "$rc" = 78 ] || fail "'$command' with ttl = 5 minutes exited $rc, expected 78: $err"
  case $err in *"$conf:3"*ttl*) ;; *) fail "'$command': the message does not name $conf:3 and the key: $err" ;; esac
  assert_one_line_message "$command with a bad ttl" "$err"
done
printf 'connect_timeout = 0\n' >"$conf"
capture "${D[@]}" ping
[ "$rc" = 78 ] || fail "connect_timeout = 0 exited $rc, expected 78: $err"
case $err in *"$conf:1"*connect_timeout*) ;; *) fail "connect_timeout = 0: the message does not name the file: $err" ;; esac
for bad in "quiet = maybe" "conflict_exit_code = 300" "max_runtime = 0" "kill_after = soon" "lost_exit_code = -1" \
  "backend = nosuch://x" "namespace = a b" "ttl = 1s\nttl = 2s" "colour = blue"; do
  printf "$bad\n" >"$conf"
  capture "${D[@]}" config
  [ "$rc" = 78 ] || fail "'$bad': dlock config exited $rc, expected 78: $err"
  case $err in *"$conf:"[12]*) ;; *) fail "'$bad': the message does not name FILE:LINE: $err" ;; esac
done

# The fleet-wide keys.
printf 'backend = file://%s\nconflict_exit_code = 0\nquiet = yes\nlost_exit_code = 42\n' "$LOCKDIR" >"$conf"
start_holder busy busy
capture "${D[@]}" run busy -- true
[ "$rc" = 0 ] || fail "conflict_exit_code = 0: a busy run exited $rc"
[ -z "$err" ] || fail "quiet = yes: a busy run said: $err"
capture "${D[@]}" -v run busy -- true
case $err in *"config file: $conf"*) ;; *) fail "-v does not name the config file read: $err" ;; esac
release_holder busy
wait_exit "$HOLDER_PID"
capture "${D[@]}" run busy --conflict-exit-code 9 -- true
[ "$rc" = 0 ] || fail "run of a free lock exited $rc: $err"

# lost_exit_code: a lock broken under its job.
("${D[@]}" run lost -- sleep 30 2>"$tmpdir/lost.err"; echo $? >"$tmpdir/lost.rc") &
track $!
wait_until is_held lost || fail "the job of 'lost' did not start"
"$DLOCK_BIN" -b "file://$LOCKDIR" release lost --force >/dev/null 2>&1
wait_until -t 5 test -s "$tmpdir/lost.rc" || fail "dlock run did not end after release --force"
[ "$(cat "$tmpdir/lost.rc")" = 42 ] || fail "lost_exit_code = 42: a lost lock exited $(cat "$tmpdir/lost.rc")"

# log and metrics_file: the defaults of run's --log and --metrics-file.
printf 'backend = file://%s\nlog = %s\nmetrics_file = %s\n' "$LOCKDIR" "$tmpdir/events.jsonl" "$tmpdir/m.prom" >"$conf"
capture "${D[@]}" run logged -- true
[ "$rc" = 0 ] || fail "a run with log and metrics_file keys exited $rc: $err"
[ "$(grep -c '"event":"released"' "$tmpdir/events.jsonl" 2>/dev/null)" = 1 ] || fail "log = FILE: no released record"
grep -q '^dlock_runs_total{name="logged",namespace="dlock",outcome="ran"} 1$' "$tmpdir/m.prom" ||
  fail "metrics_file = FILE: no count: $(cat "$tmpdir/m.prom" 2>/dev/null)"
capture "${D[@]}" config
case $out in *"log"*"$tmpdir/events.jsonl"*"$conf:2"*) ;; *) fail "dlock config does not show the log key: $out" ;; esac

# max_runtime and kill_after: a job that ignores SIGTERM is killed kill_after
# after max_runtime's SIGTERM.
printf 'backend = file://%s\nmax_runtime = 300ms\nkill_after = 200ms\n' "$LOCKDIR" >"$conf"
started=$(now_ms)
capture "${D[@]}" run slow -- sh -c 'trap "" TERM; sleep 5'
took=$(($(now_ms) - started))
[ "$rc" = 124 ] || fail "max_runtime = 300ms: exit $rc, expected 124: $err"
[ "$took" -ge 450 ] && [ "$took" -lt 3000 ] || fail "max_runtime 300ms + kill_after 200ms took $took ms"
echo "max_runtime 300ms + kill_after 200ms: ended after $took ms"

# password_file: a directory or an empty file is 78, one others can read a warning.
printf 'password_file = %s\n' "$tmpdir" >"$conf"
capture "${D[@]}" config
[ "$rc" = 78 ] || fail "password_file naming a directory exited $rc, expected 78: $err"
: >"$tmpdir/empty.pw"
printf 'password_file = %s\n' "$tmpdir/empty.pw" >"$conf"
capture "${D[@]}" config
[ "$rc" = 78 ] || fail "an empty password file exited $rc, expected 78: $err"
printf 's3cret-pw\n' >"$tmpdir/pw"
chmod 644 "$tmpdir/pw"
printf 'password_file = %s\n' "$tmpdir/pw" >"$conf"
capture "${D[@]}" config
[ "$rc" = 0 ] || fail "a readable password file exited $rc: $err"
case $err in *warning*"$tmpdir/pw"*) ;; *) fail "a password file others can read gives no warning: $err" ;; esac
[ "$(printf '%s\n' "$err" | grep -c warning)" = 1 ] || fail "the warning about the password file is not given once: $err"
case $out$err in *s3cret*) fail "dlock config shows the password" ;; esac
chmod 600 "$tmpdir/pw"
capture "${D[@]}" config
[ -z "$err" ] || fail "a private password file gives a message: $err"

# dlock config: every setting with its source.
printf 'backend = file://%s\nttl = 1m\n' "$LOCKDIR" >"$conf"
capture env DLOCK_NAMESPACE=fromenv "${D[@]}" --connect-timeout 3s config
[ "$rc" = 0 ] || fail "dlock config exited $rc: $err"
echo "$out"
row() { printf '%s\n' "$out" | awk -v k="$1" '$1 == k'; }
row backend | grep -q "file://$LOCKDIR .*$conf:1" || fail "backend row: $(row backend)"
row ttl | grep -q "1m .*$conf:2" || fail "ttl row: $(row ttl)"
row namespace | grep -q "fromenv .*environment DLOCK_NAMESPACE" || fail "namespace row: $(row namespace)"
row connect_timeout | grep -q "3s .*flag --connect-timeout" || fail "connect_timeout row: $(row connect_timeout)"
row wait | grep -q "0 .*default" || fail "wait row: $(row wait)"
row "config" | grep -q "$conf .*flag --config" || fail "config file row: $(row config)"
capture "${D[@]}" config --json
[ "$(printf '%s' "$out" | json 'd["ttl"]["from"]')" = "$conf:2" ] || fail "config --json: $out"
capture env DLOCK_PASSWORD=hunter2 "$DLOCK_BIN" --config "$conf" config --json
case $out in *hunter2*) fail "dlock config --json shows DLOCK_PASSWORD" ;; esac
pass
