#!/usr/bin/env python3
"""How dlock's scripts start a private ZooKeeper server: Debian's zookeeper
package run directly with java (QuorumPeerMain over a zoo.cfg written for
it), bound to 127.0.0.1, tuned to start fast and live briefly.

scripts/bench imports it (scripts/bench.d/servers.py) and scripts/with-zookeeper
runs it (for the zoo.cfg and java command line of every member it starts), so
that the two cannot drift:

  zookeeper_server.py cfg --tick MS [--sync-limit MS] [--max-client-cnxns N] [--4lw-whitelist WORDS]
                          --data DIR --port PORT
                          [--member I --peers Q:E,...]
      print the zoo.cfg of a standalone server (with --member and --peers,
      the quorum and election ports of every member in order: of member I
      of that ensemble; --sync-limit: syncLimit in ms, rounded up to ticks,
      default 2000; --max-client-cnxns: maxClientCnxns, default 0, no limit;
      --4lw-whitelist: 4lw.commands.whitelist, default *)
  zookeeper_server.py argv [--java JAVA] CFG
      print the java command line that serves CFG, arguments NUL-terminated
      (bash: mapfile -d '' -t argv <FILE)
  zookeeper_server.py check [--java JAVA]
      print what is missing (java, a jar) and exit 1; exit 0 silently
"""

import argparse
import os
import shutil
import sys

JAVA_DIR = "/usr/share/java"
# Debian's zookeeper.jar names its dependencies in its manifest; it has no
# slf4j binding, so slf4j-simple sends the log to stderr.
CLASSPATH = ("zookeeper.jar", "slf4j-simple.jar")
REQUIRED_JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar", "netty-handler.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Start-up time over throughput: a test server lives seconds to minutes and
# holds a handful of znodes.
JVM_FLAGS = ("-Xmx128m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
             "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true", "-Djava.awt.headless=true")
LOG_FLAGS = ("-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS",
             "-Dzookeeper.jmx.log4j.disable=true")
DEFAULT_TICK_MS = 100
# Not set in the zoo.cfg, so the server's default holds: every write waits
# for an fsync of the transaction log, as on a production server.
FORCE_SYNC = "yes"


def ticks(ms, tick):
    return max(2, -(-ms // tick))


def zoo_cfg(tick, data_dir, client_port, member=None, peers=(), sync_limit_ms=2000, max_client_cnxns=0,
            whitelist="*"):
    """The zoo.cfg text. peers: (quorum_port, election_port) of every member
    of an ensemble, member 1 first; member: which of them this server is."""
    lines = [f"# member {member} of {len(peers)}" if peers else "# standalone",
             f"tickTime={tick}",
             f"initLimit={ticks(5000, tick)}",
             f"syncLimit={ticks(sync_limit_ms, tick)}",
             f"dataDir={data_dir}",
             f"clientPort={client_port}",
             "clientPortAddress=127.0.0.1",
             # Sessions from 2 ticks up to a minute (or 2 ticks, if longer).
             f"minSessionTimeout={2 * tick}",
             f"maxSessionTimeout={max(2 * tick, 60000)}",
             f"maxClientCnxns={max_client_cnxns}",
             "admin.enableServer=false",
             f"4lw.commands.whitelist={whitelist}",
             "autopurge.purgeInterval=0"]
    if peers:
        if member is None or not 1 <= member <= len(peers):
            raise ValueError(f"member {member} is not one of the {len(peers)} peers")
        lines += ["reconfigEnabled=false", "standaloneEnabled=false", "quorumListenOnAllIPs=false"]
        lines += [f"server.{j}=127.0.0.1:{quorum}:{election}" for j, (quorum, election) in enumerate(peers, 1)]
    return "\n".join(lines) + "\n"


def java_argv(java, cfg_path):
    classpath = ":".join(os.path.join(JAVA_DIR, jar) for jar in CLASSPATH)
    return [java, *JVM_FLAGS, *LOG_FLAGS, "-cp", classpath, MAIN_CLASS, cfg_path]


def missing(java):
    """What keeps a server from starting (a sentence), or None."""
    if not java or not os.access(java, os.X_OK):
        return "java not found: install default-jre-headless (Debian: apt-get install zookeeper default-jre-headless)"
    for jar in REQUIRED_JARS:
        if not os.access(os.path.join(JAVA_DIR, jar), os.R_OK):
            return (f"{JAVA_DIR}/{jar} not found: install zookeeper (Debian's package, which brings "
                    "libzookeeper-java) and libslf4j-java")
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cfg = commands.add_parser("cfg", help="print a zoo.cfg")
    cfg.add_argument("--tick", type=int, default=DEFAULT_TICK_MS)
    cfg.add_argument("--sync-limit", type=int, default=2000)
    cfg.add_argument("--max-client-cnxns", type=int, default=0)
    cfg.add_argument("--4lw-whitelist", dest="whitelist", default="*")
    cfg.add_argument("--data", required=True)
    cfg.add_argument("--port", type=int, required=True)
    cfg.add_argument("--member", type=int)
    cfg.add_argument("--peers", default="", help="QUORUM:ELECTION,... of every member, in order")
    argv = commands.add_parser("argv", help="print the java command line, NUL-terminated")
    check = commands.add_parser("check", help="say what is missing")
    for sub in (argv, check):
        sub.add_argument("--java", default=shutil.which("java") or "")
    argv.add_argument("cfg_path")
    args = parser.parse_args()
    if args.command == "cfg":
        peers = [tuple(int(p) for p in peer.split(":")) for peer in args.peers.split(",") if peer]
        sys.stdout.write(zoo_cfg(args.tick, args.data, args.port, args.member, peers, args.sync_limit,
                                 args.max_client_cnxns, args.whitelist))
    elif args.command == "argv":
        sys.stdout.write("".join(arg + "\0" for arg in java_argv(args.java, args.cfg_path)))
    else:
        problem = missing(args.java)
        if problem:
            print(problem)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
