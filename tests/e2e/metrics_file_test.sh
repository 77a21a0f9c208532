#!/usr/bin/env bash
# --metrics-file: the file is Prometheus text format as Debian's
# python3-prometheus-client parses it; per lock name it has counters by
# outcome and the last run's figures; runs of several names (and of one
# name) sharing the file at once lose no count; the file is replaced
# atomically (a reader never sees it half-written: every read during the
# runs parses); other families in it are kept; a file that cannot be
# written is one warning, never a failed run.
SCENARIO="--metrics-file: Prometheus text, counted by outcome, merged safely"
. "$(dirname "$0")/lib.sh"

prom=$tmpdir/textfile/dlock.prom
mkdir -p "$tmpdir/textfile"
printf '# HELP node_custom something else\n# TYPE node_custom gauge\nnode_custom 7\n' >"$prom"

# parse EXPR: EXPR over m, {(family, frozenset(labels)): value} of the file
# as prometheus_client reads it.
parse() {
  /usr/bin/python3 - "$prom" "$1" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
m = {}
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in family.samples:
        m[(s.name, frozenset(s.labels.items()))] = s.value
def v(name, lock="ok", **labels):
    return m.get((name, frozenset(dict(name=lock, namespace="dlock", **labels).items())))
print(eval(sys.argv[2]))
EOF
}

before=$(date +%s)
capture "${DL[@]}" run --metrics-file "$prom" ok -- sh -c 'sleep 0.3'
[ "$rc" = 0 ] || fail "a run with --metrics-file exited $rc: $err"
capture "${DL[@]}" run --metrics-file "$prom" ok -- sh -c 'exit 5'
[ "$rc" = 5 ] || fail "a failing job exited $rc"
start_holder h ok
capture "${DL[@]}" run -q --metrics-file "$prom" ok -- true
[ "$rc" = 75 ] || fail "a busy run exited $rc"
release_holder h
wait_exit "$HOLDER_PID"
capture "${DL[@]}" run --metrics-file "$prom" --max-runtime 200ms --kill-after 0 ok -- sleep 30
[ "$rc" = 124 ] || fail "--max-runtime exited $rc"
capture "$DLOCK_BIN" -b "redis://127.0.0.1:$(free_port)" run --metrics-file "$prom" ok -- true
[ "$rc" = 69 ] || fail "an unreachable backend exited $rc"

cat "$prom" | sed 's/^/  /' | grep -v '^  # HELP'
got=$(parse '[v("dlock_runs_total", outcome=o) for o in ("ran", "busy", "interrupted", "lost", "max_runtime", "unavailable")]') ||
  fail "prometheus_client cannot parse the file: $(cat "$prom")"
[ "$got" = "[2.0, 1.0, 0.0, 0.0, 1.0, 1.0]" ] || fail "runs by outcome ran, busy, interrupted, lost, max_runtime, unavailable: $got"
[ "$(parse 'v("dlock_last_exit_status")')" = 69.0 ] || fail "last exit status: $(parse 'v("dlock_last_exit_status")')"
[ "$(parse 'm[("node_custom", frozenset())]')" = 7.0 ] || fail "the file's other family was not kept"
# The last job that ran is the --max-runtime one: about 0.2 s.
duration=$(parse 'v("dlock_last_duration_seconds")')
parse "0.15 < $duration < 3" | grep -qx True || fail "last duration $duration s, expected about 0.2 s"
parse "$before <= v('dlock_last_success_timestamp_seconds') <= v('dlock_last_end_timestamp_seconds') <= v('dlock_last_attempt_timestamp_seconds') <= $before + 60" |
  grep -qx True || fail "timestamps out of order: $(grep timestamp "$prom")"
parse "v('dlock_last_start_timestamp_seconds') < v('dlock_last_end_timestamp_seconds')" | grep -qx True ||
  fail "the last job's start is not before its end"
# Beside it only the lock file of its writers' turns (not .prom: the
# collector skips it), closed to others.
ls -A "$tmpdir/textfile" | grep -qvE '^(dlock\.prom|\.dlock\.prom\.lock)$' &&
  fail "temporary files left beside the metrics file: $(ls -A "$tmpdir/textfile")"
[ "$(stat -c %a "$tmpdir/textfile/.dlock.prom.lock")" = 600 ] ||
  fail "the metrics file's lock file is $(stat -c %a "$tmpdir/textfile/.dlock.prom.lock"), expected 600"

