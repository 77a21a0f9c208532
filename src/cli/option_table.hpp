#pragma once

#include "cli/cli11.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dlock::cli {

// One option as a row of a table: the one definition that builds the CLI11
// option (help, completions, errors) and that the quick parser of `run`
// reads (cli/quick_run.cpp), so the two cannot disagree on a name or on
// whether an option takes a value. Exactly one of the three members is set.
template <typename Target> struct OptionRow {
  const char *names;                                   // CLI11's spelling: "-t,--ttl", "--log", "-c"
  const char *type_name;                               // the metavariable, "D"; nullptr for a flag
  const char *description;                             // the help text
  std::optional<std::string> Target::*value = nullptr; // an option with a value
  bool Target::*flag = nullptr;                        // a flag
  int Target::*count = nullptr;                        // a flag that counts (-vv)
};

// Adds the rows to `app`, their values going to `target`.
template <typename Target>
void add_option_rows(CLI::App &app, std::span<const OptionRow<Target>> rows, Target &target) {
  for (const OptionRow<Target> &row : rows) {
    if (row.value)
      app.add_option(row.names, target.*row.value, row.description)->type_name(row.type_name);
    else if (row.flag)
      app.add_flag(row.names, target.*row.flag, row.description);
    else
      app.add_flag(row.names, target.*row.count, row.description);
  }
}

// Where the quick parser puts what one option word gives.
struct OptionSlot {
  std::optional<std::string> *value = nullptr;
  bool *flag = nullptr;
  int *count = nullptr;
};

// Whether `spelling` ("-t", "--ttl") is one of the names of `names`
// ("-t,--ttl").
bool names_match(std::string_view names, std::string_view spelling);

// The slot of the row that `spelling` names, or an empty slot.
template <typename Target>
OptionSlot find_option_slot(std::span<const OptionRow<Target>> rows, Target &target, std::string_view spelling) {
  for (const OptionRow<Target> &row : rows) {
    if (!names_match(row.names, spelling)) continue;
    if (row.value) return {&(target.*row.value), nullptr, nullptr};
    if (row.flag) return {nullptr, &(target.*row.flag), nullptr};
    return {nullptr, nullptr, &(target.*row.count)};
  }
  return {};
}

} // namespace dlock::cli
