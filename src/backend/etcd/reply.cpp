#include "backend/etcd/reply.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

namespace dlock::backend::etcd {

namespace {

const Json &field_of(const Json &object, const char *field) {
  static const Json null;
  if (!object.is_object()) return null;
  auto found = object.find(field);
  return found == object.end() ? null : *found;
}

template <typename Number> Number parse_number(const Json &value) {
  if (value.is_number_integer()) {
    // nlohmann keeps integers as int64 or uint64: take only what fits.
    if (value.is_number_unsigned()) {
      auto number = value.get<std::uint64_t>();
      return number <= static_cast<std::uint64_t>(std::numeric_limits<Number>::max()) ? static_cast<Number>(number) : 0;
    }
    auto number = value.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<Number>) return number < 0 ? 0 : static_cast<Number>(number);
    return static_cast<Number>(number);
  }
  if (!value.is_string()) return 0;
  const auto &text = value.get_ref<const std::string &>();
  Number number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  return error == std::errc() && end == text.data() + text.size() ? number : 0;
}

} // namespace

std::string base64_encode(const std::string &bytes) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8 |
                 static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0})
      out += alphabet[(v >> shift) & 63];
  }
  if (std::size_t rest = bytes.size() - i) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(const std::string &text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) continue; // padding
    bits = bits << 6 | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

std::int64_t number_in(const Json &object, const char *field) {
  return parse_number<std::int64_t>(field_of(object, field));
}

std::uint64_t unsigned_in(const Json &object, const char *field) {
  return parse_number<std::uint64_t>(field_of(object, field));
}

Millis seconds_in(const Json &object, const char *field) {
  constexpr std::int64_t k_max_seconds = std::numeric_limits<std::int64_t>::max() / 1000;
  return Millis(std::clamp(number_in(object, field), -k_max_seconds, k_max_seconds) * 1000);
}

std::string string_in(const Json &object, const char *field) {
  const Json &value = field_of(object, field);
  return value.is_string() ? value.get<std::string>() : std::string();
}

const Json &object_in(const Json &object, const char *field) {
  static const Json empty = Json::object();
  const Json &value = field_of(object, field);
  return value.is_object() ? value : empty;
}

const Json &array_in(const Json &object, const char *field) {
  static const Json empty = Json::array();
  const Json &value = field_of(object, field);
  return value.is_array() ? value : empty;
}

Refusal refusal_in(const Json &answer, int http_status) {
  Refusal out;
  if (!answer.is_object()) {
    out.message = fmt::format("HTTP status {}", http_status);
    return out;
  }
  const Json &code = field_of(answer, "code");
  if (code.is_number_integer()) {
    auto number = parse_number<std::int64_t>(code);
    if (number >= 0 && number <= std::numeric_limits<int>::max()) out.code = static_cast<int>(number);
  }
  out.message = string_in(answer, field_of(answer, "message").is_string() ? "message" : "error");
  return out;
}

WatchLine parse_watch_line(std::string_view line) {
  WatchLine out;
  Json doc = Json::parse(line.begin(), line.end(), nullptr, false);
  if (!doc.is_object()) return out;
  if (doc.contains("error")) {
    // A stream-level error (leader lost, member stopping).
    out.kind = WatchLine::Kind::error;
    out.error = doc["error"].dump(-1, ' ', false, Json::error_handler_t::replace);
    return out;
  }
  const Json &result = object_in(doc, "result");
  const Json &canceled = field_of(result, "canceled");
  if (canceled.is_boolean() && canceled.get<bool>()) {
    out.kind = WatchLine::Kind::canceled;
    out.compact_revision = number_in(result, "compact_revision");
    return out;
  }
  for (const auto &event : array_in(result, "events")) {
    WatchEvent parsed;
    parsed.kind = string_in(event, "type") == "DELETE" ? WatchEvent::Kind::deleted : WatchEvent::Kind::put;
    const Json &kv = object_in(event, "kv");
    parsed.key = base64_decode(string_in(kv, "key"));
    parsed.mod_revision = number_in(kv, "mod_revision");
    out.events.push_back(std::move(parsed));
  }
  if (!out.events.empty()) out.kind = WatchLine::Kind::events;
  return out;
}

std::string lease_hex(std::int64_t lease) { return fmt::format("{:x}", static_cast<std::uint64_t>(lease)); }

std::optional<std::int64_t> lease_from_token(const std::string &token) {
  if (token.empty() || token.size() > 16 || token.find_first_not_of("0123456789abcdef") != std::string::npos)
    return std::nullopt;
  return static_cast<std::int64_t>(std::stoull(token, nullptr, 16));
}

std::vector<Contender> contenders_in(const Json &range, const std::string &prefix) {
  std::vector<Contender> out;
  for (const auto &kv : array_in(range, "kvs")) {
    Contender c;
    c.key = base64_decode(string_in(kv, "key"));
    if (c.key.rfind(prefix, 0) != 0) continue;
    std::string_view rest = std::string_view(c.key).substr(prefix.size());
    for (std::string_view group : {"read/", "write/"})
      if (rest.substr(0, group.size()) == group && rest.size() > group.size()) {
        c.reader = group == "read/";
        rest.remove_prefix(group.size());
        break;
      }
    if (rest.empty() || rest.find('/') != std::string_view::npos) continue;
    c.create_revision = number_in(kv, "create_revision");
    c.lease = number_in(kv, "lease");
    c.value = base64_decode(string_in(kv, "value"));
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Contender &a, const Contender &b) { return a.create_revision < b.create_revision; });
  return out;
}

} // namespace dlock::backend::etcd
