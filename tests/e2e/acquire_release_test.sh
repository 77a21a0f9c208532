#!/usr/bin/env bash
# acquire / renew / release across processes, TTL expiry, --wait, --force.
SCENARIO="acquire, renew and release"
. "$(dirname "$0")/lib.sh"

# token=$(dlock acquire ...) must return (acquire_bg, checks/acquire.sh), and
# print the token only, nothing on stderr.
acquire_bg a --ttl 5s
t=$token
[ ! -s "$tmpdir/acq.err" ] || fail "acquire a printed on stderr: $(cat "$tmpdir/acq.err")"
track "$keeper"

capture "${DL[@]}" run a -- true
[ "$rc" = 75 ] || fail "run on a lock taken by acquire exited $rc, expected 75"

capture "${DL[@]}" release a wrongtoken
[ "$rc" = 3 ] || fail "release with a wrong token exited $rc, expected 3"
assert_one_line_message "release with a wrong token" "$err"
forged=${t%%-*}-00000000000000000000000000000000
[ "$forged" != "$t" ] || forged=${t%%-*}-11111111111111111111111111111111
capture "${DL[@]}" release a "$forged"
[ "$rc" = 3 ] || fail "release with the right keeper id but a wrong secret exited $rc, expected 3"
capture "${DL[@]}" renew a wrongtoken --ttl 5s
[ "$rc" = 3 ] || fail "renew with a wrong token exited $rc, expected 3"
is_held a || fail "lock a is no longer held after a release with a wrong token"

capture "${DL[@]}" renew a "$t" --ttl 5s
[ "$rc" = 0 ] || fail "renew a TOKEN exited $rc, expected 0; stderr: $err"
is_held a || fail "lock a not held after renew"

capture "${DL[@]}" release a "$t"
[ "$rc" = 0 ] || fail "release a TOKEN exited $rc, expected 0; stderr: $err"
capture "${DL[@]}" run a -- true
[ "$rc" = 0 ] || fail "run right after release exited $rc, expected 0; stderr: $err"
[ -z "$keeper" ] || wait_until -t 2 is_gone "$keeper" || fail "the keeper $keeper outlived the release"
capture "${DL[@]}" release a "$t"
[ "$rc" = 3 ] || fail "a second release with the same token exited $rc, expected 3"
capture "${DL[@]}" renew a "$t"
[ "$rc" = 3 ] || fail "renew after release exited $rc, expected 3"

# acquire --json.
check_acquire_json j 5s
jt=$(printf '%s' "$out" | json 'd["token"]')
jfence=$(printf '%s' "$out" | json 'd["fence"]')
[ "$("${DL[@]}" status j --json | json 'd["fence"]')" = "$jfence" ] || fail "status j shows another fence than acquire --json printed"
# TOKEN on stdin.
printf '%s\n' "$jt" | "${DL[@]}" release j - 2>"$tmpdir/err"
rc=$?
[ "$rc" = 0 ] || fail "release j - (token on stdin) exited $rc; stderr: $(cat "$tmpdir/err")"
is_free j || fail "lock j still held after release via stdin"

# TOKEN via DLOCK_TOKEN, for renew and release.
t=$("${DL[@]}" acquire e --ttl 5s) || fail "acquire e failed"
capture env DLOCK_TOKEN="$t" "${DL[@]}" renew e --ttl 5s
[ "$rc" = 0 ] || fail "renew with DLOCK_TOKEN exited $rc; stderr: $err"
capture env DLOCK_TOKEN="$t" "${DL[@]}" release e
[ "$rc" = 0 ] || fail "release with DLOCK_TOKEN exited $rc; stderr: $err"
is_free e || fail "lock e still held after release via DLOCK_TOKEN"

