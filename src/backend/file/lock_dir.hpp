#pragma once

#include "core/unique_fd.hpp"
#include "core/url.hpp"

#include <optional>
#include <string>

namespace dlock::backend::file {

// The directory that holds one namespace's lock files, opened without
// following symlinks and checked so that another local user cannot steer
// dlock into writing elsewhere.
class LockDir {
public:
  // `file:` uses the default directory (/run/lock/dlock if writable, else
  // $XDG_RUNTIME_DIR/dlock, else /tmp/dlock-$UID); `file:///DIR` uses DIR.
  // The namespace is a subdirectory. Throws ConfigError (78) when a
  // directory is unsafe or cannot be created.
  static LockDir open(const Url &url, const std::string &lock_namespace);

  int fd() const { return m_fd.get(); }
  const std::string &path() const { return m_path; }
  // World-writable with the sticky bit, like /run/lock: lock files are made
  // writable by everyone so that any user's holder can record itself.
  bool shared() const { return m_shared; }

  // "a/b" -> "a%b.lock": '%' is not a name character, so this is injective
  // and keeps one flat file per name (at most 205 bytes).
  static std::string file_name(const std::string &name);
  static std::optional<std::string> name_from_file(const std::string &file);

private:
  LockDir(UniqueFd fd, std::string path, bool shared)
      : m_fd(std::move(fd)), m_path(std::move(path)), m_shared(shared) {}

  UniqueFd m_fd;
  std::string m_path;
  bool m_shared;
};

} // namespace dlock::backend::file
