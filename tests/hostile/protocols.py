"""What a hostile server of each protocol sends: one table per protocol.

fake_server.py serves these with one set of handlers (serve_hostile), both
as a fake server and as a proxy that has turned hostile. Each protocol
gives:

  read(conn)   one request from the client as bytes (b"" once it closed)
  garbage      bytes that are not the protocol
  truncated    the start of a reply, after which the connection closes
  other        a well-formed reply that belongs to another request
  later        optional: such a reply once the session is under way (a
               turned proxy's), where `other` would be a valid answer
  huge         the head of an oversized reply, followed by an endless fast
               stream of b"x"
  drip         the head of a large reply, followed by one byte every 100 ms
  first(req)   optional: bytes to answer a request with before the hostile
               behaviour starts (PostgreSQL's SSLRequest), or None
  word(req)    optional: the protocol of this request is another one (a
               ZooKeeper four-letter word), with its own table
"""
import struct


def recv_exactly(conn, size):
    data = b""
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            return b""
        data += more
    return data


def read_line(conn):
    data = b""
    while not data.endswith(b"\n"):
        more = conn.recv(1)
        if not more:
            return b""
        data += more
    return data


class Redis:
    """RESP: one command is an array of bulk strings (or an inline line)."""

    garbage = b"X this is not RESP\r\n"
    truncated = b"$100\r\nabc"
    # A pub/sub message where one value is expected, and another after it.
    other = b"*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$4\r\nbody\r\n:42\r\n"
    huge = b"$2147483647\r\n"
    drip = b"$1000000\r\n"

    @staticmethod
    def read(conn):
        line = read_line(conn)
        if not line.startswith(b"*"):
            return line
        raw = line
        for _ in range(int(line[1:])):
            size_line = read_line(conn)
            if not size_line:
                return b""
            raw += size_line + recv_exactly(conn, int(size_line[1:]) + 2)
        return raw

    @staticmethod
    def args(raw):
        """The arguments of one command read by read()."""
        if not raw.startswith(b"*"):
            return raw.split()
        args, at = [], raw.index(b"\r\n") + 2
        while at < len(raw):
            end = raw.index(b"\r\n", at)
            size = int(raw[at + 1:end])
            args.append(raw[end + 2:end + 2 + size])
            at = end + 4 + size
        return args


class Http:
    """etcd's HTTP/1.1 gateway: a head, then Content-Length bytes of body."""

    garbage = b"garbage, not HTTP\r\n\r\n"
    truncated = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"
    # A watch event where a range or a lease grant is expected.
    _event = b'{"result":{"events":[{"type":"PUT"}]}}'
    other = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(_event), _event)
    _head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    huge = _head % 99999999999
    drip = _head % 1000000

    @staticmethod
    def read(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return b""
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                body += recv_exactly(conn, int(value) - len(body))
        return head + b"\r\n\r\n" + body


class FourLetterWord:
    """ZooKeeper's four-letter words (srvr, ruok, ...): a word, an answer, a close."""

    garbage = b"\x00\xffgarbage, not an answer to a four-letter word\x01\n"
    truncated = b"Zookeeper version: 3.8"
    other = b"imok"  # ruok's answer where srvr's is expected
    huge = b"Zookeeper version: "
    drip = b"Zookeeper version: "


class ZooKeeper:
    """The client port: 4-byte big-endian length, then a jute record."""

    WORDS = {b"srvr", b"ruok", b"mntr", b"stat", b"conf", b"cons", b"envi", b"wchs", b"isro", b"dump"}
    # The length fits, the record does not: its password's length is
    # " :-)", far beyond the record.
    garbage = struct.pack(">i", 20) + b"garbage, not ZK! :-)"
    # A ConnectResponse (protocol version, timeout, session id, 16-byte
    # password, read-only flag) cut short.
    truncated = struct.pack(">iii", 37, 0, 2000) + b"\x00\x00"
    # A ping's reply header (xid -2, zxid, error 0) where the
    # ConnectResponse is expected.
    other = struct.pack(">iiqi", 16, -2, 0, 0)
    huge = struct.pack(">i", 0x7FFFFFFF)
    drip = struct.pack(">i", 37)
    # A reply header whose xid matches no request (a ping's would be a
    # valid answer to the client's pings).
    later = struct.pack(">iiqi", 16, 12345, 1 << 32, 0)

    @staticmethod
    def read(conn):
        head = recv_exactly(conn, 4)
        if not head or head in ZooKeeper.WORDS:
            return head
        size = struct.unpack(">i", head)[0]
        return head + recv_exactly(conn, min(max(size, 0), 1 << 20))

    @staticmethod
    def word(request):
        return FourLetterWord if request in ZooKeeper.WORDS else None


class Postgres:
    """libpq: SSLRequest / GSSENCRequest (8 bytes), then the startup packet."""

    _negotiation = {80877103, 80877104}  # SSLRequest, GSSENCRequest
    garbage = b"X garbage, not PostgreSQL\r\n"
    # AuthenticationOk cut short.
    truncated = b"R\x00\x00\x00\x08\x00\x00"
    # The end of a query's answer where authentication is expected.
    other = b"C\x00\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I"
    # An ErrorResponse of 2 GiB, and one of 29,000 bytes (under libpq's
    # 30,000-byte limit for it) dripping.
    huge = b"E\x7f\xff\xff\xff"
    drip = b"E" + struct.pack(">i", 29000) + b"SFATAL\x00M"

    @staticmethod
    def read(conn):
        head = recv_exactly(conn, 4)
        if not head:
            return b""
        size = struct.unpack(">i", head)[0]
        return head + recv_exactly(conn, min(max(size - 4, 0), 1 << 20))

    @staticmethod
    def first(request, behaviour):
        """Answers SSL and GSS negotiation with "no" (garbage for pg-sslgarbage)."""
        if len(request) == 8 and struct.unpack(">i", request[4:])[0] in Postgres._negotiation:
            return Postgres.garbage if behaviour == "sslgarbage" else b"N"
        return None


PROTOCOLS = {"redis": Redis, "etcd": Http, "zk": ZooKeeper, "pg": Postgres}
