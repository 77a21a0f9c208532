#!/usr/bin/env python3
"""Command line of tests/chaos/netns.py (see its docstring): check, up, run,
partition, heal, delay, list, cleanup-stale."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns import *  # noqa: E402,F401,F403
from netns import _links, _run, STATE_DIR, DIRECTIONS  # noqa: E402


# ---------------------------------------------------------------------- CLI

def _stateless_partition(name, direction):
    root_link, ns_link = _links(name)
    for dev, ns, drop in ((ns_link, name, direction in ("both", "to-server")),
                          (root_link, None, direction in ("both",
                                                          "to-client"))):
        if drop:
            _run(["tc", "qdisc", "replace", "dev", dev, "root", "pfifo",
                  "limit", "0"], ns=ns)


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    for c in ("up", "run"):
        p = sub.add_parser(c)
        p.add_argument("--port", type=int, action="append", default=[])
        p.add_argument("--delay", type=int, default=0)
        if c == "run":
            p.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("partition")
    p.add_argument("name")
    p.add_argument("--direction", default="both", choices=DIRECTIONS)
    p = sub.add_parser("heal")
    p.add_argument("name")
    p = sub.add_parser("delay")
    p.add_argument("name")
    p.add_argument("ms", type=int)
    sub.add_parser("list")
    p = sub.add_parser("cleanup-stale")
    p.add_argument("--all", action="store_true")
    a = ap.parse_args(argv)

    if a.cmd == "check":
        print(json.dumps({"netem": netem_available(),
                          "partition": "pfifo limit 0 on veth egress",
                          "delay": "netem" if netem_available()
                          else "forwarder"}))
        return 0
    if a.cmd == "list":
        for n in list_namespaces():
            print(n, "stale" if is_stale(n) else "live")
        return 0
    if a.cmd == "cleanup-stale":
        for r in cleanup_stale(a.all):
            print("removed", r)
        return 0
    if a.cmd in ("partition", "heal", "delay"):
        ctl = os.path.join(STATE_DIR, a.name + ".ctl")
        if os.path.exists(ctl):
            line = {"partition": lambda: "partition %s" % getattr(
                        a, "direction", "both"),
                    "heal": lambda: "heal",
                    "delay": lambda: "delay %d" % getattr(a, "ms", 0)}[a.cmd]()
            reply = control(a.name, line)
            print(reply)
            return 0 if reply.startswith("OK") else 1
        if a.cmd == "delay":
            print("no control socket for %s" % a.name, file=sys.stderr)
            return 1
        if a.cmd == "partition":
            _stateless_partition(a.name, a.direction)
        else:
            root_link, ns_link = _links(a.name)
            _run(["tc", "qdisc", "del", "dev", ns_link, "root"], ns=a.name,
                 check=False)
            _run(["tc", "qdisc", "del", "dev", root_link, "root"],
                 check=False)
        print("OK")
        return 0

    # up / run
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with Netns() as ns:
        for port in a.port:
            ns.forward(port)
        if a.delay:
            ns.delay(a.delay)
        ns.serve_control()
        if a.cmd == "up":
            print(json.dumps(ns.info()), flush=True)
            for line in sys.stdin:
                if line.strip() == "quit":
                    break
                print(ns.command(line), flush=True)
            return 0
        cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
        if not cmd:
            print("run: no command", file=sys.stderr)
            return 2
        env = dict(os.environ, DLOCK_NETNS=ns.name,
                   DLOCK_NETNS_ADDR=ns.host_addr,
                   DLOCK_NETNS_EXEC=" ".join(ns.exec_prefix()),
                   DLOCK_NETNS_CTL=ns.ctl_path(),
                   DLOCK_NETNS_PORTS=" ".join(
                       "%d:%d" % (p, f.listen_port)
                       for p, f in ns.forwarders.items()))
        return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
