#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock {

// A backend URL: scheme:[//[user[:password]@]host[:port][,host[:port]...]][/path][?key=value&...]
// The password is kept apart so that nothing prints it by accident: every
// message uses redacted().
struct Url {
  std::string scheme;
  std::optional<std::string> user;
  std::optional<std::string> password;
  std::vector<std::string> hosts; // "host:port" or "host" as written, in order
  std::string path;               // percent-decoded, with the leading '/'
  std::map<std::string, std::string> query;
  bool has_authority = false; // "scheme://..." rather than "scheme:..."
  std::string original;       // as given; contains the password, never print it

  // The URL with the password replaced by "***" (and the query kept).
  std::string redacted() const;
  // The URL without user and password at all, for DLOCK_BACKEND in the child.
  std::string without_credentials() const;
};

// Query options that hold secrets (password, pass, key_password,
// sslpassword): redacted in messages, dropped from DLOCK_BACKEND, masked
// in argv.
bool is_secret_option(std::string_view key);

// Throws ConfigError (exit 78) with a one-line reason on a malformed URL.
Url parse_url(const std::string &text);

} // namespace dlock
