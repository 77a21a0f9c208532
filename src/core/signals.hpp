#pragma once

#include "core/error.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dlock {

// The signals dlock forwards to the child's process group; while still
// waiting for a lock they end the wait instead.
inline constexpr int k_forwarded_signals[] = {2 /*INT*/, 15 /*TERM*/, 1 /*HUP*/, 3 /*QUIT*/, 10 /*USR1*/, 12 /*USR2*/};

// What a blocking backend call watches to know it should give up: a
// descriptor to poll (readable once a stop was requested, and it stays
// readable) and the signal that asked for it.
class Interrupt {
public:
  virtual ~Interrupt() = default;
  // Readable once requested() is non-zero; -1 if there is nothing to poll.
  virtual int fd() const = 0;
  // The signal number that asked to stop, or 0.
  virtual int requested() const = 0;
};

// Process-wide signal plumbing. Handlers do async-signal-safe work only:
// they write the signal number to a self-pipe, remember the first stop
// signal, and poke the thread that is blocked in a kernel wait (see
// BlockingWait). Installed once; idempotent.
class Signals {
public:
  static void install();
  // Read end of the self-pipe carrying every handled signal (forwarded ones
  // and SIGCHLD), non-blocking.
  static int event_fd();
  // Reads the signal numbers that arrived since the last call.
  static std::vector<int> drain();
  // The Interrupt view: stop requested by a forwarded signal.
  static const Interrupt &interrupt();
  // Forget an earlier stop request (the runner does this once the child
  // runs, after which signals are forwarded instead).
  static void clear_stop();
  // In a forked process that stays (the acquire keeper): private pipes, no
  // stop request inherited.
  static void reset_after_fork();
  // In a freshly forked child, before exec: default dispositions and an
  // empty signal mask. Async-signal-safe.
  static void reset_in_child();
};

// While alive, makes a blocking system call of the calling thread (flock,
// fcntl F_OFD_SETLKW, ...) return EINTR when a forwarded signal arrives or
// the deadline passes, with no lost wake-up: a timer aimed at this thread
// re-fires every millisecond after either event until the wait ends. One
// BlockingWait at a time per process.
class BlockingWait {
public:
  explicit BlockingWait(std::optional<std::chrono::steady_clock::time_point> deadline);
  ~BlockingWait();
  BlockingWait(const BlockingWait &) = delete;
  BlockingWait &operator=(const BlockingWait &) = delete;

  bool deadline_passed() const;

private:
  std::optional<std::chrono::steady_clock::time_point> m_deadline;
};

// A failure of one of dlock's own process resources (a pipe, a timer, a
// process): exit 70, with the cause a user can act on ("out of file
// descriptors (raise ulimit -n)") instead of the bare errno text.
Error resource_error(const std::string &what, int error_number);

} // namespace dlock
