#include "cli/command_words.hpp"
#include "cli/context.hpp"
#include "core/error.hpp"

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace dlock;
using Words = std::vector<std::string>;

namespace {

// Splits `args` with dlock's real command line definition.
cli::CommandLine split(const Words &args) {
  cli::Context context;
  bool show_version = false;
  auto app = cli::make_app(context, show_version, args);
  return cli::split_command_line(*app, args);
}

std::string usage_error(const Words &args) {
  try {
    split(args);
  } catch (const UsageError &failure) {
    return failure.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("after NAME the first word that is not an option of run starts COMMAND") {
  CHECK(split({"run", "x", "echo", "-v", "hello"}).command == Words{"echo", "-v", "hello"});
  CHECK(split({"run", "x", "echo", "-t", "5", "hello"}).command == Words{"echo", "-t", "5", "hello"});
  CHECK(split({"run", "x", "sh", "-c", "echo hi"}).command == Words{"sh", "-c", "echo hi"});
  CHECK(split({"run", "x", "echo", "--help"}).command == Words{"echo", "--help"});
  CHECK(split({"run", "x", "echo", "--", "a"}).command == Words{"echo", "--", "a"});
  CHECK(split({"run", "x", "-"}).command == Words{"-"});
}

TEST_CASE("options of run and global options before and between NAME and COMMAND are dlock's, with their values") {
  cli::CommandLine line = split({"-q", "run", "-t", "5s", "x", "--wait=10s", "-E", "0", "-b", "file:", "echo", "-v"});
  CHECK(line.command == Words{"echo", "-v"});
  CHECK(line.words == Words{"-q", "run", "--ttl=5s", "--wait=10s", "--conflict-exit-code=0", "--backend=file:", "--",
                            "x", "echo", "-v"});
  // A value is never a NAME or COMMAND, whatever it looks like.
  CHECK(split({"run", "x", "-E", "-1", "true"}).words == Words{"run", "--conflict-exit-code=-1", "--", "x", "true"});
  CHECK(split({"run", "-t", "run", "x", "true"}).command == Words{"true"});
}

TEST_CASE("short options may be clustered, and a value may be attached") {
  CHECK(split({"run", "-qv", "x", "true"}).words == Words{"run", "-q", "-v", "--", "x", "true"});
  CHECK(split({"run", "-t5s", "x", "true"}).words == Words{"run", "--ttl=5s", "--", "x", "true"});
  CHECK(split({"run", "-vt", "5s", "x", "true"}).words == Words{"run", "-v", "--ttl=5s", "--", "x", "true"});
  CHECK(split({"run", "x", "-cecho hi"}).words == Words{"run", "-cecho hi", "--", "x"});
  CHECK(split({"run", "x", "-c", ""}).words == Words{"run", "-c", "", "--", "x"});
}

TEST_CASE("a '--' ends dlock's options: before NAME it is followed by NAME, after NAME by COMMAND") {
  CHECK(split({"run", "x", "--", "cmd", "-v"}).command == Words{"cmd", "-v"});
  CHECK(split({"run", "x", "--", "-cmd"}).command == Words{"-cmd"});
  CHECK(split({"run", "x", "--", "--", "a"}).command == Words{"--", "a"});
  cli::CommandLine line = split({"run", "--", "x", "cmd"});
  CHECK(line.words == Words{"run", "--", "x", "cmd"});
  CHECK(line.command == Words{"cmd"});
  CHECK(split({"run", "--", "-x", "cmd"}).words == Words{"run", "--", "-x", "cmd"});
  CHECK(split({"run", "x", "--"}).command.empty());
}

TEST_CASE("run's -c with COMMAND words is left for run to refuse, with the words it saw") {
  cli::CommandLine line = split({"run", "x", "-c", "echo hi", "extra"});
  CHECK(line.words == Words{"run", "-cecho hi", "--", "x", "extra"});
  CHECK(line.command == Words{"extra"});
}

TEST_CASE("help (-h, --help) before COMMAND is dlock's, after it COMMAND's") {
  CHECK(split({"run", "x", "--help"}).help);
  CHECK(split({"run", "-h"}).help);
  CHECK(split({"--help"}).help);
  CHECK_FALSE(split({"run", "x", "echo", "--help"}).help);
}

TEST_CASE("subcommands without COMMAND: options anywhere, positionals counted") {
  CHECK(split({"status", "x", "--json", "-b", "file:"}).words ==
        Words{"status", "--json", "--backend=file:", "--", "x"});
  CHECK(split({"release", "x", "--force"}).words == Words{"release", "--force", "--", "x"});
  CHECK(split({"list"}).words == Words{"list"});
  CHECK(usage_error({"status", "x", "y"}) == "unexpected argument 'y' for status (usage: dlock status [OPTIONS] NAME)");
  CHECK(usage_error({"status"}) == "missing NAME for status (usage: dlock status [OPTIONS] NAME)");
  CHECK(usage_error({"run"}) == "missing NAME for run (usage: dlock run [OPTIONS] NAME [--] COMMAND [ARG...])");
}

TEST_CASE("typos name the wrong word first and suggest the nearest real name") {
  CHECK(usage_error({"run", "x", "--wiat", "5s", "--", "true"}) ==
        "unknown option --wiat for run (did you mean --wait?)");
  CHECK(usage_error({"run", "x", "--wiat=5s", "true"}) == "unknown option --wiat for run (did you mean --wait?)");
  CHECK(usage_error({"rnu", "x", "--", "true"}) == "unknown command 'rnu' (did you mean 'run'?)");
  CHECK(usage_error({"--bakend", "file:", "status", "x"}) == "unknown option --bakend (did you mean --backend?)");
  CHECK(usage_error({"status", "x", "--jsno"}) == "unknown option --jsno for status (did you mean --json?)");
  CHECK(usage_error({"frobnicate"}) == "unknown command 'frobnicate' (commands: run, acquire, renew, release, status, "
                                       "list, ping, doctor, config, version; see dlock "
                                       "--help)");
  CHECK(usage_error({"run", "x", "-foo"}) ==
        "unknown option -foo for run (a COMMAND that starts with '-' goes after --: dlock run NAME -- -foo)");
  CHECK(usage_error({"run", "-foo", "x", "true"}) == "unknown option -foo for run (see dlock run --help)");
  CHECK(usage_error({"run", "-qk", "x", "true"}) == "unknown option -k for run (in -qk)");
  CHECK(usage_error({"run", "x", "-t"}) == "option -t for run needs a value (D)");
  CHECK(usage_error({"--", "run", "x", "true"}) ==
        "unexpected '--' before the subcommand (usage: dlock [OPTIONS] SUBCOMMAND [ARG...])");
  CHECK(usage_error({"run", "x", "--ttl"}) == "option --ttl for run needs a value (D)");
}

TEST_CASE("nearest_name takes one edit for short words, two for longer ones, transpositions as one") {
  CHECK(cli::nearest_name("--wiat", {"--ttl", "--wait", "-w"}) == "--wait");
  CHECK(cli::nearest_name("rnu", {"run", "renew"}) == "run");
  CHECK(cli::nearest_name("--conflcit-exit", {"--conflict-exit-code", "--lost-exit-code"}).empty());
  CHECK(cli::nearest_name("--max-runtme", {"--max-runtime"}) == "--max-runtime");
  CHECK(cli::nearest_name("--kil-aftr", {"--kill-after"}) == "--kill-after");
  CHECK(cli::nearest_name("-x", {"-q", "-v"}).empty());
  CHECK(cli::nearest_name("frobnicate", {"run", "status"}).empty());
}

TEST_CASE("every option of every subcommand takes exactly zero or one value, so the split knows where it ends") {
  // An option with an optional value, or with several, would make the
  // word after it ambiguous (its value, or NAME/COMMAND?): the split
  // would have to learn it first.
  Words all = cli::command_names();
  cli::Context context;
  bool show_version = false;
  auto app = cli::make_app(context, show_version, all);
  std::vector<const CLI::App *> apps{app.get()};
  for (const CLI::App *sub : app->get_subcommands([](const CLI::App *) { return true; }))
    apps.push_back(sub);
  for (const CLI::App *each : apps)
    for (const CLI::Option *option : each->get_options([](const CLI::Option *o) { return o->nonpositional(); })) {
      INFO(each->get_name() << " " << option->get_name());
      CHECK(option->get_expected_min() == option->get_expected_max());
      CHECK(option->get_items_expected_max() <= 1);
    }
}

TEST_CASE("a new option of run that takes a value is split with its value, with no list to update") {
  cli::Context context;
  bool show_version = false;
  Words args{"run", "--new-option", "x", "name", "cmd"};
  auto app = cli::make_app(context, show_version, args);
  std::string value;
  app->get_subcommand("run")->add_option("--new-option", value, "added by this test");
  cli::CommandLine line = cli::split_command_line(*app, args);
  CHECK(line.words == Words{"run", "--new-option=x", "--", "name", "cmd"});
  CHECK(line.command == Words{"cmd"});
}

TEST_CASE("only the subcommands named in argv are made, all of them for help or when none is named") {
  cli::Context context;
  bool show_version = false;
  auto count = [&](const Words &args) {
    return cli::make_app(context, show_version, args)->get_subcommands([](const CLI::App *) { return true; }).size();
  };
  CHECK(count({"run", "x", "--", "true"}) == 1);
  CHECK(count({"status", "run"}) == 2);
  CHECK(count({"run", "--help"}) == cli::command_names().size());
  CHECK(count({"--help"}) == cli::command_names().size());
  CHECK(count({"bogus"}) == cli::command_names().size());
  // A word before the subcommand that is no subcommand: still every name
  // in the message.
  auto app = cli::make_app(context, show_version, {"x", "run"});
  CHECK_THROWS_WITH(cli::split_command_line(*app, {"x", "run"}), Catch::Contains("commands: run, acquire"));
}
