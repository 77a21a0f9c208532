"""The backend's own view of lock NAME, and "the longest time a job outlived
its lease" measured against it:

    obs = Observer(backend, url, name, env).start()  # file redis redlock zk postgres etcd
    ...                                               # the clients run
    res = outlived(register_report["records"], obs.stop())

A thread polls the servers directly (their URL, from the root network
namespace, not through dlock) every ~10 ms, one connection per server with one
request in flight, a hard 200 ms timeout per poll. A poll that times out or
fails records nothing (a server paused, restarting, leaderless); late answers
are dropped; connections are made again (kazoo's by itself). Held, fence F:
  redis     EVAL {GET {NS:NAME}:lock, HGET {NS:NAME}:info fence}: the key
            exists (an expired key reads as absent) and its token's fence
            (the info hash written with it; remembered per token) is F
  redlock   that on each node: held when a majority hold F's token, not held
            when holders + silent nodes make no majority, else undecided (a
            poll ends once the answers decide: a paused node costs nothing)
  zk        [chroot]/NS/NAME: its child first in dlock's queue order holds,
            F is that node's czxid
  etcd      range "NS/NAME/" (linearizable): the direct child with the lowest
            create_revision holds, F is that revision (endpoints in turn)
  postgres  pg_locks: the session granted the advisory lock on the key of "NS
            NAME"; F is the fence of dlock's note in its SQL (pg_stat_activity
            .query), remembered per (pid, backend_start)
  file      DIR/NS/NAME.lock: its record's fence is F and its pid (dlock's)
            holds a FLOCK on that inode per /proc/locks
(A lagging zk follower can only show F held longer, never gone too early.)

Per fence: first_seen, last_seen (time.time() at the deciding answer, as the
register stamps) and gone, the first decided poll after last_seen not showing
F held. F lapsed in (last_seen, gone]: gone favours the holder by up to a poll
interval (more where polls failed: after a server pause, its first answer).

outlived(records, observations): per register section (tests/chaos/register.py
report's "records") whose fence was seen held: its last access (the latest of
read_wall, write_wall and end_wall, the connection's close for a killed job)
minus gone(F), floored at 0. Returns {"max_ms" (None: nothing observed;
target 0), "sections" (more than resolution_ms, the median poll interval),
"observed", "unobserved" (never seen held, or killed by the harness's
SIGTERM at the end: not judged), "poll_ms" {"median",
"max", "polls", "failed"}, "resolution_ms", "worst" (up to 5 {"id", "fence",
"ms", "last_access", "gone", "last_seen"} with ms > 0, longest first)}.
Standard library; kazoo (zk) and psycopg2 (postgres) are imported when needed,
from /usr/lib/python3/dist-packages if this python lacks them."""

import base64
import collections
import hashlib
import itertools
import json
import logging
import os
import re
import select
import socket
import sys
import threading
import time

INTERVAL_S, TIMEOUT_S = 0.010, 0.200
TRACE_POLLS = 60000                 # the polls kept for the worst sections' report (10 min)
ABANDON_S = 10.0                    # a request unanswered this long: the connection is dropped
_NEED = object()                    # a parser's "incomplete"
_NO_ANSWER = "no answer within %d ms" % (TIMEOUT_S * 1000)


def _import_system(module):
    try:
        return __import__(module)
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
        return __import__(module)


def _split_url(url):
    """(scheme, user, password, [(host, port or None)], path, query)."""
    scheme, _, rest = url.partition("://") if "://" in url else (url.rstrip(":"), "", "")
    rest, _, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    cred, _, netloc = netloc.rpartition("@")
    user, colon, password = cred.partition(":")
    hosts = []
    for h in filter(None, netloc.split(",")):
        host, _, port = h[1:].partition("]") if h.startswith("[") else h.partition(":")
        hosts.append((host, int(port.lstrip(":")) if port.lstrip(":") else None))
    return scheme, user or None, password if colon else None, hosts, slash + path, query


_RespError = type("_RespError", (str,), {})      # an error reply


