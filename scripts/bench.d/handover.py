"""The hand-over measurement of scripts/bench: from the end of the lock
holder's job to the start of the blocked waiter's job, for dlock on each
backend, for the tools of each engine and for the libpq C client with
dlock's fence on PostgreSQL (pq_lock --fence), measured alike. Mixed into the
Bench class of scripts/bench, whose spawn, wait, lock_argv and the server
detectors of sections.py it uses."""

import errno
import json
import os
import subprocess
import time

import servers
from processes import BenchError, Deadline, Timeout
from report import DLOCKS, ETCD, ETCDCTL, FILE, KAZOO, LIBPQ_FENCE, PG, PSYCOPG2, REDIS, REDIS_CLI, REDIS_PY, ZK
from sections import ETCD_LOCK_PREFIX, ETCDCTL_LOCK_PREFIX, LOCK_NAME, TRIAL_TIMEOUT_S

HANDOVER_WARMUP = 2
WAITER_SETTLE_S = 0.02
# The tools that poll the lock, SET NX again and again, seen to have tried it
# by the redis-server's count of SET commands.
POLLING_TOOLS = (REDIS_CLI, REDIS_PY)


class HandOver:
    def open_fifo_writer(self):
        # O_NONBLOCK open of a fifo's write end fails with ENXIO until a reader
        # has it open: success means the holder's job runs, so the lock is held.
        end = time.monotonic() + TRIAL_TIMEOUT_S
        while True:
            try:
                return os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
            if time.monotonic() > end:
                raise Timeout("the lock holder's job never started")
            time.sleep(0.0002)

    @staticmethod
    def waiter_blocked(inode):
        # /proc/locks: "1: -> FLOCK  ADVISORY  WRITE 5052 fe:00:10952912 0 EOF"
        suffix = f":{inode}"
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 6 and fields[1] == "->" and fields[6].endswith(suffix):
                    return True
        return False

    def wait_for_waiter(self, is_blocked, waiter_pid, poll_s):
        end = time.monotonic() + TRIAL_TIMEOUT_S
        while not is_blocked():
            status = self.poll_exit(waiter_pid)
            if status is not None:
                raise BenchError(f"the waiter exited ({status}) before blocking{self.last_stderr()}")
            if time.monotonic() > end:
                raise Timeout("the waiter never blocked on the lock")
            time.sleep(poll_s)

    def blocked_baseline(self, who):
        """What the server shows before the waiter starts, for wait_blocked
        to see it change: SET commands run for a polling tool, subscribed
        clients on each node for dlock on Redis, nothing for the others."""
        if who in POLLING_TOOLS:
            return servers.set_calls(self.resps[REDIS][0])
        return self.subscribed(who)

    def wait_blocked(self, who, waiter_pid, before):
        # Server-side waits: the waiter's last request before it sleeps is
        # seen on the server, whichever client made it.
        server_side = {ZK: self.zk_waiter_watches_holder, KAZOO: self.zk_waiter_watches_holder,
                       PG: self.pg_waiter_blocked, PSYCOPG2: self.pg_waiter_blocked,
                       LIBPQ_FENCE: self.pg_waiter_blocked,
                       ETCD: lambda: self.etcd_waiter_watches(ETCD_LOCK_PREFIX),
                       ETCDCTL: lambda: self.etcd_waiter_watches(ETCDCTL_LOCK_PREFIX)}
        if who in server_side:
            self.wait_for_waiter(server_side[who], waiter_pid, 0.0005)
        elif who in POLLING_TOOLS:
            # One SET NX refused: the waiter has tried once and, once its
            # answer is in, sleeps before the next try. A release comes at
            # any point of a poller's sleep, not just after it has tried: a
            # random part of the interval more, so that its hand-over is
            # the typical one (half the interval), not nearly the worst.
            resp = self.resps[REDIS][0]
            self.wait_for_waiter(lambda: servers.set_calls(resp) > before, waiter_pid, 0.0005)
            time.sleep(self.rng.uniform(0, servers.REDIS_POLL_S))
        elif who not in self.resps:
            inode = os.stat(self.dlock_lock_file() if who == FILE else self.flock_file).st_ino
            self.wait_for_waiter(lambda: self.waiter_blocked(inode), waiter_pid, 0.0002)
            return
        else:
            # Subscribed (on every node, for Redlock) comes before the waiter's
            # lock attempt; one round trip later it waits.
            self.wait_for_waiter(lambda: all(now > was for now, was in zip(self.subscribed(who), before)),
                                 waiter_pid, 0.0005)
        self.settle(waiter_pid)

    def settle(self, waiter_pid):
        # What the server saw last of the waiter is not yet the waiter asleep:
        # its answer still has to arrive and be acted on.
        time.sleep(WAITER_SETTLE_S)
        status = self.poll_exit(waiter_pid)
        if status is not None:
            raise BenchError(f"the waiter exited ({status}) while the lock was held{self.last_stderr()}")

    def handover_once(self, who, verify=False):
        end_file = os.path.join(self.tmp, "end.ns")
        start_file = os.path.join(self.tmp, "start.ns")
        for path in (end_file, start_file):
            if os.path.exists(path):
                os.unlink(path)
        # Every contender runs the same helper as its job, a child it waits for.
        holder_argv = self.lock_argv(who, (self.helper, "hold", self.fifo, end_file))
        waiter_argv = self.lock_argv(who, (self.helper, "start", start_file), waiter=True)
        with Deadline(TRIAL_TIMEOUT_S + 5):
            holder = self.spawn(holder_argv, env=self.envs.get(who))
            go = self.open_fifo_writer()
            try:
                if who in (ETCD, ETCDCTL):
                    self.etcd_wait_idle()
                before = self.blocked_baseline(who)
                waiter = self.spawn(waiter_argv, env=self.envs.get(who))
                self.wait_blocked(who, waiter, before)
                if verify and who in DLOCKS:
                    self.verify_dlock_sees_waiter(who)
                os.write(go, b"g")
            finally:
                os.close(go)
            # The waiter first: a wait for that pid alone is not woken when the
            # holder exits, so this script stays asleep through the hand-over.
            self.wait(waiter, f"{who} waiter")
            self.wait(holder, f"{who} holder")
        with open(end_file) as f:
            ended = int(f.read())
        with open(start_file) as f:
            started = int(f.read())
        return started - ended

    def verify_dlock_sees_waiter(self, who):
        # Cross-check how the bench sees a blocked waiter with dlock's own view, once.
        out = subprocess.run([self.dlock, "-b", self.backends[who], "status", LOCK_NAME, "--json"],
                             env=self.envs.get(who, self.env), capture_output=True, text=True, timeout=5)
        try:
            waiters = json.loads(out.stdout).get("waiters")
        except ValueError:
            waiters = None
        if not isinstance(waiters, int) or waiters < 1:
            raise BenchError(f"dlock status ({who}) reports waiters={waiters!r} while a waiter is blocked")

    def measure_handover(self, whos):
        samples = {who: [] for who in whos}
        for i in range(HANDOVER_WARMUP + self.runs):
            for who in self.shuffled(whos):
                ns = self.handover_once(who, verify=(i == 0))
                if i >= HANDOVER_WARMUP:
                    samples[who].append(ns)
        return samples
