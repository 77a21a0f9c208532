"""The run and peak-RSS measurements of scripts/bench: `run x -- true` (and
each tool's same lock around `true`) timed spawn to reaped, with its CPU
time, in shuffled rounds, and the peak RSS from the stamp helper. Mixed
into the Bench class of scripts/bench, whose spawn, run_argv, shuffled and
verify_redis_used it uses."""

import os
import subprocess
import time

from processes import BenchError, Deadline
from sections import TRIAL_TIMEOUT_S

WARMUP = 3
RSS_RUNS = 5


class RunMeasure:
    # ---- measurement 1: run x -- true --------------------------------------

    def time_once(self, argv, env=None):
        """Wall time (ns) from spawn to reaped, and the CPU time (ns, user +
        system) of the process and the job it waited for."""
        start = time.perf_counter_ns()
        pid = self.spawn(argv, env=env)
        _, status, usage = os.wait4(pid, 0)
        elapsed = time.perf_counter_ns() - start
        self.pgroups.discard(pid)
        if status != 0:
            raise BenchError(f"{' '.join(argv)} exited with {os.waitstatus_to_exitcode(status)}{self.last_stderr()}")
        return elapsed, round((usage.ru_utime + usage.ru_stime) * 1e9)

    def measure_run(self, whos):
        cmds = {who: self.run_argv(who) for who in whos}
        wall = {who: [] for who in whos}
        cpu = {who: [] for who in whos}
        for i in range(WARMUP + self.runs):
            for who in self.shuffled(whos):
                with Deadline(TRIAL_TIMEOUT_S):
                    elapsed, used = self.time_once(cmds[who], self.envs.get(who))
                if i >= WARMUP:
                    wall[who].append(elapsed)
                    cpu[who].append(used)
            if i == 0:
                self.verify_redis_used(whos)
        return wall, cpu

    # ---- measurement 3: peak RSS -------------------------------------------

    def rss_once(self, argv, env):
        out = subprocess.run([self.helper, "rss", *argv], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=TRIAL_TIMEOUT_S)
        if out.returncode != 0:
            raise BenchError(f"{' '.join(argv)} exited with {out.returncode}: {out.stderr.strip()}")
        return int(out.stdout.split()[-1])

    def measure_rss(self, whos):
        peak = {who: 0 for who in whos}
        for _ in range(RSS_RUNS):
            for who in whos:
                peak[who] = max(peak[who], self.rss_once(self.run_argv(who), self.envs.get(who, self.env)))
        return peak