def _resp_command(*args):
    args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def _resp(buf, i=0):
    """(reply, end) of the RESP reply at buf[i:], or _NEED."""
    j = buf.find(b"\r\n", i)
    if j < 0:
        return _NEED
    kind, line = buf[i:i + 1], buf[i + 1:j]
    if kind in (b"+", b"-"):
        return (str if kind == b"+" else _RespError)(line.decode(errors="replace")), j + 2
    n = int(line)
    if kind == b":" or n < 0:
        return (n if kind == b":" else None), j + 2
    if kind == b"$":
        return _NEED if len(buf) < j + 4 + n else (buf[j + 2:j + 2 + n], j + 4 + n)
    if kind != b"*":
        raise ValueError("bad RESP reply %r" % buf[i:i + 20])
    at, items = j + 2, []
    for _ in range(n):
        r = _resp(buf, at)
        if r is _NEED:
            return _NEED
        items.append(r[0])
        at = r[1]
    return items, at


def _http(buf, i=0):
    """((status, body, close), end) of the HTTP/1.1 response at buf[i:], or _NEED."""
    h = buf.find(b"\r\n\r\n", i)
    if h < 0:
        return _NEED
    lines = buf[i:h].decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip().lower() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    at, body = h + 4, []
    while "chunked" in headers.get("transfer-encoding", ""):
        e = buf.find(b"\r\n", at)
        n = int(buf[at:e].split(b";")[0], 16) if e >= 0 else -1
        if n < 0 or len(buf) < e + 4 + n:
            return _NEED
        if n == 0:                      # the last chunk: trailers (gRPC's) up to an empty line
            end = buf.find(b"\r\n\r\n", e)
            if end < 0:
                return _NEED
            at = end + 4
            break
        body.append(buf[e + 2:e + 2 + n])
        at = e + 4 + n
    else:
        n = int(headers.get("content-length", "0"))
        if len(buf) < at + n:
            return _NEED
        body, at = [buf[at:at + n]], at + n
    return (int(lines[0].split()[1]), b"".join(body), headers.get("connection") == "close"), at


class _Link:
    """A persistent TCP connection to one server; replies are matched to
    requests in order (expect: [tag, time sent] per request in flight)."""

    def __init__(self, host, port, parse, hello=()):
        self.addr, self.parse, self.hello = (host, port), parse, list(hello)
        self.sock, self.buf, self.expect, self.retry_at, self.error = None, b"", collections.deque(), 0.0, None

    def where(self, what):
        return "%s:%s: %s" % (self.addr[0], self.addr[1], what)

    def close(self, error=None):
        if self.sock is not None:
            self.sock.close()
        self.sock, self.buf, self.error = None, b"", error or self.error
        self.expect.clear()

    def connect(self, deadline):
        now = time.monotonic()
        if self.sock is not None and self.expect and now - self.expect[0][1] > ABANDON_S:
            self.close(self.where("no answer for %.0f s: reconnecting" % ABANDON_S))
        if self.sock is not None or now < self.retry_at or now >= deadline:
            return self.sock is not None
        try:
            s = socket.create_connection(self.addr, timeout=max(0.001, min(deadline - now, TIMEOUT_S)))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
            s.sendall(b"".join(self.hello))
        except OSError as e:
            self.retry_at, self.error = time.monotonic() + 0.05, self.where(e)
            return False
        self.sock, self.error = s, None
        self.expect.extend([["hello", now] for _ in self.hello])
        return True

    def send(self, data, tag):
        try:
            self.sock.sendall(data)     # small requests: the socket buffer takes them
            self.expect.append([tag, time.monotonic()])
        except OSError as e:
            self.close(self.where(e))

    def feed(self):
        """Reads what arrived; [(tag, reply)] of the complete replies."""
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("connection closed by the server")
        self.buf += data
        out = []
        while self.expect:
            r = self.parse(self.buf)
            if r is _NEED:
                break
            self.buf, tag = self.buf[r[1]:], self.expect.popleft()[0]
            if tag == "hello" and isinstance(r[0], _RespError):
                raise ConnectionError("refused: %s" % r[0])
            out.append((tag, r[0]))
        return out


