"""The PostgreSQL of scripts/bench's pg section, and the psycopg2 lock and
the libpq C client's connection string that dlock is compared with on it.

The server starts like the others in servers.py: on a free loopback port,
its cluster in the bench's temp dir, in a process group of its own, with
PR_SET_PDEATHSIG when util-linux setpriv(1) is there. postgres refuses to
run as root, so when the bench is root, initdb and postgres run as the user
postgres. fsync and synchronous_commit stay on, as in production. The role
dlock logs in over TCP with a scram-sha-256 password; the superuser is
trusted over the unix socket only, where the bench asks pg_locks whether a
waiter is blocked, through a few lines of the wire protocol (the python
running the bench need not have psycopg2).
"""

import ctypes
import glob
import hashlib
import os
import pwd
import re
import secrets
import shutil
import socket
import struct
import subprocess

from processes import BenchError
from servers import Server, ServerError, free_port, pdeathsig_prefix

DATABASE = "dlock"
ROLE = "dlock"
SUPERUSER = "postgres"
# The authentication setups dlock is compared with the libpq C client in
# (issue 22 point 4), each its own role or transport on the same server; the
# first is the one every other pg measurement uses. unix-peer logs in as the
# system user running the bench, with a role of that name.
SETUPS = ("tcp-scram", "tcp-md5", "tcp-trust", "unix-peer", "unix-scram")
MD5_ROLE = "dlock_md5"
TRUST_ROLE = "dlock_trust"
INITDB_TIMEOUT_S = 120.0
PQ_LOCK_SOURCE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "pq_lock.c")
# dlock's documented key for lock NAME in namespace NS: the first 8 bytes of
# sha256('NS NAME'), big-endian and signed, computed by the server.
KEY_SQL = "(('x' || left(encode(sha256(convert_to({}, 'UTF8')), 'hex'), 16))::bit(64)::bigint)"


def default_bindir():
    """The newest /usr/lib/postgresql/*/bin with a server in it (Debian's layout), else postgres's on PATH."""
    found = [d for d in glob.glob("/usr/lib/postgresql/*/bin")
             if re.fullmatch(r"\d+", d.split("/")[-2]) and os.access(os.path.join(d, "postgres"), os.X_OK)]
    if found:
        return max(found, key=lambda d: int(d.split("/")[-2]))
    on_path = shutil.which("postgres")
    return os.path.dirname(on_path) if on_path else ""


def missing(bindir, python):
    """Why the pg section cannot run here, or None."""
    for program in ("initdb", "postgres"):
        if not bindir or not os.access(os.path.join(bindir, program), os.X_OK):
            return (f"no PostgreSQL server ({program}) in {bindir or '/usr/lib/postgresql/*/bin or on PATH'}: "
                    "install postgresql (scripts/install-deps) or pass --pg-bindir")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SUPERUSER)
        except KeyError:
            return f"running as root needs a user '{SUPERUSER}' to run the server as (postgres refuses root)"
        if not shutil.which("setpriv"):
            return f"running as root needs setpriv (util-linux) to run the server as {SUPERUSER}"
    if subprocess.run([python, "-c", "import psycopg2"], capture_output=True).returncode != 0:
        return (f"{python} cannot import psycopg2: install python3-psycopg2 (Debian, for /usr/bin/python3) "
                "or pass --psycopg2-python")
    return None


def advisory_key(text):
    return struct.unpack(">q", hashlib.sha256(text.encode()).digest()[:8])[0]


def sql_ident(name):
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text):
    return "'" + text.replace("'", "''") + "'"


class Wire:
    """Just enough of PostgreSQL's protocol 3 (trust authentication, simple
    queries, rows as text) for the bench's superuser session."""

    def __init__(self, socket_path, database, timeout=2.0):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.parameters = {}
        try:
            self.sock.connect(socket_path)
            startup = b"".join(k + b"\0" + v.encode() + b"\0" for k, v in (
                (b"user", SUPERUSER), (b"database", database), (b"application_name", "dlock-bench"))) + b"\0"
            body = struct.pack("!i", 3 << 16) + startup
            self.sock.sendall(struct.pack("!i", len(body) + 4) + body)
            self.answer(startup=True)
        except BaseException:
            self.sock.close()
            raise

    def close(self):
        try:
            self.sock.sendall(b"X\0\0\0\4")
        except OSError:
            pass
        self.sock.close()

    def query(self, sql):
        """The rows of sql's (last) result, each a list of str or None."""
        data = sql.encode() + b"\0"
        self.sock.sendall(b"Q" + struct.pack("!i", len(data) + 4) + data)
        return self.answer()

    def message(self):
        while len(self.buf) < 5 or len(self.buf) < 1 + struct.unpack("!i", self.buf[1:5])[0]:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ServerError("PostgreSQL closed the bench's session")
            self.buf += chunk
        size = struct.unpack("!i", self.buf[1:5])[0]
        kind, body, self.buf = self.buf[:1], self.buf[5:1 + size], self.buf[1 + size:]
        return kind, body

    def answer(self, startup=False):
        rows, error = [], None
        while True:
            kind, body = self.message()
            if kind == b"R" and struct.unpack("!i", body[:4])[0] != 0:
                raise ServerError("PostgreSQL asks the bench's superuser for a password (pg_hba.conf is not the bench's?)")
            if kind == b"S":
                name, value = body.split(b"\0")[:2]
                self.parameters[name.decode()] = value.decode()
            elif kind == b"T":
                rows = []
            elif kind == b"D":
                rows.append(self.row(body))
            elif kind == b"E":
                fields = {f[:1]: f[1:].decode(errors="replace") for f in body.split(b"\0") if f}
                error = error or f"{fields.get(b'M', '?')} (SQLSTATE {fields.get(b'C', '?')})"
                if startup:
                    raise ServerError(f"PostgreSQL: {error}")
            elif kind == b"Z":
                if error:
                    raise ServerError(f"PostgreSQL: {error}")
                return rows

    @staticmethod
    def row(body):
        values, at = [], 2
        for _ in range(struct.unpack("!h", body[:2])[0]):
            size = struct.unpack("!i", body[at:at + 4])[0]
            at += 4
            values.append(None if size < 0 else body[at:at + size].decode())
            at += max(size, 0)
        return values


