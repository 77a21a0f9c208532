#include "backend/file/holders.hpp"

#include "backend/file/file_news.hpp"
#include "backend/file/lock_dir.hpp"
#include "backend/file/proc_locks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <random>
#include <sys/file.h>

namespace dlock::backend::file {

RecordLock::RecordLock(int fd, const std::string &path, bool stop_on_signal) : m_fd(fd) {
  struct flock range {};
  range.l_type = F_WRLCK;
  range.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_SETLK, &range) == 0) return; // the usual case: free, no timer needed
  if (errno != EAGAIN && errno != EACCES && errno != EINTR)
    throw file_error(fmt::format("cannot lock the record of {}", path), errno);
  BlockingWait blocking(SteadyClock::now() + k_record_patience);
  for (;;) {
    if (fcntl(fd, F_OFD_SETLKW, &range) == 0) return;
    if (errno != EINTR) throw file_error(fmt::format("cannot lock the record of {}", path), errno);
    if (int signo = Signals::interrupt().requested(); signo != 0 && stop_on_signal) throw RecordWaitInterrupted{signo};
    if (blocking.deadline_passed())
      throw AnsweredError(fmt::format("the record of {} stayed locked for {} s by a process that is not a dlock "
                                      "holder (a POSIX or OFD lock: see /proc/locks)",
                                      path, k_record_patience.count()));
  }
}

RecordLock::~RecordLock() {
  struct flock range {};
  range.l_type = F_UNLCK;
  range.l_whence = SEEK_SET;
  fcntl(m_fd, F_OFD_SETLK, &range);
}

void prune_readers(LockRecord &record, const struct stat &identity) {
  std::vector<pid_t> live = KernelLocks::read().of(identity.st_dev, identity.st_ino).holders;
  std::erase_if(record.readers, [&](const ReaderRecord &reader) {
    return std::find(live.begin(), live.end(), reader.holder.pid) == live.end();
  });
  if (record.readers.empty()) record.limit = 0;
}

std::optional<std::string> mixed_refusal(const LockRequest &request, const LockRecord &record,
                                         const std::string &path) {
  if (record.readers.empty()) return std::nullopt;
  bool semaphore = record.limit > 0;
  std::string held_as = semaphore ? fmt::format("a semaphore of {} (--limit {})", record.limit, record.limit)
                                  : "a shared lock (--shared)";
  bool same = request.mode == HoldMode::semaphore ? semaphore && record.limit == request.limit
                                                  : request.mode == HoldMode::shared && !semaphore;
  if (same) return std::nullopt;
  return fmt::format("lock '{}' is held as {} by {} holder{} (pid {} first): take it the same way, or use another "
                     "name (lock file {})",
                     request.name, held_as, record.readers.size(), record.readers.size() == 1 ? "" : "s",
                     record.readers.front().holder.pid, path);
}

std::optional<std::string> semaphore_refusal(const LockRequest &request, const LockRecord &record) {
  if (request.mode != HoldMode::exclusive || record.limit == 0 || record.readers.empty()) return std::nullopt;
  return fmt::format("lock '{}' is held as a semaphore of {} (--limit {}) by {} holder{}: take it with --limit {}, "
                     "or use another name",
                     request.name, record.limit, record.limit, record.readers.size(),
                     record.readers.size() == 1 ? "" : "s", record.limit);
}

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

unsigned random_below(unsigned n) {
  thread_local std::mt19937 random{std::random_device{}()};
  return std::uniform_int_distribution<unsigned>(0, n - 1)(random);
}

std::string stem_of(const std::string &file) { return file.substr(0, file.size() - LockDir::file_name("").size()); }

