#!/usr/bin/env bash
# Redlock shared lock (--shared) over 5 nodes: readers hold the name
# together, each a member of {dlock:NAME}:readers on every node (the
# single-server layout); a writer is busy beside them and they beside it; a
# reader granted only by a minority (the writer's key already on a
# majority) does not get in and takes its copies back; a reader killed with
# SIGKILL stops counting once its own 1 s lease ends while another renews;
# a reader's token renews from another process, a forged one releases
# nothing; release --force breaks the readers on every node.
SCENARIO="redlock: shared lock"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

# How many nodes list N live readers of NAME.
nodes_reading() {
  local i n=0
  for ((i = 1; i <= NODES; i++)); do
    [ "$(node_cli "$i" ZCOUNT "$(redis_key "$1" readers)" "($(now_ms)" +inf)" = "$2" ] && n=$((n + 1))
  done
  echo "$n"
}

# Two readers at once, on every node.
start_holder r1 rs --shared --ttl 1s
killed_pid=$HOLDER_PID
start_holder r2 rs --shared --ttl 1s
[ "$(nodes_reading rs 2)" = "$NODES" ] || fail "not all $NODES nodes list both readers: $(nodes_reading rs 2)"
[ "$(node_cli 1 HGET "$(redis_key rs readers-info)" "$(node_cli 1 ZRANGE "$(redis_key rs readers)" 0 0):host")" = \
  "$(hostname)" ] || fail "node 1's $(redis_key rs readers-info) has no host for its first reader"
check_two_readers_shown rs

# A writer is busy beside them, and leaves no copy behind.
capture "${DL[@]}" run rs -- true
[ "$rc" = 75 ] || fail "a writer ran beside two readers: exit $rc, expected 75 (busy); stderr: $err"
[ "$(nodes_with_key "$(redis_key rs lock)")" = 0 ] || fail "the busy writer left its key on some node"

# A reader's token renews from another process; a forged one does nothing.
check_reader_token rs r2

# SIGKILL of the first reader's dlock: its share counts until its own 1 s
# lease ends, not as long as the second reader renews.
check_killed_reader_lapses rs "$killed_pid"
has_readers rs 1 || fail "the live reader lost its share: $(readers rs) readers"

# The writer waits for the last reader, then readers are busy beside it;
# its fence is above the readers'.
mkfifo "$tmpdir/w.go"
# shellcheck disable=SC2016 # expanded by the job's shell
"${DL[@]}" run rs --wait 20s --ttl 2s -- sh -c 'echo "$DLOCK_FENCE" >"$1.fence"; touch "$1.in"; read -r _ <"$1.go"' \
  sh "$tmpdir/w" </dev/null 2>"$tmpdir/w.err" &
writer=$!
track "$writer"
wait_until has_waiter rs || fail "the writer never waited for rs"
[ ! -e "$tmpdir/w.in" ] || fail "the writer got rs while a reader held it"
release_holder r2
wait_until test -e "$tmpdir/w.in" || fail "the writer did not get rs once the reader left: $(cat "$tmpdir/w.err")"
capture "${DL[@]}" run --shared rs -- true
[ "$rc" = 75 ] || fail "a reader ran beside the writer: exit $rc, expected 75 (busy); stderr: $err"
[ "$(nodes_reading rs 0)" = "$NODES" ] || fail "the busy reader left its share on some node"
[ "$(cat "$tmpdir/w.fence")" -gt "$(cat "$tmpdir/r2.fence")" ] ||
  fail "the writer's fence $(cat "$tmpdir/w.fence") is not above the reader's $(cat "$tmpdir/r2.fence")"
echo >"$tmpdir/w.go"
wait_exit "$writer"
[ "$rc" = 0 ] || fail "the writer exited $rc: $(cat "$tmpdir/w.err")"
# shellcheck disable=SC2016 # expanded by the job's shell
capture "${DL[@]}" run --shared rs -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "a reader after the writer exited $rc; stderr: $err"
[ "$out" -gt "$(cat "$tmpdir/w.fence")" ] || fail "the reader's fence $out is not above the writer's $(cat "$tmpdir/w.fence")"

# A reader granted only by a minority: another writer's key sits on a
# majority (nodes 1..QUORUM); the free nodes grant the read, and the
# reader must still be busy and take those copies back.
for ((i = 1; i <= QUORUM; i++)); do
  node_cli "$i" SET "$(redis_key m lock)" someone-else PX 20000 >/dev/null
done
capture "${DL[@]}" run --shared m -- touch "$tmpdir/m.ran"
[ "$rc" = 75 ] || fail "a reader granted by $((NODES - QUORUM)) of $NODES nodes exited $rc, expected 75 (busy); stderr: $err"
[ ! -e "$tmpdir/m.ran" ] || fail "a reader ran on a minority of the nodes"
[ "$(nodes_reading m 0)" = "$NODES" ] || fail "the minority's copies of the reader were not taken back"
capture "${DL[@]}" status m --json
[ "$(printf '%s' "$out" | json 'd["mode"]')" = exclusive ] || fail "status m does not show the writer: $out"

# release --force breaks the readers on every node.
start_holder r3 f --shared --ttl 2s
capture "${DL[@]}" release f --force
[ "$rc" = 0 ] || fail "release --force of a read lock exited $rc; stderr: $err"
[ "$(nodes_with_key "$(redis_key f readers)")" = 0 ] || fail "release --force left the readers on some node"
is_free f || fail "status f does not show f free after release --force"
pass
