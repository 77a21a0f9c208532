#include "core/config.hpp"

#include "core/error.hpp"
#include "core/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace dlock {

namespace {

constexpr std::size_t k_max_config_size = 64 * 1024;

std::string trim(const std::string &text) {
  auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// At most k_max_config_size bytes of a regular file; nullopt when it does
// not exist and need not.
std::optional<std::string> read_file(const std::string &path, bool must_exist) {
  auto failed = [&](int err) {
    return ConfigError(errno_message(fmt::format("cannot read config file {}", path), err));
  };
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (!must_exist && errno == ENOENT) return std::nullopt;
    throw failed(errno);
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    int err = errno;
    close(fd);
    if (!S_ISREG(info.st_mode)) throw ConfigError(fmt::format("config file {} is not a regular file", path));
    throw failed(err);
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      throw failed(err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > k_max_config_size) {
      close(fd);
      throw ConfigError(fmt::format("config file {} is larger than 64 KiB", path));
    }
  }
  close(fd);
  return text;
}

// The value after '=': quoted (taken as it is), or up to a comment.
std::string value_of(const std::string &raw, const std::string &where) {
  std::string text = trim(raw);
  if (!text.empty() && (text.front() == '"' || text.front() == '\'')) {
    auto close = text.find(text.front(), 1);
    if (close == std::string::npos) throw ConfigError(fmt::format("config file {}: unterminated quote", where));
    std::string rest = trim(text.substr(close + 1));
    if (!rest.empty() && rest.front() != '#')
      throw ConfigError(fmt::format("config file {}: text after the closing quote: '{}'", where, rest));
    return text.substr(1, close - 1);
  }
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      text = trim(text.substr(0, i));
      break;
    }
  return text;
}

} // namespace

std::optional<std::string> ConfigFile::get(const std::string &key) const {
  auto found = values.find(key);
  if (found == values.end()) return std::nullopt;
  return found->second.value;
}

std::string ConfigFile::where(const std::string &key) const {
  auto found = values.find(key);
  return fmt::format("{}:{}", path, found == values.end() ? 0 : found->second.line);
}

ConfigFile parse_config(const std::string &text, const std::string &path) {
  ConfigFile config;
  config.path = path;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const std::string where = fmt::format("{}:{}", path, number);
    std::string content = trim(line);
    if (content.empty() || content[0] == '#') continue;
    auto eq = content.find('=');
    if (eq == std::string::npos) throw ConfigError(fmt::format("config file {}: expected 'key = value'", where));
    std::string key = trim(content.substr(0, eq));
    if (std::find_if(k_config_keys.begin(), k_config_keys.end(), [&](const char *known) { return key == known; }) ==
        k_config_keys.end()) {
      std::string near = closest_word(key, k_config_keys);
      throw ConfigError(fmt::format("config file {}: unknown key '{}'{}", where, key,
                                    near.empty() ? fmt::format(" (known: {})", fmt::join(k_config_keys, ", "))
                                                 : fmt::format(" (did you mean '{}'?)", near)));
    }
    std::string value = value_of(content.substr(eq + 1), where);
    if (value.empty()) throw ConfigError(fmt::format("config file {}: {} has no value", where, key));
    if (auto earlier = config.values.find(key); earlier != config.values.end())
      throw ConfigError(
          fmt::format("config file {}: {} is set twice (first on line {})", where, key, earlier->second.line));
    config.values[key] = {value, number};
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
