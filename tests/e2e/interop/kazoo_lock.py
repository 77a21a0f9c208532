"""kazoo's Lock recipe, driven from the shell, for the tests that check that
dlock's zk:// locks and kazoo's exclude each other. Run it with the Python
that has kazoo (Debian's python3-kazoo: /usr/bin/python3).

  kazoo_lock.py CONNECT PATH hold [RELEASE_FILE]
      Waits as long as it takes for the lock on PATH, prints
      "HELD node=NAME czxid=N waited_ms=N", then holds it until RELEASE_FILE
      exists (or, without one, until stdin reaches end of file), releases it
      and prints "RELEASED".
  kazoo_lock.py CONNECT PATH try TIMEOUT_MS
      One acquire with that timeout: "HELD ..." (released again at once, exit
      0) or "BUSY" (exit 75, as dlock's busy status).
  kazoo_lock.py CONNECT PATH repeat N COMMAND [ARG...]
      N times: wait for the lock, run COMMAND (stdio inherited) with
      DLOCK_FENCE set to the czxid of the lock's node, release. Exit 70 if
      COMMAND fails.
  kazoo_lock.py CONNECT PATH children
      The children of PATH, one "NAME czxid=N" line each, by sequence number.

The lock is kazoo's own Lock with extra_lock_patterns=["-lock-"] (kazoo 2.7.1
and later), so that it also counts Curator-style contenders
("_c_<uuid>-lock-<seq>", what dlock creates) and not only its own
("<uuid hex>__lock__<seq>").

Exit status: 0 done, 64 usage, 69 ZooKeeper unreachable, 70 other failure,
75 busy, 76 the session was lost while the lock was held. Failures print one
"kazoo_lock: ..." line on stderr.
"""

import logging
import os
import re
import subprocess
import sys
import time

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

EXIT_USAGE = 64
EXIT_UNAVAILABLE = 69
EXIT_INTERNAL = 70
EXIT_BUSY = 75
EXIT_LOST = 76

held = False


def die(status, message):
    sys.stderr.write("kazoo_lock: %s\n" % message)
    sys.stderr.flush()
    os._exit(status)


def usage():
    die(EXIT_USAGE, "usage: kazoo_lock.py CONNECT PATH hold [RELEASE_FILE] | try TIMEOUT_MS"
        " | repeat N COMMAND [ARG...] | children")


def sequence(name):
    match = re.search(r"(\d{10})$", name)
    return int(match.group(1)) if match else float("inf")


def report_held(client, lock, started):
    stat = client.exists(lock.path + "/" + lock.node)
    print("HELD node=%s czxid=%s waited_ms=%d"
          % (lock.node, stat.czxid if stat else "gone", (time.monotonic() - started) * 1000),
          flush=True)


def hold(client, path, release_file):
    global held
    lock = client.Lock(path, "kazoo_lock pid %d" % os.getpid(), extra_lock_patterns=["-lock-"])
    started = time.monotonic()
    lock.acquire()
    held = True
    report_held(client, lock, started)
    if release_file is None:
        sys.stdin.read()
    else:
        # A test helper may poll: a release 10 ms late costs nothing here.
        while not os.path.exists(release_file):
            time.sleep(0.01)
    held = False
    lock.release()
    print("RELEASED", flush=True)
    return 0


def try_once(client, path, timeout_ms):
    lock = client.Lock(path, "kazoo_lock pid %d" % os.getpid(), extra_lock_patterns=["-lock-"])
    started = time.monotonic()
    try:
        got = lock.acquire(timeout=timeout_ms / 1000.0)
    except LockTimeout:
        got = False
    if not got:
        print("BUSY", flush=True)
        return EXIT_BUSY
    report_held(client, lock, started)
    lock.release()
    return 0


def repeat(client, path, rounds, command):
    global held
    lock = client.Lock(path, "kazoo_lock pid %d" % os.getpid(), extra_lock_patterns=["-lock-"])
    for i in range(rounds):
        lock.acquire()
        held = True
        stat = client.exists(lock.path + "/" + lock.node)
        env = dict(os.environ, DLOCK_FENCE=str(stat.czxid) if stat else "gone")
        code = subprocess.call(command, env=env)
        held = False
        lock.release()
        if code != 0:
            die(EXIT_INTERNAL, "round %d: %s exited %d" % (i, command[0], code))
    return 0


def children(client, path):
    try:
        names = client.get_children(path)
    except NoNodeError:
        return 0
    for name in sorted(names, key=sequence):
        stat = client.exists(path + "/" + name)
        print("%s czxid=%s" % (name, stat.czxid if stat else "gone"))
    sys.stdout.flush()
    return 0


def main(argv):
    if len(argv) < 4:
        usage()
    connect, path, mode = argv[1:4]
    logging.basicConfig(level=logging.CRITICAL)
    client = KazooClient(hosts=connect, timeout=10.0)

    # Holding a lock whose session is gone would be a lie: say so and stop.
    def watch_session(state):
        if held and state == KazooState.LOST:
            die(EXIT_LOST, "the ZooKeeper session was lost while the lock on %s was held" % path)

    client.add_listener(watch_session)
    try:
        client.start(timeout=10)
    except KazooTimeoutError:
        die(EXIT_UNAVAILABLE, "cannot connect to ZooKeeper at %s" % connect)
    try:
        if mode == "hold":
            status = hold(client, path, argv[4] if len(argv) > 4 else None)
        elif mode == "try":
            if len(argv) < 5:
                usage()
            status = try_once(client, path, int(argv[4]))
        elif mode == "repeat":
            if len(argv) < 6:
                usage()
            status = repeat(client, path, int(argv[4]), argv[5:])
        elif mode == "children":
            status = children(client, path)
        else:
            usage()
    except Exception as e:  # one line, no traceback, as dlock's own failures
        die(EXIT_INTERNAL, "%s: %s" % (type(e).__name__, e))
    client.stop()
    client.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
