#!/usr/bin/env python3
"""The links between the members of a test ensemble (ZooKeeper) or cluster
(etcd), through relays that can cut a member off from its peers while its
clients still reach it: a member that lost its quorum (Jepsen's
isolated-node nemesis), without touching the host's network.

scripts/with-zookeeper and scripts/with-etcd start it with --peer-links:
every member's peer ports are reached through a relay here (the members'
configurations name the relay's port; each member listens on a port of its
own behind it), and their clients connect to the members directly.

  peer_links.py serve --control SOCK --link LISTEN:TARGET:MEMBER ...
                      --pidfile MEMBER:FILE ...
      relay 127.0.0.1:LISTEN to 127.0.0.1:TARGET, the peer port of MEMBER,
      for every --link; the member that opened a relayed connection is found
      by the owner of its socket (the pid in its --pidfile); answer control
      commands on the unix socket SOCK (ready once it exists)
  peer_links.py isolate SOCK MEMBER
      cut MEMBER off from every peer, both ways: nothing more passes between
      it and them, and the connections stay open (no FIN, no RST: a black
      hole). New connections are accepted and then hear nothing
  peer_links.py heal SOCK
      let everything through again; what was held back is delivered then,
      in order, as TCP retransmits after a partition ends (a connection
      that an end closed meanwhile is closed then)
  peer_links.py status SOCK
      print the isolated members (one line, space separated; empty if none)

A connection is judged when it is accepted (its source member) and its
bytes are held while either end is isolated.
"""

import argparse
import asyncio
import os
import socket
import sys


def socket_inode(local_port, remote_port):
    """The inode of the IPv4 socket 127.0.0.1:local_port -> 127.0.0.1:remote_port."""
    want_local = "0100007F:%04X" % local_port
    want_remote = "0100007F:%04X" % remote_port
    for table in ("/proc/net/tcp",):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[1] == want_local and fields[2] == want_remote:
                        return fields[9]
        except OSError:
            pass
    return None


def owner_of(inode, pidfiles):
    """The member whose process holds socket INODE, or None."""
    target = "socket:[%s]" % inode
    for member, path in pidfiles.items():
        try:
            with open(path) as f:
                pid = int(f.read().split()[0])
            fds = "/proc/%d/fd" % pid
            for fd in os.listdir(fds):
                try:
                    if os.readlink(os.path.join(fds, fd)) == target:
                        return member
                except OSError:
                    continue
        except (OSError, ValueError, IndexError):
            continue
    return None


class Links:
    def __init__(self, links, pidfiles):
        self.links = links          # [(listen, target, member)]
        self.pidfiles = pidfiles    # member -> pidfile
        self.isolated = set()
        self.changed = asyncio.Condition()
        self.writers = set()

    def blocked(self, src, dst):
        return dst in self.isolated or (src is not None and src in self.isolated)

    async def wait_open(self, src, dst):
        async with self.changed:
            await self.changed.wait_for(lambda: not self.blocked(src, dst))

    async def set_isolated(self, members):
        async with self.changed:
            self.isolated = set(members)
            self.changed.notify_all()

    async def pump(self, reader, writer, src, dst, done):
        try:
            while True:
                data = await reader.read(65536)
                await self.wait_open(src, dst)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            done.set()

    def handler(self, target, dst):
        async def handle(creader, cwriter):
            peer = cwriter.get_extra_info("peername")
            local = cwriter.get_extra_info("sockname")
            inode = socket_inode(peer[1], local[1])
            src = owner_of(inode, self.pidfiles) if inode else None
            swriter = None
            self.writers.add(cwriter)
            try:
                await self.wait_open(src, dst)
                try:
                    sreader, swriter = await asyncio.open_connection("127.0.0.1", target)
                except OSError:
                    return
                self.writers.add(swriter)
                done = asyncio.Event()
                a = asyncio.ensure_future(self.pump(creader, swriter, src, dst, done))
                b = asyncio.ensure_future(self.pump(sreader, cwriter, src, dst, done))
                await done.wait()
                # an end closed: no FIN or RST crosses a cut link
                await self.wait_open(src, dst)
                await asyncio.wait([a, b], timeout=0.05)
                a.cancel()
                b.cancel()
            finally:
                for w in (cwriter, swriter):
                    if w is not None:
                        self.writers.discard(w)
                        try:
                            w.close()
                        except Exception:
                            pass
        return handle

    async def control(self, reader, writer):
        try:
            line = (await reader.readline()).decode().split()
            if line[:1] == ["isolate"] and len(line) == 2 and line[1].isdigit():
                await self.set_isolated(self.isolated | {int(line[1])})
                answer = "ok"
            elif line == ["heal"]:
                await self.set_isolated(())
                answer = "ok"
            elif line == ["status"]:
                answer = " ".join(map(str, sorted(self.isolated)))
            else:
                answer = "error: unknown command %r" % " ".join(line)
            writer.write((answer + "\n").encode())
            await writer.drain()
        finally:
            writer.close()


async def serve(args):
    links = []
    for spec in args.link:
        listen, target, member = (int(x) for x in spec.split(":"))
        links.append((listen, target, member))
    pidfiles = {}
    for spec in args.pidfile:
        member, path = spec.split(":", 1)
        pidfiles[int(member)] = path
    state = Links(links, pidfiles)
    servers = []
    for listen, target, member in links:
        servers.append(await asyncio.start_server(state.handler(target, member), "127.0.0.1", listen,
                                                  reuse_address=True))
    tmp = args.control + ".tmp"
    ctl = await asyncio.start_unix_server(state.control, tmp)
    os.rename(tmp, args.control)
    servers.append(ctl)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def command(sock_path, line):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(sock_path)
        s.sendall((line + "\n").encode())
        out = b""
        while not out.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    answer = out.decode().strip()
    if answer.startswith("error"):
        print("peer_links.py: " + answer, file=sys.stderr)
        return 1
    if answer != "ok":
        print(answer)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--control", required=True)
    s.add_argument("--link", action="append", default=[])
    s.add_argument("--pidfile", action="append", default=[])
    i = sub.add_parser("isolate")
    i.add_argument("sock")
    i.add_argument("member", type=int)
    for name in ("heal", "status"):
        sub.add_parser(name).add_argument("sock")
    args = parser.parse_args()
    if args.command == "serve":
        try:
            asyncio.run(serve(args))
        except KeyboardInterrupt:
            pass
        return 0
    if args.command == "isolate":
        return command(args.sock, "isolate %d" % args.member)
    return command(args.sock, args.command)


if __name__ == "__main__":
    sys.exit(main())
