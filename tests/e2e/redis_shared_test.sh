#!/usr/bin/env bash
# Redis shared lock (--shared): each reader's lease is its own, so a reader
# killed with SIGKILL stops counting once its 1 s lease passes while another
# reader keeps renewing (the live one never keeps the dead one alive); a
# reader's token renews from another process; a waiting writer (in the
# name's queue) keeps new readers out and gets the lock once the readers
# leave; and a writer killed while it waits stops keeping readers out at
# the next reader's try, which finds it gone.
SCENARIO="redis: shared lock"
. "$(dirname "$0")/lib.sh"
use_redis

start_holder r1 rs --shared --ttl 1s
killed_pid=$HOLDER_PID
start_holder r2 rs --shared --ttl 1s
check_two_readers_shown rs
check_reader_token rs r2

# SIGKILL of the first reader's dlock: its share counts until its 1 s lease
# runs out, not as long as the second reader renews.
check_killed_reader_lapses rs "$killed_pid"
# The live reader renews its own share past the dead one's.
wait_renewed "$(redis_key rs readers)"
has_readers rs 1 || fail "the live reader lost its share: $(readers rs) readers"

# A waiting writer keeps a new reader out, then gets the lock once the
# reader leaves.
mkfifo "$tmpdir/w1.go"
# shellcheck disable=SC2016 # expanded by the job's shell
"${DL[@]}" run rs --wait 20s --ttl 2s -- sh -c 'touch "$1.in"; read -r _ <"$1.go"' sh "$tmpdir/w1" \
  </dev/null 2>"$tmpdir/w1.err" &
writer=$!
track "$writer"
wait_until has_waiter rs || fail "the writer never waited for rs"
case $("$RCLI" ZRANGE "$(redis_key rs queue)" 0 -1) in
x:*) ;;
*) fail "the waiting writer is not in $(redis_key rs queue): $("$RCLI" ZRANGE "$(redis_key rs queue)" 0 -1)" ;;
esac
capture "${DL[@]}" run --shared rs -- true
[ "$rc" = 75 ] || fail "a new reader got in beside a waiting writer: exit $rc, expected 75 (busy); stderr: $err"
[ ! -e "$tmpdir/w1.in" ] || fail "the writer got rs while a reader held it"
release_holder r2
wait_until test -e "$tmpdir/w1.in" || fail "the writer did not get rs once the reader left: $(cat "$tmpdir/w1.err")"
[ "$("$RCLI" EXISTS "$(redis_key rs queue)")" = 0 ] || fail "the writer is still in the queue once it holds rs"
capture "${DL[@]}" run --shared rs -- true
[ "$rc" = 75 ] || fail "a reader ran beside the writer: exit $rc, expected 75 (busy); stderr: $err"
echo >"$tmpdir/w1.go"
wait_exit "$writer"
[ "$rc" = 0 ] || fail "the writer exited $rc: $(cat "$tmpdir/w1.err")"

# A writer killed with SIGKILL while it waits keeps new readers out no
# longer: the next reader asks it on its channel, finds nobody there and
# drops it from the queue.
start_holder r3 rs --shared --ttl 2s
"${DL[@]}" run rs --wait 30s -- true </dev/null 2>"$tmpdir/w2.err" &
writer=$!
track "$writer"
wait_until has_waiter rs || fail "the second writer never waited for rs"
capture "${DL[@]}" run --shared rs -- true
[ "$rc" = 75 ] || fail "a new reader got in beside the second waiting writer: exit $rc; stderr: $err"
kill -KILL "$writer"
killed=$(now_ms)
wait_until is_gone "$writer" || fail "the killed writer did not end"
capture "${DL[@]}" run --shared --wait 10s rs -- true
waited=$(($(now_ms) - killed))
[ "$rc" = 0 ] || fail "a reader after the killed waiting writer exited $rc; stderr: $err"
[ "$waited" -lt 3500 ] || fail "the killed writer kept readers out for ${waited} ms"
echo "a new reader got in ${waited} ms after the waiting writer was killed"
release_holder r3
wait_until is_free rs || fail "rs is still held after its readers ended"
for part in readers readers-info queue turns; do
  wait_until test "$("$RCLI" EXISTS "$(redis_key rs "$part")")" = 0 ||
    fail "$(redis_key rs "$part") is left after the last reader"
done

# A reader taken by acquire releases with its token; readers and a
# semaphore on one name refuse each other (78); --force breaks every reader.
capture "${DL[@]}" acquire ka --shared --ttl 3s
[ "$rc" = 0 ] || fail "acquire --shared ka exited $rc; stderr: $err"
token=$out
[[ $token == rd-* ]] || fail "acquire --shared printed no reader's token"
capture "${DL[@]}" run --limit 3 ka -- true
[ "$rc" = 78 ] || fail "a semaphore on a name held by a reader exited $rc, expected 78; stderr: $err"
assert_one_line_message "a semaphore on a name held by a reader" "$err"
capture "${DL[@]}" release ka "$token"
[ "$rc" = 0 ] || fail "release of a reader taken by acquire exited $rc; stderr: $err"
is_free ka || fail "ka is still held after its reader's release"
start_holder s1 ks --limit 2
capture "${DL[@]}" run --shared ks -- true
[ "$rc" = 78 ] || fail "a reader on a semaphore of 2 exited $rc, expected 78; stderr: $err"
release_holder s1
start_holder f1 kf --shared
start_holder f2 kf --shared
capture "${DL[@]}" release --force kf
[ "$rc" = 0 ] || fail "release --force of a name held by two readers exited $rc; stderr: $err"
is_free kf || fail "kf is still held after release --force"
pass
