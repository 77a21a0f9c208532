#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
class Formatter;
class Option;
} // namespace CLI

namespace dlock::cli {

// The positional named "command" makes a subcommand take COMMAND [ARG...]
// (run's): split_command_line() hands it every word from COMMAND on.
bool is_command_positional(const CLI::Option &option);

// The usage of a subcommand as its words are parsed, e.g.
// "dlock run [OPTIONS] NAME [--] COMMAND [ARG...]", derived from its
// positionals; subcommands with a second form (run -c, release --force)
// get it as a second line, "   or: ...".
std::string usage_text(const CLI::App &app);

// The help layout of dlock: usage lines as above, positionals by their
// metavariables (NAME, COMMAND [ARG...]), and in each subcommand's help the
// global options too, since they may stand after the subcommand word.
std::shared_ptr<CLI::Formatter> make_help_formatter();

} // namespace dlock::cli
