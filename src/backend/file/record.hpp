#pragma once

#include "core/identity.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlock::backend::file {

// What a lock file holds: the fence counter, kept across holders, and while
// held the holder's record. The release token is never stored.
// The holders of a shared lock or a semaphore (both LOCK_SH on the file)
// are `readers`, each with its own fence (and a semaphore's with its slot);
// they update the record one at a time under an OFD lock on the file,
// which does not interact with flock(2) (file_backend.cpp).
struct ReaderRecord {
  HolderInfo holder;
  std::uint64_t fence = 0;
  std::optional<unsigned> slot;
};

struct LockRecord {
  std::uint64_t fence = 0;
  std::optional<HolderInfo> holder;
  std::int64_t ttl_ms = 0;
  std::int64_t renewed_ms = 0;      // unix ms of the last renewal (or acquisition)
  std::int64_t renewed_boot_ms = 0; // the same moment on the holder's CLOCK_BOOTTIME (0: not recorded)
  std::vector<ReaderRecord> readers;
  unsigned limit = 0; // a semaphore's N while it has holders; 0 otherwise
};

// At most this many readers are recorded (a record stays far below its
// 64 KiB limit); the kernel still counts every one.
inline constexpr std::size_t max_recorded_readers = 100;

std::string encode_record(const LockRecord &record);
// An empty (or all-blank) text is a new lock file: fence 0, no holder.
// Anything else must be the record encode_record() writes, padded with
// blanks: a fence that is not a decimal in 0..2^64-1, a holder field of
// the wrong type, trailing bytes or another program's content give
// nullopt. A record that cannot be trusted is never read as a reset
// counter, which could hand out a fence again.
std::optional<LockRecord> decode_record(const std::string &text);

// Reads the record from the open lock file `path`; `size` receives the number of
// bytes read. nullopt if the content is not a record (decode_record) or
// longer than any record (64 KiB). Throws file_error() if the read fails.
std::optional<LockRecord> read_record(int fd, const std::string &path, std::size_t *size = nullptr);
// Replaces the file's content with the record. A shorter record is padded
// with spaces to `file_size` (JSON ignores them) rather than truncating the
// file: ftruncate is a journaled metadata change on the hand-over path.
// `file_size` is updated. Returns false on failure, with errno set.
bool write_record(int fd, const LockRecord &record, std::size_t &file_size);

} // namespace dlock::backend::file
