#include "cli/command_words.hpp"

#include "cli/context.hpp"
#include "cli/help.hpp"
#include "cli/run.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"

#include "cli/cli11.hpp"
#include <fmt/format.h>

#include <algorithm>

namespace dlock::cli {

namespace {

// CLI11 flags take no value ("expected" 0 times), options one each time.
bool takes_value(const CLI::Option &option) { return option.get_expected_max() > 0; }

// The app's options and, since dlock's subcommands fall through to their
// parent, the parent's (global) options, nearest first.
std::vector<const CLI::App *> option_scopes(const CLI::App &app) {
  std::vector<const CLI::App *> scopes{&app};
  for (const CLI::App *scope = &app; scope->get_fallthrough() && scope->get_parent();)
    scopes.push_back(scope = scope->get_parent());
  return scopes;
}

// The option that `spelling` ("--ttl", "-t") names for `app`, or nullptr.
const CLI::Option *find_option(const CLI::App &app, std::string_view spelling) {
  bool is_long = spelling.substr(0, 2) == "--";
  std::string_view bare = spelling.substr(is_long ? 2 : 1);
  for (const CLI::App *scope : option_scopes(app))
    for (const CLI::Option *option : scope->get_options()) {
      if (!option->nonpositional()) continue;
      const auto &names = is_long ? option->get_lnames() : option->get_snames();
      if (std::find(names.begin(), names.end(), bare) != names.end()) return option;
    }
  return nullptr;
}

bool is_help(const CLI::App &app, const CLI::Option *option) {
  for (const CLI::App *scope : option_scopes(app))
    if (option == scope->get_help_ptr() || option == scope->get_help_all_ptr()) return true;
  return false;
}

std::vector<std::string> option_spellings(const CLI::App &app) {
  std::vector<std::string> spellings;
  for (const CLI::App *scope : option_scopes(app))
    for (const CLI::Option *option : scope->get_options()) {
      for (const std::string &name : option->get_lnames())
        spellings.push_back("--" + name);
      for (const std::string &name : option->get_snames())
        spellings.push_back("-" + name);
    }
  return spellings;
}

std::string for_whom(const CLI::App &app) { return app.get_parent() ? " for " + app.get_name() : std::string(); }

[[noreturn]] void unknown_option(const CLI::App &app, const std::string &word, bool command_may_start) {
  std::string spelling = word.substr(0, word.find('='));
  std::string hint;
  if (std::string nearest = nearest_name(spelling, option_spellings(app)); !nearest.empty())
    hint = fmt::format("did you mean {}?", nearest);
  else if (command_may_start)
    hint = fmt::format("a COMMAND that starts with '-' goes after --: dlock {} NAME -- {}", app.get_name(), word);
  else
    hint = fmt::format("see dlock{} --help", app.get_parent() ? " " + app.get_name() : std::string());
  throw UsageError(fmt::format("unknown option {}{} ({})", spelling, for_whom(app), hint));
}

const CLI::App &find_subcommand(const CLI::App &app, const std::string &word) {
  for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; }))
    if (sub->check_name(word)) return *sub;
  // (The app has only the subcommands named in argv: name them all.)
  std::vector<std::string> names = command_names();
  if (std::string nearest = nearest_name(word, names); !nearest.empty())
    throw UsageError(fmt::format("unknown command '{}' (did you mean '{}'?)", word, nearest));
  throw UsageError(fmt::format("unknown command '{}' (commands: {}; see dlock --help)", word, fmt::join(names, ", ")));
}

std::string metavariable(const CLI::Option &option) {
  std::string name = option.get_type_name();
  return name.empty() ? option.get_name(true, false) : name;
}

// Checks the positionals against the subcommand's positional options:
// too many, or a required one missing.
void check_positionals(const CLI::App &sub, const std::vector<std::string> &positionals) {
  std::size_t index = 0;
  for (const CLI::Option *option : sub.get_options([](const CLI::Option *o) { return o->get_positional(); })) {
    if (is_command_positional(*option)) continue;
    auto slots = static_cast<std::size_t>(std::max(option->get_items_expected_max(), 1));
    if (option->get_required() && index >= positionals.size())
      throw UsageError(fmt::format("missing {} for {} (usage: {})", metavariable(*option), sub.get_name(),
                                   usage_text(sub).substr(0, usage_text(sub).find('\n'))));
    index += slots;
  }
  if (index < positionals.size())
    throw UsageError(fmt::format("unexpected argument '{}' for {} (usage: {})", positionals[index], sub.get_name(),
                                 usage_text(sub).substr(0, usage_text(sub).find('\n'))));
}

// How many positionals come before COMMAND: the slots of the others.
std::size_t slots_before_command(const CLI::App &sub) {
  std::size_t slots = 0;
  for (const CLI::Option *option : sub.get_options([](const CLI::Option *o) { return o->get_positional(); }))
    if (!is_command_positional(*option))
      slots += static_cast<std::size_t>(std::max(option->get_items_expected_max(), 1));
  return slots;
}

