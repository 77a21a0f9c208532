#include "backend/file/diagnose.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace dlock::backend::file {

namespace {

struct Remote {
  long long f_type;
  const char *name;
};

// The magic numbers of linux/magic.h and the file systems' own headers.
constexpr Remote k_remote[] = {
    {0x6969, "NFS"},    {0x517B, "SMB"},      {0xFE534D42, "SMB2"}, {0xFF534D42, "CIFS"},       {0x65735546, "FUSE"},
    {0x01021997, "9p"}, {0x00C36400, "Ceph"}, {0x5346414F, "AFS"},  {0x6B414653, "AFS (kAFS)"}, {0x0BD00BD0, "Lustre"},
};

} // namespace

std::optional<std::string> remote_filesystem(long long f_type) {
  for (const Remote &remote : k_remote)
    if (remote.f_type == f_type) return std::string(remote.name);
  return std::nullopt;
}

Finding filesystem_finding(const std::string &path, long long f_type) {
  Finding f{"file.filesystem", Severity::ok, "", ""};
  auto remote = remote_filesystem(f_type);
  if (!remote) {
    f.found = fmt::format("{} is on a local file system (type 0x{:x}): locks hold between the processes of this "
                          "machine",
                          path, static_cast<unsigned long long>(f_type));
    return f;
  }
  f.severity = Severity::unsafe;
  f.found = fmt::format("{} is on {}: flock(2) there is emulated or local to each client, a server that reboots or "
                        "loses the client forgets its locks without telling the holder, and dlock cannot see the "
                        "holders' processes",
                        path, *remote);
  f.fix = "use a directory on a local file system (the default, /run/lock/dlock), or a network backend (redis://, "
          "zk://, etcd://, postgres://) for locks between machines";
  return f;
}

std::vector<Finding> diagnose_lock_dir(const LockDir &dir) {
  Finding owner{"file.lock-directory", Severity::ok, "", ""};
  switch (dir.kind()) {
  case DirKind::private_dir:
    owner.found = fmt::format("{}: a private directory, writable by its owner only", dir.path());
    break;
  case DirKind::sticky_shared:
    owner.found = fmt::format("{}: a shared sticky directory: each user's lock files are their own", dir.path());
    break;
  case DirKind::group:
    owner.found = fmt::format("{}: a setgid group directory: its group shares these locks on purpose", dir.path());
    break;
  }
  if (faccessat(dir.fd(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    owner.severity = Severity::unsafe;
    owner.found += fmt::format(", but not writable by you ({})", std::strerror(errno));
    owner.fix = "ask its owner for access, or use --backend file:///DIR";
  }
  std::vector<Finding> out{owner};
  struct statfs info {};
  if (fstatfs(dir.fd(), &info) == 0)
    out.push_back(filesystem_finding(dir.path(), static_cast<long long>(info.f_type)));
  else
    out.push_back({"file.filesystem", Severity::warning,
                   fmt::format("{}: statfs failed: {}", dir.path(), std::strerror(errno)), ""});
  return out;
}

} // namespace dlock::backend::file
