#pragma once

#include "core/unique_fd.hpp"

#include <cstddef>
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

// A process that kills the job's process group if dlock dies (SIGKILL, the
// OOM killer) while the job may still run: PR_SET_PDEATHSIG reaches only the
// job's first process, and on a lease backend the lease would lapse under
// the others.
//
// The guard is a child of dlock: the small program dlock-guard
// (src/guard/dlock_guard.cpp), found where the modules are, or, if it is
// missing, a copy of dlock made with no exit signal. It runs in a process
// group of its own (a SIGKILL to dlock's group misses it), with every signal
// blocked and no descriptor but the read end of a pipe whose write end only
// dlock has (close-on-exec: the job never gets it). It reads the job's
// process group, then one byte once the job's whole tree is gone. End of
// file after the group and before that byte means dlock died while the job
// could run: it kills the group. Otherwise it exits at once. dlock never
// waits for it: its reaping loop is done when the guard is the only child
// left. Shows as "dlock-guard".
class Guard {
public:
  // No guard: every call does nothing.
  Guard() = default;
  ~Guard();
  Guard(Guard &&other) noexcept : m_pipe(std::move(other.m_pipe)), m_pid(std::exchange(other.m_pid, -1)) {}
  Guard &operator=(Guard &&) = delete;

  // Starts one. Call before the lock is taken: the guard closes every
  // descriptor but its pipe, and should not even briefly share a lock's.
  // Throws dlock::Error if it cannot be started.
  static Guard start();

  // The job runs in process group `process_group`.
  void job_started(pid_t process_group);
  // The job and every descendant have been reaped: nothing left to kill.
  void job_ended();
  // The guard's pid (-1 if none), which signals to the job's tree spare.
  pid_t pid() const { return m_pid; }
  // It was reaped (it died early): its pid may be reused from now on.
  void reaped() { m_pid = -1; }

private:
  Guard(UniqueFd pipe, pid_t pid) : m_pipe(std::move(pipe)), m_pid(pid) {}
  // False if the guard is gone.
  bool send(const void *data, std::size_t size);

  UniqueFd m_pipe;
  pid_t m_pid = -1;
};

} // namespace dlock::runner