bool takes_command(const CLI::App &sub) {
  auto options = sub.get_options([](const CLI::Option *o) { return is_command_positional(*o); });
  return !options.empty();
}

// An option and its value in a form CLI11 takes as exactly that, whatever
// the value looks like ("-1", "--", "").
// An empty value stays a word of its own: "--opt=" would make CLI11 take
// the next word as the value (`--log '' x` must not log to a file "x").
void add_option_with_value(std::vector<std::string> &words, const CLI::Option &option, const std::string &value) {
  if (!option.get_lnames().empty() && value.empty()) {
    words.push_back("--" + option.get_lnames().front());
    words.push_back(value);
  } else if (!option.get_lnames().empty()) {
    words.push_back("--" + option.get_lnames().front() + "=" + value);
  } else if (!value.empty()) {
    words.push_back("-" + option.get_snames().front() + value);
  } else {
    words.push_back("-" + option.get_snames().front());
    words.push_back(value);
  }
}

[[noreturn]] void missing_value(const CLI::App &app, const std::string &spelling, const CLI::Option &option) {
  throw UsageError(fmt::format("option {}{} needs a value ({})", spelling, for_whom(app), metavariable(option)));
}

} // namespace

CommandLine split_command_line(const CLI::App &app, const std::vector<std::string> &args) {
  CommandLine line;
  const CLI::App *current = &app;
  bool command_sub = false;
  bool positional_only = false;
  std::vector<std::string> positionals;
  std::size_t before_command = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &word = args[i];
    if (word == "--" && current == &app)
      throw UsageError("unexpected '--' before the subcommand (usage: dlock [OPTIONS] SUBCOMMAND [ARG...])");
    if (!positional_only && word == "--") {
      positional_only = true;
      continue;
    }
    if (positional_only || word.size() < 2 || word[0] != '-') {
      if (current == &app) {
        current = &find_subcommand(app, word);
        command_sub = takes_command(*current);
        before_command = slots_before_command(*current);
        line.words.push_back(word);
      } else if (command_sub && positionals.size() >= before_command) {
        line.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        break;
      } else {
        positionals.push_back(word);
      }
      continue;
    }
    bool command_may_start = command_sub && positionals.size() >= before_command;
    if (word.compare(0, 2, "--") == 0) {
      std::size_t equals = word.find('=');
      std::string spelling = word.substr(0, equals);
      const CLI::Option *option = find_option(*current, spelling);
      if (!option) unknown_option(*current, word, command_may_start);
      if (is_help(*current, option)) return CommandLine{args, {}, true};
      if (!takes_value(*option)) {
        line.words.push_back(word);
      } else if (equals != std::string::npos) {
        add_option_with_value(line.words, *option, word.substr(equals + 1));
      } else if (i + 1 < args.size()) {
        add_option_with_value(line.words, *option, args[++i]);
      } else {
        missing_value(*current, spelling, *option);
      }
      continue;
    }
    // A cluster of short options: "-q", "-qv", "-t5s", "-qt" "5s".
    for (std::size_t j = 1; j < word.size(); ++j) {
      std::string spelling{'-', word[j]};
      const CLI::Option *option = find_option(*current, spelling);
      if (!option) {
        if (j == 1) unknown_option(*current, word, command_may_start);
        throw UsageError(fmt::format("unknown option {}{} (in {})", spelling, for_whom(*current), word));
      }
      if (is_help(*current, option)) return CommandLine{args, {}, true};
      if (!takes_value(*option)) {
        line.words.push_back(spelling);
        continue;
      }
      if (j + 1 < word.size())
        add_option_with_value(line.words, *option, word.substr(j + 1));
      else if (i + 1 < args.size())
        add_option_with_value(line.words, *option, args[++i]);
      else
        missing_value(*current, spelling, *option);
      break;
    }
  }
  if (current == &app) return line;
  check_positionals(*current, positionals);
  if (!positionals.empty() || !line.command.empty()) {
    line.words.push_back("--");
    line.words.insert(line.words.end(), positionals.begin(), positionals.end());
    line.words.insert(line.words.end(), line.command.begin(), line.command.end());
  }
  return line;
}

void parse_command_line(CLI::App &app, const std::vector<std::string> &args, Context &context) {
  CommandLine line = split_command_line(app, args);
  std::reverse(line.words.begin(), line.words.end()); // CLI11 takes them last first
  app.parse(line.words);
  if (context.run_arguments) context.run_arguments->command = std::move(line.command);
}

std::string nearest_name(std::string_view word, const std::vector<std::string> &candidates) {
  auto bare = [](std::string_view text) { return text.substr(std::min(text.find_first_not_of('-'), text.size())); };
  auto found = nearest(bare(word), candidates, [&](const std::string &candidate) { return bare(candidate); });
  return found ? candidates[*found] : std::string();
}

} // namespace dlock::cli
