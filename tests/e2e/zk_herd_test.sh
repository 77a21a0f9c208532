#!/usr/bin/env bash
# No herd on ZooKeeper: with 20 `dlock run --wait` queued behind a holder,
# each waiter watches only its predecessor's node (never the lock's parent),
# so a release wakes exactly one waiter, its successor, and the 20 then get
# the lock one after another in the order of their nodes, each woken once:
# 20 wake-ups in all, never more.
SCENARIO="zookeeper: one waiter woken per release"
. "$(dirname "$0")/lib.sh"
use_zookeeper

k_waiters=20
name=herd
parent=/dlock/$name

start_holder h "$name"
holder_fence=$(cat "$tmpdir/h.fence")

# Waiter I's job records that it runs (and its fence) and blocks on its own
# fifo until the test lets it go: only the test decides when the lock moves.
cat >"$tmpdir/job.sh" <<'SCRIPT'
d=$1 i=$2
echo "$i $DLOCK_FENCE" >>"$d/order"
echo "$i" >"$d/running.tmp" && mv "$d/running.tmp" "$d/running"
read -r _ <"$d/w$i.fifo"
SCRIPT
waiter_pids=()
for ((i = 1; i <= k_waiters; i++)); do
  mkfifo "$tmpdir/w$i.fifo"
  "${DL[@]}" -v run "$name" --wait 60s -- sh "$tmpdir/job.sh" "$tmpdir" "$i" \
    </dev/null >"$tmpdir/w$i.out" 2>"$tmpdir/w$i.err" &
  waiter_pids+=($!)
  track $!
done
waiter_errs=()
for ((i = 1; i <= k_waiters; i++)); do waiter_errs+=("$tmpdir/w$i.err"); done

queued() { [ "$(lock_waiters "$name")" = "$k_waiters" ]; }
wait_until -t 20 queued ||
  fail "status --json never counted $k_waiters waiters (now $(lock_waiters "$name"); nodes: $(zk_child_count "$parent"))"
[ "$(zk_child_count "$parent")" = $((2 * (k_waiters + 1))) ] ||
  fail "$parent has $(zk_child_count "$parent") children, expected $((2 * (k_waiters + 1))) (two each of the holder and $k_waiters waiters)"
[ ! -e "$tmpdir/running" ] || fail "waiter $(cat "$tmpdir/running") runs while the holder still holds the lock"
[ "$(zk_wakeups "${waiter_errs[@]}")" = 0 ] ||
  fail "waiters were woken before anything was released: $(grep -h 'woken by' "${waiter_errs[@]}" | head -3)"

# Who watches what, from the server's side: each waiter's session watches
# exactly its predecessor (it may also watch its own node), nobody watches
# the parent, and the sessions are those of the nodes (ephemeralOwner).
zk_children "$parent" >"$tmpdir/nodes.json"
"$ZK4" wchc >"$tmpdir/wchc" || fail "the server did not answer wchc"
python3 - "$tmpdir/nodes.json" "$tmpdir/wchc" "$parent" "$k_waiters" <<'PY' || fail "the watches are not one per predecessor (wchc: $(tr '\n\t' '  ' <"$tmpdir/wchc"))"
import json, sys
nodes = json.load(open(sys.argv[1]))
parent, waiters = sys.argv[3], int(sys.argv[4])
watches, session = {}, None
for line in open(sys.argv[2]):
    line = line.rstrip("\n")
    if line.startswith("0x"):
        session = int(line, 16)
        watches.setdefault(session, set())
    elif line.strip() and session is not None:
        watches[session].add(line.strip())
for paths in watches.values():
    if parent in paths:
        sys.exit("someone watches the parent %s: a release would wake every waiter" % parent)
# Each contender's -lock- node (its other one, __WRIT__, comes next in sequence).
nodes = [n for n in nodes if "-lock-" in n["name"]]
nodes.sort(key=lambda n: n["name"].rsplit("-", 1)[-1])
if len(nodes) != waiters + 1:
    sys.exit("%d nodes" % len(nodes))
for previous, node in zip(nodes, nodes[1:]):
    own = parent + "/" + node["name"]
    predecessor = parent + "/" + previous["name"]
    seen = watches.get(node["ephemeralOwner"], set()) - {own}
    if seen != {predecessor}:
        sys.exit("the waiter at %s watches %s, expected just %s" % (node["name"], sorted(seen), predecessor))
PY

# The queue in lock order: waiter number by session (dlock -v names its
# session), session by node.
python3 - "$tmpdir/nodes.json" "$tmpdir" "$k_waiters" >"$tmpdir/queue" <<'PY' || fail "cannot match the waiters to their nodes: $(cat "$tmpdir/queue")"
import json, re, sys
nodes = json.load(open(sys.argv[1]))
by_session = {}
for i in range(1, int(sys.argv[3]) + 1):
    # The last session named: a waiter looks at the holder first (status,
    # a session of its own), then queues in the lock's session.
    m = re.findall(r"session (0x[0-9a-f]+)", open("%s/w%d.err" % (sys.argv[2], i)).read())
    if not m:
        sys.exit("waiter %d: dlock -v did not name its session" % i)
    by_session[int(m[-1], 16)] = i
