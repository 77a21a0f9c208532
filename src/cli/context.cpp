#include "cli/context.hpp"
#include "cli/option_table.hpp"

#include "backend/registry.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/name.hpp"
#include "core/url.hpp"
#include "runner/keeper.hpp"

#include "cli/cli11.hpp"
#include <fmt/format.h>

#include "cli/streams.hpp"
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

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

namespace {

constexpr OptionRow<GlobalOptions> k_global_options[] = {
    {.names = "-b,--backend",
     .type_name = "URL",
     .description = "Where locks live: file:, file:///DIR, redis://..., redlock://..., zk://..., etcd://..., "
                    "postgres://... [env DLOCK_BACKEND]",
     .value = &GlobalOptions::backend},
    {.names = "--namespace",
     .type_name = "NS",
     .description = "Isolates applications sharing one backend [env DLOCK_NAMESPACE, default dlock]",
     .value = &GlobalOptions::lock_namespace},
    {.names = "--config",
     .type_name = "FILE",
     .description = "Config file [env DLOCK_CONFIG, default ~/.config/dlock/config, then /etc/dlock/config]",
     .value = &GlobalOptions::config},
    {.names = "--password-file",
     .type_name = "FILE",
     .description = "Read the backend password from FILE [env DLOCK_PASSWORD]",
     .value = &GlobalOptions::password_file},
    {.names = "--connect-timeout",
     .type_name = "D",
     .description = "Bound on connecting and on every round trip [default 2s]",
     .value = &GlobalOptions::connect_timeout},
    {.names = "-q,--quiet",
     .type_name = nullptr,
     .description = "No message when the lock is busy",
     .flag = &GlobalOptions::quiet},
    {.names = "-v,--verbose",
     .type_name = nullptr,
     .description = "Timings and renewals; repeat for more",
     .count = &GlobalOptions::verbose},
};

constexpr OptionRow<HoldOptions> k_hold_options[] = {
    {.names = "--limit",
     .type_name = "N",
     .description = "A semaphore: at most N holders of NAME at once, each with a slot",
     .value = &HoldOptions::limit},
    {.names = "-s,--shared",
     .type_name = nullptr,
     .description = "A shared (read) lock: readers together, never with a writer",
     .flag = &HoldOptions::shared},
    {.names = "-x,--exclusive",
     .type_name = nullptr,
     .description = "An exclusive (write) lock, the default",
     .flag = &HoldOptions::exclusive},
};

} // namespace

std::span<const OptionRow<GlobalOptions>> global_option_rows() { return k_global_options; }

std::span<const OptionRow<HoldOptions>> hold_option_rows() { return k_hold_options; }

void setup_global(CLI::App &app, Context &context) {
  add_option_rows(app, global_option_rows(), context.global);
  // A global option given twice takes the last value, so a wrapper or alias
  // that passes a default can be overridden.
  for (CLI::Option *option : app.get_options())
    if (option->get_type_size() == 1 && option->get_expected_min() == 1)
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_hold_options(CLI::App &command, HoldOptions &options) {
  add_option_rows(command, hold_option_rows(), options);
}

bool names_match(std::string_view names, std::string_view spelling) {
  while (!names.empty()) {
    std::size_t comma = names.find(',');
    if (names.substr(0, comma) == spelling) return true;
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
  }
  return false;
}

} // namespace dlock::cli
