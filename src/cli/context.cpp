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

std::optional<std::string> env(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
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

void add_hold_options(CLI::App &command, HoldOptions &options) {
  command.add_option("--limit", options.limit, "A semaphore: at most N holders of NAME at once, each with a slot")
      ->type_name("N");
  command.add_flag("-s,--shared", options.shared, "A shared (read) lock: readers together, never with a writer");
  command.add_flag("-x,--exclusive", options.exclusive, "An exclusive (write) lock, the default");
}

} // namespace dlock::cli