# A lease never renewed ends by itself after --ttl: not before the --ttl
# from when acquire was called, and soon after --ttl from when it returned
# (1.2 s for the look that sees it free, a status call, on a loaded
# machine; a keeper that kept the lock one more window fails).
before=$(now_ms)
t=$("${DL[@]}" acquire short --ttl 2s) || fail "acquire short --ttl 2s failed"
after=$(now_ms)
keeper=$(keeper_of short)
[ -n "$keeper" ] && track "$keeper"
is_held short || fail "lock short not held right after acquire"
wait_until -t 5 is_free short || fail "a lock acquired with --ttl 2s and never renewed is still held after 5s"
free_at=$(now_ms)
echo "the --ttl 2s lease was seen free $((free_at - before)) ms after acquire was called, $((free_at - after)) ms after it returned"
[ $((free_at - after)) -le 3200 ] || fail "the --ttl 2s lease took $((free_at - after)) ms to end after acquire returned"
[ $((free_at - before)) -ge 1400 ] || fail "the --ttl 2s lease ended $((free_at - before)) ms after acquire was called"
[ -z "$keeper" ] || wait_until -t 1 is_gone "$keeper" || fail "the keeper $keeper outlived the lease"
capture "${DL[@]}" release short "$t"
[ "$rc" = 3 ] || fail "release after the lease ran out exited $rc, expected 3"

# A renewed lease outlives its first ttl.
# (3 s with a renew every second and more: the renews' own start-up must not
# decide it on a loaded machine.)
t=$("${DL[@]}" acquire renewed --ttl 3s) || fail "acquire renewed --ttl 3s failed"
for i in 1 2 3 4; do
  sleep 1 # the time between renewals is what is tested here
  "${DL[@]}" renew renewed "$t" --ttl 3s || fail "renew $i of lock 'renewed' failed"
done
is_held renewed || fail "a lock renewed every 1 s with --ttl 3s was lost after 4 s"
"${DL[@]}" release renewed "$t" || fail "release of lock 'renewed' failed"

# acquire --wait while a run holds the lock: waits, then gets it.
start_holder h b
"${DL[@]}" acquire b --wait 5s --ttl 5s </dev/null >"$tmpdir/b.token" 2>"$tmpdir/b.err" &
acq=$!
track "$acq"
wait_until has_waiter b || fail "acquire --wait never showed up as a waiter; stderr: $(cat "$tmpdir/b.err")"
is_alive "$acq" || fail "acquire --wait returned while the lock was held"
release_holder h
wait_exit "$HOLDER_PID"
wait_exit "$acq" 5
[ "$rc" = 0 ] || fail "acquire b --wait 5s exited $rc after the holder ended; stderr: $(cat "$tmpdir/b.err")"
bt=$(cat "$tmpdir/b.token")
[ -n "$bt" ] || fail "acquire b --wait printed no token"
holder=$(keeper_of b)
[ -n "$holder" ] && [ "$holder" != "$HOLDER_PID" ] || fail "after the hand-over, status b names holder '$holder'"
track "$holder"
"${DL[@]}" release b "$bt" || fail "release b failed"

# A token is bound to its lock's name.
ta=$("${DL[@]}" acquire ta --ttl 5s) || fail "acquire ta failed"
tb=$("${DL[@]}" acquire tb --ttl 5s) || fail "acquire tb failed"
capture "${DL[@]}" release tb "$ta"
[ "$rc" = 3 ] || fail "release tb with ta's token exited $rc, expected 3"
capture "${DL[@]}" renew tb "$ta"
[ "$rc" = 3 ] || fail "renew tb with ta's token exited $rc, expected 3"
is_held ta && is_held tb || fail "a release with another lock's token freed a lock"
"${DL[@]}" release ta "$ta" && "${DL[@]}" release tb "$tb" || fail "releasing ta and tb with their own tokens failed"

