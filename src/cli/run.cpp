#include "cli/run.hpp"

#include "cli/option_table.hpp"
#include "core/error.hpp"
#include "core/name.hpp"
#include "runner/event_log.hpp"
#include "runner/metrics_file.hpp"
#include "runner/runner.hpp"

#include "cli/cli11.hpp"
#include <fmt/format.h>
#include <unistd.h>

namespace dlock::cli {

namespace {

int run_run(const RunArguments &args, Context &context) {
  validate_name(args.name);
  if (args.shell_command && !args.command.empty())
    throw UsageError(fmt::format("-c takes the whole SHELL COMMAND as one word, and COMMAND '{}' was given too: "
                                 "give either -c 'SHELL COMMAND' or COMMAND [ARG...], not both",
                                 args.command.front()));
  if (!args.shell_command && args.command.empty())
    throw UsageError(
        "no command: dlock run [OPTIONS] NAME [--] COMMAND [ARG...] or dlock run [OPTIONS] NAME -c 'SHELL COMMAND'");
  Settings settings = context.settings();
  runner::RunOptions options;
  options.request.name = args.name;
  options.request.ttl = resolve_ttl(args.ttl, settings);
  apply_hold_options(args.hold, options.request);
  options.wait = resolve_wait(args.wait, settings);
  options.command = args.shell_command ? std::vector<std::string>{"/bin/sh", "-c", *args.shell_command} : args.command;
  options.kill_after = args.kill_after ? parse_duration(*args.kill_after, "--kill-after") : settings.kill_after;
  if (args.lost_kill_after) options.lost_kill_after = parse_duration(*args.lost_kill_after, "--lost-kill-after");
  options.max_runtime = settings.max_runtime;
  if (args.max_runtime) {
    options.max_runtime = parse_duration(*args.max_runtime, "--max-runtime");
    if (options.max_runtime->count() <= 0) throw UsageError("--max-runtime must be greater than zero");
  }
  options.conflict_exit_code =
      parse_exit_code(args.conflict_exit_code, settings.conflict_exit_code, "--conflict-exit-code");
  options.lost_exit_code = parse_exit_code(args.lost_exit_code, settings.lost_exit_code, "--lost-exit-code");
  if (args.min_hold) {
    options.min_hold = parse_duration(*args.min_hold, "--min-hold");
    if (options.min_hold->count() <= 0) throw UsageError("--min-hold must be greater than zero");
  }
  if (args.if_unavailable) {
    const std::string &policy = *args.if_unavailable;
    if (policy == "run")
      options.if_unavailable = runner::RunOptions::IfUnavailable::run;
    else if (policy == "skip")
      options.if_unavailable = runner::RunOptions::IfUnavailable::skip;
    else if (policy != "fail")
      throw UsageError(fmt::format("--if-unavailable takes fail, run or skip, not '{}'", policy));
  }
  options.yield_after_release = true;
  options.quiet = settings.quiet;
  options.public_backend_url = settings.backend.url.without_credentials();
  options.request.holder = {host_name(), getpid(), user_name(), join_command(options.command),
                            std::chrono::system_clock::now()};
  // Opened before the lock, so that a bad --log fails nothing later.
  runner::EventSinks events;
  runner::EventOrigin origin{settings.backend.lock_namespace, options.public_backend_url, options.request.holder.host,
                             static_cast<long>(getpid())};
  if (auto log = args.log ? args.log : settings.log)
    events.add(runner::open_event_log(runner::parse_log_target(*log), origin));
  if (auto file = args.metrics_file ? args.metrics_file : settings.metrics_file)
    events.add(std::make_unique<runner::MetricsFile>(*file, settings.backend.lock_namespace));
  if (!events.empty()) options.events = &events;
  std::unique_ptr<backend::Backend> backend;
  try {
    backend = open_backend(settings);
  } catch (const Error &failure) {
    if (failure.code() != ExitCode::unavailable) throw;
    return runner::run_unavailable(options, failure, Millis(0));
  }
  return runner::run_locked(*backend, options);
}

constexpr OptionRow<RunArguments> k_run_options[] = {
    {.names = "-c",
     .type_name = "'SHELL COMMAND'",
     .description = "Run SHELL COMMAND via /bin/sh -c",
     .value = &RunArguments::shell_command},
    {.names = "-t,--ttl",
     .type_name = "D",
     .description = "Lease length; renewed every ttl/3 [default 30s]",
     .value = &RunArguments::ttl},
    {.names = "-w,--wait",
     .type_name = "D",
     .description = "How long to wait for the lock: 0 = one attempt, or 'forever' [default 0]",
     .value = &RunArguments::wait},
    {.names = "--kill-after",
     .type_name = "D",
     .description = "Grace between SIGTERM and SIGKILL when stopping the job [default 5s]",
     .value = &RunArguments::kill_after},
    {.names = "--lost-kill-after",
     .type_name = "D",
     .description = "Grace between SIGTERM and SIGKILL after a confirmed lock loss, at most --kill-after [default 1s]",
     .value = &RunArguments::lost_kill_after},
    {.names = "--max-runtime",
     .type_name = "D",
     .description = "Stop the job after D and exit 124",
     .value = &RunArguments::max_runtime},
    {.names = "-E,--conflict-exit-code",
     .type_name = "N",
     .description = "Exit status when the lock is busy [default 75]",
     .value = &RunArguments::conflict_exit_code},
    {.names = "--lost-exit-code",
     .type_name = "N",
     .description = "Exit status when the lock is lost [default 76]",
     .value = &RunArguments::lost_exit_code},
    {.names = "--min-hold",
     .type_name = "D",
     .description = "Keep the lock at least D after taking it, however soon the job ends (cron on hosts whose clocks "
                    "differ)",
     .value = &RunArguments::min_hold},
    {.names = "--if-unavailable",
     .type_name = "fail|run|skip",
     .description = "When the backend cannot be reached: fail (exit 69), run the job WITHOUT the lock, or skip it "
                    "(exit as busy) [default fail]",
     .value = &RunArguments::if_unavailable},
    {.names = "--log",
     .type_name = "TARGET",
     .description = "Record each event (acquired, busy, lost, released, ...) to stderr, syslog, "
                    "journal or a FILE (JSON lines)",
     .value = &RunArguments::log},
    {.names = "--metrics-file",
     .type_name = "FILE",
     .description = "Keep per-lock figures in FILE, Prometheus text format (node_exporter's textfile collector)",
     .value = &RunArguments::metrics_file},
};

} // namespace

std::span<const OptionRow<RunArguments>> run_option_rows() { return k_run_options; }

void use_run_arguments(Context &context, std::shared_ptr<RunArguments> arguments) {
  context.run_arguments = std::move(arguments);
  context.action = [&context] { return run_run(*context.run_arguments, context); };
}

void setup_run(CLI::App &run, Context &context) {
  auto args = std::make_shared<RunArguments>();
  run.add_option("name", args->name, "Lock name")->required()->type_name("NAME");
  // The positional named "command" makes split_command_line() hand every
  // word from COMMAND on to it, options or not.
  run.add_option("command", args->command,
                 "The job: the first word after NAME that is not one of the options below starts it")
      ->type_name("COMMAND");
  add_option_rows(run, run_option_rows(), *args);
  add_hold_options(run, args->hold);
  run.footer("After NAME, the first word that is not an option of run (or a global option) starts COMMAND,\n"
             "and every word after it is COMMAND's, as with flock(1), env(1), timeout(1) and sudo(8):\n"
             "'dlock run x echo -v hi' prints '-v hi'. '--' before COMMAND is allowed, never needed;\n"
             "a COMMAND whose first word starts with a dash needs it.");
  run.callback([args, &context] { use_run_arguments(context, args); });
}

} // namespace dlock::cli