class PostgresServer(Server):
    name = "postgres"

    def __init__(self, spawn, reap, bindir, tmp, log_fd, env):
        super().__init__(spawn, reap, os.path.join(bindir, "postgres"), tmp, log_fd)
        self.bindir = bindir
        self.env = env
        self.home = os.path.join(tmp, "pg")  # also the unix socket's directory
        self.data_dir = os.path.join(self.home, "data")
        self.run_as = SUPERUSER if os.geteuid() == 0 else None
        self.password = secrets.token_hex(16)
        self.peer_role = pwd.getpwuid(os.geteuid()).pw_name
        self.admin = None

    def launch_prefix(self):
        if not self.run_as:
            return pdeathsig_prefix()
        # One setpriv for both: it sets the parent-death signal after the
        # user, which a change of user would clear.
        death = pdeathsig_prefix()[1:-1]
        return [shutil.which("setpriv"), f"--reuid={self.run_as}", f"--regid={self.run_as}", "--init-groups", *death, "--"]

    def start(self):
        self.init_cluster()
        super().start()
        setup = Wire(self.socket_path, "postgres")
        try:
            setup.query(f"CREATE ROLE {ROLE} LOGIN PASSWORD {sql_literal(self.password)}")
            setup.query(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
            setup.query(f"CREATE ROLE {TRUST_ROLE} LOGIN")
            if self.peer_role not in (ROLE, SUPERUSER, TRUST_ROLE, MD5_ROLE):
                setup.query(f"CREATE ROLE {sql_ident(self.peer_role)} LOGIN")
            setup.query("SET password_encryption = 'md5'")
            setup.query(f"CREATE ROLE {MD5_ROLE} LOGIN PASSWORD {sql_literal(self.password)}")
        finally:
            setup.close()
        self.admin = Wire(self.socket_path, DATABASE)
        return self

    def init_cluster(self):
        os.mkdir(self.home, 0o700)
        if self.run_as:
            user = pwd.getpwnam(self.run_as)
            os.chown(self.home, user.pw_uid, user.pw_gid)
            # The server's user has to pass through the bench's temp dir (not list it) to reach its own.
            os.chmod(self.tmp, 0o711)
        # No fsync of the fresh cluster (a bench that crashes starts over);
        # the server fsyncs what it writes.
        initdb = [os.path.join(self.bindir, "initdb"), "-D", self.data_dir, "-U", SUPERUSER, "-E", "UTF8",
                  "--locale=C", "--no-sync", "--auth-local=trust", "--auth-host=scram-sha-256"]
        out = subprocess.run(self.launch_prefix() + initdb, env=self.env, stdin=subprocess.DEVNULL,
                             stdout=self.log_fd, stderr=self.log_fd, timeout=INITDB_TIMEOUT_S)
        if out.returncode != 0:
            raise ServerError(f"initdb exited with {out.returncode}")
        # Rewritten in place, so it stays the server user's. The first line
        # that matches a connection decides.
        with open(os.path.join(self.data_dir, "pg_hba.conf"), "w") as f:
            f.write(f"local {DATABASE} {sql_ident(self.peer_role)} peer\n"
                    f"local {DATABASE} {ROLE} scram-sha-256\n"
                    f"local all {SUPERUSER} trust\n"
                    f"host {DATABASE} {MD5_ROLE} 127.0.0.1/32 md5\n"
                    f"host {DATABASE} {TRUST_ROLE} 127.0.0.1/32 trust\n"
                    "host all all 127.0.0.1/32 scram-sha-256\n")

    def pick_ports(self):
        self.port = free_port()
        return (self.port,)

    def argv(self, port):
        settings = {"listen_addresses": "127.0.0.1", "unix_socket_directories": self.home,
                    "unix_socket_permissions": "0700", "fsync": "on", "synchronous_commit": "on",
                    "password_encryption": "scram-sha-256"}
        return [self.binary, "-D", self.data_dir, "-p", str(port),
                *(arg for name, value in settings.items() for arg in ("-c", f"{name}={value}"))]

    @property
    def socket_path(self):
        return os.path.join(self.home, f".s.PGSQL.{self.port}")

    def healthy(self):
        # The unix socket opens once the TCP one is bound.
        try:
            Wire(self.socket_path, "postgres", timeout=0.5).close()
            return True
        except (OSError, ServerError):
            return False

    @property
    def url(self):
        return self.setup_url(SETUPS[0])

    def setup_role(self, setup):
        return {"tcp-md5": MD5_ROLE, "tcp-trust": TRUST_ROLE, "unix-peer": self.peer_role}.get(setup, ROLE)

    def setup_url(self, setup):
        """dlock's backend URL for one of SETUPS: over TCP to 127.0.0.1, or
        over the unix socket in self.home."""
        role = self.setup_role(setup)
        if setup.startswith("unix-"):
            return f"postgresql://{role}@/{DATABASE}?host={self.home}&port={self.port}"
        return f"postgresql://{role}@127.0.0.1:{self.port}/{DATABASE}"

    def setup_conninfo(self, setup):
        """The libpq C client's conninfo for the same setup."""
        host = self.home if setup.startswith("unix-") else "127.0.0.1"
        return f"host={host} port={self.port} dbname={DATABASE} user={self.setup_role(setup)}"

    @staticmethod
    def setup_has_password(setup):
        return setup.endswith(("-scram", "-md5"))

    def check_key(self, text):
        """Insists that the server computes the key the bench looks for in pg_locks."""
        server = int(self.admin.query("SELECT " + KEY_SQL.format(sql_literal(text)))[0][0])
        if server != advisory_key(text):
            raise ServerError(f"the server's key for {text!r} is {server}, sha256 gives {advisory_key(text)}")

    def hold(self, text):
        self.admin.query("SELECT pg_advisory_lock(" + KEY_SQL.format(sql_literal(text)) + ")")

    def let_go(self, text):
        self.admin.query("SELECT pg_advisory_unlock(" + KEY_SQL.format(sql_literal(text)) + ")")

    def waiting_query(self, text):
        """SQL counting the ungranted requests for text's key in this
        database: pg_locks shows a bigint advisory key as classid (high 32
        bits) and objid (low 32 bits), with objsubid 1."""
        key = advisory_key(text)
        return ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND "
                "database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND "
                f"classid::bigint = {(key >> 32) & 0xFFFFFFFF} AND objid::bigint = {key & 0xFFFFFFFF}")

    def waiting(self, sql):
        return int(self.admin.query(sql)[0][0])

    def settings(self, *names):
        return {name: self.admin.query(f"SHOW {name}")[0][0] for name in names}


