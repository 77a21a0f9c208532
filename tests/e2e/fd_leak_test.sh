#!/usr/bin/env bash
# The child inherits stdin/stdout/stderr and, of dlock's descriptors, only
# the lock file's (above 2), so that the lock outlives a dlock killed with
# SIGKILL while the job's processes still run: no other file, no socket, no
# pipe.
SCENARIO="no descriptor leak"
. "$(dirname "$0")/lib.sh"

# fds_of PID: "fd -> target" lines of a process, sorted by fd.
fds_of() {
  local f
  for f in /proc/"$1"/fd/*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    printf '%s -> %s\n' "${f##*/}" "$(readlink "$f")"
  done | sort -n
}

# park ID CMD...: runs CMD (which must write its pid to ID.pid and exec
# sleep) with stdin, stdout and stderr only (any other descriptor this test
# inherited is closed first); sets PARKED to the pid.
park() {
  local id=$1 fd
  shift
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    "$@" # not exec: this subshell stays, so killing CMD gives no job notice
    exit $?
  ) </dev/null >"$tmpdir/$id.out" 2>"$tmpdir/$id.err" &
  track $!
  wait_until test -s "$tmpdir/$id.pid" || fail "$id did not start; stderr: $(cat "$tmpdir/$id.err")"
  PARKED=$(cat "$tmpdir/$id.pid")
  track "$PARKED"
  wait_until grep -qx sleep "/proc/$PARKED/comm" || fail "$id never became 'sleep'"
}

# check_lock_fd WHAT PID NAME: besides 0-2, PID has exactly one descriptor,
# above 2, open on the lock file of NAME; 0-2 are no lock file, socket or pipe.
check_lock_fd() {
  local what=$1 pid=$2 lock_file=$LOCKDIR/dlock/$3.lock listing extra
  listing=$(fds_of "$pid")
  case $(printf '%s\n' "$listing" | awk '$1 <= 2') in
  *socket:* | *.lock* | *pipe:* | *"$LOCKDIR"*) fail "$what: a standard descriptor of the child is dlock's: $listing" ;;
  esac
  extra=$(printf '%s\n' "$listing" | awk '$1 > 2')
  if [ "$(line_count "$extra")" != 1 ] || [ "${extra#* -> }" != "$lock_file" ]; then
    fail "$what: besides 0-2 the child should have one descriptor, on $lock_file; it has: $listing"
  fi
}

script='echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000'

# Baseline: what a child gets from this test without dlock in between.
park base sh -c "$script" sh "$tmpdir/base.pid"
base_pid=$PARKED
baseline=$(fds_of "$base_pid" | cut -d' ' -f1 | tr '\n' ' ')
kill -KILL "$base_pid"

park child "${DL[@]}" run l -- sh -c "$script" sh "$tmpdir/child.pid"
child=$PARKED
listing=$(fds_of "$child")
fds=$(printf '%s\n' "$listing" | awk '$1 <= 2 { print $1 }' | tr '\n' ' ')
[ "$fds" = "$baseline" ] || fail "the child has descriptors '$fds', expected '$baseline' (as without dlock): $listing"
[ "$baseline" = "0 1 2 " ] || fail "test set-up: the baseline child has descriptors $baseline"
check_lock_fd "run l --" "$child" l

# The same via -c.
park child2 "${DL[@]}" run l2 -c "echo \$\$ >'$tmpdir/child2.pid.tmp'; mv '$tmpdir/child2.pid.tmp' '$tmpdir/child2.pid'; exec sleep 1000"
child2=$PARKED
fds2=$(fds_of "$child2" | awk '$1 <= 2 { print $1 }' | tr '\n' ' ')
[ "$fds2" = "$baseline" ] || fail "the -c child has descriptors '$fds2', expected '$baseline': $(fds_of "$child2")"
check_lock_fd "run l2 -c" "$child2" l2

# dlock started with stdin, stdout and stderr closed (as some daemons start
# jobs): its own pipes and files must not end up on descriptors 0-2, where
# its messages (-v) would be written into them and the child would inherit
# them. The job must run undisturbed through several renewals, and the lock
# file must not be written through a standard descriptor.
(
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    [ "$fd" -gt 2 ] && eval "exec $fd>&-"
  done
  "${DL[@]}" -v -v run closed --ttl 1s -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' \
    sh "$tmpdir/closed.pid" <&- >&- 2>&-
  echo $? >"$tmpdir/closed.rc"
) &
track $!
wait_until test -s "$tmpdir/closed.pid" || fail "started with fds 0-2 closed, dlock did not start its job"
child=$(cat "$tmpdir/closed.pid")
track "$child"
wait_until grep -qx sleep "/proc/$child/comm" || fail "started with fds 0-2 closed, the job did not become 'sleep'"
# (Read by bash, not python: a look must cost little beside a 1 s lease
# renewed every 333 ms, which dlock must keep up with on a loaded machine.)
renewed() {
  local record
  record=$(<"$LOCKDIR/dlock/closed.lock") 2>/dev/null
  if [[ $record =~ \"renewed_ms\":\ ?([0-9]+) ]]; then echo "${BASH_REMATCH[1]}"; else echo 0; fi
}
first=$(renewed)
renewed_twice() { [ "$(renewed)" -gt $((first + 500)) ] 2>/dev/null; }
renewed_twice_or_dead() { is_gone "$child" || renewed_twice; }
wait_until -t 5 renewed_twice_or_dead || fail "started with fds 0-2 closed, dlock does not renew (lock record: $(head -c 300 "$LOCKDIR/dlock/closed.lock"))"
is_gone "$child" && wait_until -t 2 test -s "$tmpdir/closed.rc"
is_alive "$child" || fail "started with fds 0-2 closed, dlock disturbed its job: it died (dlock's exit status $(cat "$tmpdir/closed.rc" 2>/dev/null))"
check_lock_fd "started with fds 0-2 closed" "$child" closed
kill -TERM "$child"
wait_until test -s "$tmpdir/closed.rc" || fail "dlock (started with fds 0-2 closed) did not end after its job"
[ "$(cat "$tmpdir/closed.rc")" = 143 ] || fail "dlock started with fds 0-2 closed exited $(cat "$tmpdir/closed.rc"), expected 143 (job killed by TERM)"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$LOCKDIR/dlock/closed.lock" 2>/dev/null ||
  fail "the lock file was written through a standard descriptor: $(head -c 300 "$LOCKDIR/dlock/closed.lock")"

pass
