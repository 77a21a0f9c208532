#include "core/config.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dlock {

namespace {

constexpr std::array k_known_keys = {"backend", "namespace", "ttl", "wait", "connect_timeout"};

std::string trim(const std::string &text) {
  auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

std::optional<std::string> read_file(const std::string &path, bool must_exist) {
  std::ifstream in(path);
  if (!in) {
    int err = errno;
    if (!must_exist && err == ENOENT) return std::nullopt;
    throw ConfigError(errno_message(fmt::format("cannot read config file {}", path), err));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

std::optional<std::string> ConfigFile::get(const std::string &key) const {
  auto found = values.find(key);
  if (found == values.end()) return std::nullopt;
  return found->second;
}

ConfigFile parse_config(const std::string &text, const std::string &path) {
  ConfigFile config;
  config.path = path;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::string content = trim(line);
    if (content.empty() || content[0] == '#') continue;
    auto eq = content.find('=');
    if (eq == std::string::npos)
      throw ConfigError(fmt::format("config file {} line {}: expected 'key = value'", path, number));
    std::string key = trim(content.substr(0, eq));
    std::string value = trim(content.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    bool known = false;
    for (const char *candidate : k_known_keys)
      known = known || key == candidate;
    if (!known)
      throw ConfigError(fmt::format("config file {} line {}: unknown key '{}' (known: {})", path, number, key,
                                    fmt::join(k_known_keys, ", ")));
    config.values[key] = value;
  }
  return config;
}

ConfigFile load_config(const std::optional<std::string> &explicit_path) {
  if (explicit_path) {
    if (explicit_path->empty()) return {};
    return parse_config(*read_file(*explicit_path, true), *explicit_path);
  }
  std::string user_path;
  if (const char *xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg == '/')
    user_path = std::string(xdg) + "/dlock/config";
  else if (const char *home = std::getenv("HOME"); home && *home)
    user_path = std::string(home) + "/.config/dlock/config";
  for (const std::string &path : {user_path, std::string("/etc/dlock/config")}) {
    if (path.empty()) continue;
    if (auto text = read_file(path, false)) return parse_config(*text, path);
  }
  return {};
}

} // namespace dlock
