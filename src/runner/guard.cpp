#include "runner/guard.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dlock::runner {

namespace {

constexpr char k_guard_name[] = "dlock-guard";
// Sent after the job's process group once the job's whole tree is gone.
constexpr char k_job_ended = 'd';

char *g_argument_area = nullptr;
std::size_t g_argument_size = 0;

// The guard runs in a copy of a process that may have other threads (a
// backend's I/O thread), created by a raw clone: no fork handlers ran, so
// malloc's and every other lock may be held. It makes raw system calls only
// (no allocation, no libc state, no sanitizer interceptor), and every signal
// is blocked in it. Sanitizer runtimes, whose state is not theirs to use
// in such a copy, are kept out of its functions.
#define DLOCK_GUARD_CODE __attribute__((no_sanitize("address", "thread", "undefined")))

DLOCK_GUARD_CODE long sys(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
  return syscall(number, a, b, c, d);
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
  unsigned char message[sizeof(pid_t) + 1];
  std::size_t received = 0;
  while (received < sizeof message) {
    long n = sys(SYS_read, STDIN_FILENO, reinterpret_cast<long>(message + received),
                 static_cast<long>(sizeof message - received));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received += static_cast<std::size_t>(n);
  }
  // End of file with the process group and without the byte after it:
  // dlock died while the job could still run. The group cannot have been
  // reused while one of its processes lives. In theory it could if dlock
  // died after reaping the last of them and before writing the byte; dlock
  // writes it as soon as it has reaped them. Never kill(-1, ...): that is
  // every process we may signal.
  if (received == sizeof(pid_t)) {
    pid_t process_group = 0;
    std::memcpy(&process_group, message, sizeof process_group);
    if (process_group > 1) sys(SYS_kill, -process_group, SIGKILL);
  }
  sys(SYS_exit_group, 0);
  __builtin_unreachable();
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
  rlimit files{};
  int descriptor_limit = 1 << 20;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < static_cast<rlim_t>(descriptor_limit))
    descriptor_limit = static_cast<int>(files.rlim_cur);
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  // A fork whose end sends no signal (exit signal 0): waitpid(-1) without
  // __WCLONE neither reports nor counts it, so waiting for every descendant
  // of the job does not wait for the guard. No CLONE_VM: a process sharing
  // dlock's memory would be killed with it by the OOM killer, the very case
  // it is there for.
  long pid = syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L);
  if (pid == 0) watch(read_end.get(), descriptor_limit);
  int clone_error = errno;
  if (pid > 0) setpgid(static_cast<pid_t>(pid), static_cast<pid_t>(pid));
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) throw resource_error("cannot start the guard process", clone_error);
  return Guard(std::move(write_end), static_cast<pid_t>(pid));
}

Guard::~Guard() {
  m_pipe.reset();
  // Reaped if it has already gone; otherwise it ends on its own, and is
  // reaped with this process.
  if (m_pid > 0) waitpid(m_pid, nullptr, WNOHANG | __WCLONE);
}

void Guard::job_started(pid_t process_group) {
  // The job runs on without it; only the protection is gone.
  if (!send(&process_group, sizeof process_group))
    say("warning: the guard process is gone: if dlock dies, the job's process group is not killed");
}

void Guard::job_ended() {
  send(&k_job_ended, 1);
  m_pipe.reset();
}

bool Guard::send(const void *data, std::size_t size) {
  if (!m_pipe) return true;
  ssize_t written;
  do {
    written = write(m_pipe.get(), data, size);
  } while (written < 0 && errno == EINTR);
  // SIGPIPE is ignored (Signals::install): a guard that was killed shows as
  // EPIPE here.
  return written == static_cast<ssize_t>(size);
}

} // namespace dlock::runner
