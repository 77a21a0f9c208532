#include "backend/redis/common.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dlock::backend::redis {

std::string tag_head(const std::string &lock_namespace) {
  std::string ns;
  for (char c : lock_namespace)
    ns += c == ':' ? std::string("%3A") : std::string(1, c);
  return "{" + ns + ":";
}

Keys keys_for(const std::string &lock_namespace, const std::string &name) {
  std::string tag = tag_head(lock_namespace) + name + "}";
  return {tag + ":lock", tag + ":info", tag + ":fence", tag + ":released"};
}

std::vector<std::string> script_command(const char *script, const Keys &keys, std::initializer_list<std::string> args) {
  std::vector<std::string> command = {"EVAL", script, "3", keys.lock, keys.info, keys.fence};
  command.insert(command.end(), args);
  return command;
}

std::optional<long long> to_integer(std::string_view text) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

int parse_db(std::string_view text, const std::string &url) {
  auto value = to_integer(text);
  if (!value || *value < 0 || *value > 1'000'000)
    throw ConfigError(fmt::format("bad database number '{}' in {}", text, url));
  return static_cast<int>(*value);
}

std::string glob_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

HolderInfo holder_from(const Reply &fields) {
  std::map<std::string, std::string> values;
  for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2)
    values[fields.elements[i].str] = fields.elements[i + 1].str;
  HolderInfo holder;
  holder.host = values["host"];
  holder.pid = to_integer(values["pid"]).value_or(0);
  holder.user = values["user"];
  holder.command = values["command"];
  if (auto since = to_integer(values["since"]))
    holder.since = std::chrono::system_clock::time_point(std::chrono::milliseconds(*since));
  return holder;
}

std::optional<std::uint64_t> fence_from(const Reply &fields) {
  for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2)
    if (fields.elements[i].str == "fence")
      if (auto value = to_integer(fields.elements[i + 1].str); value && *value > 0)
        return static_cast<std::uint64_t>(*value);
  return std::nullopt;
}

LockStatus status_from(const std::string &name, const Reply &reply, const Keys &keys) {
  LockStatus status;
  status.name = name;
  status.detail = fmt::format("key {}", keys.lock);
  if (reply.type != Reply::Type::array || reply.elements.size() < 2) return status;
  if (reply.elements.size() > 2)
    if (auto last = to_integer(reply.elements[2].str); last && *last > 0)
      status.fence = static_cast<std::uint64_t>(*last);
  if (reply.elements[0].integer == -2) return status;
  status.held = true;
  if (reply.elements[0].integer >= 0) status.time_left = Millis(reply.elements[0].integer);
  if (!reply.elements[1].elements.empty()) {
    status.holder = holder_from(reply.elements[1]);
    if (auto fence = fence_from(reply.elements[1])) status.fence = fence;
  }
  return status;
}

std::string info_field(const std::string &info, std::string_view field) {
  std::string key = fmt::format("\n{}:", field);
  auto at = ("\n" + info).find(key);
  if (at == std::string::npos) return {};
  at += key.size() - 1; // position in `info`
  auto end = info.find_first_of("\r\n", at);
  return info.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

ConnectionOptions connection_options(const BackendConfig &config, std::map<std::string, std::string> &query, bool tls) {
  ConnectionOptions options;
  options.timeout = config.connect_timeout;
  options.user = config.url.user.value_or("");
  options.password = config.password ? config.password : config.url.password;
  if (!tls) return options;
  auto take = [&query](const std::string &key) {
    auto found = query.find(key);
    if (found == query.end()) return std::string();
    std::string value = found->second;
    query.erase(found);
    return value;
  };
  options.tls.enabled = true;
  options.tls.ca_file = take("cacert");
  options.tls.cert_file = take("cert");
  options.tls.key_file = take("key");
  std::string insecure = take("insecure");
  options.tls.insecure = insecure == "1" || insecure == "true";
  return options;
}

Reply check_reply(Reply reply, const std::string &where) {
  if (!reply.is_error()) return reply;
  std::string_view code = reply.error_code();
  if (code == "NOAUTH" || reply.str.find("Protocol error: unauthenticated") != std::string::npos)
    throw Error(ExitCode::auth,
                fmt::format("{} requires a password: give it with DLOCK_PASSWORD or --password-file", where));
  if (code == "WRONGPASS" || code == "NOPERM")
    throw Error(ExitCode::auth, fmt::format("{} refused: {}", where, reply.str));
  if (code == "READONLY")
    throw UnavailableError(fmt::format("{} is a read-only replica: locks need the master (point dlock at it, or "
                                       "use redis-sentinel://)",
                                       where));
  throw UnavailableError(fmt::format("{}: server error: {}", where, reply.str));
}

} // namespace dlock::backend::redis
