// Holder records written by other processes: lock files (any user who can
// write the lock directory), ZooKeeper node data and the note in a
// PostgreSQL session's query text. A record that decodes encodes back to
// one that decodes the same.
#include "backend/file/record.hpp"
#include "backend/postgres/pg_backend.hpp"
#include "backend/zookeeper/paths.hpp"
#include "core/holder_json.hpp"
#include "core/identity.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  using dlock::backend::file::LockRecord;
  if (std::optional<LockRecord> record = dlock::backend::file::decode_record(text)) {
    std::optional<LockRecord> again = dlock::backend::file::decode_record(dlock::backend::file::encode_record(*record));
    if (!again || again->fence != record->fence || again->holder.has_value() != record->holder.has_value())
      std::abort();
    if (record->holder && again->holder->pid != record->holder->pid) std::abort();
  }
  if (auto holder = dlock::backend::zookeeper::decode_holder(text)) {
    auto again = dlock::backend::zookeeper::decode_holder(dlock::backend::zookeeper::encode_holder(*holder));
    if (!again) std::abort();
  }
  if (auto note = dlock::backend::postgres::note_in(text))
    if (auto holder = dlock::holder_in(*note)) (void)dlock::format_utc(holder->since);
  return 0;
}
