#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>

namespace dlock {

// The keys a config file may set, in the order `dlock config` shows them.
inline constexpr std::array<const char *, 13> k_config_keys = {
    "backend",        "namespace",       "ttl",
    "wait",           "connect_timeout", "password_file",
    "max_runtime",    "kill_after",      "conflict_exit_code",
    "lost_exit_code", "quiet",           "log",
    "metrics_file"};

struct ConfigEntry {
  std::string value;
  int line = 0;
};

// The `key = value` configuration file. Blank lines and lines whose first
// non-blank character is '#' are ignored, and so is the rest of a line
// from a '#' that follows a blank (a comment after a value); a value in
// quotes is taken as it is, '#' included.
struct ConfigFile {
  std::string path; // empty when no file was found
  std::map<std::string, ConfigEntry> values;

  std::optional<std::string> get(const std::string &key) const;
  // "PATH:LINE" of a key the file sets.
  std::string where(const std::string &key) const;
};

// Parses the text of a config file. Throws ConfigError "config file
// PATH:LINE: ..." for a line that is not `key = value`, an unknown key (with
// a suggestion), a key given twice, an empty value or an unterminated quote.
// Values are checked by the command line's settings (cli/settings.cpp).
ConfigFile parse_config(const std::string &text, const std::string &path);

// Loads the config file: `explicit_path` (from --config or DLOCK_CONFIG) must
// exist and be readable; otherwise the first of ~/.config/dlock/config
// ($XDG_CONFIG_HOME honoured) and /etc/dlock/config that exists is read. At
// most 64 KiB.
ConfigFile load_config(const std::optional<std::string> &explicit_path);

} // namespace dlock