def _exchange(pairs, deadline, enough=None):
    """Sends each (link, request), once the link has no answer still due,
    and waits until deadline or enough(replies so far): {index: reply} of
    the answers that came in time; later ones will be dropped."""
    results, tags, pending = {}, {}, {}
    for k, (link, req) in enumerate(pairs):
        if link.connect(deadline):
            tags[k], pending[k] = object(), req
    while not (enough and enough(results)):
        for k in [k for k in pending if pairs[k][0].sock is None or not pairs[k][0].expect]:
            if pairs[k][0].sock is not None:
                pairs[k][0].send(pending[k], tags[k])
            del pending[k]
        waiting = {l.sock: k for k, (l, _) in enumerate(pairs)
                   if k in tags and k not in results and l.sock and l.expect}
        left = deadline - time.monotonic()
        if not waiting or left <= 0:
            break
        for s in select.select(list(waiting), [], [], left)[0]:
            k = waiting[s]
            try:
                results.update((k, reply) for tag, reply in pairs[k][0].feed() if tag is tags[k])
            except (OSError, ValueError, ConnectionError) as e:
                pairs[k][0].close(pairs[k][0].where(e))
    for k, tag in tags.items():
        for e in (e for e in pairs[k][0].expect if e[0] is tag):
            e[0] = "late"
    return results


# ------------------------------------------------------------ pollers

class _Poller:
    """poll(deadline) -> None (failed: records nothing; last_error says why)
    or (wall time, fences held, fences undecided, everything undecided).
    last_answers: what each server answered to the last poll, where a
    poller keeps it (kept with the poll for the worst sections' report)."""
    links, last_error, last_answers = (), None, None

    def close(self):
        for link in self.links:
            link.close()

    def fail(self, why):
        self.last_error = why


class _RedisPoller(_Poller):
    SCRIPT = "return {redis.call('GET', KEYS[1]), redis.call('HGET', KEYS[2], 'fence')}"

    def __init__(self, url, ns, name, env, quorum=False):
        scheme, user, password, hosts, path, query = _split_url(url)
        if scheme not in ("redis", "redlock") or query:
            raise ValueError("observer: only plain redis:// and redlock:// URLs, not %s" % url)
        password, hello = env.get("DLOCK_PASSWORD") or password, []
        if password is not None:
            hello.append(_resp_command("AUTH", *([user] if user else []) + [password]))
        if path.strip("/"):
            hello.append(_resp_command("SELECT", path.strip("/")))
        self.links = [_Link(h or "localhost", p or 6379, _resp, hello) for h, p in hosts or [("localhost", None)]]
        self.majority = len(self.links) // 2 + 1 if quorum else 1
        tag = "{%s:%s}" % (ns.replace(":", "%3A"), name)
        self.req = _resp_command("EVAL", self.SCRIPT, 2, tag + ":lock", tag + ":info")
        self.token_fence = {}

    def _count(self, replies):
        """({token: nodes holding it}, nodes that did not answer)."""
        tokens, answered = collections.Counter(), 0
        for k, rep in replies.items():
            if not isinstance(rep, list) or len(rep) != 2:
                self.last_error = self.links[k].where(repr(rep))
                continue
            answered += 1
            if rep[0] is not None:
                tokens[rep[0]] += 1
                if rep[1] is not None:
                    self.token_fence[rep[0]] = max(int(rep[1]), self.token_fence.get(rep[0], 0))
        return tokens, len(self.links) - answered

    def _decided(self, replies):
        tokens, missing = self._count(replies)
        return len(self.links) - missing >= self.majority and all(
            c >= self.majority or c + missing < self.majority for c in tokens.values())

    def poll(self, deadline):
        replies = _exchange([(link, self.req) for link in self.links], deadline,
                            self._decided if len(self.links) > 1 else None)
        t, (tokens, missing) = time.time(), self._count(replies)
        self.last_answers = {self.links[k].where("")[:-2]: [r[0][:8].decode(errors="replace") if r[0] else None,
                                                            self.token_fence.get(r[0]) if r[0] else None]
                             if isinstance(r, list) and len(r) == 2 else repr(r)[:40] for k, r in replies.items()}
        if missing == len(self.links):
            return self.fail(self.last_error or next((l.error for l in self.links if l.error), _NO_ANSWER))
        fence = self.token_fence.get
        held = {fence(tok) for tok, c in tokens.items() if c >= self.majority and fence(tok)}
        maybe = {fence(tok) for tok, c in tokens.items() if c < self.majority <= c + missing and fence(tok)}
        return t, held, maybe, missing >= self.majority