# Many runs at once, on 4 names and on one, while a reader parses the file
# again and again: every count is there and every read parses.
/usr/bin/python3 - "$prom" "$tmpdir/reader.stop" >"$tmpdir/reader.out" 2>&1 <<'EOF' &
import os, sys
from prometheus_client.parser import text_string_to_metric_families
reads = 0
while not os.path.exists(sys.argv[2]):
    text = open(sys.argv[1]).read()
    list(text_string_to_metric_families(text))
    if "node_custom 7" not in text:
        sys.exit("a read without the other family: " + text)
    reads += 1
    if reads == 1:
        open(sys.argv[2] + ".ready", "w").close()
print(reads)
EOF
reader=$!
track "$reader"
wait_until test -e "$tmpdir/reader.stop.ready" || fail "the reader did not start: $(cat "$tmpdir/reader.out")"
pids=()
for i in $(seq 1 24); do
  "${DL[@]}" run -q --wait 20s --metrics-file "$prom" "n$((i % 4))" -- true &
  pids+=($!)
done
for p in "${pids[@]}"; do
  wait "$p" || fail "a concurrent run exited $?"
done
touch "$tmpdir/reader.stop"
wait "$reader" || fail "the reader saw a broken file: $(cat "$tmpdir/reader.out")"
got=$(parse '[v("dlock_runs_total", "n%d" % i, outcome="ran") for i in range(4)]')
[ "$got" = "[6.0, 6.0, 6.0, 6.0]" ] || fail "24 concurrent runs on 4 names counted $got, expected 6 each"
echo "  a reader parsed the file $(cat "$tmpdir/reader.out") times during the runs"

# A file that cannot be written: a warning, the job's status.
capture "${DL[@]}" run --metrics-file "$tmpdir/no/such/dir/x.prom" ok -- sh -c 'exit 6'
[ "$rc" = 6 ] || fail "a run whose metrics file cannot be written exited $rc"
assert_one_line_message "unwritable metrics file" "$err"
case $err in *warning*metrics*) ;; *) fail "no warning for an unwritable metrics file: $err" ;; esac

# A symlink planted where the file goes: not followed, its target neither
# read nor replaced, the link left as it was.
printf 'secret 1\n' >"$tmpdir/target"
chmod 0600 "$tmpdir/target"
ln -s "$tmpdir/target" "$tmpdir/planted.prom"
capture "${DL[@]}" run --metrics-file "$tmpdir/planted.prom" ok -- true
[ "$rc" = 0 ] || fail "a run whose metrics file is a symlink exited $rc"
assert_one_line_message "a symlinked metrics file" "$err"
case $err in *warning*"symbolic link, not followed"*) ;; *) fail "no warning for a symlinked metrics file: $err" ;; esac
[ -L "$tmpdir/planted.prom" ] || fail "the planted symlink was replaced"
[ "$(cat "$tmpdir/target")" = "secret 1" ] || fail "the symlink's target was changed: $(cat "$tmpdir/target")"

# Another user who can read the directory cannot keep the metrics out
# (issue 34 point 7: the runs took turns on a flock of the directory, which
# any reader could hold; every run then waited 2 s and wrote nothing). The
# turns are on a lock file beside the metrics file that only its writer
# may open.
. "$(dirname "$0")/users_lib.sh"
make_user
other=$MADE
chmod 0755 "$tmpdir/textfile"
mkfifo -m 0666 "$tmpdir/unblock"
unblock() { timeout 5 sh -c 'echo go >"$1"' unblock "$tmpdir/unblock"; }
# shellcheck disable=SC2016 # python's
as_user "$other" /usr/bin/python3 -c 'import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2]).read()' "$tmpdir/textfile" "$tmpdir/unblock" &
blocker=$!
at_cleanup 'is_alive "$blocker" && unblock'
dir_locked() { ! flock -n "$tmpdir/textfile" true; }
wait_until dir_locked || fail "the other user could not flock the directory (the test's own premise)"
before=$(parse 'v("dlock_runs_total", outcome="ran")')
capture "${DL[@]}" run --metrics-file "$prom" ok -- true
[ "$rc" = 0 ] || fail "a run beside another user's flock of the directory exited $rc"
[ -z "$err" ] || fail "a run beside another user's flock of the directory warned: $err"
[ "$(parse "v('dlock_runs_total', outcome='ran') == $before + 1")" = True ] ||
  fail "the run beside another user's flock of the directory was not counted: $(cat "$prom")"
capture as_user "$other" flock -n "$tmpdir/textfile/.dlock.prom.lock" true
[ "$rc" != 0 ] || fail "the other user could lock the metrics file's lock file"
unblock
wait "$blocker"
pass
