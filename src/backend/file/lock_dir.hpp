#pragma once

#include "core/error.hpp"
#include "core/unique_fd.hpp"
#include "core/url.hpp"

#include <optional>
#include <string>
#include <sys/stat.h>

namespace dlock::backend::file {

// Who besides its owner may add entries to a trusted directory, and so
// whose entries dlock accepts in it.
enum class DirKind {
  private_dir,   // nobody: writable by its owner only
  sticky_shared, // anyone (sticky, like /run/lock): only root's and our own entries are trusted
  group,         // the members of its group (setgid, group-writable, not world-writable), trusted by choice
};

// The directory that holds one namespace's lock files, opened without
// following symlinks and checked so that no other local user can steer
// dlock into writing elsewhere, or remove or replace a lock file while it
// is held.
class LockDir {
public:
  // `file:` uses the default directory: /run/lock/dlock whenever /run/lock
  // exists (so that root and every user agree on it, or fail saying why),
  // else /tmp/dlock-$UID. `file:///DIR` uses DIR. The namespace is a
  // subdirectory. Throws ConfigError (78) when a directory is unsafe, and
  // the error of file_error() when one cannot be opened or created.
  static LockDir open(const Url &url, const std::string &lock_namespace);

  int fd() const { return m_fd.get(); }
  const std::string &path() const { return m_path; }
  DirKind kind() const { return m_kind; }
  // Group directories share their lock files with the group.
  // Nobody else may open what dlock makes (flock(2) needs only a read-only
  // descriptor: a file others can read is one they can lock); in a group
  // directory its members may.
  mode_t lock_file_mode() const { return m_kind == DirKind::group ? 0660 : 0600; }

  // Why a lock file in this directory cannot be trusted (another user
  // could remove, replace or rewrite it), or nullopt if it can. `info` is
  // the fstat of the open file.
  std::optional<std::string> distrust(const struct stat &info) const;

  // "a/b" -> "a%b.lock": '%' is not a name character, so this is injective
  // and keeps one flat file per name (at most 205 bytes).
  static std::string file_name(const std::string &name);
  static std::optional<std::string> name_from_file(const std::string &file);

private:
  LockDir(UniqueFd fd, std::string path, DirKind kind, gid_t group)
      : m_fd(std::move(fd)), m_path(std::move(path)), m_kind(kind), m_group(group) {}

  UniqueFd m_fd;
  std::string m_path;
  DirKind m_kind;
  gid_t m_group; // the group of a DirKind::group directory
};

// "owned by NAME (uid N), group NAME, mode 1777", for messages.
std::string describe_owner(const struct stat &info);

// The error for a failed system call on the lock directory or a lock file:
// dlock out of descriptors or memory 70, the storage failing (full, quota,
// I/O error, read-only) 69, permission 77, a bad path 78.
Error file_error(const std::string &what, int error_number);

} // namespace dlock::backend::file
