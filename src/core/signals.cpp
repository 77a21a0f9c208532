#include "core/signals.hpp"

#include "core/error.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <mutex>
#include <sys/syscall.h>
#include <unistd.h>

namespace dlock {

namespace {

int g_event_pipe[2] = {-1, -1};
int g_stop_pipe[2] = {-1, -1};
std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_wait_active{false};
timer_t g_wait_timer{};
bool g_installed = false;
std::mutex g_install_mutex;

void arm_retrigger() {
  // timer_settime is async-signal-safe: a signal that lands just before the
  // thread enters its blocking call is followed by SIGALRM 1 ms later.
  itimerspec spec{};
  spec.it_value.tv_nsec = 1'000'000;
  spec.it_interval.tv_nsec = 1'000'000;
  timer_settime(g_wait_timer, 0, &spec, nullptr);
}

void on_signal(int signo) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  [[maybe_unused]] auto ignored = write(g_event_pipe[1], &byte, 1);
  if (signo != SIGCHLD && signo != SIGALRM) {
    int expected = 0;
    if (g_stop_signal.compare_exchange_strong(expected, signo)) {
      [[maybe_unused]] auto also_ignored = write(g_stop_pipe[1], &byte, 1);
    }
    if (g_wait_active.load()) arm_retrigger();
  }
  errno = saved;
}

void on_alarm(int) {}

class SignalInterrupt final : public Interrupt {
public:
  int fd() const override { return g_stop_pipe[0]; }
  int requested() const override { return g_stop_signal.load(); }
};

SignalInterrupt g_interrupt;

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw resource_error("cannot create a pipe", errno);
}

} // namespace

void Signals::install() {
  // Not std::call_once: it runs its function inside pthread_once, and an
  // exception thrown through that glibc frame needs libgcc_s.so.1 loaded
  // at that moment. With no descriptor left to load it (ulimit -n 5) the
  // process aborted instead of reporting the failed pipe.
  std::lock_guard lock(g_install_mutex);
  if (g_installed) return;
  make_pipe(g_event_pipe);
  try {
    make_pipe(g_stop_pipe);
  } catch (const Error &) {
    close(g_event_pipe[0]);
    close(g_event_pipe[1]);
    g_event_pipe[0] = g_event_pipe[1] = -1;
    throw;
  }
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a blocked flock() or poll() must return EINTR.
  action.sa_flags = 0;
  action.sa_handler = on_signal;
  for (int signo : k_forwarded_signals)
    sigaction(signo, &action, nullptr);
  // Stopped children too (no SA_NOCLDSTOP): `run` follows a job stopped
  // from the terminal (runner/child.hpp follow_job_stop).
  action.sa_flags = 0;
  sigaction(SIGCHLD, &action, nullptr);
  action.sa_flags = 0;
  action.sa_handler = on_alarm;
  sigaction(SIGALRM, &action, nullptr);
  action.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &action, nullptr);
  g_installed = true;
}

int Signals::event_fd() { return g_event_pipe[0]; }

std::vector<int> Signals::drain() {
  std::vector<int> signals;
  unsigned char buffer[64];
  for (;;) {
    ssize_t n = read(g_event_pipe[0], buffer, sizeof buffer);
    if (n > 0) {
      signals.insert(signals.end(), buffer, buffer + n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  return signals;
}

const Interrupt &Signals::interrupt() { return g_interrupt; }

void Signals::clear_stop() {
  unsigned char buffer[16];
  while (read(g_stop_pipe[0], buffer, sizeof buffer) > 0) {
  }
  g_stop_signal.store(0);
}

void Signals::reset_in_child() {
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  action.sa_handler = SIG_DFL;
  for (int signo : k_forwarded_signals)
    sigaction(signo, &action, nullptr);
  sigaction(SIGCHLD, &action, nullptr);
  sigaction(SIGALRM, &action, nullptr);
  sigaction(SIGPIPE, &action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

void Signals::reset_after_fork() {
  for (int *fds : {g_event_pipe, g_stop_pipe}) {
    close(fds[0]);
    close(fds[1]);
    make_pipe(fds);
  }
  g_stop_signal.store(0);
}

BlockingWait::BlockingWait(std::optional<std::chrono::steady_clock::time_point> deadline) : m_deadline(deadline) {
  Signals::install();
  // The timer targets this thread, so it is the blocked call here that
  // returns EINTR, whichever thread the user's signal was delivered to.
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGALRM;
  event._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (timer_create(CLOCK_MONOTONIC, &event, &g_wait_timer) != 0) throw resource_error("cannot create a timer", errno);
  g_wait_active.store(true);
  if (g_stop_signal.load() != 0) {
    arm_retrigger();
  } else if (deadline) {
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(*deadline - std::chrono::steady_clock::now());
    if (left.count() < 1'000'000) left = std::chrono::nanoseconds(1'000'000);
    itimerspec spec{};
    spec.it_value.tv_sec = static_cast<time_t>(left.count() / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(left.count() % 1'000'000'000);
    spec.it_interval.tv_nsec = 1'000'000;
    timer_settime(g_wait_timer, 0, &spec, nullptr);
  }
}

BlockingWait::~BlockingWait() {
  g_wait_active.store(false);
  timer_delete(g_wait_timer);
}

Error resource_error(const std::string &what, int error_number) {
  switch (error_number) {
  case EMFILE:
    return Error(ExitCode::internal, what + ": out of file descriptors (raise ulimit -n)");
  case ENFILE:
    return Error(ExitCode::internal, what + ": the system is out of file descriptors (fs.file-max)");
  case ENOMEM:
    return Error(ExitCode::internal, what + ": out of memory");
  case EAGAIN:
    return Error(ExitCode::internal, what + ": out of processes or kernel memory (ulimit -u)");
  default:
    return Error(ExitCode::internal, errno_message(what, error_number));
  }
}

bool BlockingWait::deadline_passed() const { return m_deadline && std::chrono::steady_clock::now() >= *m_deadline; }

} // namespace dlock
