#include "backend/file/lock_dir.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dlock::backend::file {

namespace {

constexpr std::string_view k_suffix = ".lock";

bool writable_by_others(const struct stat &info) { return (info.st_mode & (S_IWGRP | S_IWOTH)) != 0; }
bool sticky(const struct stat &info) { return (info.st_mode & S_ISVTX) != 0; }

// A directory is safe to keep locks in when nobody but us (or root) can
// rename or replace what we create there: owned by us or root, and not
// writable by others unless the sticky bit protects each user's files.
void check_safe(int fd, const std::string &path, bool allow_foreign_sticky) {
  struct stat info {};
  if (fstat(fd, &info) != 0)
    throw ConfigError(errno_message(fmt::format("cannot inspect lock directory {}", path), errno));
  if (!S_ISDIR(info.st_mode)) throw ConfigError(fmt::format("lock directory {} is not a directory", path));
  bool trusted_owner = info.st_uid == geteuid() || info.st_uid == 0;
  if (!trusted_owner && !(allow_foreign_sticky && sticky(info)))
    throw ConfigError(fmt::format("lock directory {} is unsafe: owned by uid {}, not by you or root; "
                                  "use --backend file:///DIR with a directory of your own",
                                  path, info.st_uid));
  if (writable_by_others(info) && !sticky(info))
    throw ConfigError(fmt::format("lock directory {} is unsafe: writable by others without the sticky bit "
                                  "(chmod +t or chmod go-w it)",
                                  path));
}

[[noreturn]] void cannot_open(const std::string &path, int error) {
  if (error == ELOOP || error == ENOTDIR)
    throw ConfigError(fmt::format("lock directory {} is unsafe: it is a symlink or not a directory", path));
  throw ConfigError(errno_message(fmt::format("cannot open lock directory {}", path), error));
}

// Opens `name` below `parent` as a directory, creating it if missing.
UniqueFd open_subdir(int parent, const std::string &name, const std::string &path, mode_t mode) {
  constexpr int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(parent, name.c_str(), flags);
  if (fd >= 0) return UniqueFd(fd);
  if (errno != ENOENT) cannot_open(path, errno);
  bool created = mkdirat(parent, name.c_str(), 0700) == 0;
  if (!created && errno != EEXIST)
    throw ConfigError(errno_message(fmt::format("cannot create lock directory {}", path), errno));
  fd = openat(parent, name.c_str(), flags);
  if (fd < 0) cannot_open(path, errno);
  // mkdir honours the umask; give what we made the mode we meant.
  if (created) fchmod(fd, mode);
  return UniqueFd(fd);
}

UniqueFd open_absolute(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) cannot_open(path, errno);
  return UniqueFd(fd);
}

// Opens DIR, creating its last component (not its parents) when missing.
UniqueFd open_or_create(const std::string &path, mode_t mode) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos || slash + 1 == path.size() || access(path.c_str(), F_OK) == 0)
    return open_absolute(path);
  UniqueFd parent = open_absolute(slash == 0 ? "/" : path.substr(0, slash));
  return open_subdir(parent.get(), path.substr(slash + 1), path, mode);
}

std::string default_directory() {
  if (access("/run/lock/dlock", W_OK | X_OK) == 0) return "/run/lock/dlock";
  if (access("/run/lock/dlock", F_OK) != 0 && access("/run/lock", W_OK | X_OK) == 0) return "/run/lock/dlock";
  if (const char *runtime = std::getenv("XDG_RUNTIME_DIR");
      runtime && *runtime == '/' && access(runtime, W_OK | X_OK) == 0)
    return std::string(runtime) + "/dlock";
  return fmt::format("/tmp/dlock-{}", geteuid());
}

} // namespace

std::string LockDir::file_name(const std::string &name) {
  std::string file = name;
  for (char &c : file)
    if (c == '/') c = '%';
  return file + std::string(k_suffix);
}

std::optional<std::string> LockDir::name_from_file(const std::string &file) {
  if (file.size() <= k_suffix.size() || file.compare(file.size() - k_suffix.size(), k_suffix.size(), k_suffix) != 0)
    return std::nullopt;
  std::string name = file.substr(0, file.size() - k_suffix.size());
  for (char &c : name)
    if (c == '%') c = '/';
  return name;
}

LockDir LockDir::open(const Url &url, const std::string &lock_namespace) {
  if (url.has_authority && !url.hosts.empty() && url.hosts.front() != "localhost")
    throw ConfigError(fmt::format("bad file: URL '{}': use file: or file:///ABSOLUTE/DIR", url.redacted()));
  bool explicit_dir = !url.path.empty();
  if (explicit_dir && url.path.front() != '/')
    throw ConfigError(
        fmt::format("bad file: URL '{}': the directory must be absolute, e.g. file:///var/lock/myapp", url.redacted()));
  std::string base = explicit_dir ? url.path : default_directory();
  while (base.size() > 1 && base.back() == '/')
    base.pop_back();

  // A base directory shared by users (like /run/lock) is made world-writable
  // and sticky; a private one stays private.
  bool parent_shared = false;
  if (auto slash = base.find_last_of('/'); slash != std::string::npos) {
    struct stat parent {};
    std::string parent_path = slash == 0 ? "/" : base.substr(0, slash);
    parent_shared = stat(parent_path.c_str(), &parent) == 0 && sticky(parent) && (parent.st_mode & S_IWOTH);
  }
  UniqueFd base_fd = open_or_create(base, parent_shared && !explicit_dir ? 01777 : 0700);
  check_safe(base_fd.get(), base, false);
  struct stat base_info {};
  fstat(base_fd.get(), &base_info);
  bool shared = sticky(base_info) && (base_info.st_mode & S_IWOTH);

  std::string ns_file = lock_namespace;
  for (char &c : ns_file)
    if (c == '/') c = '%';
  std::string ns_path = base + "/" + ns_file;
  UniqueFd ns_fd = open_subdir(base_fd.get(), ns_file, ns_path, shared ? 01777 : 0700);
  check_safe(ns_fd.get(), ns_path, shared);
  return LockDir(std::move(ns_fd), ns_path, shared);
}

} // namespace dlock::backend::file
