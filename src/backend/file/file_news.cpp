#include "backend/file/file_news.hpp"

#include "core/log.hpp"
#include "core/signals.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <poll.h>
#include <pthread.h>
#include <string>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <system_error>
#include <unistd.h>

namespace dlock::backend::file {

FileWatch &FileWatch::operator=(FileWatch &&other) noexcept {
  if (this != &other) {
    reset();
    m_news = std::exchange(other.m_news, nullptr);
    m_watch = std::exchange(other.m_watch, -1);
  }
  return *this;
}

void FileWatch::reset() {
  if (m_news) m_news->unwatch(m_watch);
  m_news = nullptr;
  m_watch = -1;
}

FileWatch FileNews::watch(int file_fd, const std::string &path) {
  if (!m_inotify) {
    m_inotify.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!m_inotify) {
      detail(1, "no inotify instance ({}): a forced release of {} is noticed at the next renewal", std::strerror(errno),
             path);
      return {};
    }
  }
  std::string self = fmt::format("/proc/self/fd/{}", file_fd);
  int watch = inotify_add_watch(m_inotify.get(), self.c_str(), IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF);
  if (watch < 0)
    detail(1, "cannot watch {} ({}): a forced release is noticed at the next renewal", path, std::strerror(errno));
  else
    ++m_users[watch];
  return {*this, watch};
}

void FileNews::unwatch(int watch) {
  if (auto users = m_users.find(watch); users != m_users.end() && --users->second == 0) {
    m_users.erase(users);
    inotify_rm_watch(m_inotify.get(), watch);
  }
  drain();
}

void FileNews::drain() {
  if (!m_inotify) return;
  alignas(inotify_event) char buffer[4096];
  while (read(m_inotify.get(), buffer, sizeof buffer) > 0) {
  }
}

SlotNews::SlotNews(const std::vector<UniqueFd> &slot_fds)
    : m_pid(getpid()), m_tid(static_cast<pid_t>(syscall(SYS_gettid))) {
  Signals::install(); // SIGALRM must be caught, not kill the process
  m_inotify.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  m_stop.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!m_inotify || !m_stop) {
    detail(1, "no inotify instance ({}): a waiter for a semaphore's slot rescans its slots instead",
           std::strerror(errno));
    return;
  }
  for (const UniqueFd &fd : slot_fds) {
    std::string self = fmt::format("/proc/self/fd/{}", fd.get());
    if (inotify_add_watch(m_inotify.get(), self.c_str(),
                          IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF) < 0) {
      detail(1, "cannot watch a semaphore's slot files ({}): its waiter rescans them instead", std::strerror(errno));
      return;
    }
  }
  // The thread takes no signal: the user's go to the waiting thread,
  // whose wait they end.
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  try {
    m_thread = std::thread([this] { run(); });
  } catch (const std::system_error &) {
    detail(1, "cannot start a thread: a waiter for a semaphore's slot rescans its slots instead");
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

SlotNews::~SlotNews() {
  if (!m_thread.joinable()) return;
  std::uint64_t one = 1;
  [[maybe_unused]] auto ignored = write(m_stop.get(), &one, sizeof one);
  m_thread.join();
}

void SlotNews::run() {
  alignas(inotify_event) char buffer[4096];
  for (;;) {
    pollfd fds[2] = {{m_inotify.get(), POLLIN, 0}, {m_stop.get(), POLLIN, 0}};
    // Unheard news is told again every millisecond.
    int ready = poll(fds, 2, m_news.load() ? 1 : -1);
    if (ready < 0 && errno != EINTR) return; // the waiter's rescans go on
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      ssize_t got = read(m_inotify.get(), buffer, sizeof buffer);
      for (ssize_t at = 0; got > 0 && at < got;) {
        const auto *event = reinterpret_cast<const inotify_event *>(buffer + at);
        if ((event->mask & (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)) == 0) m_stale.store(true);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
      if (got > 0) m_news.store(true);
    }
    if (m_news.load()) syscall(SYS_tgkill, m_pid, m_tid, SIGALRM);
  }
}

} // namespace dlock::backend::file
