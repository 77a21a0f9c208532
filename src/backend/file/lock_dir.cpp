#include "backend/file/lock_dir.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>
#include <vector>

namespace dlock::backend::file {

namespace {

constexpr std::string_view k_suffix = ".lock";
constexpr const char *k_system_lock_dir = "/run/lock";
constexpr const char *k_default_dir = "/run/lock/dlock";

bool trusted_uid(uid_t uid) { return uid == 0 || uid == geteuid(); }
bool sticky(const struct stat &info) { return (info.st_mode & S_ISVTX) != 0; }
bool world_writable(const struct stat &info) { return (info.st_mode & S_IWOTH) != 0; }
bool group_writable(const struct stat &info) { return (info.st_mode & S_IWGRP) != 0; }

// Setgid, group-writable, not world-writable: the layout of a directory
// shared on purpose by a group (as for flock(1) scripts).
bool group_dir(const struct stat &info) {
  return (info.st_mode & S_ISGID) && group_writable(info) && !world_writable(info);
}

std::string user_label(uid_t uid) {
  std::vector<char> buffer(4096);
  passwd entry{};
  passwd *found = nullptr;
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found)
    return fmt::format("{} (uid {})", found->pw_name, uid);
  return fmt::format("uid {}", uid);
}

std::string group_label(gid_t gid) {
  std::vector<char> buffer(4096);
  group entry{};
  group *found = nullptr;
  if (getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found) == 0 && found) return found->gr_name;
  return fmt::format("gid {}", gid);
}

std::string fd_path(int fd) {
  char target[PATH_MAX];
  ssize_t n = readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), target, sizeof target - 1);
  if (n <= 0) return "a parent directory";
  return std::string(target, static_cast<std::size_t>(n));
}

struct DirTrust {
  DirKind kind;
  gid_t group;
};

struct stat fstat_or_throw(int fd, const std::string &path) {
  struct stat info {};
  if (fstat(fd, &info) != 0) throw file_error(fmt::format("cannot inspect lock directory {}", path), errno);
  return info;
}

// Decides what a directory lets in, or throws ConfigError saying why no
// entry in it can be trusted. Below a group directory, a directory of the
// same group may belong to any member; anything else must be root's or ours.
DirTrust judge_dir(const struct stat &info, const std::string &path, const DirTrust *parent) {
  if (!S_ISDIR(info.st_mode)) throw ConfigError(fmt::format("lock directory {} is not a directory", path));
  bool member_dir = parent && parent->kind == DirKind::group && info.st_gid == parent->group;
  if (!trusted_uid(info.st_uid) && !member_dir)
    throw ConfigError(fmt::format("lock directory {} is unsafe: {}, not by you or root, so its owner could remove a "
                                  "lock file while it is held; remove it if nobody should have made it, or use "
                                  "--backend file:///DIR",
                                  path, describe_owner(info)));
  if (world_writable(info)) {
    if (!sticky(info))
      throw ConfigError(fmt::format("lock directory {} is unsafe: writable by everyone without the sticky bit ({}); "
                                    "chmod +t or chmod o-w it",
                                    path, describe_owner(info)));
    return {DirKind::sticky_shared, info.st_gid};
  }
  if (group_dir(info)) return {DirKind::group, info.st_gid};
  if (group_writable(info)) {
    if (sticky(info)) return {DirKind::sticky_shared, info.st_gid};
    throw ConfigError(fmt::format("lock directory {} is unsafe: writable by its group without the setgid bit ({}); "
                                  "to share locks with the group chmod g+s it, else chmod g-w it",
                                  path, describe_owner(info)));
  }
  return {DirKind::private_dir, info.st_gid};
}