PSYCOPG2_LOCK = """# Run a command under a PostgreSQL advisory lock, the way one would with
# psycopg2 (the password from PGPASSWORD, as libpq reads it), on the key dlock
# documents for lock {name} in the namespace dlock.
import subprocess
import sys

import psycopg2

KEY = "{key_sql}"

conn = psycopg2.connect(host="127.0.0.1", port={port}, dbname="{database}", user="{role}")
conn.autocommit = True  # no transaction left open while the job runs
try:
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(" + KEY + ")", ("dlock {name}",))
        try:
            status = subprocess.call(sys.argv[1:])
        finally:
            cur.execute("SELECT pg_advisory_unlock(" + KEY + ")", ("dlock {name}",))
finally:
    conn.close()
sys.exit(status)
"""


def write_psycopg2_lock(path, port, name):
    with open(path, "w") as f:
        f.write(PSYCOPG2_LOCK.format(port=port, name=name, database=DATABASE, role=ROLE,
                                     key_sql=KEY_SQL.format("%s")))


def build_pq_lock(cc, binary):
    """Compiles the libpq C client (pq_lock.c) into binary with cc; returns
    the version of the libpq it is linked with. Dynamically linked, as a
    program on libpq is: loading libpq is part of the floor."""
    include = "/usr/include/postgresql"
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--includedir"], capture_output=True, text=True)
        include = out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else include
    argv = [cc, "-O2", f"-I{include}", "-o", binary, PQ_LOCK_SOURCE, "-lpq"]
    out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        why = next((line.strip() for line in lines if "error" in line), lines[-1] if lines else "no message")
        raise BenchError(f"cannot compile {PQ_LOCK_SOURCE} with {cc} -I{include} -lpq (needed for pg: "
                         f"libpq's headers and library, libpq-dev on Debian, scripts/install-deps "
                         f"installs it; --only file needs no servers): {why}")
    # PQlibVersion() of the libpq the dynamic loader gives the C client.
    try:
        ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=5).stdout
        path = next(line.split("=>")[1].split()[0] for line in ldd.splitlines() if "libpq.so" in line)
        v = ctypes.CDLL(path).PQlibVersion()
    except (OSError, StopIteration, IndexError, AttributeError, subprocess.SubprocessError):
        return "libpq (unknown version)"
    return f"libpq {v // 10000}.{v % 10000}"
