#include "backend/file/file_backend.hpp"

#include "backend/file/diagnose.hpp"
#include "backend/file/file_news.hpp"
#include "backend/file/holders.hpp"
#include "backend/file/lock_dir.hpp"
#include "backend/file/proc_locks.hpp"
#include "backend/file/record.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace dlock::backend::file {

namespace {

std::int64_t now_unix_ms() { return to_unix_ms(std::chrono::system_clock::now()); }

// Milliseconds since boot, suspend included (CLOCK_BOOTTIME): what the
// record's time of renewal is also kept in, so that status on this host
// counts the time left without the wall clock, which can be stepped.
std::int64_t now_boot_ms() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

std::uint64_t now_unix_us() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// What is left at `now` of a lease of `ttl` (> 0) renewed at `renewed`,
// in 0..ttl whatever the numbers (a record is read, not trusted).
Millis time_left(std::int64_t renewed, std::int64_t ttl, std::int64_t now) {
  if (renewed >= now) return Millis(ttl);
  std::uint64_t ago = static_cast<std::uint64_t>(now) - static_cast<std::uint64_t>(renewed);
  return Millis(ago >= static_cast<std::uint64_t>(ttl) ? 0 : ttl - static_cast<std::int64_t>(ago));
}

bool same_file(const struct stat &a, const struct stat &b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// The user of a process, from the owner of /proc/PID.
std::string user_of(pid_t pid) {
  struct stat info {};
  if (stat(fmt::format("/proc/{}", pid).c_str(), &info) != 0) return {};
  if (info.st_uid == geteuid()) return user_name();
  return fmt::format("uid{}", info.st_uid);
}

class FileBackend final : public TakingBackend {
public:
  explicit FileBackend(const BackendConfig &config) : m_dir(LockDir::open(config.url, config.lock_namespace)) {}

  RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point>) override {
    m_news.drain();
    RenewResult result;
    auto held = m_held.find(lease_key(lease));
    if (held == m_held.end()) {
      result.outcome = RenewOutcome::lost;
      result.reason = "this process does not hold the lock";
      return result;
    }
    auto sent_at = SteadyClock::now();
    if (!still_ours(held->second)) {
      result.outcome = RenewOutcome::lost;
      result.reason =
          fmt::format("lock file {}/{} was replaced (broken with release --force?)", m_dir.path(), held->second.file);
      return result;
    }
    // 0: the lock's own length, the one its record holds (from acquire or
    // the last renewal with a length).
    if (ttl > Millis(0)) held->second.record.ttl_ms = ttl.count();
    ttl = Millis(held->second.record.ttl_ms);
    held->second.record.renewed_ms = now_unix_ms();
    held->second.record.renewed_boot_ms = now_boot_ms();
    // The kernel lock is what counts; a record that could not be updated
    // (a full disk) only shows an older renewal time in status. A reader's
    // renewal writes nothing: the record is the readers' together.
    if (!held->second.shared) write_record(held->second.fd.get(), held->second.record, held->second.file_size);
    result.outcome = RenewOutcome::renewed;
    result.ttl = ttl;
    result.sent_at = sent_at;
    return result;
  }

  ReleaseOutcome release(const Lease &lease) override {
    auto held = m_held.find(lease_key(lease));
    if (held == m_held.end()) return ReleaseOutcome::not_owner;
    bool ours = still_ours(held->second);
    if (ours && held->second.shared) {
      forget_reader(held->second);
    } else if (ours) {
      // Keep the fence counter for the next holder; drop the holder record.
      LockRecord record;
      record.fence = held->second.record.fence;
      write_record(held->second.fd.get(), record, held->second.file_size);
    }
    // The job inherited the descriptor (lifetime_fds): closing ours would
    // leave the lock to any descendant of the job that still has its copy
    // open. Unlocking ends it for every copy of this open file at once.
    if (held->second.slot_fd) flock(held->second.slot_fd.get(), LOCK_UN);
    flock(held->second.fd.get(), LOCK_UN);
    m_held.erase(held);
    return ours ? ReleaseOutcome::released : ReleaseOutcome::not_owner;
  }

  std::vector<int> lifetime_fds(const Lease &lease) const override {
    auto held = m_held.find(lease_key(lease));
    if (held == m_held.end()) return {};
    if (held->second.slot_fd) return {held->second.fd.get(), held->second.slot_fd.get()};
    return {held->second.fd.get()};
  }

  bool lock_follows_job() const override { return true; }

  // News of a held lock file replaced or removed (file_news.hpp).
  int event_fd() const override { return m_held.empty() ? -1 : m_news.fd(); }

  std::optional<LockStatus> force_release(const std::string &name) override {
    LockStatus before = status(name);
    if (!before.held) return std::nullopt;
    std::string file = LockDir::file_name(name);
    std::string what = fmt::format("cannot break lock '{}' in {}", name, m_dir.path());
    // Replace the file with a fresh one carrying the fence on: new takers
    // lock the new file at once, and the old holder's next renewal sees
    // that its file is gone and stops its job.
    LockRecord record;
    record.fence = stored_fence(file);
    std::string temp = fmt::format(".{}.{}", file, random_hex(6));
    int fd =
        openat(m_dir.fd(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, m_dir.lock_file_mode());
    if (fd < 0) throw file_error(what, errno);
    UniqueFd guard(fd);
    std::size_t size = 0;
    if (fchmod(fd, m_dir.lock_file_mode()) != 0 || !write_record(fd, record, size) ||
        renameat(m_dir.fd(), temp.c_str(), m_dir.fd(), file.c_str()) != 0) {
      int err = errno;
      unlinkat(m_dir.fd(), temp.c_str(), 0);
      throw file_error(what, err);
    }
    // A semaphore's slot files go too: new takers lock fresh ones at once
    // instead of waiting for the broken holders' slots.
    for (unsigned slot = 0; slot < before.limit.value_or(0); ++slot)
      unlinkat(m_dir.fd(), slot_file(file, slot).c_str(), 0);
    std::erase_if(m_held, [&](const auto &entry) { return entry.second.file == file; });
    return before;
  }

  LockStatus status(const std::string &name) override { return status_with(name, KernelLocks::read()); }

  LockStatus status_with(const std::string &name, const KernelLocks &kernel_locks) {
    LockStatus status;
    status.name = name;
    const std::string file = LockDir::file_name(name);
    UniqueFd guard(openat(m_dir.fd(), file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    int fd = guard.get();
    struct stat info {};
    bool readable = fd >= 0;
    if (!readable) {
      int err = errno;
      if (err == ENOENT) return status;
      // Another user's lock file, which only they may open: the kernel
      // still says who holds it, without its record.
      if ((err != EACCES && err != EPERM) || fstatat(m_dir.fd(), file.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0)
        throw file_error(fmt::format("cannot read lock '{}' in {}", name, m_dir.path()), err);
    } else if (fstat(fd, &info) != 0) {
      return status;
    }
    if (!S_ISREG(info.st_mode)) return status;
    KernelLockView view = kernel_locks.of(info.st_dev, info.st_ino);
    // The record of a file another user could have written says nothing.
    bool trusted = readable && !m_dir.distrust(info);
    LockRecord record = trusted ? checked_record(fd, file) : LockRecord{};
    if (trusted) status.fence = record.fence;
    status.waiters = static_cast<std::int64_t>(view.waiters);
    status.held = !view.holders.empty();
    if (!status.held) return status;
    status.detail = fmt::format("{}/{}", m_dir.path(), file);
    if (view.shared) {
      status.mode = record.limit > 0 ? HoldMode::semaphore : HoldMode::shared;
      std::set<pid_t> slot_holders;
      if (record.limit > 0) {
        // A semaphore's holders are the processes that hold a slot file.
        // The others that hold the lock file (LOCK_SH) wait for a slot:
        // trying the slots, or in the queue, at its front (holding the
        // queue file) or behind it.
        status.limit = record.limit;
        std::set<pid_t> waiting;
        for (unsigned slot = 0; slot < record.limit; ++slot)
          if (auto slot_view = view_of(slot_file(file, slot), kernel_locks)) {
            slot_holders.insert(slot_view->holders.begin(), slot_view->holders.end());
            waiting.insert(slot_view->waiting.begin(), slot_view->waiting.end());
          }
        if (auto queue = view_of(queue_file(file), kernel_locks)) {
          waiting.insert(queue->holders.begin(), queue->holders.end());
          waiting.insert(queue->waiting.begin(), queue->waiting.end());
        }
        for (pid_t pid : view.holders)
          if (!slot_holders.count(pid)) waiting.insert(pid);
        for (pid_t pid : slot_holders)
          waiting.erase(pid);
        status.waiters = *status.waiters + static_cast<std::int64_t>(waiting.size());
      }
      for (pid_t pid : view.holders) {
        if (record.limit > 0 && !slot_holders.count(pid)) continue;
        auto reader = std::find_if(record.readers.begin(), record.readers.end(),
                                   [&](const ReaderRecord &r) { return r.holder.pid == pid; });
        if (reader != record.readers.end())
          status.holders.push_back({reader->holder, reader->fence, std::nullopt, reader->slot});
        else
          status.holders.push_back({process_holder(pid), std::nullopt, std::nullopt, std::nullopt});
      }
      // Only waiters, for a moment (a holder just left its slot, a taker
      // has not locked one yet): nobody holds it.
      if (record.limit > 0 && status.holders.empty()) status.held = false;
      return status;
    }
    pid_t holder_pid = view.holders.front();
    if (record.holder && record.holder->pid == holder_pid) {
      status.holder = record.holder;
      if (record.ttl_ms > 0) {
        // From the boot clock when the holder is on this host (a file
        // backend's usual case), else from the wall clock; never more
        // than the lease, whatever a clock did.
        bool here = record.renewed_boot_ms > 0 && record.holder->host == host_name();
        status.time_left = here ? time_left(record.renewed_boot_ms, record.ttl_ms, now_boot_ms())
                                : time_left(record.renewed_ms, record.ttl_ms, now_unix_ms());
      }
    } else {
      // A holder whose record is not there or not trusted (a file another
      // user made, a holder that is not dlock): describe the process the
      // kernel names.
      status.holder = process_holder(holder_pid);
      status.fence.reset();
    }
    return status;
  }

  // A semaphore's waiters: the one at the front of its queue file, which
  // holds it, and those blocked on it.
  // The kernel's locks on `file` in the lock directory; nullopt where it
  // is missing, not a regular file or not to be trusted.
  std::optional<KernelLockView> view_of(const std::string &file, const KernelLocks &kernel_locks) const {
    struct stat info {};
    if (fstatat(m_dir.fd(), file.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(info.st_mode) ||
        m_dir.distrust(info))
      return std::nullopt;
    return kernel_locks.of(info.st_dev, info.st_ino);
  }

  static HolderInfo process_holder(pid_t pid) {
    HolderInfo holder;
    holder.host = host_name();
    holder.pid = pid;
    holder.user = user_of(pid);
    holder.command = command_line_of(pid);
    return holder;
  }

  std::vector<LockStatus> list(const std::string &prefix) override {
    std::vector<LockStatus> held;
    int dup_fd = fcntl(m_dir.fd(), F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) throw file_error(fmt::format("cannot list locks in {}", m_dir.path()), errno);
    DIR *dir = fdopendir(dup_fd);
    if (!dir) {
      int err = errno;
      close(dup_fd);
      throw file_error(fmt::format("cannot list locks in {}", m_dir.path()), err);
    }
    auto close_dir = [](DIR *d) { closedir(d); };
    std::unique_ptr<DIR, decltype(close_dir)> guard(dir, close_dir);
    rewinddir(dir);
    KernelLocks kernel_locks = KernelLocks::read();
    while (dirent *entry = readdir(dir)) {
      auto name = LockDir::name_from_file(entry->d_name);
      if (!name || name->compare(0, prefix.size(), prefix) != 0) continue;
      LockStatus status = status_with(*name, kernel_locks);
      if (status.held) held.push_back(std::move(status));
    }
    std::sort(held.begin(), held.end(), [](const auto &a, const auto &b) { return a.name < b.name; });
    return held;
  }

  std::vector<Finding> diagnose(const DiagnoseOptions &) override { return diagnose_lock_dir(m_dir); }

  PingResult ping() override {
    PingResult result;
    NodeHealth node;
    node.address = "file://" + m_dir.path();
    auto start = SteadyClock::now();
    node.reachable = faccessat(m_dir.fd(), ".", W_OK | X_OK, AT_EACCESS) == 0;
    node.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
    if (!node.reachable) node.error = errno_message("directory not writable", errno);
    utsname system{};
    if (uname(&system) == 0) node.version = fmt::format("{} {}", system.sysname, system.release);
    switch (m_dir.kind()) {
    case DirKind::private_dir:
      result.detail = "private directory";
      break;
    case DirKind::sticky_shared:
      result.detail = "shared directory (sticky): each user's lock files are their own";
      break;
    case DirKind::group:
      result.detail = "group directory (setgid): its lock files are shared by the group";
      break;
    }
    result.nodes.push_back(node);
    return result;
  }

private:
  struct Held {
    UniqueFd fd;
    std::string file;
    struct stat identity {};
    LockRecord record;
    std::size_t file_size = 0; // bytes in the file as we last wrote or read it
    FileWatch watch;           // m_news's watch of it
    bool shared = false;       // LOCK_SH: one of the readers in record.readers
    UniqueFd slot_fd;          // a semaphore's: the slot file, LOCK_EX
    std::optional<unsigned> slot;
    struct stat slot_identity {}; // the slot file's, as locked
    FileWatch slot_watch;         // m_news's watch of the slot file
  };

  std::string path_of(const std::string &file) const { return m_dir.path() + "/" + file; }

  // The record of a lock file we trust: a record that is not dlock's is an
  // error, never read as an empty one (that would reset the fence).
  LockRecord checked_record(int fd, const std::string &file, std::size_t *size = nullptr) const {
    auto record = read_record(fd, path_of(file), size);
    if (!record)
      throw ConfigError(fmt::format("lock file {} holds no valid dlock record (something else wrote to it), so its "
                                    "fence cannot be trusted: check it, and remove it while no job holds it",
                                    path_of(file)));
    return *record;
  }

  // The fence counter of a lock file, for force_release to carry on.
  std::uint64_t stored_fence(const std::string &file) const {
    UniqueFd fd(openat(m_dir.fd(), file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    struct stat info {};
    if (!fd || fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || m_dir.distrust(info)) return 0;
    return checked_record(fd.get(), file).fence;
  }

  // Opens (creating if needed) the lock file for writing without following
  // symlinks, and refuses anything another local user could remove,
  // replace or rewrite while it is held (LockDir::distrust): a plain file
  // with one link, owned by us or root (or, in a group directory, by the
  // group), writable by nobody else. A file we cannot write is refused too:
  // a holder that cannot record its fence could see it handed out again.
  UniqueFd open_lock_file(const std::string &file) const {
    constexpr int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    const std::string path = path_of(file);
    for (;;) {
      // O_EXCL first: in a sticky directory the kernel (protected_regular)
      // refuses O_CREAT on another user's file, and such a file must be
      // named for what it is, not reported as "permission denied".
      int fd = openat(m_dir.fd(), file.c_str(), flags | O_CREAT | O_EXCL, m_dir.lock_file_mode());
      bool created = fd >= 0;
      if (fd < 0 && errno == EEXIST) {
        fd = openat(m_dir.fd(), file.c_str(), flags);
        if (fd < 0 && errno == ENOENT) continue; // removed in between: create it
      }
      if (fd < 0) {
        int err = errno;
        if (err == ELOOP) throw ConfigError(fmt::format("lock file {} is a symlink: refusing to use it", path));
        struct stat info {};
        if ((err == EACCES || err == EPERM) && fstatat(m_dir.fd(), file.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0) {
          if (auto why = m_dir.distrust(info)) throw unsafe_file(path, *why);
          throw Error(ExitCode::auth,
                      fmt::format("lock file {} is not writable by you ({}), so dlock cannot record its fence; to "
                                  "share a lock between users use a group directory (see FILE BACKEND in dlock(1))",
                                  path, describe_owner(info)));
        }
        throw file_error(fmt::format("cannot open lock file {}", path), err);
      }
      UniqueFd guard(fd);
      struct stat info {};
      if (fstat(fd, &info) != 0) throw file_error(fmt::format("cannot inspect lock file {}", path), errno);
      if (!S_ISREG(info.st_mode) || info.st_nlink != 1)
        throw ConfigError(fmt::format("lock file {} is unsafe: not a plain file with one link", path));
      if (auto why = m_dir.distrust(info)) throw unsafe_file(path, *why);
      // open honours the umask: give what we made the mode we meant. A
      // file of ours that others may open (0644, as dlock made them before
      // 2026-12, or by touch(1)) is closed to them: they could flock it. In
      // a group directory a file of ours that the group cannot write (made
      // for a flock(1) script, say) is opened up to the group.
      mode_t mode = info.st_mode & 0777, fixed = mode;
      if (created) {
        fixed = m_dir.lock_file_mode();
      } else if (info.st_uid == geteuid()) {
        fixed &= m_dir.kind() == DirKind::group ? 0770 : 0700;
        if (m_dir.kind() == DirKind::group) fixed |= 0660;
      }
      if ((created || fixed != mode) && fchmod(fd, fixed) != 0)
        throw file_error(fmt::format("cannot set the mode of lock file {}", path), errno);
      return guard;
    }
  }

  static ConfigError unsafe_file(const std::string &path, const std::string &why) {
    return ConfigError(fmt::format("lock file {} is unsafe: {}, so another user could remove or rewrite it while it "
                                   "is held; remove it once no job uses it",
                                   path, why));
  }

  // Whether the file we hold is still the one linked at its name: not
  // removed, renamed or replaced (release --force).
  // A semaphore's slot file is checked the same way: a slot file removed
  // under its holder lets a newcomer make and lock a new one, a second
  // holder of that slot.
  bool still_ours(const Held &held) const {
    if (!linked(held.fd.get(), held.file, held.identity)) return false;
    return !held.slot || linked(held.slot_fd.get(), slot_file(held.file, *held.slot), held.slot_identity);
  }

  // Whether the file open at `fd` (whose identity was `identity`) is still
  // the one linked at `name` in the lock directory.
  bool linked(int fd, const std::string &name, const struct stat &identity) const {
    struct stat mine {};
    struct stat now {};
    if (fstat(fd, &mine) != 0 || mine.st_nlink == 0 || !same_file(mine, identity)) return false;
    if (fstatat(m_dir.fd(), name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) return false;
    return same_file(now, identity);
  }

  AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                     const Interrupt *interrupt) override {
    try {
      return take_file(request, wait, deadline, interrupt);
    } catch (const RecordWaitInterrupted &stop) {
      return {AcquireOutcome::interrupted, std::nullopt, stop.signo};
    }
  }

  AcquireResult take_file(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                          const Interrupt *interrupt) {
    // Readers and a semaphore's holders take LOCK_SH on the same file, as
    // flock -s does: they exclude and are excluded by LOCK_EX holders
    // (dlock's and flock -x's). A semaphore's holders each hold one of its
    // slot files too (take_slot).
    const bool shared = request.mode != HoldMode::exclusive;
    const int kind = shared ? LOCK_SH : LOCK_EX;
    const std::string file = LockDir::file_name(request.name);
    for (;;) {
      UniqueFd fd = open_lock_file(file);
      auto sent_at = SteadyClock::now();
      if (flock(fd.get(), kind | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) throw file_error(fmt::format("cannot lock {}", path_of(file)), errno);
        refuse_other_kind(request, fd.get(), file);
        if (!wait) return {AcquireOutcome::busy, std::nullopt, 0};
        BlockingWait blocking(deadline);
        for (;;) {
          if (int signo = interrupt ? interrupt->requested() : 0)
            return {AcquireOutcome::interrupted, std::nullopt, signo};
          if (blocking.deadline_passed()) return {AcquireOutcome::busy, std::nullopt, 0};
          if (flock(fd.get(), kind) == 0) {
            // A kernel lock does not run out: the lease starts when it was
            // granted, not when the wait for it began.
            sent_at = SteadyClock::now();
            break;
          }
          if (errno != EINTR) throw file_error(fmt::format("cannot lock {}", path_of(file)), errno);
        }
      }
      Held held{std::move(fd), file, {}, {}, 0, {}, shared, {}, std::nullopt, {}, {}};
      if (fstat(held.fd.get(), &held.identity) != 0)
        throw file_error(fmt::format("cannot inspect lock file {}", path_of(file)), errno);
      // Watched before the check below, so that a replacement right after
      // the check is news, not missed until the next renewal.
      held.watch = m_news.watch(held.fd.get(), path_of(file));
      // A file removed, renamed or replaced between our open and our lock
      // (force release, or its owner) is no lock at all: whoever opens the
      // name now gets another file. Start over on the current one.
      if (!still_ours(held)) continue;
      if (request.mode == HoldMode::semaphore) {
        if (auto taken = take_slot(request, std::move(held), wait, deadline, interrupt)) return *taken;
        continue; // the lock file or the slot file was replaced meanwhile: start over on the current ones
      }
      if (!shared) return {AcquireOutcome::acquired, record_holder(request, std::move(held), sent_at), 0};
      RecordLock serial(held.fd.get(), path_of(held.file));
      LockRecord record = live_record(request, held);
      return {AcquireOutcome::acquired,
              record_reader(request, std::move(held), std::move(record), std::nullopt, sent_at), 0};
    }
  }

  // Holding LOCK_SH on the lock file, takes one of the N slot files with
  // LOCK_EX: each tried without blocking from a random start, then, with
  // --wait, in the queue of wait_for_slot (holders.hpp). The record (and
  // /proc/locks) is read once when a slot is free at once: the refusal of
  // another kind of holder and the record of the slot come from the same
  // reading. After a wait it is read again, as another kind of holder may
  // have come meanwhile.
  // nullopt: the lock file or the slot file taken was replaced or removed
  // meanwhile (release --force, a hand), so the caller starts over.
  std::optional<AcquireResult> take_slot(const LockRequest &request, Held held, bool wait,
                                         std::optional<SteadyClock::time_point> deadline, const Interrupt *interrupt) {
    const unsigned n = request.limit;
    OpenFile open = [this](const std::string &file) { return open_lock_file(file); };
    {
      RecordLock serial(held.fd.get(), path_of(held.file));
      LockRecord record = live_record(request, held);
      if (auto free = free_slot(open, m_dir.path(), held.file, n)) {
        if (!hold_slot(held, std::move(free->fd), free->slot)) return std::nullopt;
        return AcquireResult{AcquireOutcome::acquired, record_slot(request, std::move(held), std::move(record)), 0};
      }
    }
    if (!wait) return AcquireResult{AcquireOutcome::busy, std::nullopt, 0};
    SlotWait waited = wait_for_slot(open, m_dir.path(), held.file, n, deadline, interrupt);
    if (waited.signo != 0) return AcquireResult{AcquireOutcome::interrupted, std::nullopt, waited.signo};
    if (!waited.taken) return AcquireResult{AcquireOutcome::busy, std::nullopt, 0};
    if (!hold_slot(held, std::move(waited.taken->fd), waited.taken->slot)) return std::nullopt;
    RecordLock serial(held.fd.get(), path_of(held.file));
    LockRecord record = live_record(request, held);
    return AcquireResult{AcquireOutcome::acquired, record_slot(request, std::move(held), std::move(record)), 0};
  }

  // Keeps the slot file locked at `slot_fd` in `held`, watched, and says
  // whether it and the lock file are still the ones linked at their names.
  bool hold_slot(Held &held, UniqueFd slot_fd, unsigned slot) {
    const std::string name = slot_file(held.file, slot);
    if (fstat(slot_fd.get(), &held.slot_identity) != 0)
      throw file_error(fmt::format("cannot inspect slot file {}", path_of(name)), errno);
    held.slot_fd = std::move(slot_fd);
    held.slot = slot;
    held.slot_watch = m_news.watch(held.slot_fd.get(), path_of(name));
    return still_ours(held);
  }

  // `held` stays the caller's until the lease is made, so that a failure
  // leaves it, and its watch, to be dropped after the record lock.
  Lease record_slot(const LockRequest &request, Held &&held, LockRecord record) {
    unsigned slot = *held.slot;
    Lease lease = record_reader(request, std::move(held), std::move(record), slot, SteadyClock::now());
    lease.limit = request.limit;
    lease.slot = slot;
    return lease;
  }

  void refuse_mixed(const LockRequest &request, const LockRecord &record, const std::string &file) const {
    if (auto why = mixed_refusal(request, record, path_of(file))) throw ConfigError(*why);
  }

  // On a busy lock file: refuses a request of another kind than its live
  // holders' (an exclusive request on a semaphore, say), so that the
  // mistake is named instead of waited on.
  void refuse_other_kind(const LockRequest &request, int fd, const std::string &file) const {
    struct stat info {};
    if (fstat(fd, &info) != 0 || m_dir.distrust(info)) return;
    auto record = read_record(fd, path_of(file));
    if (!record) return;
    prune_readers(*record, info);
    if (auto why = semaphore_refusal(request, *record)) throw ConfigError(*why);
  }

  // The fence after `previous`: the larger of the stored counter + 1 and
  // the wall clock in microseconds, so it keeps growing even if the
  // directory is wiped (a tmpfs at reboot). Only when the counter is ahead
  // of the clock does its durability matter: `must_sync` says so.
  std::uint64_t next_fence(const LockRecord &previous, const std::string &file, bool &must_sync) const {
    if (previous.fence == std::numeric_limits<std::uint64_t>::max())
      throw ConfigError(fmt::format("lock file {} holds fence {}, the largest there is, so no greater one can be "
                                    "handed out: check who wrote it",
                                    path_of(file), previous.fence));
    std::uint64_t fence = previous.fence + 1;
    std::uint64_t clock = now_unix_us();
    must_sync = fence >= clock;
    return std::max(fence, clock);
  }

  Lease lease_for(const LockRequest &request, Held held, std::uint64_t fence, SteadyClock::time_point sent_at) {
    Lease lease;
    lease.name = request.name;
    lease.token = random_hex(16);
    lease.fence = fence;
    lease.ttl = request.ttl;
    lease.confirmed_at = sent_at;
    lease.mode = request.mode;
    m_held.emplace(lease_key(lease), std::move(held));
    return lease;
  }

  // The record of the lock file `held`, read under its record lock (the
  // caller's): readers the kernel no longer names (killed ones) dropped, a
  // request of another kind than the live holders' refused.
  LockRecord live_record(const LockRequest &request, Held &held) const {
    LockRecord record = checked_record(held.fd.get(), held.file, &held.file_size);
    prune_readers(record, held.identity);
    refuse_mixed(request, record, held.file);
    return record;
  }

  // A reader joins `record` (from live_record(), its record lock still
  // held) with a fence of its own.
  Lease record_reader(const LockRequest &request, Held &&held, LockRecord record, std::optional<unsigned> slot,
                      SteadyClock::time_point sent_at) {
    bool must_sync = false;
    std::uint64_t fence = next_fence(record, held.file, must_sync);
    if (record.readers.size() >= max_recorded_readers) record.readers.erase(record.readers.begin());
    record.readers.push_back({request.holder, fence, slot});
    record.limit = request.mode == HoldMode::semaphore ? request.limit : 0;
    record.fence = fence;
    record.holder.reset(); // a killed writer's, if any: no writer holds it now
    if (!write_record(held.fd.get(), record, held.file_size) || (must_sync && fdatasync(held.fd.get()) != 0))
      throw file_error(fmt::format("cannot write lock file {}", path_of(held.file)), errno);
    held.record.fence = fence;
    held.record.holder = request.holder;
    held.record.ttl_ms = request.ttl.count();
    return lease_for(request, std::move(held), fence, sent_at);
  }

  // A leaving reader takes itself out of the record (the kernel lock is
  // what counts: a record that cannot be updated only shows it longer).
  void forget_reader(Held &held) {
    try {
      RecordLock serial(held.fd.get(), path_of(held.file), false);
      auto record = read_record(held.fd.get(), path_of(held.file), &held.file_size);
      if (!record) return;
      std::erase_if(record->readers, [&](const ReaderRecord &reader) {
        return reader.fence == held.record.fence && held.record.holder && reader.holder.pid == held.record.holder->pid;
      });
      write_record(held.fd.get(), *record, held.file_size);
    } catch (const Error &) {
    }
  }

  Lease record_holder(const LockRequest &request, Held held, SteadyClock::time_point sent_at) {
    const std::string path = path_of(held.file);
    LockRecord previous = checked_record(held.fd.get(), held.file, &held.file_size);
    bool must_sync = false;
    std::uint64_t fence = next_fence(previous, held.file, must_sync);
    held.record.fence = fence;
    held.record.holder = request.holder;
    held.record.ttl_ms = request.ttl.count();
    held.record.renewed_ms = now_unix_ms();
    held.record.renewed_boot_ms = now_boot_ms();
    // A fence that is not stored could be handed out again: no lock then.
    if (!write_record(held.fd.get(), held.record, held.file_size) || (must_sync && fdatasync(held.fd.get()) != 0))
      throw file_error(fmt::format("cannot write lock file {}", path), errno);
    return lease_for(request, std::move(held), fence, sent_at);
  }

  LockDir m_dir;
  FileNews m_news;                 // event_fd(); outlives the watches of m_held
  std::map<LeaseKey, Held> m_held; // by name and release token
};

} // namespace

std::unique_ptr<Backend> create_file_backend(const BackendConfig &config) {
  return std::make_unique<FileBackend>(config);
}

} // namespace dlock::backend::file
