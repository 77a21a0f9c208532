#include "core/holder_json.hpp"

#include <nlohmann/json.hpp>

namespace dlock {

void add_holder(nlohmann::json &doc, const HolderInfo &holder) {
  doc["host"] = holder.host;
  doc["pid"] = holder.pid;
  doc["user"] = holder.user;
  doc["command"] = holder.command;
  doc["since_ms"] = to_unix_ms(holder.since);
}

std::optional<HolderInfo> holder_in(const nlohmann::json &doc) {
  if (!doc.is_object() || !doc.contains("pid")) return std::nullopt;
  try {
    HolderInfo holder;
    holder.host = doc.value("host", "");
    holder.pid = doc.value("pid", std::int64_t{0});
    holder.user = doc.value("user", "");
    holder.command = doc.value("command", "");
    holder.since = from_unix_ms(doc.value("since_ms", std::int64_t{0}));
    return holder;
  } catch (const nlohmann::json::exception &) {
    return std::nullopt;
  }
}

} // namespace dlock
