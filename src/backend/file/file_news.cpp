#include "backend/file/file_news.hpp"

#include "core/log.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <sys/inotify.h>
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

} // namespace dlock::backend::file
