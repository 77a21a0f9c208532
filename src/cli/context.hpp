#pragma once

#include "backend/backend.hpp"
#include "core/config.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace dlock::cli {

template <typename Target> struct OptionRow; // cli/option_table.hpp
struct RunArguments;                         // cli/run.hpp

// Global options as given on the command line (before or after the
// subcommand); resolved against environment and config file by settings().
struct GlobalOptions {
  std::optional<std::string> backend;
  std::optional<std::string> lock_namespace;
  std::optional<std::string> config;
  std::optional<std::string> password_file;
  std::optional<std::string> connect_timeout;
  int verbose = 0;
  bool quiet = false;

  bool operator==(const GlobalOptions &) const = default;
};
// Their definitions, from which setup_global() builds them.
std::span<const OptionRow<GlobalOptions>> global_option_rows();

// A setting's value as shown and where it came from: "flag --backend",
// "environment DLOCK_BACKEND", "FILE:LINE" or "default".
struct Sourced {
  std::string text;
  std::string from;
};

// The effective settings (cli/settings.cpp). Precedence: flag >
// environment > config file > default.
struct Settings {
  backend::BackendConfig backend;
  ConfigFile config;
  bool quiet = false;
  // The config file's defaults for options of run and acquire.
  std::optional<Millis> config_ttl;
  std::optional<std::optional<Millis>> config_wait; // inner nullopt: forever
  std::optional<Millis> max_runtime;
  Millis kill_after{5000};
  int conflict_exit_code = 75;
  int lost_exit_code = 76;
  std::optional<std::string> log;          // run's --log TARGET
  std::optional<std::string> metrics_file; // run's --metrics-file FILE
  // Every setting, for `dlock config`, in the order shown (no secret).
  std::vector<std::pair<std::string, Sourced>> sources;
};

struct Context {
  GlobalOptions global;
  std::function<int()> action;                 // set by the subcommand that was given
  std::shared_ptr<RunArguments> run_arguments; // run's, when run was given
  int argc = 0;
  char **argv = nullptr;

  Settings settings() const;
};

// The environment variable `name`, or nullopt if it is unset or empty.
std::optional<std::string> env(const char *name);

// Per-command options that fall back to the config file: ttl and wait
// (flags' bad values are usage errors, 64; the file's were checked by
// settings(), 78).
Millis resolve_ttl(const std::optional<std::string> &flag, const Settings &settings);
std::optional<Millis> resolve_wait(const std::optional<std::string> &flag, const Settings &settings);
int parse_exit_code(const std::optional<std::string> &text, int fallback, std::string_view option);

// --limit N, -s/--shared and -x/--exclusive (the default, as flock(1)'s
// -x) of run and acquire, and what they ask for, into `request` (usage
// error, 64, for a bad N or two of them at once).
struct HoldOptions {
  std::optional<std::string> limit;
  bool shared = false;
  bool exclusive = false;

  bool operator==(const HoldOptions &) const = default;
};
std::span<const OptionRow<HoldOptions>> hold_option_rows();
void add_hold_options(CLI::App &command, HoldOptions &options);
void apply_hold_options(const HoldOptions &options, backend::LockRequest &request);

// The backend for the settings.
std::unique_ptr<backend::Backend> open_backend(const Settings &settings);
bool session_bound(const Settings &settings);

// renew/release of this token go to the acquire keeper that holds the lock
// (session-bound backends), not to the backend itself.
bool held_by_keeper(const std::string &token, const Settings &settings);

// TOKEN from the argument, "-" (one line of stdin) or $DLOCK_TOKEN. The
// argument's bytes in argv are overwritten so that `ps` does not show it
// for longer than the start of the process.
std::string resolve_token(Context &context, const std::optional<std::string> &argument);

void setup_global(CLI::App &app, Context &context);
// Each adds its options and positionals to the subcommand `sub` and sets
// context.action when the subcommand is given.
void setup_run(CLI::App &sub, Context &context);
void setup_acquire(CLI::App &sub, Context &context);
void setup_renew(CLI::App &sub, Context &context);
void setup_release(CLI::App &sub, Context &context);
void setup_status(CLI::App &sub, Context &context);
void setup_list(CLI::App &sub, Context &context);
void setup_ping(CLI::App &sub, Context &context);
void setup_version(CLI::App &sub, Context &context);
void setup_config(CLI::App &sub, Context &context);

int print_version();

// dlock's command line definition, as cli_main parses it: global options,
// and the subcommands named in `args`, with their options (building the
// others' is start-up work for nothing); every subcommand, the others
// with their summary alone, when none is named or help is asked for.
std::unique_ptr<CLI::App> make_app(Context &context, bool &show_version, const std::vector<std::string> &args);
// The names of every subcommand, in the order --help lists them.
std::vector<std::string> command_names();

} // namespace dlock::cli
