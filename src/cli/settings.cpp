// The effective settings: flag > environment > config file > default, with
// where each came from (dlock config). Every value the config file sets is
// checked whatever the command, so that `dlock ping` (or `dlock config`)
// finds a bad `ttl` before cron's `dlock run` does.
#include "cli/context.hpp"

#include "backend/registry.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/name.hpp"
#include "core/unique_fd.hpp"
#include "core/url.hpp"
#include "runner/event_log.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dlock::cli {

namespace {

constexpr std::size_t k_max_password = 4096;

// The first line of a password file: a regular, non-empty file of at most
// 4 KiB. One that others may read still works, with a warning.
std::string read_password_file(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) throw ConfigError(errno_message(fmt::format("cannot read password file {}", path), errno));
  UniqueFd guard(fd);
  struct stat info {};
  if (fstat(fd, &info) != 0) throw ConfigError(errno_message(fmt::format("cannot read password file {}", path), errno));
  if (!S_ISREG(info.st_mode)) throw ConfigError(fmt::format("password file {} is not a regular file", path));
  char buffer[k_max_password + 1];
  ssize_t n;
  do {
    n = read(fd, buffer, sizeof buffer);
  } while (n < 0 && errno == EINTR);
  if (n < 0) throw ConfigError(errno_message(fmt::format("cannot read password file {}", path), errno));
  if (static_cast<std::size_t>(n) > k_max_password)
    throw ConfigError(fmt::format("password file {} is larger than 4 KiB", path));
  std::string password(buffer, static_cast<std::size_t>(n));
  password = password.substr(0, password.find('\n'));
  while (!password.empty() && password.back() == '\r')
    password.pop_back();
  if (password.empty())
    throw ConfigError(fmt::format("password file {} is empty: its first line is the password", path));
  if (info.st_mode & 0044)
    say("warning: password file {} can be read by {} (mode {:04o}): chmod go-r {}", path,
        info.st_mode & 0004 ? "everybody" : "its group", info.st_mode & 07777, path);
  return password;
}

// true/false, yes/no, on/off, 1/0; false if `text` is none of them.
bool parse_bool(const std::string &text, bool &out) {
  for (const char *yes : {"true", "yes", "on", "1"})
    if (text == yes) {
      out = true;
      return true;
    }
  for (const char *no : {"false", "no", "off", "0"})
    if (text == no) {
      out = false;
      return true;
    }
  return false;
}

// A config value that does not parse: 78 naming FILE:LINE and the key.
template <typename Check> void check_value(const ConfigFile &config, const char *key, Check check) {
  auto value = config.get(key);
  if (!value) return;
  try {
    check(*value);
  } catch (const Error &failure) {
    throw ConfigError(fmt::format("config file {}: {}: {}", config.where(key), key, failure.what()));
  }
}

Millis positive_duration(const std::string &text, std::string_view what) {
  Millis value = parse_duration(text, what);
  if (value.count() <= 0) throw UsageError(fmt::format("{} must be greater than zero", what));
  return value;
}

Millis ttl_duration(const std::string &text, std::string_view what) {
  Millis ttl = parse_duration(text, what);
  if (ttl < Millis(100))
    throw UsageError(fmt::format("{} {} is too short: the lease must be at least 100ms", what, text));
  return ttl;
}

// Parses every value the file sets into `settings` (the file's defaults).
void check_config(const ConfigFile &config, Settings &settings) {
  check_value(config, "backend", [](const std::string &text) { backend::find_backend(parse_url(text).scheme); });
  check_value(config, "namespace", [](const std::string &text) { validate_name(text, "namespace"); });
  check_value(config, "ttl", [&](const std::string &text) { settings.config_ttl = ttl_duration(text, "ttl"); });
  check_value(config, "wait", [&](const std::string &text) { settings.config_wait = parse_wait(text, "wait"); });
  check_value(config, "connect_timeout", [](const std::string &text) { positive_duration(text, "connect_timeout"); });
  check_value(config, "password_file",
              [&](const std::string &text) { settings.backend.password = read_password_file(text); });
  check_value(config, "max_runtime",
              [&](const std::string &text) { settings.max_runtime = positive_duration(text, "max_runtime"); });
  check_value(config, "kill_after",
              [&](const std::string &text) { settings.kill_after = parse_duration(text, "kill_after"); });
  check_value(config, "conflict_exit_code", [&](const std::string &text) {
    settings.conflict_exit_code = parse_exit_code(text, 75, "conflict_exit_code");
  });
  check_value(config, "lost_exit_code",
              [&](const std::string &text) { settings.lost_exit_code = parse_exit_code(text, 76, "lost_exit_code"); });
  check_value(config, "log", [&](const std::string &text) {
    runner::parse_log_target(text);
    settings.log = text;
  });
  check_value(config, "metrics_file", [&](const std::string &text) { settings.metrics_file = text; });
  check_value(config, "quiet", [&](const std::string &text) {
    if (!parse_bool(text, settings.quiet))
      throw UsageError(fmt::format("'{}' is not true or false (yes/no, on/off, 1/0)", text));
  });
}

} // namespace

