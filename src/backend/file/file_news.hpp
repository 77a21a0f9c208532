#pragma once

#include "core/unique_fd.hpp"

#include <atomic>
#include <map>
#include <string>
#include <sys/types.h>
#include <thread>
#include <utility>
#include <vector>

// News of held lock files, for the file backend's event_fd(): readable
// when a held file loses its name (release --force renames a fresh file
// over it, or someone removes or moves it), so that its holder stops the
// job at once instead of at its next renewal, which for `acquire -t 1d`
// is 8 hours away. One inotify instance; one watch per held file, on its
// inode (reached through the descriptor, as the name may point elsewhere
// already): its link count changing (IN_ATTRIB) or the file moving. The
// holder's own record writes (IN_MODIFY) and other processes opening the
// file are not watched, so the descriptor stays quiet while nothing
// happens. Without inotify (fs.inotify limits reached) the lock works as
// before and a forced release is noticed at the next renewal.
namespace dlock::backend::file {

class FileNews;

// One watch of a held file, removed when it goes: a take that gives up,
// is refused or fails leaves none behind to wake event_fd() for a file
// nobody here holds.
class FileWatch {
public:
  FileWatch() = default;
  FileWatch(FileNews &news, int watch) : m_news(&news), m_watch(watch) {}
  FileWatch(FileWatch &&other) noexcept
      : m_news(std::exchange(other.m_news, nullptr)), m_watch(std::exchange(other.m_watch, -1)) {}
  FileWatch &operator=(FileWatch &&other) noexcept;
  FileWatch(const FileWatch &) = delete;
  FileWatch &operator=(const FileWatch &) = delete;
  ~FileWatch() { reset(); }
  void reset();

private:
  FileNews *m_news = nullptr;
  int m_watch = -1;
};

class FileNews {
public:
  // The watch of the lock file open at `file_fd`; none (said at -v)
  // without inotify. It must not outlive this.
  FileWatch watch(int file_fd, const std::string &path);
  // Removes a watch (FileWatch does) and reads the events pending.
  void unwatch(int watch);
  // Reads every pending event: the renewal that follows checks the file.
  void drain();
  int fd() const { return m_inotify.get(); }

private:
  UniqueFd m_inotify;
  // inotify gives the same watch for every descriptor of one file: it is
  // removed with its last user.
  std::map<int, int> m_users;
};

// News of a semaphore's slot files for the one waiter at the front of its
// queue, which waits in the kernel on one slot file and must hear of a
// release of any other: the kernel reports the close of a slot file's last
// descriptor (IN_CLOSE_WRITE / IN_CLOSE_NOWRITE), which is when a holder
// releases it or dies. A thread reads the events and interrupts the
// creating thread's blocking flock() with SIGALRM (dlock's no-op handler,
// installed here) every millisecond until take_news() says it was heard,
// so that news arriving just before the call blocks is not lost. The other
// waiters block on the queue file and hear nothing: a release wakes one
// process. Without inotify watching() is false and the caller rescans on
// its own.
class SlotNews {
public:
  explicit SlotNews(const std::vector<UniqueFd> &slot_fds);
  ~SlotNews();
  SlotNews(const SlotNews &) = delete;
  SlotNews &operator=(const SlotNews &) = delete;

  bool watching() const { return m_thread.joinable(); }
  // Whether a slot file was closed or changed since the last call.
  bool take_news() { return m_news.exchange(false); }
  // Whether a slot file may have lost its name or changed (release
  // --force removes them, an owner changes a mode): open them again.
  bool stale() const { return m_stale.load(); }

private:
  void run();

  UniqueFd m_inotify;
  UniqueFd m_stop; // an eventfd: readable once the thread must end
  std::atomic<bool> m_news{false};
  std::atomic<bool> m_stale{false};
  pid_t m_pid;
  pid_t m_tid; // the waiting thread
  std::thread m_thread;
};

} // namespace dlock::backend::file
