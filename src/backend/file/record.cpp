#include "backend/file/record.hpp"

#include "backend/backend.hpp"
#include "backend/file/lock_dir.hpp"
#include "core/holder_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <unistd.h>

namespace dlock::backend::file {

namespace {

constexpr std::size_t k_max_record_bytes = 65536;

bool is_integer(const nlohmann::json &doc, const char *key) {
  return !doc.contains(key) || doc[key].is_number_integer();
}

bool is_string(const nlohmann::json &doc, const char *key) { return !doc.contains(key) || doc[key].is_string(); }

bool holder_fields_valid(const nlohmann::json &doc) {
  return is_integer(doc, "pid") && is_integer(doc, "since_ms") && is_string(doc, "host") && is_string(doc, "user") &&
         is_string(doc, "command");
}

} // namespace

std::string encode_record(const LockRecord &record) {
  nlohmann::json doc;
  doc["fence"] = record.fence;
  if (record.holder) {
    add_holder(doc, *record.holder);
    doc["ttl_ms"] = record.ttl_ms;
    doc["renewed_ms"] = record.renewed_ms;
    doc["renewed_boot_ms"] = record.renewed_boot_ms;
  }
  if (!record.readers.empty()) {
    nlohmann::json readers = nlohmann::json::array();
    for (const auto &reader : record.readers) {
      nlohmann::json entry;
      add_holder(entry, reader.holder);
      entry["fence"] = reader.fence;
      if (reader.slot) entry["slot"] = *reader.slot;
      readers.push_back(std::move(entry));
    }
    doc["readers"] = std::move(readers);
  }
  if (record.limit > 0) doc["limit"] = record.limit;
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::optional<LockRecord> decode_record(const std::string &text) {
  LockRecord record;
  if (text.find_first_not_of(" \n") == std::string::npos) return record;
  // The parser stops at a NUL byte; a record never holds one.
  if (text.find('\0') != std::string::npos) return std::nullopt;
  auto doc = nlohmann::json::parse(text, nullptr, false);
  // Only a non-negative integer that fits in 64 bits parses as unsigned: a
  // sign, a fraction, an exponent or 2^64 and more do not.
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("fence") || !doc["fence"].is_number_unsigned())
    return std::nullopt;
  record.fence = doc["fence"].get<std::uint64_t>();
  if (doc.contains("readers")) {
    const auto &readers = doc["readers"];
    if (!readers.is_array() || readers.size() > max_recorded_readers) return std::nullopt;
    for (const auto &entry : readers) {
      if (!entry.is_object() || !entry.contains("fence") || !entry["fence"].is_number_unsigned() ||
          !entry.contains("pid") || !holder_fields_valid(entry))
        return std::nullopt;
      std::optional<HolderInfo> holder = holder_in(entry);
      if (!holder) return std::nullopt;
      std::optional<unsigned> slot;
      if (entry.contains("slot")) {
        if (!entry["slot"].is_number_unsigned() || entry["slot"].get<std::uint64_t>() >= max_limit) return std::nullopt;
        slot = entry["slot"].get<unsigned>();
      }
      record.readers.push_back({*holder, entry["fence"].get<std::uint64_t>(), slot});
    }
  }
  if (doc.contains("limit")) {
    if (!doc["limit"].is_number_unsigned() || doc["limit"].get<std::uint64_t>() > max_limit) return std::nullopt;
    record.limit = doc["limit"].get<unsigned>();
  }
  if (!doc.contains("pid")) return record;
  if (!holder_fields_valid(doc) || !is_integer(doc, "ttl_ms") || !is_integer(doc, "renewed_ms") ||
      !is_integer(doc, "renewed_boot_ms"))
    return std::nullopt;
  record.holder = holder_in(doc);
  if (!record.holder) return std::nullopt;
  record.ttl_ms = doc.value("ttl_ms", std::int64_t{0});
  record.renewed_ms = doc.value("renewed_ms", std::int64_t{0});
  record.renewed_boot_ms = doc.value("renewed_boot_ms", std::int64_t{0});
  return record;
}

std::optional<LockRecord> read_record(int fd, const std::string &path, std::size_t *size) {
  // Records are a few hundred bytes; read them without a large buffer, as
  // this is on the hand-over path.
  std::string text;
  char chunk[1024];
  for (;;) {
    ssize_t n = pread(fd, chunk, sizeof chunk, static_cast<off_t>(text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw file_error(fmt::format("cannot read lock file {}", path), errno);
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > k_max_record_bytes) return std::nullopt;
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
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    written += static_cast<std::size_t>(n);
  }
  file_size = text.size();
  return true;
}

} // namespace dlock::backend::file
