#pragma once

#include "backend/backend.hpp"
#include "backend/file/lock_dir.hpp"

#include <optional>
#include <string>
#include <vector>

// The checks of `dlock doctor` for the file backend. A directory another
// user could tamper with never gets this far: LockDir::open refuses it
// (78), and doctor reports that refusal as the finding file.settings.
namespace dlock::backend::file {

// The name of a network or user-space file system by its statfs f_type
// (NFS, SMB, CIFS, FUSE, 9p, Ceph, AFS, Lustre), where flock(2) is emulated,
// or only local to each client, or forgotten by a rebooted server; nullopt
// for a local file system.
std::optional<std::string> remote_filesystem(long long f_type);

// file.filesystem: the directory's file system, from remote_filesystem().
Finding filesystem_finding(const std::string &path, long long f_type);

// Every check: file.lock-directory (who may write it), file.filesystem.
std::vector<Finding> diagnose_lock_dir(const LockDir &dir);

} // namespace dlock::backend::file
