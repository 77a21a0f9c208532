#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace dlock::cli {

// The command line after dlock has decided which words are its own.
// `words` is what CLI11 parses: the subcommand, every option in a form that
// CLI11 cannot misread ("--ttl=5s", "-c" VALUE), then "--" and the
// positionals (NAME, then COMMAND [ARG...] of run) so that none of them can
// be taken for an option. `command` is COMMAND [ARG...] alone, verbatim.
struct CommandLine {
  std::vector<std::string> words;
  std::vector<std::string> command;
  bool help = false; // -h/--help given before COMMAND: words are the arguments unchanged
};

// Splits the arguments (argv without argv[0]) the way flock(1), env(1),
// timeout(1) and sudo(8) do: for a subcommand with a positional named
// "command" (run), the first word after NAME that is not an option starts
// COMMAND, and it and every word after it are COMMAND's, whatever they look
// like. Before that, options of the subcommand and global options are
// dlock's, with their values ("-t 5s", "--wait=10s", "-E 0", "-qv", "-t5s");
// "--" ends them, the word after it being NAME if NAME has not been given.
//
// Which options exist and which take a value is read from the CLI::App
// definitions (the subcommand's, then its parents'), never from a list of
// its own, so that a new option is split correctly from the start.
//
// Throws UsageError, naming the offending word first: an unknown command or
// option (with the nearest real name, if one is close), an option that
// lacks its value, a missing NAME, an argument too many.
CommandLine split_command_line(const CLI::App &app, const std::vector<std::string> &args);

struct Context;

// Parses `args` (argv without argv[0]) into `app`: split_command_line(),
// then CLI11 on the words. COMMAND [ARG...] of run is then set to the
// words as given: CLI11 would turn a word like "[1]" into "1". Throws as
// they do (UsageError, CLI::ParseError, CLI::CallForHelp,
// CLI::CallForAllHelp).
void parse_command_line(CLI::App &app, const std::vector<std::string> &args, Context &context);

// The nearest of `candidates` to `word` by edit distance (a transposition
// counts as one edit), or "" if none is close enough to be a likely typo.
std::string nearest_name(std::string_view word, const std::vector<std::string> &candidates);

} // namespace dlock::cli
