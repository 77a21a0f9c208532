#include "core/holder_json.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>

namespace dlock {

void add_holder(nlohmann::json &doc, const HolderInfo &holder) {
  doc["host"] = holder.host;
  doc["pid"] = holder.pid;
  doc["user"] = holder.user;
  doc["command"] = holder.command;
  doc["since_ms"] = to_unix_ms(holder.since);
}

namespace {

// Unix milliseconds the system clock can hold (nanoseconds in 64 bits:
// about 292 years either side of 1970).
constexpr std::int64_t k_max_unix_ms = std::numeric_limits<std::int64_t>::max() / 1'000'000;

// A field of another program's record: absent gives the default; present,
// it must have the right type and fit, or the record is not a holder's.
std::optional<std::int64_t> integer_field(const nlohmann::json &doc, const char *key) {
  auto found = doc.find(key);
  if (found == doc.end()) return 0;
  if (!found->is_number_integer()) return std::nullopt;
  if (found->is_number_unsigned() && found->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max())
    return std::nullopt;
  return found->get<std::int64_t>();
}

std::optional<std::string> string_field(const nlohmann::json &doc, const char *key) {
  auto found = doc.find(key);
  if (found == doc.end()) return std::string();
  if (!found->is_string()) return std::nullopt;
  return found->get<std::string>();
}

} // namespace

std::optional<HolderInfo> holder_in(const nlohmann::json &doc) {
  if (!doc.is_object() || !doc.contains("pid")) return std::nullopt;
  auto host = string_field(doc, "host");
  auto pid = integer_field(doc, "pid");
  auto user = string_field(doc, "user");
  auto command = string_field(doc, "command");
  auto since_ms = integer_field(doc, "since_ms");
  if (!host || !pid || !user || !command || !since_ms || *since_ms < -k_max_unix_ms || *since_ms > k_max_unix_ms)
    return std::nullopt;
  HolderInfo holder;
  holder.host = std::move(*host);
  holder.pid = *pid;
  holder.user = std::move(*user);
  holder.command = std::move(*command);
  holder.since = from_unix_ms(*since_ms);
  return holder;
}

} // namespace dlock
