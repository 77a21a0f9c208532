// The quick parser of `dlock run`: the rules of split_command_line()
// (cli/command_words.cpp) for the one subcommand whose start-up matters,
// read from the same option tables as the CLI11 definition. Whatever it
// is unsure of it leaves to the full parser; tests/unit/quick_run_test.cpp
// parses many command lines both ways and compares.
#include "cli/option_table.hpp"
#include "cli/run.hpp"

namespace dlock::cli {

namespace {

// The options a word may name: before the subcommand word the global
// ones, after it run's own first, then the global ones.
class RunOptions {
public:
  RunOptions(GlobalOptions &global, RunArguments &run) : m_global(global), m_run(run) {}

  void enter_run() { m_in_run = true; }
  bool in_run() const { return m_in_run; }

  OptionSlot find(std::string_view spelling) {
    if (m_in_run) {
      if (OptionSlot slot = find_option_slot(run_option_rows(), m_run, spelling); !empty(slot)) return slot;
      if (OptionSlot slot = find_option_slot(hold_option_rows(), m_run.hold, spelling); !empty(slot)) return slot;
    }
    return find_option_slot(global_option_rows(), m_global, spelling);
  }

  static bool empty(const OptionSlot &slot) { return !slot.value && !slot.flag && !slot.count; }

private:
  GlobalOptions &m_global;
  RunArguments &m_run;
  bool m_in_run = false;
};

// A flag; false for one given twice (CLI11's policy decides).
bool set_flag(const OptionSlot &slot) {
  if (slot.count) {
    ++*slot.count;
    return true;
  }
  if (*slot.flag) return false;
  *slot.flag = true;
  return true;
}

// An option's value; false for one given twice or an empty value.
bool set_value(const OptionSlot &slot, std::string_view value) {
  if (slot.value->has_value() || value.empty()) return false;
  *slot.value = std::string(value);
  return true;
}

// "--name", "--name=VALUE" or "--name" VALUE, at args[i]; false if the
// full parser is to decide.
bool take_long_option(RunOptions &options, const std::vector<std::string> &args, std::size_t &i) {
  const std::string &word = args[i];
  std::size_t equals = word.find('=');
  OptionSlot slot = options.find(std::string_view(word).substr(0, equals));
  if (RunOptions::empty(slot)) return false;
  if (!slot.value) return equals == std::string::npos && set_flag(slot);
  if (equals != std::string::npos) return set_value(slot, std::string_view(word).substr(equals + 1));
  return i + 1 < args.size() && set_value(slot, args[++i]);
}

// A cluster of short options: "-q", "-qv", "-t5s", "-qt" "5s".
bool take_short_options(RunOptions &options, const std::vector<std::string> &args, std::size_t &i) {
  const std::string &word = args[i];
  for (std::size_t j = 1; j < word.size(); ++j) {
    const char spelling[] = {'-', word[j]};
    OptionSlot slot = options.find(std::string_view(spelling, 2));
    if (RunOptions::empty(slot)) return false;
    if (!slot.value) {
      if (!set_flag(slot)) return false;
      continue;
    }
    if (j + 1 < word.size()) return set_value(slot, std::string_view(word).substr(j + 1));
    return i + 1 < args.size() && set_value(slot, args[++i]);
  }
  return true;
}

} // namespace

bool parse_run_quickly(const std::vector<std::string> &args, Context &context) {
  GlobalOptions global = context.global;
  auto run = std::make_shared<RunArguments>();
  RunOptions options(global, *run);
  bool positional_only = false;
  bool named = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &word = args[i];
    if (options.in_run() && !positional_only && word == "--") {
      positional_only = true;
      continue;
    }
    if (positional_only || word.size() < 2 || word[0] != '-') {
      if (!options.in_run()) {
        if (word != "run") return false;
        options.enter_run();
      } else if (!named) {
        run->name = word;
        named = true;
      } else {
        run->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        break;
      }
      continue;
    }
    bool taken = word[1] == '-' ? take_long_option(options, args, i) : take_short_options(options, args, i);
    if (!taken) return false;
  }
  if (!named) return false;
  context.global = global;
  use_run_arguments(context, std::move(run));
  return true;
}

} // namespace dlock::cli