// Every directory above the base must be as safe as the base itself: whoever
// can rename an ancestor can swap the whole tree under a held lock. The walk
// follows "..", so it checks the directories the base really lies in.
void check_ancestors(int base_fd) {
  UniqueFd current(fcntl(base_fd, F_DUPFD_CLOEXEC, 0));
  if (!current) throw file_error("cannot inspect the lock directory's parents", errno);
  struct stat info = fstat_or_throw(current.get(), "/");
  for (;;) {
    UniqueFd parent(openat(current.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!parent) throw file_error("cannot inspect the lock directory's parents", errno);
    struct stat parent_info = fstat_or_throw(parent.get(), "..");
    if (parent_info.st_dev == info.st_dev && parent_info.st_ino == info.st_ino) return;
    bool open_to_others = world_writable(parent_info) || group_writable(parent_info);
    if (!trusted_uid(parent_info.st_uid) || (open_to_others && !sticky(parent_info) && !group_dir(parent_info)))
      throw ConfigError(fmt::format("lock directory parent {} is unsafe: {}; another user could rename what lies "
                                    "below it, so use a lock directory whose parents are all yours or root's",
                                    fd_path(parent.get()), describe_owner(parent_info)));
    current = std::move(parent);
    info = parent_info;
  }
}

[[noreturn]] void cannot_open(int parent, const std::string &name, const std::string &path, int error) {
  if (error == ELOOP || error == ENOTDIR)
    throw ConfigError(fmt::format("lock directory {} is unsafe: it is a symlink or not a directory", path));
  struct stat info {};
  if ((error == EACCES || error == EPERM) && fstatat(parent, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0)
    throw Error(ExitCode::auth, fmt::format("cannot open lock directory {} ({}): {}; ask its owner for access (a "
                                            "group directory: see FILE BACKEND in dlock(1)), or use --backend "
                                            "file:///DIR",
                                            path, describe_owner(info), std::strerror(error)));
  throw file_error(fmt::format("cannot open lock directory {}", path), error);
}

// The mode of a directory dlock creates below `parent`: a group directory's
// own mode (the group shares what is below it); 1777 where root makes a
// directory meant to be shared (`may_share`: /run/lock/dlock, or a
// namespace in a sticky directory) in a directory of root's, so that every
// user can keep their own locks in it; else private.
mode_t new_dir_mode(const struct stat &parent, bool may_share) {
  if (group_dir(parent)) return parent.st_mode & 07777;
  if (may_share && geteuid() == 0 && parent.st_uid == 0) return 01777;
  return 0700;
}

// Opens `name` below `parent` as a directory, creating it if missing.
UniqueFd open_subdir(int parent, const std::string &parent_path, const std::string &name, const std::string &path,
                     bool may_share) {
  constexpr int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(parent, name.c_str(), flags);
  if (fd >= 0) return UniqueFd(fd);
  if (errno != ENOENT) cannot_open(parent, name, path, errno);
  struct stat parent_info = fstat_or_throw(parent, parent_path);
  mode_t mode = new_dir_mode(parent_info, may_share);
  bool created = mkdirat(parent, name.c_str(), 0700) == 0;
  if (!created && errno != EEXIST) {
    int err = errno;
    if (err == EACCES || err == EPERM)
      throw Error(ExitCode::auth, fmt::format("cannot create lock directory {}: {} ({}) is not writable by you; "
                                              "ask its owner to create it (for a group: install -d -m 2775 -g "
                                              "GROUP {}), or use --backend file:///DIR",
                                              path, parent_path, describe_owner(parent_info), path));
    throw file_error(fmt::format("cannot create lock directory {}", path), err);
  }
  fd = openat(parent, name.c_str(), flags);
  if (fd < 0) cannot_open(parent, name, path, errno);
  // mkdir honours the umask; give what we made the mode we meant.
  if (created && fchmod(fd, mode) != 0)
    throw file_error(fmt::format("cannot set the mode of lock directory {}", path), errno);
  return UniqueFd(fd);
}

UniqueFd open_absolute(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) cannot_open(AT_FDCWD, path, path, errno);
  return UniqueFd(fd);
}

// Opens DIR, creating its last component (not its parents) when missing.
UniqueFd open_or_create(const std::string &path, bool may_share) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos || slash + 1 == path.size()) return open_absolute(path);
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return UniqueFd(fd);
  if (errno != ENOENT) cannot_open(AT_FDCWD, path, path, errno);
  std::string parent_path = slash == 0 ? "/" : path.substr(0, slash);
  UniqueFd parent = open_absolute(parent_path);
  return open_subdir(parent.get(), parent_path, path.substr(slash + 1), path, may_share);
}

