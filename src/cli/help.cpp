#include "cli/help.hpp"

#include "cli/cli11.hpp"
#include <fmt/format.h>

#include <sstream>

namespace dlock::cli {

namespace {

// Second forms of a subcommand, after its name.
struct OtherUsage {
  const char *subcommand;
  const char *words;
};

constexpr OtherUsage k_other_usages[] = {
    {"run", "[OPTIONS] NAME -c 'SHELL COMMAND'"},
    {"release", "[OPTIONS] NAME --force"},
};

std::string positional_usage(const CLI::Option &option) {
  if (is_command_positional(option)) return "[--] COMMAND [ARG...]";
  std::string name = option.get_type_name();
  return option.get_required() ? name : "[" + name + "]";
}

class HelpFormatter : public CLI::Formatter {
public:
  std::string make_usage(const CLI::App *app, std::string) const override {
    return "Usage: " + usage_text(*app) + "\n";
  }

  std::string make_option_name(const CLI::Option *option, bool is_positional) const override {
    if (!is_positional) return Formatter::make_option_name(option, is_positional);
    return is_command_positional(*option) ? "COMMAND [ARG...]" : option->get_type_name();
  }

  std::string make_option_opts(const CLI::Option *option) const override {
    return option->get_positional() ? std::string() : Formatter::make_option_opts(option);
  }

  std::string make_help(const CLI::App *app, std::string name, CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    std::ostringstream out;
    out << make_description(app) << make_usage(app, name) << make_positionals(app) << make_groups(app, mode);
    if (const CLI::App *parent = app->get_parent()) {
      // Global options may stand after the subcommand word too.
      auto globals = parent->get_options([parent](const CLI::Option *option) {
        return option->nonpositional() && option != parent->get_help_ptr() &&
               option->get_lnames() != std::vector<std::string>{"version"};
      });
      out << make_group(fmt::format("Global options (before or after '{}')", app->get_name()), false, globals);
    }
    out << make_subcommands(app, mode) << '\n' << make_footer(app);
    return out.str();
  }
};

} // namespace

bool is_command_positional(const CLI::Option &option) {
  return option.get_positional() && option.get_name(true, false) == "command";
}

std::string usage_text(const CLI::App &app) {
  if (!app.get_parent()) return "dlock [OPTIONS] SUBCOMMAND [ARG...]";
  std::string path = "dlock " + app.get_name();
  std::string usage = path + " [OPTIONS]";
  for (const CLI::Option *option : app.get_options([](const CLI::Option *o) { return o->get_positional(); }))
    usage += " " + positional_usage(*option);
  for (const OtherUsage &other : k_other_usages)
    if (app.get_name() == other.subcommand) usage += fmt::format("\n   or: {} {}", path, other.words);
  return usage;
}

std::shared_ptr<CLI::Formatter> make_help_formatter() { return std::make_shared<HelpFormatter>(); }

} // namespace dlock::cli
