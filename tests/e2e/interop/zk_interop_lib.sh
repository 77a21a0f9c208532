# shellcheck shell=bash
# Helpers for the tests that check that dlock's zk:// locks and another
# ZooKeeper lock recipe on the same znode exclude each other: Apache Curator's
# InterProcessMutex (CuratorLock.java) or kazoo's Lock (kazoo_lock.py). They
# run under scripts/with-zookeeper. Source it after lib.sh:
#
#   SCENARIO="zookeeper: ..."
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/interop/zk_interop_lib.sh"
#   use_zk_interop curator        # or kazoo
#
#   use_zk_interop TOOL      use_zookeeper (lib.sh), then get TOOL ready
#                            (Curator: compiled here); fails (never skips)
#                            when not under with-zookeeper, without dlock's zk
#                            backend or without TOOL
#   FOREIGN                  array: the other recipe's command line up to the
#                            lock path: "${FOREIGN[@]}" /dlock/x try 500
#   FOREIGN_NAME             "Curator" or "kazoo", for messages
#   FOREIGN_NODE_RE          the names that recipe gives its lock nodes
#   interop_start ID WHO WHAT HELD RELEASED COMMAND...
#                            runs "COMMAND... hold $tmpdir/ID.release" in the
#                            background (a helper of the tests: CuratorLock,
#                            CuratorReadWrite, CuratorSemaphore, kazoo_lock.py),
#                            which waits for WHAT ("the lock", "a lease") and
#                            holds it; WHO names it in messages, HELD and
#                            RELEASED are the first words of its lines when it
#                            holds and when it has let go; sets INTEROP_PID
#   interop_wait_held ID [S] wait (S seconds, default 10) until ID holds; sets
#                            INTEROP_NODE, INTEROP_CZXID, INTEROP_HELD_MS
#   interop_release ID       let ID go; it must say RELEASED and exit 0
#   foreign_hold ID PATH     the other recipe waits for PATH in the background
#                            and holds it once it gets it; sets FOREIGN_PID
#   foreign_wait_held ID [S] wait (S seconds, default 10) until ID holds;
#                            sets FOREIGN_NODE, FOREIGN_CZXID, FOREIGN_HELD_MS
#                            (when it said so)
#   foreign_release ID       let ID go; it must release and exit 0
#   curator_command ARRAY CLASS
#                            ARRAY: Curator's command line with CLASS (its
#                            .java beside CuratorLock's, compiled here) in
#                            CuratorLock's place
#   children PATH            "NAME czxid=N" per child of PATH, by sequence
#                            (listed through kazoo, which starts faster than a
#                            JVM; the order check uses the other recipe's own)
#   no_nodes_left PATH       fails if PATH has children
#   status_field NAME EXPR   EXPR (json) of dlock status NAME --json
#   check_dlock_busy WHILE NAME [OPTS]
#                            dlock run [OPTS] NAME is busy (75), its command
#                            not run; WHILE says why, for messages
#   check_signalled_waiter PARENT N WHO [OPTS] NAME
#                            a `dlock run [OPTS] NAME --wait 20s` queued (N
#                            children below PARENT) and stopped by SIGTERM
#                            exits 143
#   end_holder ID PID WHAT   release_holder ID (lib.sh); its dlock PID (WHAT,
#                            for messages) must exit 0; sets RELEASED_MS, when
#                            it was told to end
#   check_handover WHO FROM RELEASED HELD_MS
#                            WHO got its lock within k_handover_ms of FROM's
#                            release at RELEASED (HELD_MS: when it held)
#   check_lock_interop       the scenarios the Curator and kazoo tests share:
#     check_foreign_holds NAME
#     check_dlock_holds NAME
#     check_namespace_mapping
#     check_dlock_readers_hold NAME
#     check_mixed_contention ROUNDS

# shellcheck disable=SC2154 # tmpdir comes from lib.sh

# A hand-over is a watch event and a round trip or two: well under this even
# on a loaded machine, and far from the waits' own timeouts (10 s or more).
k_handover_ms=3000
k_interop_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

