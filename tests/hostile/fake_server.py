#!/usr/bin/env python3
"""A hostile server for dlock's transport tests: loopback, ephemeral ports.

    fake_server.py MODE PORTFILE [UPSTREAM_PORT] [--listeners N] [--hold-ms MS]

Writes the port it listens on to PORTFILE (with --listeners N, N ports
separated by spaces, each served alike), then serves connections until
killed. What each protocol sends is in protocols.py. Modes:

  PROTO-BEHAVIOUR    a fake server of PROTO (redis, etcd, zk, pg) that
                     answers every request with BEHAVIOUR:
       garbage       bytes that are not the protocol
       truncated     the start of a reply, then a close
       close         a close when a request arrives
       other         a well-formed reply that belongs to another request
       huge          an oversized reply's head, then a fast endless stream
                     (redis-huge-bulk and etcd-huge-length name it too)
       drip          a large reply's head, then one byte every 100 ms
                     The zk modes answer four-letter words (srvr, ...) the
                     same way in their own protocol; the pg modes answer
                     SSLRequest "no" and the startup packet with BEHAVIOUR,
                     but pg-sslgarbage answers SSLRequest with garbage.
  sentinel-to-BEHAVIOUR
                     a Redis Sentinel that answers correctly (SENTINEL
                     get-master-addr-by-name and SENTINEL master, for any
                     master name) and names as master a fake Redis of
                     redis-BEHAVIOUR on another port
  redis-garble-once  a proxy to the real redis-server on UPSTREAM_PORT that
                     answers the first renewal (the renew script's EVAL)
                     with garbage itself (and creates PORTFILE.garbled),
                     and forwards everything else
  turn-PROTO-BEHAVIOUR
                     a proxy to the real server of PROTO on UPSTREAM_PORT
                     that forwards faithfully until it gets SIGUSR1, and
                     then turns hostile: it writes PORTFILE.turned (the
                     turn's time, ms since the epoch), forwards nothing
                     more to the server, and answers every request on
                     open and new connections with BEHAVIOUR. (Replaying
                     a genuine reply of the server to a later request
                     would fool any client of a protocol without request
                     ids, so "other" sends a reply of another kind.) A
                     server connection
                     whose client went away after the turn is kept open
                     --hold-ms more (default 0): a PostgreSQL session, the
                     lock's lease there, then outlives its client as long
                     as the server's keepalives would let it.
"""
import argparse
import os
import signal
import socket
import threading
import time

from protocols import PROTOCOLS, Redis

BEHAVIOURS = {"garbage", "truncated", "close", "other", "huge", "drip", "sslgarbage"}
ALIASES = {"huge-bulk": "huge", "huge-length": "huge"}

parser = argparse.ArgumentParser()
parser.add_argument("mode")
parser.add_argument("portfile")
parser.add_argument("upstream", nargs="?", type=int, default=0)
parser.add_argument("--listeners", type=int, default=1)
parser.add_argument("--hold-ms", type=int, default=0)
ARGS = parser.parse_args()

garbled = threading.Event()
turned = threading.Event()


def stream_forever(conn, head, chunk, pause):
    conn.sendall(head)
    while True:
        conn.sendall(chunk)
        if pause:
            time.sleep(pause)


def answer(conn, proto, behaviour, request, later=False):
    """Answers one request with BEHAVIOUR; False once the connection is done."""
    first = getattr(proto, "first", None)
    reply = first(request, behaviour) if first else None
    if reply is not None:
        conn.sendall(reply)
        return True
    word = getattr(proto, "word", None)
    table = (word(request) if word else None) or proto
    if behaviour == "close":
        return False
    if behaviour in ("garbage", "sslgarbage"):
        conn.sendall(table.garbage)
    elif behaviour == "truncated":
        conn.sendall(table.truncated)
        return False
    elif behaviour == "other":
        conn.sendall(getattr(table, "later", table.other) if later else table.other)
    elif behaviour == "huge":
        stream_forever(conn, table.huge, b"x" * 65536, 0)
    elif behaviour == "drip":
        stream_forever(conn, table.drip, b"x", 0.1)
    # A four-letter word is answered once; so is an HTTP request.
    return table is proto and proto is not PROTOCOLS["etcd"]


def serve_hostile(conn, proto, behaviour):
    while True:
        request = proto.read(conn)
        if not request or not answer(conn, proto, behaviour, request):
            return


def resp_bulk(value):
    return b"$%d\r\n%s\r\n" % (len(value), value)