class _EtcdPoller(_Poller):
    def __init__(self, url, ns, name, env):
        scheme, user, password, hosts, path, query = _split_url(url)
        if scheme != "etcd" or user or query:
            raise ValueError("observer: only plain etcd:// URLs without auth, not %s" % url)
        self.prefix = ns + "/" + name + "/"
        body = json.dumps({"key": base64.b64encode(self.prefix.encode()).decode(), "keys_only": True,
                           "range_end": base64.b64encode((self.prefix[:-1] + "0").encode()).decode()}).encode()
        self.links = [_Link(h, p or 2379, _http) for h, p in hosts]
        self.reqs = [b"POST /v3/kv/range HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (h.encode(), p or 2379, len(body), body) for h, p in hosts]
        self.cur = 0

    def poll(self, deadline):
        k, link = self.cur, self.links[self.cur]
        r, t = _exchange([(link, self.reqs[k])], deadline).get(0), time.time()
        if r is not None and r[2]:
            link.close()
        if r is None or r[0] != 200:
            self.cur = (k + 1) % len(self.links)        # the next endpoint next time
            return self.fail(link.where("HTTP %s %s" % (r[0], r[1][:200])) if r else link.error or _NO_ANSWER)
        revs = [int(kv.get("create_revision", 0)) for kv in json.loads(r[1] or b"{}").get("kvs", [])
                if "/" not in base64.b64decode(kv.get("key", "")).decode(errors="replace")[len(self.prefix):]]
        return t, {min(revs)} if revs else set(), set(), False


_SEQ = re.compile(r"(-lock-|__lock__|__rlock__|__READ__|__WRIT__)(\d{10})$")


class _ZkPoller(_Poller):
    def __init__(self, url, ns, name, env):
        kazoo = _import_system("kazoo.client")         # which imports kazoo.retry and kazoo.exceptions
        self.errors = kazoo.exceptions
        scheme, user, password, hosts, path, query = _split_url(url)
        if scheme != "zk" or query:
            raise ValueError("observer: only zk:// URLs, not %s" % url)
        self.path = path.rstrip("/") + "".join("/" + x + ("%" if x in ("", ".", "..") or _SEQ.search(x) else "")
                                               for x in (ns + "/" + name).split("/"))
        log, password = logging.getLogger("chaos-observer-kazoo"), env.get("DLOCK_PASSWORD") or password
        log.disabled = True
        self.zk = kazoo.client.KazooClient(
            hosts=",".join("%s:%d" % (h, p or 2181) for h, p in hosts), timeout=1.0, command_retry=None, logger=log,
            connection_retry=kazoo.retry.KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5),
            auth_data=[("digest", "%s:%s" % (user, password or ""))] if user else None)
        self.zk.start_async()                       # a short session: connect attempts time out soon
        self.node_fence, self.pending = {}, None

    def close(self):
        self.zk.stop()
        self.zk.close()

    def _answer(self, res, deadline):
        """("ok", res's value, None for NoNode), or None (last_error says why)."""
        if not res.wait(max(0.0, deadline - time.monotonic())):
            self.pending = res                          # no new request until it is answered
            return self.fail(_NO_ANSWER)
        try:
            return "ok", res.get_nowait()
        except self.errors.NoNodeError:
            return "ok", None
        except self.errors.KazooException as e:
            return self.fail("%s: %s" % (type(e).__name__, e))

    def poll(self, deadline):
        if self.pending is not None and not self.pending.wait(max(0.0, deadline - time.monotonic())):
            return self.fail(_NO_ANSWER)
        self.pending = None
        if not self.zk.connected:
            return self.fail("not connected (%s)" % self.zk.state)
        r, t = self._answer(self.zk.get_children_async(self.path), deadline), time.time()
        if r is None:
            return None
        heads = sorted((int(m.group(2)), c) for c in r[1] or () for m in [_SEQ.search(c)] if m)
        if heads and heads[0][1] not in self.node_fence:
            r = self._answer(self.zk.exists_async(self.path + "/" + heads[0][1]), deadline)
            if r is None:
                return None
            if r[1] is not None:                        # None: gone meanwhile, so not held
                self.node_fence[heads[0][1]] = r[1].czxid
        held = {self.node_fence[heads[0][1]]} if heads and heads[0][1] in self.node_fence else set()
        return t, held, set(), False