// /run/lock/dlock whenever /run/lock is there, whoever we are: falling back
// to a directory of our own when it is not writable would silently split
// root's jobs and a user's over two directories. Only a system without
// /run/lock, where nobody can use it, falls back, to one directory per uid
// that does not depend on the environment (cron has no XDG_RUNTIME_DIR).
std::string default_directory() {
  struct stat info {};
  if (stat(k_system_lock_dir, &info) == 0 ? !S_ISDIR(info.st_mode) : (errno == ENOENT || errno == ENOTDIR))
    return fmt::format("/tmp/dlock-{}", geteuid());
  return k_default_dir;
}

} // namespace

std::string describe_owner(const struct stat &info) {
  return fmt::format("owned by {}, group {}, mode {:04o}", user_label(info.st_uid), group_label(info.st_gid),
                     info.st_mode & 07777);
}

Error file_error(const std::string &what, int error_number) {
  switch (error_number) {
  case EMFILE:
    return Error(ExitCode::internal, fmt::format("{}: out of file descriptors (raise ulimit -n)", what));
  case ENFILE:
    return Error(ExitCode::internal, fmt::format("{}: the system is out of file descriptors (fs.file-max)", what));
  case ENOMEM:
  case ENOLCK:
    return Error(ExitCode::internal, errno_message(what, error_number));
  case EACCES:
  case EPERM:
    return Error(ExitCode::auth, errno_message(what, error_number));
  case ENOENT:
  case ENOTDIR:
  case ELOOP:
  case ENAMETOOLONG:
  case EINVAL:
    return ConfigError(errno_message(what, error_number));
  default: // ENOSPC, EDQUOT, EIO, EROFS and the like: the storage is failing,
    // but it answered: a local directory is never out of reach, and a
    // full one (any user can fill /run/lock) must not run jobs unlocked.
    return AnsweredError(errno_message(what, error_number));
  }
}

std::optional<std::string> LockDir::distrust(const struct stat &info) const {
  bool group_file = m_kind == DirKind::group && info.st_gid == m_group;
  if (!trusted_uid(info.st_uid) && !group_file) return fmt::format("{}, not by you or root", describe_owner(info));
  if (world_writable(info)) return fmt::format("writable by everyone ({})", describe_owner(info));
  if (group_writable(info) && !group_file)
    return fmt::format("writable by a group that does not share this directory ({})", describe_owner(info));
  return std::nullopt;
}

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

  UniqueFd base_fd = open_or_create(base, base == k_default_dir && !explicit_dir);
  DirTrust base_trust = judge_dir(fstat_or_throw(base_fd.get(), base), base, nullptr);
  check_ancestors(base_fd.get());

  std::string ns_file = lock_namespace;
  for (char &c : ns_file)
    if (c == '/') c = '%';
  std::string ns_path = base == "/" ? "/" + ns_file : base + "/" + ns_file;
  UniqueFd ns_fd = open_subdir(base_fd.get(), base, ns_file, ns_path, base_trust.kind == DirKind::sticky_shared);
  DirTrust ns_trust = judge_dir(fstat_or_throw(ns_fd.get(), ns_path), ns_path, &base_trust);
  return LockDir(std::move(ns_fd), ns_path, ns_trust.kind, ns_trust.group);
}

} // namespace dlock::backend::file
