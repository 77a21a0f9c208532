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

std::string encode_record(const LockRecord &record);
// Tolerates garbage (a torn write, a file of another program): returns an
// empty record.
LockRecord decode_record(const std::string &text);

// Reads the record from an open lock file (at most 64 KiB); `size`
// receives the number of bytes read.
LockRecord read_record(int fd, std::size_t *size = nullptr);
// Replaces the file's content with the record. A shorter record is padded
// with spaces to `file_size` (JSON ignores them) rather than truncating the
// file: ftruncate is a journaled metadata change on the hand-over path.
// `file_size` is updated. Returns false on failure.
bool write_record(int fd, const LockRecord &record, std::size_t &file_size);

} // namespace dlock::backend::file
