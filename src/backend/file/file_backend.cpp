#include "backend/file/file_backend.hpp"

#include "backend/file/lock_dir.hpp"
#include "backend/file/proc_locks.hpp"
#include "backend/file/record.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace dlock::backend::file {

namespace {

std::int64_t now_unix_ms() { return to_unix_ms(std::chrono::system_clock::now()); }

std::uint64_t now_unix_us() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
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
    RenewResult result;
    auto held = m_held.find(lease.token);
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
    held->second.record.ttl_ms = ttl.count();
    held->second.record.renewed_ms = now_unix_ms();
    write_record(held->second.fd.get(), held->second.record, held->second.file_size);
    result.outcome = RenewOutcome::renewed;
    result.ttl = ttl;
    result.sent_at = sent_at;
    return result;
  }

  ReleaseOutcome release(const Lease &lease) override {
    auto held = m_held.find(lease.token);
    if (held == m_held.end()) return ReleaseOutcome::not_owner;
    bool ours = still_ours(held->second);
    if (ours) {
      // Keep the fence counter for the next holder; drop the holder record.
      LockRecord record;
      record.fence = held->second.record.fence;
      write_record(held->second.fd.get(), record, held->second.file_size);
    }
    // The job inherited the descriptor (lifetime_fds): closing ours would
    // leave the lock to any descendant of the job that still has its copy
    // open. Unlocking ends it for every copy of this open file at once.
    flock(held->second.fd.get(), LOCK_UN);
    m_held.erase(held);
    return ours ? ReleaseOutcome::released : ReleaseOutcome::not_owner;
  }

  std::vector<int> lifetime_fds(const Lease &lease) const override {
    auto held = m_held.find(lease.token);
    if (held == m_held.end()) return {};
    return {held->second.fd.get()};
  }

  bool lock_follows_job() const override { return true; }

  std::optional<LockStatus> force_release(const std::string &name) override {
    LockStatus before = status(name);
    if (!before.held) return std::nullopt;
    std::string file = LockDir::file_name(name);
    // Replace the file with a fresh one carrying the fence on: new takers
    // lock the new file at once, and the old holder's next renewal sees
    // that its file is gone and stops its job.
    std::string temp = fmt::format(".{}.{}", file, random_hex(6));
    int fd = openat(m_dir.fd(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, lock_file_mode());
    if (fd < 0) throw permission_or_io(fmt::format("cannot break lock '{}' in {}", name, m_dir.path()), errno);
    UniqueFd guard(fd);
    if (m_dir.shared()) fchmod(fd, 0666);
    LockRecord record;
    record.fence = before.fence.value_or(0);
    std::size_t size = 0;
    write_record(fd, record, size);
    if (renameat(m_dir.fd(), temp.c_str(), m_dir.fd(), file.c_str()) != 0) {
      int err = errno;
      unlinkat(m_dir.fd(), temp.c_str(), 0);
      throw permission_or_io(fmt::format("cannot break lock '{}' in {}", name, m_dir.path()), err);
    }
    std::erase_if(m_held, [&](const auto &entry) { return entry.second.file == file; });
    return before;
  }

  LockStatus status(const std::string &name) override { return status_with(name, KernelLocks::read()); }

  LockStatus status_with(const std::string &name, const KernelLocks &kernel_locks) {
    LockStatus status;
    status.name = name;
    int fd =
        openat(m_dir.fd(), LockDir::file_name(name).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      if (errno == ENOENT) return status;
      throw permission_or_io(fmt::format("cannot read lock '{}' in {}", name, m_dir.path()), errno);
    }
    UniqueFd guard(fd);
    struct stat info {};
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) return status;
    KernelLockView view = kernel_locks.of(info.st_dev, info.st_ino);
    LockRecord record = read_record(fd);
    status.fence = record.fence;
    status.waiters = static_cast<std::int64_t>(view.waiters);
    status.held = !view.holders.empty();
    if (!status.held) return status;
    pid_t holder_pid = view.holders.front();
    if (record.holder && record.holder->pid == holder_pid) {
      status.holder = record.holder;
      if (record.ttl_ms > 0)
        status.time_left = Millis(std::max<std::int64_t>(0, record.renewed_ms + record.ttl_ms - now_unix_ms()));
    } else {
      // A holder that could not write the record (a read-only file of
      // another user): describe the process the kernel names.
      HolderInfo holder;
      holder.host = host_name();
      holder.pid = holder_pid;
      holder.user = user_of(holder_pid);
      holder.command = command_line_of(holder_pid);
      status.holder = holder;
      status.fence.reset();
    }
    status.detail = fmt::format("{}/{}", m_dir.path(), LockDir::file_name(name));
    return status;
  }

  std::vector<LockStatus> list(const std::string &prefix) override {
    std::vector<LockStatus> held;
    int dup_fd = fcntl(m_dir.fd(), F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) throw Error(ExitCode::internal, errno_message("cannot list locks", errno));
    DIR *dir = fdopendir(dup_fd);
    if (!dir) {
      close(dup_fd);
      throw Error(ExitCode::internal, errno_message("cannot list locks", errno));
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
    result.detail = m_dir.shared() ? "shared directory (sticky, world-writable)" : "private directory";
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
  };

  mode_t lock_file_mode() const { return m_dir.shared() ? 0666 : 0644; }

  static Error permission_or_io(const std::string &what, int err) {
    if (err == EACCES || err == EPERM) return Error(ExitCode::auth, errno_message(what, err));
    return Error(ExitCode::unavailable, errno_message(what, err));
  }

  // Opens (creating if needed) the lock file without following symlinks,
  // refusing anything but a plain file with a single link, so nobody can
  // point dlock at a file of theirs to overwrite.
  UniqueFd open_lock_file(const std::string &name, const std::string &file, bool &writable) const {
    constexpr int base = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    int fd = openat(m_dir.fd(), file.c_str(), O_RDWR | O_CREAT | base, lock_file_mode());
    writable = fd >= 0;
    if (fd < 0 && errno == EACCES) fd = openat(m_dir.fd(), file.c_str(), O_RDONLY | base);
    if (fd < 0) {
      if (errno == ELOOP)
        throw ConfigError(fmt::format("lock file {}/{} is a symlink: refusing to use it", m_dir.path(), file));
      throw permission_or_io(fmt::format("cannot open lock file for '{}' in {}", name, m_dir.path()), errno);
    }
    UniqueFd guard(fd);
    struct stat info {};
    if (fstat(fd, &info) != 0) throw permission_or_io("cannot inspect lock file", errno);
    if (!S_ISREG(info.st_mode) || info.st_nlink != 1)
      throw ConfigError(fmt::format("lock file {}/{} is unsafe: not a plain file with one link", m_dir.path(), file));
    if (writable && m_dir.shared() && info.st_uid == geteuid() && (info.st_mode & 0777) != 0666) fchmod(fd, 0666);
    return guard;
  }

  bool still_ours(const Held &held) const {
    struct stat now {};
    if (fstatat(m_dir.fd(), held.file.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) return false;
    return same_file(now, held.identity);
  }

  AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                     const Interrupt *interrupt) override {
    const std::string file = LockDir::file_name(request.name);
    for (;;) {
      bool writable = false;
      UniqueFd fd = open_lock_file(request.name, file, writable);
      auto sent_at = SteadyClock::now();
      if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) throw permission_or_io("cannot lock", errno);
        if (!wait) return {AcquireOutcome::busy, std::nullopt, 0};
        BlockingWait blocking(deadline);
        for (;;) {
          if (int signo = interrupt ? interrupt->requested() : 0)
            return {AcquireOutcome::interrupted, std::nullopt, signo};
          if (blocking.deadline_passed()) return {AcquireOutcome::busy, std::nullopt, 0};
          if (flock(fd.get(), LOCK_EX) == 0) {
            // A kernel lock does not run out: the lease starts when it was
            // granted, not when the wait for it began.
            sent_at = SteadyClock::now();
            break;
          }
          if (errno != EINTR) throw permission_or_io("cannot lock", errno);
        }
      }
      Held held{std::move(fd), file, {}, {}, 0};
      fstat(held.fd.get(), &held.identity);
      // A file replaced between our open and our lock (force release) is
      // no lock at all: start over on the current one.
      if (!still_ours(held)) continue;
      return {AcquireOutcome::acquired, record_holder(request, std::move(held), writable, sent_at), 0};
    }
  }

  Lease record_holder(const LockRequest &request, Held held, bool writable, SteadyClock::time_point sent_at) {
    LockRecord previous = read_record(held.fd.get(), &held.file_size);
    // The fence is the larger of the stored counter + 1 and the wall clock in
    // microseconds, so it keeps growing even if the directory is wiped (a
    // tmpfs at reboot). Only when the counter is ahead of the clock does its
    // durability matter, so only then is it synced.
    std::uint64_t fence = previous.fence + 1;
    std::uint64_t clock = now_unix_us();
    bool must_sync = fence >= clock;
    fence = std::max(fence, clock);
    held.record.fence = fence;
    held.record.holder = request.holder;
    held.record.ttl_ms = request.ttl.count();
    held.record.renewed_ms = now_unix_ms();
    if (writable) {
      if (!write_record(held.fd.get(), held.record, held.file_size))
        throw Error(ExitCode::unavailable,
                    errno_message(fmt::format("cannot write lock file in {}", m_dir.path()), errno));
      if (must_sync) fdatasync(held.fd.get());
    }
    Lease lease;
    lease.name = request.name;
    lease.token = random_hex(16);
    lease.fence = fence;
    lease.ttl = request.ttl;
    lease.confirmed_at = sent_at;
    m_held.emplace(lease.token, std::move(held));
    return lease;
  }

  LockDir m_dir;
  std::map<std::string, Held> m_held; // by release token
};

} // namespace

std::unique_ptr<Backend> create_file_backend(const BackendConfig &config) {
  return std::make_unique<FileBackend>(config);
}

} // namespace dlock::backend::file