_NOTE_FENCE = re.compile(r'/\* dlock \{.*?"fence":\s*(\d+)')


class _PgPoller(_Poller):
    def __init__(self, url, ns, name, env):
        self.pg = _import_system("psycopg2.extensions")
        self.url, self.password = url, env.get("DLOCK_PASSWORD") or env.get("DLOCK_TEST_PG_PASSWORD")
        key = int.from_bytes(hashlib.sha256((ns + " " + name).encode()).digest()[:8], "big", signed=True)
        self.sql = ("SELECT l.pid, a.backend_start::text, a.query FROM pg_locks l LEFT JOIN pg_stat_activity a "
                    "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND "
                    "l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND "
                    "l.classid::bigint = %d AND l.objid::bigint = %d" % ((key >> 32) & 0xffffffff, key & 0xffffffff))
        self.conn = self.cur = self.busy_since = None
        self.connecting_since, self.retry_at, self.session_fence = 0.0, 0.0, {}

    def close(self):
        try:
            self.conn and self.conn.close()
        finally:
            self.conn = self.cur = self.busy_since = None

    def _drive(self, deadline):
        """Drives the asynchronous connection; True once its operation is done."""
        ext = self.pg.extensions
        while True:
            state, left = self.conn.poll(), deadline - time.monotonic()
            if state == ext.POLL_OK or left <= 0:
                return state == ext.POLL_OK
            fd = self.conn.fileno()
            select.select([fd] if state == ext.POLL_READ else [], [fd] if state == ext.POLL_WRITE else [], [], left)

    def poll(self, deadline):
        try:
            if self.conn is None and time.monotonic() < self.retry_at:
                return self.fail("reconnecting")
            if self.conn is None:
                kw = {"password": self.password} if self.password else {}
                self.conn = self.pg.connect(self.url, async_=1, application_name="chaos-observer", **kw)
                self.connecting_since = time.monotonic()
            if self.cur is None and not self._drive(deadline):   # connecting, over as many polls as it takes
                if time.monotonic() - self.connecting_since > 2.0:
                    raise self.pg.OperationalError("no connection within 2 s")
                return self.fail("connecting")
            self.cur = self.cur or self.conn.cursor()
            for query in ([] if self.busy_since is None else [None]) + [self.sql]:
                if query:                               # (None: only wait for an answer still due, then drop it)
                    self.cur.execute(query)
                    self.busy_since = time.monotonic()
                if not self._drive(deadline):
                    if time.monotonic() - self.busy_since > ABANDON_S:
                        self.close()
                    return self.fail(_NO_ANSWER)
            rows, self.busy_since = self.cur.fetchall(), None
        except self.pg.Error as e:
            self.close()
            self.retry_at = time.monotonic() + 0.05
            return self.fail("%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0]))
        for pid, start, query in rows:
            m = _NOTE_FENCE.search(query or "")
            if m:
                self.session_fence[(pid, start)] = int(m.group(1))
        held = {self.session_fence[(p, s)] for p, s, _ in rows if (p, s) in self.session_fence}
        return time.time(), held, set(), False


class _FilePoller(_Poller):
    def __init__(self, url, ns, name, env):
        scheme, user, password, hosts, path, query = _split_url(url)
        if scheme != "file" or not path:
            raise ValueError("observer: only file:///DIR URLs, not %s" % url)
        self.path = os.path.join(path, ns.replace("/", "%"), name.replace("/", "%") + ".lock")

    def poll(self, deadline):
        try:
            with open(self.path, "rb") as f:
                st, text = os.fstat(f.fileno()), f.read(65536)
        except FileNotFoundError:
            return time.time(), set(), set(), False
        except OSError as e:
            return self.fail(str(e))
        where = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
        with open("/proc/locks") as f:
            pids = {int(p[4]) for p in map(str.split, f) if len(p) >= 6 and p[1] == "FLOCK" and p[5] == where}
        t = time.time()
        try:
            rec = json.loads(text)
            fence, pid = int(rec["fence"]), rec.get("pid")
        except (ValueError, KeyError, TypeError):
            return self.fail("the lock file's record does not parse (a write in progress?)")
        return t, {fence} if pid is not None and pid in pids else set(), set(), False


class Observer:
    """Polls the backend's own view of lock NAME in a thread (see the module
    docstring). env: what dlock gets on top of os.environ (DLOCK_PASSWORD;
    the namespace is DLOCK_NAMESPACE's, else dlock's default "dlock")."""

    def __init__(self, backend, url, name, env=None, interval=INTERVAL_S, timeout=TIMEOUT_S):
        self.backend, self.url, self.name = backend, url, name
        self.env = dict(os.environ, **(env or {}))
        self.ns = self.env.get("DLOCK_NAMESPACE") or "dlock"
        self.interval, self.timeout, self.lock = interval, timeout, threading.Lock()
        self.fences, self.live = {}, set()              # fence -> record; held at the last decided poll
        self.polls = self.failed = 0
        self.gaps = collections.Counter()               # intervals between successful polls, 0.1 ms buckets
        self.max_gap, self.cpu_s, self.started, self.errors = 0.0, 0.0, None, collections.Counter()
        self._stop, self._thread, self.poller = threading.Event(), None, None
        self.trace = collections.deque(maxlen=TRACE_POLLS)  # (monotonic time, held, undecided, answers)

    def start(self, wait=5.0):
        """Starts polling; returns self once a poll succeeded, or after WAIT
        seconds (the backend does not answer yet)."""
        make = {"redis": _RedisPoller, "redlock": lambda *a: _RedisPoller(*a, quorum=True), "etcd": _EtcdPoller,
                "zk": _ZkPoller, "postgres": _PgPoller, "file": _FilePoller}[self.backend]
        self.poller = make(self.url, self.ns, self.name, self.env)
        self.started = time.time()
        self._thread = threading.Thread(target=self._run, name="chaos-observer", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + wait
        while self.polls == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self.poller.close()
        return self.observations()

    def _run(self):
        cpu0, last_ok, next_t = time.thread_time(), None, time.monotonic()
        while not self._stop.is_set():
            try:
                r = self.poller.poll(time.monotonic() + self.timeout)
            except Exception as e:                      # the thread never dies
                self.poller.last_error, r = "%s: %s" % (type(e).__name__, e), None
            if r is None:
                self.failed += 1
                self.errors[self.poller.last_error or "failed"] += 1
                self.poller.last_error = None
            else:
                self._record(*r, mono=time.monotonic())
                if last_ok is not None:
                    self.gaps[int((r[0] - last_ok) * 10000)] += 1
                    self.max_gap = max(self.max_gap, (r[0] - last_ok) * 1000)
                last_ok = r[0]
            self.cpu_s = time.thread_time() - cpu0
            next_t = max(next_t + self.interval, time.monotonic())
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def _record(self, t, held, maybe, all_maybe, mono):
        with self.lock:
            self.polls += 1
            self.trace.append((mono, sorted(held), sorted(maybe), self.poller.last_answers))
            for f in held:
                rec = self.fences.setdefault(f, {"fence": f, "first_seen": t, "gone": None, "polls_held": 0,
                                                 "reheld": 0})
                if rec["gone"] is not None:             # held again after a poll saw it gone: never expected
                    rec["reheld"], rec["gone"] = rec["reheld"] + 1, None
                rec["last_seen"], rec["last_seen_mono"], rec["polls_held"] = t, mono, rec["polls_held"] + 1
                self.live.add(f)
            for f in ([] if all_maybe else list(self.live - held - maybe)):
                self.fences[f]["gone"], self.fences[f]["gone_mono"] = t, mono
                self.live.discard(f)

    def held_now(self):
        with self.lock:
            return set(self.live)

    def observations(self):
        """fences: [{fence, first_seen, last_seen, gone (None: held at the
        end), polls_held, reheld (0, else a bug)}], poll_ms, errors, cpu_s."""
        with self.lock:
            keys, n = sorted(self.gaps), sum(self.gaps.values())
            cum = itertools.accumulate(self.gaps[b] for b in keys)
            median = next((round(b / 10 + 0.05, 1) for b, c in zip(keys, cum) if c * 2 >= n), None)
            return {"backend": self.backend, "name": self.name, "namespace": self.ns,
                    "interval_ms": self.interval * 1000, "timeout_ms": self.timeout * 1000,
                    "fences": sorted((dict(r) for r in self.fences.values()), key=lambda r: r["first_seen"]),
                    "poll_ms": {"median": median, "max": round(self.max_gap, 1) if n else None,
                                "polls": self.polls, "failed": self.failed},
                    "errors": dict(self.errors.most_common(5)), "cpu_s": round(self.cpu_s, 3),
                    "started": self.started, "stopped": time.time(), "trace": list(self.trace)}


def last_access(rec, clock="wall"):
    """A register section's last access: the latest of its READ, its WRITE
    and (a killed job) the close of its connection, by the wall clock or
    (clock="mono") CLOCK_MONOTONIC, which no clock step moves."""
    return max((rec[k + "_" + clock] for k in ("read", "write", "end") if rec.get(k + "_" + clock) is not None),
               default=None)


def outlived(records, observations, worst=5, term_mono=None):
    """How long jobs kept accessing the register after the backend had
    stopped showing their fence as held; see the module docstring. Measured
    on CLOCK_MONOTONIC (the register and the observer both stamp it) where
    both have it, else on the wall clock. Each of the worst rows carries the
    observer's polls from 100 ms before gone to 20 ms after the last access
    (monotonic time relative to gone, held, undecided, and per server what
    it answered where the poller keeps it). term_mono: when the harness
    sent SIGTERM to every process of the cell at its end; a job killed by it
    (closed without a write, its fence gone after term_mono) is not judged:
    its dlock released once the job died, and the register stamps the close
    only when it gets to it, which under load can be tens of ms later.
    """
    fences = {int(r["fence"]): r for r in observations["fences"]}
    poll_ms = observations["poll_ms"]
    resolution = poll_ms.get("median") or observations.get("interval_ms", INTERVAL_S * 1000)
    rows, unobserved = [], 0
    for rec in records:
        ob = fences.get(int(rec["fence"])) if rec.get("fence") is not None else None
        last = last_access(rec)
        if ob is None or last is None:
            unobserved += 1
            continue
        last_mono = last_access(rec, "mono")
        if (term_mono is not None and rec.get("closed_without_write") and ob.get("gone_mono") is not None
                and ob["gone_mono"] >= term_mono):
            unobserved += 1
            continue
        if ob["gone"] is None:
            ms = 0.0
        elif last_mono is not None and ob.get("gone_mono") is not None:
            ms = max(0.0, (last_mono - ob["gone_mono"]) * 1000)
        else:
            ms = max(0.0, (last - ob["gone"]) * 1000)
        rows.append({"id": rec.get("id"), "fence": ob["fence"], "ms": round(ms, 1), "last_access": last,
                     "gone": ob["gone"], "last_seen": ob["last_seen"], "_mono": (ob.get("gone_mono"), last_mono)})
    rows.sort(key=lambda r: -r["ms"])
    trace = observations.get("trace") or []
    for r in rows:
        gone, last_mono = r.pop("_mono")
        if r["ms"] > 0 and gone is not None and last_mono is not None and len([w for w in rows[:worst] if "polls" in w]) < worst:
            r["polls"] = [[round((m - gone) * 1000, 1), held, maybe, answers] for m, held, maybe, answers in trace
                          if gone - 0.1 <= m <= last_mono + 0.02]
    return {"max_ms": rows[0]["ms"] if rows else None, "sections": sum(1 for r in rows if r["ms"] > resolution),
            "observed": len(rows), "unobserved": unobserved, "poll_ms": dict(poll_ms),
            "resolution_ms": resolution, "worst": [r for r in rows[:worst] if r["ms"] > 0]}