# A signal to an acquire that waits ends it (143) and takes nothing.
start_holder h sig
"${DL[@]}" acquire sig --wait 20s </dev/null >"$tmpdir/sig.token" 2>"$tmpdir/sig.err" &
acq=$!
track "$acq"
wait_until has_waiter sig || fail "acquire --wait (sig) never showed up as a waiter"
kill -TERM "$acq"
wait_exit "$acq" 5
[ "$rc" = 143 ] || fail "SIGTERM to a waiting acquire: exit $rc, expected 143; stderr: $(cat "$tmpdir/sig.err")"
[ ! -s "$tmpdir/sig.token" ] || fail "the interrupted acquire printed a token"
wait_until -t 2 has_no_waiter sig || fail "the interrupted acquire's keeper still waits for the lock"
release_holder h
wait_exit "$HOLDER_PID"
is_free sig || fail "lock sig is held after its holder ended: the interrupted acquire took it"

# A run with a short --ttl keeps its lock by renewing it, well past the ttl.
started=$(now_ms)
capture "${DL[@]}" run renewing --ttl 300ms -- sleep 1.2
elapsed=$(($(now_ms) - started))
[ "$rc" = 0 ] || fail "run --ttl 300ms -- sleep 1.2 exited $rc, expected 0 (renewals keep the lock); stderr: $err"
[ "$elapsed" -lt 3000 ] || fail "run --ttl 300ms -- sleep 1.2 took ${elapsed} ms"

# acquire on a held lock without --wait: 75.
start_holder h c
capture "${DL[@]}" acquire c
[ "$rc" = 75 ] || fail "acquire on a held lock exited $rc, expected 75"
[ -z "$out" ] || fail "acquire on a held lock printed on stdout: $out"
release_holder h
wait_exit "$HOLDER_PID"

# release --force on a run's lock: prints who held it; the run notices at its
# next renewal, stops its child and exits 76.
start_holder h x --ttl 1s
capture "${DL[@]}" release x --force
[ "$rc" = 0 ] || fail "release x --force exited $rc, expected 0; stderr: $err"
case $out in *"$HOLDER_PID"*) ;; *) fail "release --force does not say who held the lock (pid $HOLDER_PID): $out" ;; esac
capture "${DL[@]}" run x -- sh -c 'echo $DLOCK_FENCE'
[ "$rc" = 0 ] || fail "run x right after release --force exited $rc, expected 0; stderr: $err"
python3 -c 'import sys; sys.exit(0 if int(sys.argv[2]) > int(sys.argv[1]) else 1)' "$(cat "$tmpdir/h.fence")" "$out" ||
  fail "the fence after release --force ($out) is not greater than the broken holder's ($(cat "$tmpdir/h.fence"))"
wait_exit "$HOLDER_PID" 3
[ "$rc" = 76 ] || fail "the run whose lock was broken exited $rc, expected 76; stderr: $(cat "$tmpdir/h.err")"
wait_until -t 1 is_gone "$CHILD_PID" || fail "the child of the run whose lock was broken is still alive"
assert_one_line_message "lost lock" "$(cat "$tmpdir/h.err")"
case $(cat "$tmpdir/h.err") in *x*) ;; *) fail "the lost-lock message does not name the lock" ;; esac

# release --force on a lock taken by acquire: the keeper goes away.
t=$("${DL[@]}" acquire y --ttl 2s) || fail "acquire y failed"
keeper=$(keeper_of y)
[ -n "$keeper" ] && track "$keeper"
capture "${DL[@]}" release y --force
[ "$rc" = 0 ] || fail "release y --force exited $rc"
capture "${DL[@]}" renew y "$t" --ttl 2s
[ "$rc" = 3 ] || fail "renew after release --force exited $rc, expected 3"
[ -z "$keeper" ] || wait_until -t 3 is_gone "$keeper" || fail "the keeper $keeper of the broken lock y is still running"

# release --force on a free lock: 3.
capture "${DL[@]}" release free.lock --force
[ "$rc" = 3 ] || fail "release --force on a free lock exited $rc, expected 3"
assert_one_line_message "release --force on a free lock" "$err"
pass
