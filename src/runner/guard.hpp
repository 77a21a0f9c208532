#pragma once

#include "core/unique_fd.hpp"
#include "runner/timeline.hpp"

#include <cstddef>
#include <cstdint>
#include <sys/types.h>
#include <utility>

namespace dlock::runner {

// While alive, tells guards started by this process where the program's
// arguments are (argv[0] up to the end of the last argument laid out after
// it), so that a guard can overwrite its own copy: /proc/PID/cmdline reads
// that memory, and a guard must not pass for `dlock run NAME` in ps or
// pgrep -f. cli_main holds one for as long as argv lives.
class ArgumentArea {
public:
  ArgumentArea(int argc, char **argv);
  ~ArgumentArea();
  ArgumentArea(const ArgumentArea &) = delete;
  ArgumentArea &operator=(const ArgumentArea &) = delete;
};

// A process that kills the job's process group when dlock can no longer be
// trusted to: if dlock dies (SIGKILL, the OOM killer) while the job may
// still run (PR_SET_PDEATHSIG reaches only the job's first process), and,
// as the safety timeline's watchdog, when the kill deadline of the last
// confirmed renewal passes while dlock itself is stopped, hung or starved:
// on a lease backend the lease would lapse under the job either way.
//
// The guard is a child of dlock, a copy of it made by a raw clone with no
// exit signal. It runs in a process group of its own (a SIGKILL or SIGSTOP
// to dlock's group misses it), with every signal blocked and no descriptor
// but the read end of a pipe whose write end only dlock has (close-on-exec:
// the job never gets it; non-blocking: dlock never waits for the guard).
// dlock sends it the job's process group, then the kill deadline of the
// lease at the job's start and after every confirmed renewal
// (CLOCK_MONOTONIC, steady_clock's clock), and at last word that the group
// is empty or the job's whole tree is gone, on which it exits. When the
// latest deadline passes with no newer one, it kills the group with SIGKILL
// and exits with a status that killed_at_deadline() recognises. End of file
// after the group and before the last word means dlock died while the job
// could run: it kills the group. dlock never waits for it: its reaping loop
// is done when the guard is the only child left. Shows as "dlock-guard".
class Guard {
public:
  // No guard: every call does nothing.
  Guard() = default;
  ~Guard();
  Guard(Guard &&other) noexcept
      : m_pipe(std::move(other.m_pipe)), m_pid(std::exchange(other.m_pid, -1)), m_warned(other.m_warned),
        m_killed_at_deadline(other.m_killed_at_deadline) {}
  Guard &operator=(Guard &&) = delete;

  // Starts one. Call before the lock is taken: the guard closes every
  // descriptor but its pipe, and should not even briefly share a lock's.
  // Throws dlock::Error if it cannot be started.
  static Guard start();

  // The job runs in process group `process_group`; kill it at
  // `kill_deadline` unless told a later one.
  void job_started(pid_t process_group, SteadyClock::time_point kill_deadline);
  // A renewal was confirmed: the new deadline (timeline.hpp guard_kill_at).
  void kill_deadline(SteadyClock::time_point deadline);
  // No process is left in the job's process group (descendants outside it
  // may still run): its number may be reused, so the guard must not kill it.
  void group_gone();
  // The job and every descendant have been reaped: nothing left to kill.
  void job_ended();
  // Whether the guard ended after killing the job's group at a kill
  // deadline; waits up to `wait` for it to end.
  bool killed_at_deadline(Millis wait);
  // The guard's pid (-1 if none), which signals to the job's tree spare.
  pid_t pid() const { return m_pid; }
  // It was reaped (it died early): its pid may be reused from now on.
  void reaped() { m_pid = -1; }

private:
  Guard(UniqueFd pipe, pid_t pid) : m_pipe(std::move(pipe)), m_pid(pid) {}
  // False if the guard is gone.
  bool send(char kind, std::uint64_t value);
  bool send_deadline(SteadyClock::time_point deadline);
  void warn_gone();

  UniqueFd m_pipe;
  pid_t m_pid = -1;
  bool m_warned = false;
  bool m_killed_at_deadline = false;
};

} // namespace dlock::runner
