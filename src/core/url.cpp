#include "core/url.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstring>

namespace dlock {

namespace {

// Values in a query are written back percent-encoded where needed, so that
// the URL handed to the job (DLOCK_BACKEND) stays one valid URL.
std::string percent_encode(const std::string &value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || std::strchr("-._~/:@", c))
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text, std::string_view scheme) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      int hi = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
      int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        throw ConfigError(fmt::format("bad {} URL: '%' must be followed by two hex digits", scheme));
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string build(const Url &url, bool with_user, bool with_password) {
  std::string out = url.scheme + ":";
  if (url.has_authority) {
    out += "//";
    if (with_user && url.user) {
      out += *url.user;
      if (url.password) out += with_password ? ":***" : "";
      out += "@";
    }
    for (std::size_t i = 0; i < url.hosts.size(); ++i)
      out += (i ? "," : "") + url.hosts[i];
  }
  out += url.path;
  char sep = '?';
  for (const auto &[key, value] : url.query) {
    out += fmt::format("{}{}={}", sep, key, is_secret_option(key) ? "***" : percent_encode(value));
    sep = '&';
  }
  return out;
}

} // namespace

bool is_secret_option(std::string_view key) {
  return key == "password" || key == "pass" || key == "key_password" || key == "sslpassword";
}

std::string Url::redacted() const { return build(*this, true, true); }

std::string Url::without_credentials() const {
  Url copy = *this;
  for (auto it = copy.query.begin(); it != copy.query.end();)
    it = is_secret_option(it->first) ? copy.query.erase(it) : std::next(it);
  return build(copy, false, false);
}

Url parse_url(const std::string &text) {
  Url url;
  url.original = text;
  auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0)
    throw ConfigError("bad backend URL: expected SCHEME:..., e.g. file: or redis://127.0.0.1:6379");
  url.scheme = text.substr(0, colon);
  for (char &c : url.scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.')
      throw ConfigError("bad backend URL: the scheme may hold only letters, digits, '+', '-' and '.'");
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::string_view rest = std::string_view(text).substr(colon + 1);
  auto qmark = rest.find('?');
  std::string_view query = qmark == std::string_view::npos ? std::string_view{} : rest.substr(qmark + 1);
  rest = rest.substr(0, qmark);
  if (rest.substr(0, 2) == "//") {
    url.has_authority = true;
    rest.remove_prefix(2);
    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    auto at = authority.rfind('@');
    if (at != std::string_view::npos) {
      std::string_view userinfo = authority.substr(0, at);
      authority.remove_prefix(at + 1);
      auto sep = userinfo.find(':');
      std::string user = percent_decode(userinfo.substr(0, sep), url.scheme);
      if (!user.empty()) url.user = user;
      if (sep != std::string_view::npos) url.password = percent_decode(userinfo.substr(sep + 1), url.scheme);
    }
    while (!authority.empty()) {
      auto comma = authority.find(',');
      std::string_view host = authority.substr(0, comma);
      if (host.empty()) throw ConfigError(fmt::format("bad {} URL: empty host in the host list", url.scheme));
      url.hosts.emplace_back(host);
      if (comma == std::string_view::npos) break;
      authority.remove_prefix(comma + 1);
      if (authority.empty()) throw ConfigError(fmt::format("bad {} URL: empty host in the host list", url.scheme));
    }
  }
  url.path = percent_decode(rest, url.scheme);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    auto eq = pair.find('=');
    std::string key = percent_decode(pair.substr(0, eq), url.scheme);
    std::string value = eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1), url.scheme);
    if (!key.empty()) url.query[key] = value;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return url;
}

} // namespace dlock