def serve_sentinel(conn, master_port):
    """A sentinel that names 127.0.0.1:master_port as every master."""
    while True:
        request = Redis.read(conn)
        if not request:
            return
        args = [a.lower() for a in Redis.args(request)]
        port = str(master_port).encode()
        if args[:2] == [b"sentinel", b"get-master-addr-by-name"]:
            conn.sendall(b"*2\r\n" + resp_bulk(b"127.0.0.1") + resp_bulk(port))
        elif args[:2] == [b"sentinel", b"master"] and len(args) > 2:
            fields = [b"name", Redis.args(request)[2], b"ip", b"127.0.0.1", b"port", port, b"flags", b"master"]
            conn.sendall(b"*%d\r\n" % len(fields) + b"".join(resp_bulk(f) for f in fields))
        elif args[:1] == [b"ping"]:
            conn.sendall(b"+PONG\r\n")
        else:
            conn.sendall(b"-ERR unknown command\r\n")


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        sink.close()


def serve_garble_once(conn):
    """Forwards to the real server; answers the first renewal with garbage."""
    upstream = socket.create_connection(("127.0.0.1", ARGS.upstream))
    threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()
    while True:
        raw = Redis.read(conn)
        if not raw:
            upstream.close()
            return
        args = Redis.args(raw)
        renewal = len(args) > 1 and args[0].upper() == b"EVAL" and b"local ttl = tonumber(ARGV[2])" in args[1]
        if renewal and not garbled.is_set():
            garbled.set()
            conn.sendall(Redis.garbage)
            with open(ARGS.portfile + ".garbled", "w"):
                pass
            continue
        upstream.sendall(raw)


def serve_turn(conn, proto, behaviour):
    """Forwards until the turn, then answers as serve_hostile would."""
    if turned.is_set():
        serve_hostile(conn, proto, behaviour)
        return
    upstream = socket.create_connection(("127.0.0.1", ARGS.upstream))

    def from_server():
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if turned.is_set():
                    continue  # late answers and events are dropped
                conn.sendall(data)
        except OSError:
            pass
        if not turned.is_set():
            conn.shutdown(socket.SHUT_RDWR)

    threading.Thread(target=from_server, daemon=True).start()
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            if not turned.is_set():
                upstream.sendall(data)
            elif not answer(conn, proto, behaviour, data, later=True):
                break
    finally:
        conn.close()
        if turned.is_set():
            time.sleep(ARGS.hold_ms / 1000)
        # shutdown first: a close alone would wait for from_server's recv
        # and leave the server's session open.
        try:
            upstream.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        upstream.close()


def on_turn(_signum, _frame):
    if turned.is_set():
        return
    turned.set()
    with open(ARGS.portfile + ".turned.tmp", "w") as f:
        f.write(str(int(time.time() * 1000)))
    os.rename(ARGS.portfile + ".turned.tmp", ARGS.portfile + ".turned")


def listen(serve):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)

    def accept_loop():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=handle, args=(conn, serve), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    return server.getsockname()[1]


def handle(conn, serve):
    try:
        serve(conn)
    except (OSError, ValueError):
        pass
    finally:
        conn.close()


def server_for(mode):
    """The function that serves one connection in MODE."""
    if mode == "redis-garble-once":
        return serve_garble_once
    kind, _, rest = mode.partition("-")
    if kind == "sentinel" and rest.startswith("to-"):
        master_port = listen(server_for("redis-" + rest[3:]))
        return lambda conn: serve_sentinel(conn, master_port)
    turn = kind == "turn"
    if turn:
        kind, _, rest = rest.partition("-")
    behaviour = ALIASES.get(rest, rest)
    if kind not in PROTOCOLS or behaviour not in BEHAVIOURS:
        raise SystemExit("fake_server.py: unknown mode " + mode)
    proto = PROTOCOLS[kind]
    if turn:
        signal.signal(signal.SIGUSR1, on_turn)
        return lambda conn: serve_turn(conn, proto, behaviour)
    return lambda conn: serve_hostile(conn, proto, behaviour)


def main():
    serve = server_for(ARGS.mode)
    ports = [str(listen(serve)) for _ in range(ARGS.listeners)]
    with open(ARGS.portfile + ".tmp", "w") as f:
        f.write(" ".join(ports))
    os.rename(ARGS.portfile + ".tmp", ARGS.portfile)
    while True:
        signal.pause()


main()
