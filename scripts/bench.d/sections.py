"""The part of scripts/bench that knows its servers: starting them, checking
that each contender really uses the bench's server, warming and describing
them, and telling when a waiter is blocked on one. Mixed into the Bench class
of scripts/bench, whose spawn, wait, time_once and wait_for_waiter it uses
(the hand-over itself is in handover.py)."""

import os
import subprocess
import time

import postgres
import servers
from processes import BenchError, Deadline, Timeout
from report import (ETCD, ETCDCTL, KAZOO, LIBPQ, LIBPQ_FENCE, PG, PSYCOPG2, REDIS, REDIS_CLI, REDLOCK, ZK, filesystem_of,
                    pg_setup_contenders, tool_version)

TRIAL_TIMEOUT_S = 10.0
LOCK_NAME = "x"
ZK_LOCK_PATH = f"/dlock/{LOCK_NAME}"  # the default namespace "dlock" (DLOCK_* env and the config file are scrubbed)
REDLOCK_NODES = 5
ETCD_LOCK_PREFIX = f"dlock/{LOCK_NAME}/"  # dlock's keys for x in the namespace dlock, as etcd's concurrency.Mutex
ETCDCTL_LOCK_PREFIX = f"{LOCK_NAME}/"  # `etcdctl lock x`'s
PG_SCALE_MAX_CONNECTIONS = 1100  # the scale section's 500 waiters, or 500 holders, and more


