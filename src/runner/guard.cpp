#include "runner/guard.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "runner/child.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dlock::runner {

namespace {

constexpr char k_guard_name[] = "dlock-guard";

// dlock tells the guard everything in messages of one kind byte and a
// 64-bit value, each written whole (far below PIPE_BUF, so a write is never
// split or interleaved, and on the non-blocking write end it either goes in
// whole or fails with EAGAIN).
constexpr std::size_t k_message_size = 9;
enum MessageKind : char {
  k_job_group = 'g',     // the job's process group: guard it from now on
  k_kill_deadline = 'k', // CLOCK_MONOTONIC nanoseconds: kill the group then, unless told a later one
  k_group_gone = 'e',    // the group is empty: its number may be reused, never kill it
  k_job_ended = 'd',     // the job's whole tree is gone
};
// The guard's exit status when it killed the group at a kill deadline.
constexpr int k_guard_killed_at_deadline = 9;

char *g_argument_area = nullptr;
std::size_t g_argument_size = 0;

// The guard runs in a copy of a process that may have other threads (a
// backend's I/O thread), created by a raw clone (clone_process): no fork
// handlers ran, so malloc's and every other lock may be held. It makes raw
// system calls only (no allocation, no libc state, no sanitizer
// interceptor), and every signal is blocked in it. Sanitizer runtimes,
// whose state is not theirs to use in such a copy, are kept out of its
// functions.
#define DLOCK_GUARD_CODE DLOCK_RAW_CHILD_CODE

DLOCK_GUARD_CODE long sys(long number, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  return syscall(number, a, b, c, d, e);
}

DLOCK_GUARD_CODE std::int64_t monotonic_ns() {
  timespec now{};
  sys(SYS_clock_gettime, CLOCK_MONOTONIC, reinterpret_cast<long>(&now));
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

DLOCK_GUARD_CODE void take_guard_name() {
  sys(SYS_prctl, PR_SET_NAME, reinterpret_cast<long>(k_guard_name));
  if (g_argument_size < 2) return;
  std::size_t length = std::min(sizeof k_guard_name - 1, g_argument_size - 1);
  for (std::size_t i = 0; i < g_argument_size; ++i)
    g_argument_area[i] = i < length ? k_guard_name[i] : '\0';
  // A last byte other than NUL tells the kernel that the area was rewritten
  // (as setproctitle(3) does): /proc/PID/cmdline then ends at the first NUL
  // instead of listing the NULs after it.
  if (length + 1 < g_argument_size) g_argument_area[g_argument_size - 1] = ' ';
}

// The guard itself: keeps only the pipe's read end, as descriptor 0.
[[noreturn]] DLOCK_GUARD_CODE void watch(int read_end, int descriptor_limit) {
  // Its own process group (dlock does the same from its side: whichever
  // comes first), so that a signal to dlock's group misses it.
  sys(SYS_setpgid, 0, 0);
  take_guard_name();
  // No mount or lock directory kept busy.
  sys(SYS_chdir, reinterpret_cast<long>("/"));
  if (read_end != STDIN_FILENO && sys(SYS_dup3, read_end, STDIN_FILENO, 0) != STDIN_FILENO) sys(SYS_exit_group, 1);
  // Nothing of dlock's: not its stdout (`out=$(dlock run ...)` would wait
  // for the guard), not the pipe's write end, not a lock descriptor.
  if (sys(SYS_close_range, STDIN_FILENO + 1, ~0U, 0) != 0)
    for (int fd = STDIN_FILENO + 1; fd < descriptor_limit; ++fd)
      sys(SYS_close, fd);
  unsigned char buffer[k_message_size * 32];
  std::size_t filled = 0;
  pid_t process_group = 0;
  std::int64_t kill_deadline = -1; // none yet
  for (;;) {
    // The watchdog: once the latest kill deadline dlock sent has passed
    // with no later one in the pipe (dlock stopped, hung or starved), the
    // lease may lapse any moment: the job's group dies now. The pipe is
    // polled first, with no wait then, so a deadline already sent counts.
    timespec wait{};
    timespec *timeout = nullptr;
    if (process_group > 1 && kill_deadline >= 0) {
      std::int64_t left = kill_deadline - monotonic_ns();
      if (left < 0) left = 0;
      wait.tv_sec = static_cast<time_t>(left / 1'000'000'000);
      wait.tv_nsec = static_cast<long>(left % 1'000'000'000);
      timeout = &wait;
    }
    pollfd input{STDIN_FILENO, POLLIN, 0};
    long ready = sys(SYS_ppoll, reinterpret_cast<long>(&input), 1, reinterpret_cast<long>(timeout), 0, 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (monotonic_ns() < kill_deadline) continue;
      sys(SYS_kill, -process_group, SIGKILL);
      sys(SYS_exit_group, k_guard_killed_at_deadline);
    }
    long n =
        sys(SYS_read, STDIN_FILENO, reinterpret_cast<long>(buffer + filled), static_cast<long>(sizeof buffer - filled));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    filled += static_cast<std::size_t>(n);
    std::size_t used = 0;
    for (; filled - used >= k_message_size; used += k_message_size) {
      std::uint64_t value = 0;
      for (std::size_t i = 0; i < 8; ++i)
        value |= static_cast<std::uint64_t>(buffer[used + 1 + i]) << (8 * i);
      switch (buffer[used]) {
      case k_job_group:
        process_group = static_cast<pid_t>(value);
        break;
      case k_kill_deadline:
        kill_deadline = static_cast<std::int64_t>(value);
        break;
      case k_group_gone:
      case k_job_ended:
        sys(SYS_exit_group, 0);
        break;
      default:
        break;
      }
    }
    for (std::size_t i = used; i < filled; ++i)
      buffer[i - used] = buffer[i];
    filled -= used;
  }
  // End of file with a process group and without the end: dlock died while
  // the job could still run. The group cannot have been reused while one of
  // its processes lives. In theory it could if dlock died after reaping the
  // last of them and before telling (k_group_gone, k_job_ended); dlock tells
  // as soon as it sees the group empty. Never kill(-1, ...): that is every
  // process we may signal.
  if (process_group > 1) sys(SYS_kill, -process_group, SIGKILL);
  sys(SYS_exit_group, 0);
  __builtin_unreachable();
}

struct WatchPlan {
  int read_end;
  int descriptor_limit;
};

DLOCK_GUARD_CODE int start_watch(void *arg) {
  auto *plan = static_cast<const WatchPlan *>(arg);
  watch(plan->read_end, plan->descriptor_limit);
}

} // namespace

ArgumentArea::ArgumentArea(int argc, char **argv) {
  if (argc < 1 || !argv[0]) return;
  char *end = argv[0] + std::strlen(argv[0]) + 1;
  for (int i = 1; i < argc && argv[i] == end; ++i)
    end += std::strlen(argv[i]) + 1;
  g_argument_area = argv[0];
  g_argument_size = static_cast<std::size_t>(end - argv[0]);
}

ArgumentArea::~ArgumentArea() {
  g_argument_area = nullptr;
  g_argument_size = 0;
}

Guard Guard::start() {
  // The init of a PID namespace gets every orphan, and when it dies the
  // kernel kills every process in the namespace, the job's too: there is
  // nothing to guard.
  if (getpid() == 1) return Guard();
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) throw resource_error("cannot create a pipe", errno);
  UniqueFd read_end(ends[0]), write_end(ends[1]);
  // dlock never waits for the guard, not even for room in its pipe.
  fcntl(write_end.get(), F_SETFL, O_NONBLOCK);
  rlimit files{};
  int descriptor_limit = 1 << 20;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < static_cast<rlim_t>(descriptor_limit))
    descriptor_limit = static_cast<int>(files.rlim_cur);
  // A copy whose end sends no signal, so waiting for every descendant of
  // the job does not wait for the guard. Not one sharing dlock's memory: it
  // would be killed with dlock by the OOM killer, the very case it is there
  // for.
  WatchPlan plan{read_end.get(), descriptor_limit};
  pid_t pid = clone_process(CloneKind::silent_copy, start_watch, &plan);
  if (pid < 0) throw resource_error("cannot start the guard process", errno);
  return Guard(std::move(write_end), pid);
}

Guard::~Guard() {
  m_pipe.reset();
  // Reaped if it has already gone; otherwise it ends on its own, and is
  // reaped with this process.
  if (m_pid > 0) waitpid(m_pid, nullptr, WNOHANG | __WCLONE);
}

void Guard::job_started(pid_t process_group, SteadyClock::time_point kill_deadline) {
  // The job runs on without it; only the protection is gone.
  if (!send(k_job_group, static_cast<std::uint64_t>(process_group)) || !send_deadline(kill_deadline)) warn_gone();
}

void Guard::kill_deadline(SteadyClock::time_point deadline) {
  if (!send_deadline(deadline)) warn_gone();
}

void Guard::group_gone() {
  send(k_group_gone, 0);
  m_pipe.reset();
}

void Guard::job_ended() {
  send(k_job_ended, 0);
  m_pipe.reset();
}

bool Guard::killed_at_deadline(Millis wait) {
  if (m_pid <= 0) return m_killed_at_deadline;
  auto until = SteadyClock::now() + wait;
  for (;;) {
    int status = 0;
    pid_t reaped = waitpid(m_pid, &status, WNOHANG | __WCLONE);
    if (reaped == m_pid) {
      m_pid = -1;
      m_killed_at_deadline = WIFEXITED(status) && WEXITSTATUS(status) == k_guard_killed_at_deadline;
      return m_killed_at_deadline;
    }
    if (reaped < 0 && errno != EINTR) return false;
    if (SteadyClock::now() >= until) return false;
    timespec pause{0, 2'000'000};
    nanosleep(&pause, nullptr);
  }
}

bool Guard::send_deadline(SteadyClock::time_point deadline) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  return send(k_kill_deadline, static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0)));
}

void Guard::warn_gone() {
  if (m_warned) return;
  m_warned = true;
  say("warning: the guard process is gone: if dlock dies or stops, the job's process group is not killed before the "
      "lease could lapse");
}

bool Guard::send(char kind, std::uint64_t value) {
  if (!m_pipe) return true;
  unsigned char message[k_message_size];
  message[0] = static_cast<unsigned char>(kind);
  for (std::size_t i = 0; i < 8; ++i)
    message[1 + i] = static_cast<unsigned char>(value >> (8 * i));
  ssize_t written;
  do {
    written = write(m_pipe.get(), message, sizeof message);
  } while (written < 0 && errno == EINTR);
  // A full pipe (the guard has not read for thousands of renewals: it is
  // stopped itself) loses this message: the guard keeps an earlier
  // deadline and may kill early, never late. SIGPIPE is ignored
  // (Signals::install): a guard that was killed shows as EPIPE.
  if (written < 0 && errno == EAGAIN) return true;
  return written == static_cast<ssize_t>(sizeof message);
}

} // namespace dlock::runner
