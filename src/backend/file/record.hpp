#pragma once

#include "core/identity.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace dlock::backend::file {

// What a lock file holds: the fence counter, kept across holders, and while
// held the holder's record. The release token is never stored.
struct LockRecord {
  std::uint64_t fence = 0;
  std::optional<HolderInfo> holder;
  std::int64_t ttl_ms = 0;
  std::int64_t renewed_ms = 0; // unix ms of the last renewal (or acquisition)
};

std::string encode_record(const LockRecord& record);
// Tolerates garbage (a torn write, a file of another program): returns an
// empty record.
LockRecord decode_record(const std::string& text);

// Reads the record from an open lock file (at most 64 KiB).
LockRecord read_record(int fd);
// Replaces the file's content with the record. Returns false on failure.
bool write_record(int fd, const LockRecord& record);

} // namespace dlock::backend::file