# Each contender's -lock- node (its other one, __WRIT__, comes next in sequence).
nodes = [n for n in nodes if "-lock-" in n["name"]]
nodes.sort(key=lambda n: n["name"].rsplit("-", 1)[-1])
order = [by_session.get(n["ephemeralOwner"]) for n in nodes[1:]]
if None in order:
    sys.exit("a node belongs to no waiter: %s" % order)
print(" ".join(map(str, order)))
PY
read -ra queue <"$tmpdir/queue"

running() { [ -e "$tmpdir/running" ] && [ "$(cat "$tmpdir/running")" = "$1" ]; }

# Release the holder: its successor, and only it, is woken. Its job running
# is the event; stragglers of a herd would show within the next moment.
release_holder h
wait_exit "$HOLDER_PID" 10
[ "$rc" = 0 ] || fail "the holder exited $rc"
wait_until -t 10 running "${queue[0]}" ||
  fail "the first waiter in line (${queue[0]}) did not get the lock within 10 s after the release (running: $(cat "$tmpdir/running" 2>/dev/null))"
sleep 0.5 # a grace period for stragglers: wake-ups that must not come
woken=$(zk_wakeups "${waiter_errs[@]}")
[ "$woken" = 1 ] || fail "one release woke $woken waiters, expected exactly 1: $(grep -l 'woken by' "${waiter_errs[@]}" | tr '\n' ' ')"
grep -q 'woken by ZooKeeper' "$tmpdir/w${queue[0]}.err" || fail "the woken waiter is not the one that got the lock (${queue[0]})"

# Then each release hands the lock to the next in line, one wake-up each.
for ((k = 1; k < k_waiters; k++)); do
  timeout 5 sh -c 'echo go >"$1"' release "$tmpdir/w${queue[$((k - 1))]}.fifo" ||
    fail "waiter ${queue[$((k - 1))]}'s job is not reading its fifo"
  wait_until -t 10 running "${queue[$k]}" ||
    fail "waiter ${queue[$k]} (number $((k + 1)) in line) did not get the lock within 10 s (running: $(cat "$tmpdir/running"))"
  woken=$(zk_wakeups "${waiter_errs[@]}")
  [ "$woken" = $((k + 1)) ] || fail "after $((k + 1)) hand-overs $woken waiters were woken"
done
timeout 5 sh -c 'echo go >"$1"' release "$tmpdir/w${queue[-1]}.fifo" || fail "the last job is not reading its fifo"

for ((i = 1; i <= k_waiters; i++)); do
  wait_exit "${waiter_pids[$((i - 1))]}" 10
  [ "$rc" = 0 ] || fail "waiter $i exited $rc; stderr: $(grep -v '^dlock: \(zookeeper: session\|waiting\|acquired\|released\)' "$tmpdir/w$i.err" | head -3)"
done
# Every waiter has ended: no wake-up can come any more.
woken=$(zk_wakeups "${waiter_errs[@]}")
[ "$woken" = "$k_waiters" ] || fail "$k_waiters hand-overs woke waiters $woken times, expected $k_waiters"
for f in "${waiter_errs[@]}"; do
  [ "$(zk_wakeups "$f")" = 1 ] || fail "$(basename "$f" .err) was woken $(zk_wakeups "$f") times"
done

# The jobs ran in the order of the queue, with strictly increasing fences.
[ "$(cut -d' ' -f1 "$tmpdir/order" | tr '\n' ' ')" = "${queue[*]} " ] ||
  fail "the jobs ran in the order $(cut -d' ' -f1 "$tmpdir/order" | tr '\n' ' '), not the queue's ${queue[*]}"
previous=$holder_fence
while read -r i fence; do
  [ "$fence" -gt "$previous" ] 2>/dev/null || fail "waiter $i's fence $fence is not greater than the one before, $previous"
  previous=$fence
done <"$tmpdir/order"
wait_until -t 5 is_free "$name" || fail "the lock is still held after every waiter ended"
[ "$(zk_child_count "$parent")" = 0 ] || fail "nodes are left under $parent: $(zk_children "$parent")"

# No watch outlives its waiter: with every session closed the server holds
# none, and says so with an empty answer to wchc (which is still an answer).
no_watches() { "$ZK4" wchc >"$tmpdir/wchc" && [ ! -s "$tmpdir/wchc" ]; }
wait_until -t 5 no_watches || fail "watches are left after every waiter ended (wchc: $(tr '\n\t' '  ' <"$tmpdir/wchc"))"
pass