// The first of `fds` that LOCK_EX | LOCK_NB takes, from a random start.
std::optional<TakenSlot> try_slots(std::vector<UniqueFd> &fds, const std::string &dir, const std::string &file) {
  const auto n = static_cast<unsigned>(fds.size());
  unsigned start = random_below(n);
  for (unsigned i = 0; i < n; ++i) {
    unsigned slot = (start + i) % n;
    if (flock(fds[slot].get(), LOCK_EX | LOCK_NB) == 0) return TakenSlot{std::move(fds[slot]), slot};
    if (errno != EWOULDBLOCK) throw file_error(fmt::format("cannot lock {}/{}", dir, slot_file(file, slot)), errno);
  }
  return std::nullopt;
}

// Blocks in LOCK_EX on `fd` until granted, the deadline or a signal.
// false: not granted (the caller looks at why).
bool block_on(int fd, std::optional<SteadyTime> until, const std::string &path) {
  BlockingWait blocking(until);
  if (flock(fd, LOCK_EX) == 0) return true;
  if (errno != EINTR) throw file_error(fmt::format("cannot lock {}", path), errno);
  return false;
}

} // namespace

std::string slot_file(const std::string &file, unsigned slot) { return fmt::format("{}.slot{}", stem_of(file), slot); }

std::string queue_file(const std::string &file) { return stem_of(file) + ".queue"; }

std::optional<TakenSlot> free_slot(const OpenFile &open, const std::string &dir, const std::string &file, unsigned n) {
  unsigned start = random_below(n);
  for (unsigned i = 0; i < n; ++i) {
    unsigned slot = (start + i) % n;
    UniqueFd fd = open(slot_file(file, slot));
    if (flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return TakenSlot{std::move(fd), slot};
    if (errno != EWOULDBLOCK) throw file_error(fmt::format("cannot lock {}/{}", dir, slot_file(file, slot)), errno);
  }
  return std::nullopt;
}

SlotWait wait_for_slot(const OpenFile &open, const std::string &dir, const std::string &file, unsigned n,
                       std::optional<SteadyTime> deadline, const Interrupt *interrupt) {
  auto stopped = [&]() -> std::optional<SlotWait> {
    if (int signo = interrupt ? interrupt->requested() : 0) return SlotWait{std::nullopt, signo};
    if (deadline && std::chrono::steady_clock::now() >= *deadline) return SlotWait{};
    return std::nullopt;
  };
  UniqueFd queue = open(queue_file(file));
  while (!block_on(queue.get(), deadline, fmt::format("{}/{}", dir, queue_file(file))))
    if (auto stop = stopped()) return std::move(*stop);
  for (;;) {
    std::vector<UniqueFd> fds;
    fds.reserve(n);
    for (unsigned slot = 0; slot < n; ++slot)
      fds.push_back(open(slot_file(file, slot)));
    SlotNews news(fds);
    // Watched before the scan below: a release after it is news. With
    // news, a retry every 1-2 s catches a release the kernel does not
    // report. Without (no inotify instance left: each holder keeps one
    // for its own news, and fs.inotify.max_user_instances, 128 by
    // default, is reached by that many holders), the front waiter alone
    // tries its open slot files every 10-20 ms and opens them again
    // every 1-2 s.
    const bool watching = news.watching();
    auto jitter = [](unsigned low) { return std::chrono::milliseconds(low + random_below(low + 1)); };
    auto now = std::chrono::steady_clock::now();
    auto reopen_at = now + jitter(1000);
    auto rescan_at = now + (watching ? jitter(1000) : jitter(10));
    for (;;) {
      news.take_news();
      if (auto taken = try_slots(fds, dir, file)) return {std::move(taken), 0};
      if (auto stop = stopped()) return std::move(*stop);
      now = std::chrono::steady_clock::now();
      if (news.stale() || (!watching && now >= reopen_at)) break;
      if (now >= rescan_at) rescan_at = now + (watching ? jitter(1000) : jitter(10));
      unsigned slot = random_below(n);
      if (block_on(fds[slot].get(), deadline ? std::min(*deadline, rescan_at) : rescan_at,
                   fmt::format("{}/{}", dir, slot_file(file, slot))))
        return {TakenSlot{std::move(fds[slot]), slot}, 0};
    }
  }
}

} // namespace dlock::backend::file
