#!/usr/bin/env bash
# On ZooKeeper, DLOCK_FENCE is the czxid of the holder's lock node: it grows
# strictly from run to run on one name, and across a restart of the server
# (which keeps its data: zxids continue). status and acquire --json show the
# same fence the job sees.
SCENARIO="zookeeper: fences increase across runs and a restart"
. "$(dirname "$0")/lib.sh"
use_zookeeper

fences=()
# fence_run WHAT: one run of lock f; appends the job's DLOCK_FENCE to fences.
fence_run() {
  capture "${DL[@]}" run f -- sh -c 'echo "$DLOCK_FENCE"'
  [ "$rc" = 0 ] || fail "$1: run exited $rc; stderr: $err"
  [[ $out =~ ^[1-9][0-9]{0,18}$ ]] || fail "$1: DLOCK_FENCE is '$out', not a positive decimal that fits 63 bits"
  if ((${#fences[@]})); then
    [ "$out" -gt "${fences[-1]}" ] ||
      fail "$1: fence $out is not greater than the previous one, ${fences[-1]} (all so far: ${fences[*]})"
  fi
  fences+=("$out")
}

fence_run "first run"
fence_run "second run"
# Other writes to the server between two runs only make the gap larger.
"$ZKCLI" create /unrelated/node data || fail "could not write to the server"
fence_run "after an unrelated write"

# The fence is the lock node's czxid; status and acquire --json show it.
capture "${DL[@]}" acquire f --ttl 30s --json
[ "$rc" = 0 ] || fail "acquire f --json exited $rc; stderr: $err"
acquired=$(printf '%s' "$out" | json 'd["fence"]')
token=$(printf '%s' "$out" | json 'd["token"]')
[ "$acquired" -gt "${fences[-1]}" ] || fail "acquire's fence $acquired is not greater than the last run's, ${fences[-1]}"
fences+=("$acquired")
[ "$("${DL[@]}" status f --json | json 'd["fence"]')" = "$acquired" ] ||
  fail "status f shows another fence than acquire --json printed ($acquired)"
zk_children /dlock/f >"$tmpdir/nodes.json"
[ "$(json 'len(d)' <"$tmpdir/nodes.json")" = 2 ] || fail "/dlock/f does not hold exactly the holder's two nodes: $(cat "$tmpdir/nodes.json")"
node=$(json '[n for n in d if "-lock-" in n["name"]][0]["name"]' <"$tmpdir/nodes.json")
[[ $node =~ $ZK_NODE_RE ]] || fail "the lock node '$node' is not named like Curator's: _c_<uuid>-lock-<10 digits>"
czxid=$(json '[n for n in d if "-lock-" in n["name"]][0]["czxid"]' <"$tmpdir/nodes.json")
[ "$czxid" = "$acquired" ] || fail "the fence $acquired is not the lock node's czxid $czxid"
"${DL[@]}" release f "$token" || fail "release f failed"

old_pid=$(cat "$DLOCK_TEST_ZK_PIDFILE")
"$DLOCK_TEST_ZK_RESTART" || fail "the server could not be restarted"
[ "$(cat "$DLOCK_TEST_ZK_PIDFILE")" != "$old_pid" ] || fail "the restart did not start a new server process"
"$ZKCLI" exists /unrelated/node || fail "the restarted server lost its data: the test would prove nothing"
fence_run "first run after a restart"
fence_run "second run after a restart"

# Two restarts in a row, without a run in between.
"$DLOCK_TEST_ZK_RESTART" || fail "the server could not be restarted a second time"
"$DLOCK_TEST_ZK_RESTART" || fail "the server could not be restarted a third time"
fence_run "first run after two more restarts"

# Another name's first fence is also a zxid: above everything handed out so far.
capture "${DL[@]}" run g -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run g exited $rc; stderr: $err"
[ "$out" -gt "${fences[-1]}" ] || fail "a new name's first fence ($out) is not above the last fence of f (${fences[-1]}): not a zxid?"
echo "fences: ${fences[*]} $out"
pass
