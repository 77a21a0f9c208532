#include "cli/cli_main.hpp"

#include "cli/command_words.hpp"
#include "cli/context.hpp"
#include "cli/doctor.hpp"
#include "cli/help.hpp"
#include "cli/run.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/url.hpp"
#include "runner/guard.hpp"

#include "cli/cli11.hpp"

#include "cli/streams.hpp"
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <string_view>
#include <unistd.h>

namespace dlock {

namespace {

constexpr const char *k_description =
    "dlock: distributed locks for shell scripts and cron.\n"
    "Runs a command under a lock on a backend (file:, redis, redlock, zk, postgres, etcd),\n"
    "renewing the lease and stopping the command before the lease can lapse.";

struct Command {
  const char *name;
  const char *summary;
  void (*setup)(CLI::App &, cli::Context &);
};

constexpr Command k_commands[] = {
    {"run", "Run a command while holding the lock NAME", &cli::setup_run},
    {"acquire", "Take the lock NAME and print its release token; it stays held until release or --ttl passes",
     &cli::setup_acquire},
    {"renew", "Extend the lease of a lock taken with acquire", &cli::setup_renew},
    {"release", "Release a lock taken with acquire (compare-and-delete), or break any holder's with --force",
     &cli::setup_release},
    {"status", "Show who holds NAME; exit 0 if held, 3 if free", &cli::setup_status},
    {"list", "One row per held lock whose name starts with PREFIX", &cli::setup_list},
    {"ping", "Check that the backend is reachable: version and round-trip time", &cli::setup_ping},
    {"doctor", "Check that the backend, as configured, can keep dlock's guarantees, and say what to change",
     &cli::setup_doctor},
    {"config", "Print the effective settings and where each came from; exit 78 if a config file has an error",
     &cli::setup_config},
    {"version", "Print the version and the backends this installation has", &cli::setup_version},
};

// Overwrites the password of a URL in an argument ("zk://u:secret@h",
// "--backend=redis://:secret@h") in place, so that ps and
// /proc/PID/cmdline of a long-lived dlock (a run, an acquire keeper) do
// not show it once the options are parsed.
void mask_url_password(char *argument) {
  char *authority = std::strstr(argument, "://");
  if (!authority) return;
  authority += 3;
  char *end = authority + std::strcspn(authority, "/?#");
  char *at = nullptr;
  for (char *c = authority; c < end; ++c)
    if (*c == '@') at = c;
  if (at)
    for (char *c = static_cast<char *>(std::memchr(authority, ':', static_cast<std::size_t>(at - authority)));
         c && ++c < at;)
      *c = '*';
  // And secret query options: "?password=...", "&sslpassword=...".
  for (char *option = std::strchr(end, '?'); option && *option; option += std::strcspn(option + 1, "&") + 1) {
    char *key = option + 1;
    char *equals = std::strchr(key, '=');
    if (!equals) break;
    char *value_end = equals + 1 + std::strcspn(equals + 1, "&#");
    if (is_secret_option(std::string_view(key, static_cast<std::size_t>(equals - key))))
      for (char *c = equals + 1; c < value_end; ++c)
        *c = '*';
  }
}

void ensure_standard_descriptors() {
  // Started with 0, 1 or 2 closed, our own pipes would take those numbers
  // and messages meant for stderr would land in them.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0 && null_fd != fd) {
      dup2(null_fd, fd);
      close(null_fd);
    }
  }
}

} // namespace

std::unique_ptr<CLI::App> cli::make_app(Context &context, bool &show_version, const std::vector<std::string> &args) {
  auto app = std::make_unique<CLI::App>(k_description, "dlock");
  // Before the subcommands are added: they inherit it.
  app->formatter(cli::make_help_formatter());
  app->fallthrough();
  app->require_subcommand(0, 1);
  app->add_flag("--version", show_version, "Print the version and the built-in backends");
  cli::setup_global(*app, context);
  // Building CLI11 options, and even an empty subcommand, is most of
  // dlock's own start-up work, so only the subcommands named somewhere in
  // argv are made, with their options. A subcommand that is given is
  // always named in argv, so parsing is unchanged. With none named, or
  // help asked for, the others are listed with their summary alone.
  auto named = [&](const char *word) { return std::find(args.begin(), args.end(), word) != args.end(); };
  bool all =
      std::none_of(std::begin(k_commands), std::end(k_commands), [&](const Command &c) { return named(c.name); });
  for (const char *help : {"-h", "--help", "--help-all"})
    all = all || named(help);
  for (const Command &command : k_commands) {
    if (!all && !named(command.name)) continue;
    CLI::App *sub = app->add_subcommand(command.name, command.summary);
    if (named(command.name)) command.setup(*sub, context);
  }
  return app;
}

std::vector<std::string> cli::command_names() {
  std::vector<std::string> names;
  for (const Command &command : k_commands)
    names.emplace_back(command.name);
  return names;
}

int cli_main(int argc, char **argv) {
  ensure_standard_descriptors();
  runner::ArgumentArea argument_area(argc, argv);
  cli::Context context;
  context.argc = argc;
  context.argv = argv;
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  bool show_version = false;
  std::unique_ptr<CLI::App> app; // built only if the quick parser of run leaves the command line to it
  // The standard streams (cli/streams.hpp), for every command but a run
  // that the quick parser took: run writes nothing through them.
  std::optional<std::ios_base::Init> standard_streams;
  try {
    try {
      if (!cli::parse_run_quickly(args, context)) {
        standard_streams.emplace();
        app = cli::make_app(context, show_version, args);
        // dlock decides which words are COMMAND's (and reports unknown
        // options and commands by name) before CLI11 sees the rest.
        cli::parse_command_line(*app, args, context);
      }
      for (int i = 1; i < argc; ++i)
        mask_url_password(argv[i]);
    } catch (const CLI::CallForHelp &) {
      // Help of the subcommand that asked for it, if any.
      const CLI::App *target = app.get();
      for (const CLI::App *sub : app->get_subcommands())
        target = sub;
      std::cout << target->help();
      return 0;
    } catch (const CLI::CallForAllHelp &) {
      std::cout << app->help("", CLI::AppFormatMode::All);
      return 0;
    } catch (const CLI::ParseError &failure) {
      // CLI11's own exit codes (100-127) would collide with 126/127.
      std::string help = "dlock";
      for (const CLI::App *sub : app->get_subcommands())
        help += " " + sub->get_name();
      say("{} (see {} --help)", failure.what(), help);
      return to_int(ExitCode::usage);
    }
    set_verbosity(context.global.quiet ? -1 : context.global.verbose);
    if (show_version) return cli::print_version();
    if (!context.action) {
      std::cout << app->help();
      return to_int(ExitCode::usage);
    }
    return context.action();
  } catch (const Error &failure) {
    say("{}", failure.what());
    return to_int(failure.code());
  } catch (const std::bad_alloc &) {
    say("out of memory");
    return to_int(ExitCode::internal);
  } catch (const std::exception &failure) {
    say("internal error: {}", failure.what());
    return to_int(ExitCode::internal);
  }
}

} // namespace dlock
