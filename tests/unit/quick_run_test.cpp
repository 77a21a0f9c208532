#include "cli/command_words.hpp"
#include "cli/context.hpp"
#include "cli/run.hpp"

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <exception>
#include <string>
#include <vector>

using namespace dlock;
using Words = std::vector<std::string>;

namespace {

struct Parsed {
  bool ok = false;
  cli::GlobalOptions global;
  cli::RunArguments run;
};

Parsed parse_quickly(const Words &args) {
  cli::Context context;
  Parsed parsed;
  parsed.ok = cli::parse_run_quickly(args, context);
  parsed.global = context.global;
  if (parsed.ok) parsed.run = *context.run_arguments;
  return parsed;
}

// As cli_main parses when the quick parser declines: CLI11's definition.
Parsed parse_fully(const Words &args) {
  cli::Context context;
  bool show_version = false;
  Parsed parsed;
  try {
    auto app = cli::make_app(context, show_version, args);
    cli::parse_command_line(*app, args, context);
    parsed.ok = context.run_arguments && !show_version;
  } catch (const std::exception &) {
    return parsed;
  }
  parsed.global = context.global;
  if (parsed.ok) parsed.run = *context.run_arguments;
  return parsed;
}

// Every way to write each part, combined below.
const std::vector<Words> k_globals = {
    {},
    {"-q"},
    {"-b", "file:///tmp/x"},
    {"--backend=redis://u:pw@h/0"},
    {"-vv"},
    {"-v", "-v"},
    {"-qv"},
    {"--namespace", "ns"},
    {"-q", "-q"},
    {"--config", ""},
    {"--connect-timeout=1s", "--password-file", "-"},
    {"--version"},
    {"-h"},
    {"--", "x"},
    {"-b"},
    {"--quiet=false"},
};
const std::vector<Words> k_run_options = {
    {},
    {"-t", "5s"},
    {"-t5s"},
    {"--ttl=5s"},
    {"--ttl", "-1"},
    {"-w", "forever"},
    {"-qt", "5s"},
    {"-vqt5s"},
    {"-E", "0"},
    {"-E", "-1"},
    {"-E-1"},
    {"--limit", "3"},
    {"-s"},
    {"-x", "-s"},
    {"-sx"},
    {"-s", "-s"},
    {"--log", ""},
    {"--log="},
    {"--log=a=b"},
    {"-c", "echo hi"},
    {"-cecho hi"},
    {"-c", "--"},
    {"-c"},
    {"--wait", "1s", "--wait", "2s"},
    {"-b", "redis://:pw@h"},
    {"-b", "a", "-b", "b"},
    {"--quiet=true"},
    {"--help"},
    {"-h"},
    {"--help-all"},
    {"--bogus"},
    {"-Z"},
    {"-qZ"},
    {"--if-unavailable", "run"},
    {"--metrics-file", "/tmp/m"},
    {"--min-hold", "2s"},
    {"--kill-after=1s", "--lost-kill-after", "0"},
    {"--max-runtime", "1h", "--lost-exit-code", "9"},
    {"--conflict-exit-code=3"},
    {"-v", "--verbose"},
    {"--exclusive", "--shared"},
    {"--limit=2", "-s"},
    {"--ttl"},
    {"-tv"},
    {"--namespace=a,b"},
    {"--log", "{a,b}"},
    {"--log", "'x y'"},
    {"--log", "\"x\""},
    {"--log", "a b"},
    {"-E", "[1]"},
    {"-t=5s"},
    {"-c=x"},
    {"--ttl", "--"},
    {"-c", "-x"},
};
const std::vector<Words> k_names = {{"x"}, {"--", "x"}, {"run"}, {"-"}, {}};
const std::vector<Words> k_commands = {
    {},     {"true"},          {"echo", "-v", "hi"}, {"--", "true"}, {"--", "-x"}, {"-"}, {"echo", "--", "a"},
    {"--"}, {"--", "--", "a"}, {"-t", "5s", "true"}, {"run", "x"},   {"''"},
};

Words join(std::initializer_list<const Words *> parts) {
  Words words;
  for (const Words *part : parts)
    words.insert(words.end(), part->begin(), part->end());
  return words;
}

} // namespace

TEST_CASE("the quick parser of run takes a command line only as CLI11's definition would, with the same result") {
  static const Words k_run = {"run"};
  std::size_t quick = 0;
  std::size_t total = 0;
  for (const Words &global : k_globals)
    for (const Words &options : k_run_options)
      for (const Words &name : k_names)
        for (const Words &command : k_commands)
          for (bool options_after_name : {false, true}) {
            Words args = options_after_name ? join({&global, &k_run, &name, &options, &command})
                                            : join({&global, &k_run, &options, &name, &command});
            Parsed fast = parse_quickly(args);
            ++total;
            if (!fast.ok) continue;
            ++quick;
            Parsed full = parse_fully(args);
            INFO("dlock " << fmt::format("{}", fmt::join(args, " ")));
            REQUIRE(full.ok);
            CHECK(fast.global == full.global);
            CHECK(fast.run == full.run);
          }
  // The common forms do take the quick way.
  CHECK(quick > total / 5);
}

TEST_CASE("the common forms of run take the quick way") {
  for (const Words &args : std::vector<Words>{
           {"-b", "file:///tmp/x", "run", "x", "--", "true"},
           {"run", "x", "true"},
           {"-q", "run", "-t", "5s", "x", "--wait=10s", "-E", "0", "-b", "file:", "echo", "-v"},
           {"run", "-qv", "--limit", "2", "x", "-c", "echo hi"},
       }) {
    INFO(fmt::format("dlock {}", fmt::join(args, " ")));
    CHECK(parse_quickly(args).ok);
  }
  Parsed parsed = parse_quickly({"-v", "run", "-qt5s", "x", "echo", "-v", "hi"});
  CHECK(parsed.global.verbose == 1);
  CHECK(parsed.global.quiet);
  CHECK(parsed.run.ttl == "5s");
  CHECK(parsed.run.command == Words{"echo", "-v", "hi"});
}

TEST_CASE("COMMAND's words reach the job as given, whichever parser takes the command line") {
  const Words command = {"echo", "[1]", "[a,b]", "{x}", "a b"};
  for (const Words &options : std::vector<Words>{{}, {"--quiet=true"}, {"--log", ""}}) {
    Words args = join({&options, &command});
    args.insert(args.begin(), {"run", "x"});
    INFO(fmt::format("dlock {}", fmt::join(args, " ")));
    CHECK(parse_fully(args).run.command == command);
    if (options.empty()) CHECK(parse_quickly(args).run.command == command);
  }
}

TEST_CASE("help, errors, other subcommands and repeated options are left to the full parser") {
  for (const Words &args : std::vector<Words>{
           {"run", "--help"},
           {"--help"},
           {"run", "-h", "x", "true"},
           {"--version"},
           {"status", "x"},
           {"run"},
           {"run", "--bogus", "x", "true"},
           {"run", "-t"},
           {"--", "run", "x", "true"},
           {"run", "-t", "1s", "-t", "2s", "x", "true"},
           {"run", "--log", "", "x", "true"},
           {"run", "--quiet=true", "x", "true"},
           {"-b", "run", "x", "true"},
           {"run", "-qZ", "x", "true"},
       }) {
    INFO(fmt::format("dlock {}", fmt::join(args, " ")));
    CHECK_FALSE(parse_quickly(args).ok);
  }
}
