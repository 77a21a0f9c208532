#include "cli/context.hpp"

#include "backend/registry.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/name.hpp"
#include "core/url.hpp"
#include "runner/keeper.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

namespace dlock::cli {

namespace {

std::optional<std::string> env(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

// flag > environment > config file > default
std::string pick(const std::optional<std::string> &flag, const char *env_name, const ConfigFile &config,
                 const char *key, const std::string &fallback) {
  if (flag) return *flag;
  if (env_name)
    if (auto value = env(env_name)) return *value;
  if (auto value = config.get(key)) return *value;
  return fallback;
}

// A bad value in the config file is a configuration error (78), a bad flag a
// usage error (64).
template <typename Parse> auto parse_setting(bool from_config, const ConfigFile &config, Parse parse) {
  try {
    return parse();
  } catch (const UsageError &failure) {
    if (!from_config) throw;
    throw ConfigError(fmt::format("config file {}: {}", config.path, failure.what()));
  }
}

std::string read_password_file(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(errno_message(fmt::format("cannot read password file {}", path), errno));
  std::string password;
  std::getline(in, password);
  while (!password.empty() && (password.back() == '\r' || password.back() == '\n'))
    password.pop_back();
  return password;
}

} // namespace

Settings Context::settings() const {
  Settings settings;
  settings.quiet = global.quiet;
  settings.config = load_config(global.config ? global.config : env("DLOCK_CONFIG"));
  const ConfigFile &config = settings.config;

  std::string url_text = pick(global.backend, "DLOCK_BACKEND", config, "backend", "file:");
  settings.backend.url = parse_url(url_text);
  backend::find_backend(settings.backend.url.scheme); // unknown scheme: 78 now, before anything else

  settings.backend.lock_namespace = pick(global.lock_namespace, "DLOCK_NAMESPACE", config, "namespace", "dlock");
  bool ns_from_config = !global.lock_namespace && !env("DLOCK_NAMESPACE") && config.get("namespace");
  parse_setting(ns_from_config, config, [&] {
    validate_name(settings.backend.lock_namespace, "namespace");
    return 0;
  });

  bool timeout_from_config = !global.connect_timeout && config.get("connect_timeout");
  std::string timeout_text = pick(global.connect_timeout, nullptr, config, "connect_timeout", "2s");
  settings.backend.connect_timeout =
      parse_setting(timeout_from_config, config, [&] { return parse_duration(timeout_text, "--connect-timeout"); });
  if (settings.backend.connect_timeout.count() <= 0) throw UsageError("--connect-timeout must be greater than zero");

  if (global.password_file)
    settings.backend.password = read_password_file(*global.password_file);
  else if (auto password = env("DLOCK_PASSWORD"))
    settings.backend.password = password;
  settings.backend.verbose = global.verbose;
  return settings;
}

Millis resolve_ttl(const std::optional<std::string> &flag, const Settings &settings) {
  bool from_config = !flag && settings.config.get("ttl");
  std::string text = pick(flag, nullptr, settings.config, "ttl", "30s");
  Millis ttl = parse_setting(from_config, settings.config, [&] { return parse_duration(text, "--ttl"); });
  if (ttl < Millis(100)) {
    std::string message = fmt::format("--ttl {} is too short: the lease must be at least 100ms", text);
    if (from_config) throw ConfigError(fmt::format("config file {}: {}", settings.config.path, message));
    throw UsageError(message);
  }
  return ttl;
}

std::optional<Millis> resolve_wait(const std::optional<std::string> &flag, const Settings &settings) {
  bool from_config = !flag && settings.config.get("wait");
  std::string text = pick(flag, nullptr, settings.config, "wait", "0");
  return parse_setting(from_config, settings.config, [&] { return parse_wait(text, "--wait"); });
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

std::unique_ptr<backend::Backend> open_backend(const Settings &settings) {
  return backend::create_backend(settings.backend);
}

bool session_bound(const Settings &settings) {
  return backend::find_backend(settings.backend.url.scheme).session_bound;
}

bool held_by_keeper(const std::string &token, const Settings &settings) {
  return runner::is_keeper_token(token) || session_bound(settings);
}

std::string resolve_token(Context &context, const std::optional<std::string> &argument) {
  std::string token;
  if (argument && *argument == "-") {
    if (!std::getline(std::cin, token)) throw UsageError("no token on standard input");
  } else if (argument) {
    token = *argument;
    for (int i = 1; i < context.argc; ++i)
      if (token == context.argv[i]) std::memset(context.argv[i], 'x', token.size());
  } else if (auto from_env = env("DLOCK_TOKEN")) {
    token = *from_env;
  } else {
    throw UsageError("no token: give TOKEN, '-' to read it from stdin, or set DLOCK_TOKEN");
  }
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
    token.pop_back();
  if (token.empty() || token.size() > 256 || token.find_first_of(" \t\n") != std::string::npos)
    throw UsageError("malformed token");
  return token;
}

void setup_global(CLI::App &app, Context &context) {
  GlobalOptions &g = context.global;
  app.add_option("-b,--backend", g.backend,
                 "Where locks live: file:, file:///DIR, redis://..., redlock://..., zk://..., etcd://..., "
                 "postgres://... [env DLOCK_BACKEND]")
      ->type_name("URL");
  app.add_option("--namespace", g.lock_namespace,
                 "Isolates applications sharing one backend [env DLOCK_NAMESPACE, default dlock]")
      ->type_name("NS");
  app.add_option("--config", g.config,
                 "Config file [env DLOCK_CONFIG, default ~/.config/dlock/config, then /etc/dlock/config]")
      ->type_name("FILE");
  app.add_option("--password-file", g.password_file, "Read the backend password from FILE [env DLOCK_PASSWORD]")
      ->type_name("FILE");
  app.add_option("--connect-timeout", g.connect_timeout, "Bound on connecting and on every round trip [default 2s]")
      ->type_name("D");
  // A global option given twice takes the last value, so a wrapper or alias
  // that passes a default can be overridden.
  for (CLI::Option *option : app.get_options())
    if (option->get_type_size() == 1 && option->get_expected_min() == 1)
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("-q,--quiet", g.quiet, "No message when the lock is busy");
  app.add_flag("-v,--verbose", g.verbose, "Timings and renewals; repeat for more");
}

} // namespace dlock::cli
