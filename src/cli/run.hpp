#pragma once

#include "cli/context.hpp"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dlock::cli {

// What `dlock run` was given, before it is checked (run_run does that).
struct RunArguments {
  std::string name;
  std::vector<std::string> command;
  std::optional<std::string> shell_command;
  std::optional<std::string> ttl;
  std::optional<std::string> wait;
  std::optional<std::string> kill_after;
  std::optional<std::string> lost_kill_after;
  std::optional<std::string> max_runtime;
  std::optional<std::string> conflict_exit_code;
  std::optional<std::string> lost_exit_code;
  std::optional<std::string> min_hold;
  std::optional<std::string> if_unavailable;
  std::optional<std::string> log;
  std::optional<std::string> metrics_file;
  HoldOptions hold;

  bool operator==(const RunArguments &) const = default;
};

// run's own options (not NAME and COMMAND, nor the hold options, which
// acquire shares), in the order --help lists them.
std::span<const OptionRow<RunArguments>> run_option_rows();

// Makes `arguments` what context.action runs.
void use_run_arguments(Context &context, std::shared_ptr<RunArguments> arguments);

// The common command line of a `dlock run` (global options, run's options,
// NAME, COMMAND), parsed without building CLI11's definition, which costs
// more than the rest of a short run's own work (cli/quick_run.cpp). On
// success it sets context.global, context.run_arguments and
// context.action exactly as the full parser would and returns true. It
// returns false, changing nothing, for everything else: another
// subcommand, help, --version, any error, and the rarer forms (an option
// given twice, an empty value, a flag with "=VALUE"), which the full
// parser takes, so that they keep its behaviour and messages.
bool parse_run_quickly(const std::vector<std::string> &args, Context &context);

} // namespace dlock::cli
