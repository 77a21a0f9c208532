#pragma once

#include <map>
#include <optional>
#include <string>

namespace dlock {

// The `key = value` configuration file. Known keys: backend, namespace, ttl,
// wait, connect_timeout. Lines starting with '#' and blank lines are ignored.
struct ConfigFile {
  std::string path; // empty when no file was found
  std::map<std::string, std::string> values;

  std::optional<std::string> get(const std::string &key) const;
};

// Parses the text of a config file; throws ConfigError naming path and line.
ConfigFile parse_config(const std::string &text, const std::string &path);

// Loads the config file: `explicit_path` (from --config or DLOCK_CONFIG) must
// exist and be readable; otherwise the first of ~/.config/dlock/config
// ($XDG_CONFIG_HOME honoured) and /etc/dlock/config that exists is read.
ConfigFile load_config(const std::optional<std::string> &explicit_path);

} // namespace dlock