use_zk_interop() {
  use_zookeeper
  # A ZooKeeper connect string is the URL's host list (and chroot, if any).
  local connect=${DLOCK_TEST_ZK_URL#zk://}
  connect=${connect#*@}
  ZK_CONNECT=${connect%%\?*}
  /usr/bin/python3 -c 'import inspect, kazoo.recipe.lock as l
assert "extra_lock_patterns" in inspect.signature(l.Lock.__init__).parameters' 2>/dev/null ||
    fail "/usr/bin/python3 has no kazoo with Lock(extra_lock_patterns=...) (package python3-kazoo, 2.7.1 or later)"
  ZK_LS=(/usr/bin/python3 "$k_interop_dir/kazoo_lock.py" "$ZK_CONNECT")
  case $1 in
  curator) _use_curator ;;
  kazoo) _use_kazoo ;;
  *) fail "use_zk_interop: unknown tool '$1'" ;;
  esac
}

_use_curator() {
  local jar missing=() classpath=
  command -v java >/dev/null || fail "java is needed (package default-jre-headless)"
  command -v javac >/dev/null || fail "javac is needed (package default-jdk-headless)"
  # The client side of Curator and ZooKeeper (NIO, no netty), quiet logging.
  for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-nop; do
    if [ -f "/usr/share/java/$jar.jar" ]; then
      classpath+=/usr/share/java/$jar.jar:
    else
      missing+=("$jar")
    fi
  done
  ((${#missing[@]} == 0)) ||
    fail "missing in /usr/share/java: ${missing[*]} (packages libcurator-recipes-java, libzookeeper-java, libguava-java, libslf4j-java)"
  mkdir -p "$tmpdir/classes"
  # -Xlint:-path: the Debian jars' manifests name optional jars that are absent.
  javac -Xlint:all,-path -Werror -d "$tmpdir/classes" -cp "${classpath%:}" "$k_interop_dir/CuratorTool.java" "$k_interop_dir/CuratorLock.java" \
    2>"$tmpdir/javac.err" || fail "javac CuratorLock.java failed: $(head -5 "$tmpdir/javac.err")"
  FOREIGN=(java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -XX:-UsePerfData -Xss512k
    -Djava.net.preferIPv4Stack=true -cp "$tmpdir/classes:${classpath%:}" CuratorLock "$ZK_CONNECT")
  FOREIGN_NAME=Curator
  FOREIGN_NODE_RE=$ZK_NODE_RE
}

_use_kazoo() {
  FOREIGN=(/usr/bin/python3 "$k_interop_dir/kazoo_lock.py" "$ZK_CONNECT")
  FOREIGN_NAME=kazoo
  FOREIGN_NODE_RE='^[0-9a-f]{32}__lock__[0-9]{10}$'
}

interop_start() {
  local id=$1 who=$2 what=$3 held=$4 released=$5
  shift 5
  rm -f "$tmpdir/$id.release" "$tmpdir/$id.out" "$tmpdir/$id.err"
  "$@" hold "$tmpdir/$id.release" </dev/null >"$tmpdir/$id.out" 2>"$tmpdir/$id.err" &
  INTEROP_PID=$!
  track "$INTEROP_PID"
  eval "_interop_pid_$id=\$INTEROP_PID"
  eval "_interop_who_$id=\$who _interop_what_$id=\$what _interop_held_$id=\$held _interop_released_$id=\$released"
}

interop_wait_held() {
  local id=$1 limit=${2:-10} line who what held
  eval "who=\$_interop_who_$id what=\$_interop_what_$id held=\$_interop_held_$id"
  wait_until -t "$limit" grep -q "^$held " "$tmpdir/$id.out" ||
    fail "$who ($id) did not get $what within ${limit}s; stdout: $(cat "$tmpdir/$id.out"); stderr: $(cat "$tmpdir/$id.err")"
  INTEROP_HELD_MS=$(now_ms)
  line=$(grep "^$held " "$tmpdir/$id.out")
  [[ $line =~ node=([^ ]+)\ czxid=([0-9]+) ]] || fail "$who ($id) printed an odd line: $line"
  INTEROP_NODE=${BASH_REMATCH[1]}
  INTEROP_CZXID=${BASH_REMATCH[2]}
}

interop_release() {
  local id=$1 pid who released
  eval "pid=\$_interop_pid_$id who=\$_interop_who_$id released=\$_interop_released_$id"
  touch "$tmpdir/$id.release"
  wait_exit "$pid" 10
  [ "$rc" = 0 ] || fail "$who ($id) exited $rc on release; stderr: $(cat "$tmpdir/$id.err")"
  grep -qx "$released" "$tmpdir/$id.out" || fail "$who ($id) did not say $released: $(cat "$tmpdir/$id.out")"
}

foreign_hold() {
  interop_start "$1" "$FOREIGN_NAME" "the lock" HELD RELEASED "${FOREIGN[@]}" "$2"
  FOREIGN_PID=$INTEROP_PID
}

# interop_wait_held_as PREFIX ID [S]: interop_wait_held ID [S], then sets
# PREFIX_NODE, PREFIX_CZXID and PREFIX_HELD_MS.
interop_wait_held_as() {
  local prefix=$1
  shift
  interop_wait_held "$@"
  printf -v "${prefix}_HELD_MS" %s "$INTEROP_HELD_MS"
  printf -v "${prefix}_NODE" %s "$INTEROP_NODE"
  printf -v "${prefix}_CZXID" %s "$INTEROP_CZXID"
}

foreign_wait_held() { interop_wait_held_as FOREIGN "$@"; }

foreign_release() { interop_release "$1"; }

curator_command() {
  local -n _curator_command=$1
  local class=$2 word classpath='' i
  _curator_command=()
  for ((i = 0; i < ${#FOREIGN[@]}; i++)); do
    word=${FOREIGN[i]}
    case $word in
    -cp) classpath=${FOREIGN[i + 1]} ;;
    CuratorLock) word=$class ;;
    esac
    _curator_command+=("$word")
  done
  [ -n "$classpath" ] || fail "no class path in the Curator command line: ${FOREIGN[*]}"
  javac -Xlint:all,-path -Werror -d "$tmpdir/classes" -cp "$classpath" "$k_interop_dir/$class.java" \
    2>"$tmpdir/javac-$class.err" || fail "javac $class.java failed: $(head -5 "$tmpdir/javac-$class.err")"
}

children() {
  "${ZK_LS[@]}" "$1" children 2>"$tmpdir/children.err" ||
    fail "kazoo could not list the children of $1: $(cat "$tmpdir/children.err")"
}

no_nodes_left() {
  [ "$(zk_child_count "$1")" = 0 ] || fail "nodes are left below $1: $(children "$1")"
}

status_field() {
  "${DL[@]}" status "$1" --json 2>/dev/null | json "$2"
}

check_dlock_busy() {
  local while=$1 name=$2
  shift 2
  capture "${DL[@]}" run "$@" "$name" -- touch "$tmpdir/ran"
  [ "$rc" = 75 ] || fail "dlock run ${*:+$* }$name exited $rc while $while, expected 75 (busy); stderr: $err"
  [ ! -e "$tmpdir/ran" ] || fail "dlock run ${*:+$* }$name ran its command while $while"
}

check_signalled_waiter() {
  local parent=$1 count=$2 who=$3 waiter
  shift 3
  "${DL[@]}" run "$@" --wait 20s -- touch "$tmpdir/ran" </dev/null 2>"$tmpdir/signalled.err" &
  waiter=$!
  track "$waiter"
  wait_until -t 10 _has_children "$parent" "$count" ||
    fail "$who never queued below $parent: $(cat "$tmpdir/signalled.err")"
  kill -TERM "$waiter"
  wait_exit "$waiter"
  [ "$rc" = 143 ] || fail "$who stopped by SIGTERM exited $rc, expected 143; stderr: $(cat "$tmpdir/signalled.err")"
}

end_holder() {
  RELEASED_MS=$(now_ms)
  release_holder "$1"
  wait_exit "$2"
  [ "$rc" = 0 ] || fail "$3 exited $rc; stderr: $(cat "$tmpdir/$1.err")"
}

check_handover() {
  local who=$1 from=$2 ms=$(($4 - $3))
  echo "$who $ms ms after $from was told to end (upper bound)"
  [ "$ms" -lt "$k_handover_ms" ] || fail "$who only $ms ms after $from was told to end: not woken by the watch"
}

# check_foreign_try_busy WHILE PATH NODES: the other recipe's try on PATH
# is busy (75, BUSY) and leaves the NODES children PATH had.
check_foreign_try_busy() {
  local while=$1 path=$2 nodes=$3
  capture "${FOREIGN[@]}" "$path" try 300
  if [ "$rc" != 75 ] || [ "$out" != BUSY ]; then
    fail "$FOREIGN_NAME's try on $path while $while: exit $rc, '$out' (expected 75, BUSY); stderr: $err"
  fi
  [ "$(zk_child_count "$path")" = "$nodes" ] || fail "$FOREIGN_NAME's failed try left a node behind: $(children "$path")"
}

# foreign_queue ID NAME NODES BEHIND: the other recipe waits for /dlock/NAME
# in the background (foreign_hold ID) BEHIND ("behind the readers"): once
# its node is queued NAME has NODES children, and status counts one waiter.
foreign_queue() {
  local id=$1 name=$2 nodes=$3 behind=$4
  foreign_hold "$id" "/dlock/$name"
  wait_until -t 10 _has_children "/dlock/$name" "$nodes" ||
    fail "$FOREIGN_NAME never queued a node below /dlock/$name; stderr: $(cat "$tmpdir/$id.err")"
  [ "$(lock_waiters "$name" 2>/dev/null)" = 1 ] ||
    fail "dlock status $name shows $(lock_waiters "$name") waiters while $FOREIGN_NAME waits $behind, expected 1"
}

# check_foreign_still_waits ID PATH WHILE: 0.3 s on, the other recipe's
# blocking acquire ID still waits for PATH, which WHILE keeps from it.
check_foreign_still_waits() {
  local id=$1 path=$2 while=$3
  sleep 0.3
  ! grep -q '^HELD' "$tmpdir/$id.out" || fail "$FOREIGN_NAME got $path while $while"
  is_alive "$FOREIGN_PID" || fail "$FOREIGN_NAME's blocking acquire ended early; stderr: $(cat "$tmpdir/$id.err")"
}

check_lock_interop() {
  check_foreign_holds nightly
  check_dlock_holds report
  check_dlock_readers_hold readers
  check_namespace_mapping
  check_mixed_contention 8
}

_has_children() { [ "$(zk_child_count "$1")" -ge "$2" ]; }

# no_crash WHAT TEXT: TEXT (dlock's output) shows no sign of a crash.
no_crash() {
  case $2 in
  *"terminate called"* | *"what():"* | *"Aborted"* | *"core dumped"* | *"Segmentation"* | *"#0 "*)
    fail "$1 looks like a crash: $2"
    ;;
  esac
}

# check_foreign_holds NAME: the other recipe holds /dlock/NAME. dlock run
# without --wait is busy (75, one line, the command not run); status says held (0, valid JSON, whatever it
# makes of a holder that is not dlock); list shows it; a `run --wait 10s`
# waits, is counted as a waiter, and is handed the lock by the release's
# watch event, within k_handover_ms, with a fence (the czxid of its node)
# above the other holder's czxid. Nothing is left below /dlock/NAME after.
check_foreign_holds() {
  local name=$1 path=/dlock/$1 released started waited_ms fence

  foreign_hold fh "$path"
  foreign_wait_held fh
  # shellcheck disable=SC2153 # foreign_wait_held sets it (interop_wait_held_as)
  [[ $FOREIGN_NODE =~ $FOREIGN_NODE_RE ]] || fail "$FOREIGN_NAME named its node '$FOREIGN_NODE', expected /$FOREIGN_NODE_RE/"

  check_dlock_busy "$FOREIGN_NAME held $path" "$name"
  assert_one_line_message "busy under $FOREIGN_NAME" "$err"
  [ "$(zk_child_count "$path")" = 1 ] || fail "the busy run left a node behind: $(children "$path")"

  capture "${DL[@]}" status "$name"
  [ "$rc" = 0 ] || fail "dlock status $name exited $rc while $FOREIGN_NAME held $path, expected 0; stdout: $out; stderr: $err"
  no_crash "status of a lock $FOREIGN_NAME holds" "$out$err"
  [ -n "$out" ] || fail "dlock status $name printed nothing"
  capture "${DL[@]}" status "$name" --json
  [ "$rc" = 0 ] || fail "dlock status $name --json exited $rc while $FOREIGN_NAME held $path; stderr: $err"
  no_crash "status --json of a lock $FOREIGN_NAME holds" "$out$err"
  [ "$(printf '%s' "$out" | json 'd["held"]' 2>/dev/null)" = true ] ||
    fail "status --json while $FOREIGN_NAME held $path does not say held: true: $out"
  echo "status while $FOREIGN_NAME holds: $out"
  capture "${DL[@]}" list --json
  [ "$rc" = 0 ] || fail "dlock list --json exited $rc while $FOREIGN_NAME held $path; stderr: $err"
  no_crash "list --json" "$out$err"
  printf '%s' "$out" | json '[l["name"] for l in d]' | grep -qF "\"$name\"" ||
    fail "dlock list --json does not show $name, which $FOREIGN_NAME holds: $out"

  rm -f "$tmpdir/waiter.ms" "$tmpdir/waiter.fence"
  started=$(now_ms)
  "${DL[@]}" run "$name" --wait 10s -- sh -c 'echo "$DLOCK_FENCE" >"$1.fence"; date +%s%3N >"$1.ms"' sh "$tmpdir/waiter" \
    </dev/null >"$tmpdir/waiter.out" 2>"$tmpdir/waiter.err" &
  local waiter=$!
  track "$waiter"
  wait_until -t 10 _has_children "$path" 2 || fail "dlock run --wait never queued a node below $path: $(children "$path")"
  wait_until -t 5 has_waiter "$name" || fail "dlock status never counted the waiting run as a waiter"
  [ "$(lock_waiters "$name")" = 1 ] || fail "status shows $(lock_waiters "$name") waiters, expected 1"
  # Its node sorts after the holder's in the other recipe's own order too.
  "${FOREIGN[@]}" "$path" children >"$tmpdir/children" 2>"$tmpdir/children.err" ||
    fail "$FOREIGN_NAME could not list the children of $path: $(cat "$tmpdir/children.err")"
  [ "$(head -1 "$tmpdir/children" | cut -d' ' -f1)" = "$FOREIGN_NODE" ] ||
    fail "$FOREIGN_NAME's node is not first: $(cat "$tmpdir/children")"
  [[ $(sed -n 2p "$tmpdir/children" | cut -d' ' -f1) =~ $ZK_NODE_RE ]] ||
    fail "dlock's waiting node is not named like Curator's protected nodes: $(cat "$tmpdir/children")"
  sleep 0.3
  is_alive "$waiter" || fail "dlock run --wait ended while $FOREIGN_NAME held the lock; stderr: $(cat "$tmpdir/waiter.err")"
  [ ! -e "$tmpdir/waiter.ms" ] || fail "dlock ran its command while $FOREIGN_NAME held $path"

  released=$(now_ms)
  foreign_release fh
  wait_exit "$waiter" 15
  [ "$rc" = 0 ] || fail "dlock run --wait exited $rc after $FOREIGN_NAME released, expected 0; stderr: $(cat "$tmpdir/waiter.err")"
  [ ! -s "$tmpdir/waiter.err" ] || fail "dlock run --wait printed: $(cat "$tmpdir/waiter.err")"
  waited_ms=$(($(cat "$tmpdir/waiter.ms") - released))
  echo "dlock got $path ${waited_ms} ms after $FOREIGN_NAME let go ($(($(cat "$tmpdir/waiter.ms") - started)) ms after it asked)"
  [ "$waited_ms" -ge 0 ] || fail "dlock's command started ${waited_ms#-} ms before $FOREIGN_NAME released"
  [ "$waited_ms" -lt "$k_handover_ms" ] ||
    fail "dlock's command started only ${waited_ms} ms after $FOREIGN_NAME released: not woken by the watch"
  fence=$(cat "$tmpdir/waiter.fence")
  [[ $fence =~ ^[0-9]+$ ]] || fail "dlock's fence '$fence' is not a number"
  [ "$fence" -gt "$FOREIGN_CZXID" ] ||
    fail "dlock's fence '$fence' is not above the czxid $FOREIGN_CZXID of $FOREIGN_NAME's earlier node"
  no_nodes_left "$path"
}

# check_dlock_holds NAME: dlock run holds NAME; its two nodes below
# /dlock/NAME (one transaction) are its -lock- node, named like Curator's,
# and a __WRIT__ node of the same protected id for Curator's read-write
# lock; their czxid is the job's DLOCK_FENCE. The other
# recipe's try is busy (and leaves no node); its blocking acquire is counted
# as a waiter, waits until dlock's job ends and is then handed the lock by
# the watch within k_handover_ms; while it holds, dlock is busy again.
check_dlock_holds() {
  local name=$1 path=/dlock/$1 node czxid

  start_holder dh "$name"
  local holder=$HOLDER_PID fence
  fence=$(cat "$tmpdir/dh.fence")
  children "$path" >"$tmpdir/children"
  [ "$(line_count "$(cat "$tmpdir/children")")" = 2 ] || fail "expected two nodes below $path, got: $(cat "$tmpdir/children")"
  read -r node czxid <"$tmpdir/children"
  [[ $node =~ $ZK_NODE_RE ]] || fail "dlock named its node '$node', expected /$ZK_NODE_RE/"
  [ "$czxid" = "czxid=$fence" ] || fail "the job's DLOCK_FENCE $fence is not the czxid of dlock's node ($czxid)"
  [ "$(sed -n 2p "$tmpdir/children")" = "${node%-lock-*}-__WRIT__$(printf '%010d' $((10#${node##*-lock-} + 1))) czxid=$fence" ] ||
    fail "dlock's second node is not the __WRIT__ node of its protected id, next in sequence, made with the first: $(cat "$tmpdir/children")"

  check_foreign_try_busy "dlock held $name" "$path" 2
  foreign_queue fw "$name" 3 "behind dlock's job"
  check_foreign_still_waits fw "$path" "dlock's job still ran"

  end_holder dh "$holder" "dlock run"
  foreign_wait_held fw 10
  check_handover "$FOREIGN_NAME got $path" "dlock's job" "$RELEASED_MS" "$FOREIGN_HELD_MS"
  [ "$FOREIGN_CZXID" -gt "$fence" ] || fail "$FOREIGN_NAME's node czxid $FOREIGN_CZXID is not above dlock's fence $fence"

  check_dlock_busy "$FOREIGN_NAME held $path after the hand-over" "$name"
  foreign_release fw
  no_nodes_left "$path"
}

# check_dlock_readers_hold NAME: two dlock readers (--shared) hold NAME;
# each has a -lock- node beside its __READ__ node, so the other recipe's
# exclusive lock (which counts -lock- nodes only) sees them: its try is
# busy (and leaves no node); its blocking acquire waits, is counted as a
# waiter, still waits once one reader has gone, and is handed the lock by
# the watch within k_handover_ms once the last one goes, its czxid above
# both readers' fences; while it holds, a dlock reader is busy.
check_dlock_readers_hold() {
  local name=$1 path=/dlock/$1 first second

  start_holder r1 "$name" --shared
  local reader1=$HOLDER_PID
  first=$(cat "$tmpdir/r1.fence")
  start_holder r2 "$name" --shared
  local reader2=$HOLDER_PID
  second=$(cat "$tmpdir/r2.fence")
  [ "$(zk_child_count "$path")" = 4 ] || fail "two dlock readers do not have two nodes each below $path: $(children "$path")"

  check_foreign_try_busy "dlock's readers held $name" "$path" 4
  foreign_queue fr "$name" 5 "behind the readers"
  end_holder r1 "$reader1" "the first dlock reader"
  check_foreign_still_waits fr "$path" "a dlock reader still held it"

  end_holder r2 "$reader2" "the second dlock reader"
  foreign_wait_held fr 10
  check_handover "$FOREIGN_NAME got $path" "dlock's last reader" "$RELEASED_MS" "$FOREIGN_HELD_MS"
  if [ "$second" -le "$first" ] || [ "$FOREIGN_CZXID" -le "$second" ]; then
    fail "fences do not rise: readers $first, $second, then $FOREIGN_NAME's czxid $FOREIGN_CZXID"
  fi

  check_dlock_busy "$FOREIGN_NAME held $path" "$name" --shared
  foreign_release fr
  no_nodes_left "$path"
}

# check_namespace_mapping: --namespace NS and names with '/' map to
# /NS/NAME: the other recipe on /jobs/nightly/db excludes
# `dlock --namespace jobs run nightly/db` and not `dlock run nightly/db`;
# dlock --namespace jobs holding it makes the other recipe's try busy on
# /jobs/nightly/db and not on /dlock/nightly/db.
check_namespace_mapping() {
  foreign_hold ns /jobs/nightly/db
  foreign_wait_held ns
  capture "${DL[@]}" --namespace jobs run nightly/db -- true
  [ "$rc" = 75 ] || fail "dlock --namespace jobs run nightly/db exited $rc while $FOREIGN_NAME held /jobs/nightly/db, expected 75"
  capture env DLOCK_NAMESPACE=jobs "${DL[@]}" run nightly/db -- true
  [ "$rc" = 75 ] || fail "DLOCK_NAMESPACE=jobs dlock run nightly/db exited $rc while $FOREIGN_NAME held /jobs/nightly/db, expected 75"
  capture "${DL[@]}" run nightly/db -- true
  [ "$rc" = 0 ] || fail "dlock run nightly/db (namespace dlock) exited $rc while only /jobs/nightly/db was held; stderr: $err"
  foreign_release ns

  start_holder nh nightly/db --namespace jobs
  capture "${FOREIGN[@]}" /jobs/nightly/db try 300
  [ "$rc" = 75 ] || fail "$FOREIGN_NAME's try on /jobs/nightly/db exited $rc ($out) while dlock --namespace jobs held nightly/db"
  capture "${FOREIGN[@]}" /dlock/nightly/db try 2000
  [ "$rc" = 0 ] || fail "$FOREIGN_NAME's try on /dlock/nightly/db exited $rc ($out) while only /jobs/nightly/db was held; stderr: $err"
  end_holder nh "$HOLDER_PID" "dlock --namespace jobs run"
}

# check_mixed_contention ROUNDS: two dlock workers and one of the other
# recipe each take the lock ROUNDS times for a critical section that reads a
# counter, sleeps a little and writes it back plus one. No run fails, no two
# sections overlap, no update is lost, and the fences (dlock's DLOCK_FENCE,
# the other recipe's czxid) rise strictly in lock order.
check_mixed_contention() {
  local rounds=$1 name=mixed pid pids=() started count
  echo 0 >"$tmpdir/counter"
  : >"$tmpdir/fences"
  : >"$tmpdir/overlaps"
  : >"$tmpdir/failures"
  cat >"$tmpdir/critical.sh" <<'SCRIPT'
d=$1
if ! mkdir "$d/inside" 2>/dev/null; then
  echo "overlap: $2 fence=$DLOCK_FENCE" >>"$d/overlaps"
fi
read n <"$d/counter"
sleep 0.00$((RANDOM % 6))
echo $((n + 1)) >"$d/counter"
echo "$DLOCK_FENCE $2" >>"$d/fences"
rmdir "$d/inside" 2>/dev/null
exit 0
SCRIPT
  started=$(now_ms)
  for w in 1 2; do
    (
      for ((i = 0; i < rounds; i++)); do
        "${DL[@]}" run "$name" --wait 20s -- bash "$tmpdir/critical.sh" "$tmpdir" dlock </dev/null ||
          echo "dlock worker $w round $i exited $?" >>"$tmpdir/failures"
      done
    ) 2>>"$tmpdir/mixed.err" &
    pids+=($!)
  done
  "${FOREIGN[@]}" "/dlock/$name" repeat "$rounds" bash "$tmpdir/critical.sh" "$tmpdir" "$FOREIGN_NAME" \
    </dev/null 2>>"$tmpdir/mixed.err" &
  local foreign=$!
  pids+=("$foreign")
  track "${pids[@]}"
  for pid in "${pids[@]}"; do
    wait_until -t 25 is_gone "$pid" || fail "a worker did not finish in time (count so far $(cat "$tmpdir/counter"))"
    wait "$pid" || echo "worker $pid exited $?" >>"$tmpdir/failures"
  done
  [ ! -s "$tmpdir/failures" ] || fail "some runs failed: $(head -3 "$tmpdir/failures"); stderr: $(head -3 "$tmpdir/mixed.err")"
  [ ! -s "$tmpdir/overlaps" ] || fail "critical sections overlapped: $(head -3 "$tmpdir/overlaps")"
  count=$(cat "$tmpdir/counter")
  [ "$count" = $((3 * rounds)) ] || fail "counter is $count, expected $((3 * rounds)) (lost updates)"
  [ ! -s "$tmpdir/mixed.err" ] || fail "stderr: $(head -3 "$tmpdir/mixed.err")"
  [ "$(grep -c " $FOREIGN_NAME\$" "$tmpdir/fences")" = "$rounds" ] || fail "$FOREIGN_NAME did not run $rounds sections"
  python3 - "$tmpdir/fences" <<'PY' || fail "fences do not rise strictly in lock order: $(tr '\n' ' ' <"$tmpdir/fences")"
import sys
fences = [int(line.split()[0]) for line in open(sys.argv[1])]
sys.exit(0 if all(b > a for a, b in zip(fences, fences[1:])) else 1)
PY
  echo "$((3 * rounds)) increments by dlock and $FOREIGN_NAME in $(($(now_ms) - started)) ms"
}