class ServerSections:
    def start_redis_servers(self):
        # The redis and the redlock section both compare with dlock on the single redis-server.
        redis_binary, log_fd = self.tools["redis-server"], self.server_log_fd
        try:
            self.redis = servers.RedisServer(self.spawn, self.poll_exit, redis_binary, self.tmp, log_fd).start()
            self.resps[REDIS] = [servers.Resp(self.redis.port)]
            if "redis" in self.sections:
                self.start_etcd()
            if "redlock" in self.sections:
                nodes = servers.start_redis_nodes(REDLOCK_NODES, self.spawn, self.poll_exit, redis_binary, self.tmp, log_fd)
                self.resps[REDLOCK] = [servers.Resp(node.port) for node in nodes]
                self.backends[REDLOCK] = servers.redlock_url(nodes)
        except (servers.ServerError, OSError) as e:
            raise BenchError(f"cannot start the bench's servers: {e}{self.server_log_tail()}") from e
        self.backends[REDIS] = self.redis.url
        servers.write_redis_cli_lock(self.redis_cli_lock, self.redis.port, LOCK_NAME)
        servers.write_redis_py_lock(self.redis_py_lock, self.redis.port, LOCK_NAME)

    def start_etcd(self):
        # One etcd serves both sections that use it: etcdctl's lock in the
        # redis section, dlock and etcdctl in the etcd section.
        if self.etcd:
            return
        try:
            self.etcd = servers.EtcdServer(self.spawn, self.poll_exit, self.tools["etcd"], self.tmp,
                                           self.server_log_fd).start()
        except (servers.ServerError, OSError) as e:
            raise BenchError(f"cannot start the bench's etcd: {e}{self.server_log_tail()}") from e
        self.backends[ETCD] = self.etcd.url

    def start_zookeeper(self):
        try:
            self.zk = servers.ZooKeeperServer(self.spawn, self.poll_exit, self.tools["java"], self.tmp,
                                              self.server_log_fd).start()
        except (servers.ServerError, OSError) as e:
            raise BenchError(f"cannot start the bench's ZooKeeper: {e}{self.server_log_tail()}") from e
        self.backends[ZK] = self.zk.url
        servers.write_kazoo_lock(self.kazoo_lock, self.zk.port, ZK_LOCK_PATH)

    def start_postgres(self):
        try:
            self.pg = postgres.PostgresServer(self.spawn, self.poll_exit, self.tools["pg-bindir"], self.tmp,
                                              self.server_log_fd, self.env)
            if self.scale:
                # N waiters (or holders) and their status calls each take a
                # connection: more than PostgreSQL's default of 100.
                argv = self.pg.argv
                self.pg.argv = lambda port: argv(port) + ["-c", f"max_connections={PG_SCALE_MAX_CONNECTIONS}"]
            self.pg.start()
            self.pg.check_key(f"dlock {LOCK_NAME}")
        except (servers.ServerError, OSError, subprocess.SubprocessError) as e:
            raise BenchError(f"cannot start the bench's PostgreSQL: {e}{self.server_log_tail()}") from e
        # dlock and the libpq C client in each authentication setup, the
        # first under the plain keys PG, LIBPQ and LIBPQ_FENCE (pg_setup_contenders).
        for setup, (dlock, libpq, fenced) in zip(postgres.SETUPS, pg_setup_contenders()):
            self.backends[dlock] = self.pg.setup_url(setup)
            self.pq_lock_argvs[libpq] = [self.pq_lock, self.pg.setup_conninfo(setup)]
            self.pq_lock_argvs[fenced] = [self.pq_lock, "--fence", self.pg.setup_conninfo(setup)]
            if self.pg.setup_has_password(setup):
                self.envs[dlock] = {**self.env, "DLOCK_PASSWORD": self.pg.password}
                self.envs[libpq] = self.envs[fenced] = {**self.env, "PGPASSWORD": self.pg.password}
        self.envs[PSYCOPG2] = {**self.env, "PGPASSWORD": self.pg.password}
        postgres.write_psycopg2_lock(self.psycopg2_lock, self.pg.port, LOCK_NAME)
        self.pg_waiting_sql = self.pg.waiting_query(f"dlock {LOCK_NAME}")

    def server_log_tail(self):
        try:
            with open(os.path.join(self.tmp, "servers.log"), errors="replace") as f:
                tail = f.read().strip().splitlines()[-3:]
        except OSError:
            return ""
        return (": " + " | ".join(tail)) if tail else ""

    def zk_description(self):
        # Every write waits for an fsync of the transaction log, so the
        # filesystem under TMP is part of every figure that writes.
        version = servers.zk_version(self.zk.port)
        kazoo = subprocess.run([self.tools["kazoo-python"], "-c", "import kazoo.version; print(kazoo.version.__version__)"],
                               env=self.env, capture_output=True, text=True).stdout.strip() or "unknown"
        java = tool_version([self.tools["java"], "-version"], "java")
        tick = servers.zookeeper_server.DEFAULT_TICK_MS
        return (f"{version} standalone ({java}, tickTime {tick} ms, forceSync={servers.zookeeper_server.FORCE_SYNC}: "
                f"txn log fsynced on {filesystem_of(self.zk.data_dir)}), kazoo {kazoo}")

    def etcd_description(self):
        # Every write (the lease grant, the lock's put, the revoke) waits for
        # an fsync of the WAL on this filesystem.
        etcdctl = tool_version([self.tools["etcdctl"], "version"], "etcdctl")
        return (f"{self.etcd.version()} single member (default heartbeat 100 ms and election timeout 1000 ms, "
                f"WAL fsynced on {filesystem_of(self.etcd.data_dir)}), {etcdctl}")

    def pg_description(self):
        # The commit of dlock's fence waits for a flush of the WAL, on this filesystem.
        s = self.pg.settings("server_version", "fsync", "synchronous_commit", "wal_sync_method")
        client = subprocess.run([self.tools["psycopg2-python"], "-c", "import psycopg2, psycopg2.extensions as e; "
                                 "v = e.libpq_version(); print(psycopg2.__version__.split()[0], v // 10000, v % 10000)"],
                                env=self.env, capture_output=True, text=True).stdout.split()
        client = f"psycopg2 {client[0]} on libpq {client[1]}.{client[2]}" if len(client) == 3 else "psycopg2 (unknown version)"
        return (f"PostgreSQL {s['server_version'].split()[0]} (fsync={s['fsync']}, synchronous_commit="
                f"{s['synchronous_commit']}: WAL flushed with {s['wal_sync_method']} on "
                f"{filesystem_of(self.pg.data_dir)}), {client}, libpq C client on {self.pq_lock_libpq}")

    def verify_redis_used(self, whos):
        # dlock keeps a fence counter per lock name, on at least a majority of
        # the Redlock nodes; the hand-written lock deletes its key.
        for who in (w for w in (REDIS, REDLOCK) if w in whos):
            used = sum(resp.call("DBSIZE") > 0 for resp in self.resps[who])
            if used <= len(self.resps[who]) // 2:
                raise BenchError(f"dlock left no key in the bench's redis-server(s) ({self.backends[who]}): did it use them?")
        if REDIS_CLI in whos and self.resps[REDIS][0].call("EXISTS", f"lock:{LOCK_NAME}") != 0:
            raise BenchError(f"{self.redis_cli_lock} did not release its lock")

    def warm_server(self, who, runs):
        argv = [self.dlock, "-b", self.backends[who], "run", "bench-warmup", "--", "true"]
        with Deadline(TRIAL_TIMEOUT_S * 4):
            for _ in range(runs):
                self.time_once(argv, self.envs.get(who))

    def verify_zk_used(self):
        # Each must write to the bench's ZooKeeper (the zxid moves on) and
        # leave no node behind. kazoo goes first: its Lock makes /dlock/x a
        # persistent node, which stays, where dlock would make a container
        # that the server removes once empty, possibly under kazoo's create.
        for who in (KAZOO, ZK):
            before = servers.zk_zxid(self.zk.port)
            with Deadline(TRIAL_TIMEOUT_S):
                self.time_once(self.run_argv(who))
            if servers.zk_zxid(self.zk.port) <= before:
                raise BenchError(f"{' '.join(self.run_argv(who))} wrote nothing to the bench's ZooKeeper: did it use it?")
            left = [path for path in servers.zk_ephemeral_owners(self.zk.port) if path.startswith(ZK_LOCK_PATH + "/")]
            if left:
                raise BenchError(f"{' '.join(self.run_argv(who))} left its lock node behind: {', '.join(left)}")

    def verify_etcd_used(self):
        # Each must write to the bench's etcd (its revision moves on) and
        # leave no key behind: dlock's are under NS/NAME/ (NS "dlock"),
        # etcdctl's lock x under x/, so the two never contend.
        for who, prefix in ((ETCD, ETCD_LOCK_PREFIX), (ETCDCTL, ETCDCTL_LOCK_PREFIX)):
            before = self.etcd.keys_under(prefix)[1]
            with Deadline(TRIAL_TIMEOUT_S):
                self.time_once(self.run_argv(who))
            left, after = self.etcd.keys_under(prefix)
            if after <= before:
                raise BenchError(f"{' '.join(self.run_argv(who))} wrote nothing to the bench's etcd: did it use it?")
            if left:
                raise BenchError(f"{' '.join(self.run_argv(who))} left {left} key(s) under {prefix} behind")
        self.etcd_idle_watchers = self.etcd.watchers()

    def etcd_wait_idle(self):
        # The last waiter's watch ends with its gateway stream, a little
        # after the waiter exits; it must be gone before the next waiter's
        # watch is counted.
        end = time.monotonic() + TRIAL_TIMEOUT_S
        while self.etcd.watchers() > self.etcd_idle_watchers:
            if time.monotonic() > end:
                raise Timeout("a watch on the bench's etcd outlived its waiter")
            time.sleep(0.002)

    def etcd_waiter_watches(self, prefix):
        # The waiter's last step before it waits: its key is in the queue
        # (two keys under the prefix: dlock's, or etcdctl's), then it
        # watches its predecessor's; etcdctl's lock is the same recipe.
        # Its watch must be synced too: a waiter that has waited a while
        # has one, where a release in a new watch's first 100 ms would
        # measure etcd's sync loop.
        if self.etcd.keys_under(prefix)[0] < 2:
            return False
        watchers, unsynced = self.etcd.watcher_counts()
        return watchers > self.etcd_idle_watchers and unsynced == 0

    def verify_pg_used(self):
        # All must take the documented key on the bench's server: while the
        # bench's own session holds it, dlock finds x busy (exit 75), and the
        # psycopg2 script, then the libpq C client, then the C client with the
        # fence (a hand-over contender, seen blocked the same way) each wait
        # for it in pg_locks (one more ungranted request each) until the
        # bench lets go.
        self.pg.hold(f"dlock {LOCK_NAME}")
        clients = []
        try:
            busy = subprocess.run(self.run_argv(PG), env=self.envs[PG], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=TRIAL_TIMEOUT_S)
            if busy.returncode != 75:
                raise BenchError(f"dlock run {LOCK_NAME} on {self.pg.url} exited with {busy.returncode} while the bench "
                                 f"held the lock's key, not 75 (busy): {busy.stderr.strip()}")
            for who, what in ((PSYCOPG2, self.psycopg2_lock), (LIBPQ, self.pq_lock),
                              (LIBPQ_FENCE, self.pq_lock + " --fence")):
                clients.append((self.spawn(self.run_argv(who), env=self.envs[who]), what))
                waiting_before = len(clients) - 1
                self.wait_for_waiter(lambda: self.pg.waiting(self.pg_waiting_sql) > waiting_before, clients[-1][0], 0.001)
        finally:
            self.pg.let_go(f"dlock {LOCK_NAME}")
        with Deadline(TRIAL_TIMEOUT_S):
            for pid, what in clients:
                self.wait(pid, what)

    def subscribed(self, who):
        """Subscribed connections on each redis-server who uses (none for file and flock)."""
        return [servers.subscribed_clients(resp) for resp in self.resps.get(who, ())]

    def zk_waiter_watches_holder(self):
        # The waiter's last step before it waits: a watch on its predecessor,
        # the holder's node (kazoo's Lock sets it with exists()). Any
        # contender's session watching another's node is a waiter; the
        # holder watches its own node only, if any.
        owners = servers.zk_ephemeral_owners(self.zk.port)
        contenders = {path: owner for path, owner in owners.items() if path.startswith(ZK_LOCK_PATH + "/")}
        sessions = set(contenders.values())
        return any(watcher != contenders[path] and watcher in sessions
                   for path, watchers in servers.zk_watchers(self.zk.port).items() if path in contenders
                   for watcher in watchers)

    def pg_waiter_blocked(self):
        return self.pg.waiting(self.pg_waiting_sql) > 0

