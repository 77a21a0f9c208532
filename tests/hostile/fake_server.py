#!/usr/bin/env python3
"""A hostile server for dlock's transport tests: loopback, an ephemeral port.

    fake_server.py MODE PORTFILE [UPSTREAM_PORT]

Writes the port it listens on to PORTFILE, then serves connections until
killed. Modes:

  redis-garble-once  a proxy to the real redis-server on UPSTREAM_PORT that
                     answers the first renewal (the renew script's EVAL)
                     with garbage itself (and creates PORTFILE.garbled),
                     and forwards everything else
  redis-huge-bulk    answers every command with "$<2 GiB>\r\n" and then a
                     fast, endless stream of bytes
  redis-drip         answers every command with "$1000000\r\n" and then one
                     byte every 100 ms
  redis-garbage      answers every command with a line that is not RESP
  redis-truncated    answers with the start of a bulk string, then closes
  redis-close        closes the connection when a command arrives
  redis-other        answers with a reply to another request (an array of
                     three strings where one string is expected, and
                     another reply after it)
  etcd-garbage       answers every HTTP request with a line that is not HTTP
  etcd-truncated     answers with a Content-Length of 100, 3 bytes, closes
  etcd-close         closes the connection when a request arrives
  etcd-other         answers 200 with JSON of another request (a watch
                     event) where a range or a lease grant is expected
  etcd-huge-length   answers every HTTP request with a huge Content-Length
                     and then a fast, endless stream
  etcd-drip          answers every HTTP request with a Content-Length of a
                     million and then one byte every 100 ms
"""
import os
import socket
import sys
import threading
import time

MODE = sys.argv[1]
PORTFILE = sys.argv[2]

UPSTREAM = int(sys.argv[3]) if len(sys.argv) > 3 else 0
garbled = threading.Event()


def stream_forever(conn, head, chunk, pause):
    conn.sendall(head)
    while True:
        conn.sendall(chunk)
        if pause:
            time.sleep(pause)


def read_command(reader):
    """One RESP command (an array of bulk strings): its raw bytes and args."""
    line = reader.readline()
    if not line:
        return None, None
    raw, args = line, []
    if not line.startswith(b"*"):
        return raw, line.split()
    for _ in range(int(line[1:])):
        size_line = reader.readline()
        raw += size_line
        arg = reader.read(int(size_line[1:]) + 2)
        raw += arg
        args.append(arg[:-2])
    return raw, args


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


def serve_proxy(conn):
    """Forwards to the real server; answers the first renewal with garbage."""
    upstream = socket.create_connection(("127.0.0.1", UPSTREAM))
    threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()
    reader = conn.makefile("rb")
    while True:
        raw, args = read_command(reader)
        if raw is None:
            upstream.close()
            return
        renewal = len(args) > 1 and args[0].upper() == b"EVAL" and b"PEXPIRE" in args[1] and b"then return 0" in args[1]
        if renewal and not garbled.is_set():
            garbled.set()
            conn.sendall(b"X this is not RESP\r\n")
            with open(PORTFILE + ".garbled", "w"):
                pass
            continue
        upstream.sendall(raw)


def serve_redis(conn):
    reader = conn.makefile("rb")
    while True:
        raw, _ = read_command(reader)
        if raw is None:
            return
        if MODE == "redis-garbage":
            conn.sendall(b"X this is not RESP\r\n")
            continue
        if MODE == "redis-truncated":
            conn.sendall(b"$100\r\nabc")
            return
        if MODE == "redis-close":
            return
        if MODE == "redis-other":
            conn.sendall(b"*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$4\r\nbody\r\n:42\r\n")
            continue
        if MODE == "redis-huge-bulk":
            stream_forever(conn, b"$2147483647\r\n", b"x" * 65536, 0)
        if MODE == "redis-drip":
            stream_forever(conn, b"$1000000\r\n", b"x", 0.1)
        raise ValueError("not a hostile mode")


def serve_http(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return
        data += more
    if MODE == "etcd-garbage":
        conn.sendall(b"garbage, not HTTP\r\n\r\n")
        return
    if MODE == "etcd-truncated":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
        return
    if MODE == "etcd-close":
        return
    if MODE == "etcd-other":
        body = b'{"result":{"events":[{"type":"PUT"}]}}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        return
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    if MODE == "etcd-huge-length":
        stream_forever(conn, head % 99999999999, b"x" * 65536, 0)
    stream_forever(conn, head % 1000000, b"x", 0.1)


def handle(conn):
    try:
        if MODE == "redis-garble-once":
            serve_proxy(conn)
        elif MODE.startswith("redis"):
            serve_redis(conn)
        else:
            serve_http(conn)
    except (OSError, ValueError):
        pass
    finally:
        conn.close()


def main():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(server.getsockname()[1]))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


main()