Settings Context::settings() const {
  Settings settings;
  Sourced config_path{"", "default"};
  if (global.config)
    config_path = {*global.config, "flag --config"};
  else if (auto from_env = env("DLOCK_CONFIG"))
    config_path = {*from_env, "environment DLOCK_CONFIG"};
  settings.config = load_config(config_path.from == "default" ? std::nullopt : std::optional(config_path.text));
  const ConfigFile &config = settings.config;
  detail(1, "config file: {}", config.path.empty() ? "none" : config.path);
  settings.sources.push_back({"config file", {config.path.empty() ? "none" : config.path, config_path.from}});
  check_config(config, settings);

  auto pick = [&](const char *key, const std::optional<std::string> &flag, const char *flag_name, const char *env_name,
                  const std::string &fallback) -> Sourced {
    if (flag) return {*flag, fmt::format("flag {}", flag_name)};
    if (env_name)
      if (auto value = env(env_name)) return {*value, fmt::format("environment {}", env_name)};
    if (auto value = config.get(key)) return {*value, config.where(key)};
    return {fallback, "default"};
  };

  Sourced url = pick("backend", global.backend, "--backend", "DLOCK_BACKEND", "file:");
  settings.backend.url = parse_url(url.text);
  backend::find_backend(settings.backend.url.scheme); // unknown scheme: 78 now, before anything else
  settings.sources.push_back({"backend", {settings.backend.url.redacted(), url.from}});

  Sourced ns = pick("namespace", global.lock_namespace, "--namespace", "DLOCK_NAMESPACE", "dlock");
  validate_name(ns.text, "namespace");
  settings.backend.lock_namespace = ns.text;
  settings.sources.push_back({"namespace", ns});

  Sourced timeout = pick("connect_timeout", global.connect_timeout, "--connect-timeout", nullptr, "2s");
  settings.backend.connect_timeout = positive_duration(timeout.text, "--connect-timeout");
  settings.sources.push_back({"connect_timeout", timeout});

  // The file's password_file was read by check_config (once: it may warn),
  // and is what counts unless the flag or the environment gives another.
  Sourced password{"none", "default"};
  if (auto file = config.get("password_file")) password = {"from " + *file, config.where("password_file")};
  if (global.password_file) {
    settings.backend.password = read_password_file(*global.password_file);
    password = {"from " + *global.password_file, "flag --password-file"};
  } else if (auto from_env = env("DLOCK_PASSWORD")) {
    settings.backend.password = from_env;
    password = {"set", "environment DLOCK_PASSWORD"};
  }
  settings.sources.push_back({"password", password});

  auto from_config = [&](const char *key, const std::string &fallback) -> Sourced {
    if (auto value = config.get(key)) return {*value, config.where(key)};
    return {fallback, "default"};
  };
  settings.sources.push_back({"ttl", from_config("ttl", "30s")});
  settings.sources.push_back({"wait", from_config("wait", "0")});
  settings.sources.push_back({"max_runtime", from_config("max_runtime", "none")});
  settings.sources.push_back({"kill_after", from_config("kill_after", "5s")});
  settings.sources.push_back({"conflict_exit_code", from_config("conflict_exit_code", "75")});
  settings.sources.push_back({"lost_exit_code", from_config("lost_exit_code", "76")});
  settings.sources.push_back({"log", from_config("log", "none")});
  settings.sources.push_back({"metrics_file", from_config("metrics_file", "none")});

  // -q always; the file's quiet unless -v asks for more.
  if (global.quiet)
    settings.sources.push_back({"quiet", {"true", "flag --quiet"}});
  else if (config.get("quiet") && global.verbose == 0)
    settings.sources.push_back({"quiet", {settings.quiet ? "true" : "false", config.where("quiet")}});
  else
    settings.sources.push_back({"quiet", {"false", global.verbose ? "flag --verbose" : "default"}});
  settings.quiet = global.quiet || (settings.quiet && global.verbose == 0);
  if (settings.quiet) set_verbosity(-1);
  settings.backend.verbose = global.verbose;
  return settings;
}

Millis resolve_ttl(const std::optional<std::string> &flag, const Settings &settings) {
  if (flag) return ttl_duration(*flag, "--ttl");
  return settings.config_ttl.value_or(Millis(30000));
}

std::optional<Millis> resolve_wait(const std::optional<std::string> &flag, const Settings &settings) {
  if (flag) return parse_wait(*flag, "--wait");
  return settings.config_wait ? *settings.config_wait : std::optional<Millis>(Millis(0));
}

int parse_exit_code(const std::optional<std::string> &text, int fallback, std::string_view option) {
  if (!text) return fallback;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno != 0 || value < 0 || value > 255)
    throw UsageError(fmt::format("{} takes an exit status from 0 to 255, not '{}'", option, *text));
  return static_cast<int>(value);
}

void apply_hold_options(const HoldOptions &options, backend::LockRequest &request) {
  const std::optional<std::string> &limit = options.limit;
  if (int(limit.has_value()) + int(options.shared) + int(options.exclusive) > 1)
    throw UsageError(fmt::format("{} and {} do not go together: --limit N lets N holders in, --shared any number of "
                                 "readers while no writer holds the lock, --exclusive one holder",
                                 limit ? "--limit" : "--shared", options.exclusive ? "--exclusive" : "--shared"));
  if (options.shared) request.mode = backend::HoldMode::shared;
  if (!limit) return;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(limit->c_str(), &end, 10);
  if (limit->empty() || *end != '\0' || errno != 0 || value < 1 || value > static_cast<long>(backend::max_limit))
    throw UsageError(
        fmt::format("--limit takes a number of holders from 1 to {}, not '{}'", backend::max_limit, *limit));
  request.mode = backend::HoldMode::semaphore;
  request.limit = static_cast<unsigned>(value);
}

} // namespace dlock::cli
