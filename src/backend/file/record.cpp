#include "backend/file/record.hpp"

#include "core/holder_json.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <unistd.h>

namespace dlock::backend::file {

std::string encode_record(const LockRecord &record) {
  nlohmann::json doc;
  doc["fence"] = record.fence;
  if (record.holder) {
    add_holder(doc, *record.holder);
    doc["ttl_ms"] = record.ttl_ms;
    doc["renewed_ms"] = record.renewed_ms;
  }
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

LockRecord decode_record(const std::string &text) {
  LockRecord record;
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return record;
  try {
    record.fence = doc.value("fence", std::uint64_t{0});
    if (auto holder = holder_in(doc)) {
      record.holder = holder;
      record.ttl_ms = doc.value("ttl_ms", std::int64_t{0});
      record.renewed_ms = doc.value("renewed_ms", std::int64_t{0});
    }
  } catch (const nlohmann::json::exception &) {
    return LockRecord{};
  }
  return record;
}

LockRecord read_record(int fd, std::size_t *size) {
  // Records are a few hundred bytes; read them without a large buffer, as
  // this is on the hand-over path.
  constexpr std::size_t k_limit = 65536;
  std::string text;
  char chunk[1024];
  while (text.size() < k_limit) {
    ssize_t n = pread(fd, chunk, sizeof chunk, static_cast<off_t>(text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  if (size) *size = text.size();
  return decode_record(text);
}

bool write_record(int fd, const LockRecord &record, std::size_t &file_size) {
  std::string text = encode_record(record);
  if (text.size() < file_size) text.insert(text.size() - 1, file_size - text.size(), ' ');
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t n = pwrite(fd, text.data() + written, text.size() - written, static_cast<off_t>(written));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  file_size = text.size();
  return true;
}

} // namespace dlock::backend::file
