#include "cli/cli_main.hpp"
#include "core/exit_code.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace dlock;

namespace {

int cli(std::vector<std::string> args) {
  args.insert(args.begin(), "dlock");
  std::vector<char *> argv;
  for (auto &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  return cli_main(static_cast<int>(args.size()), argv.data());
}

} // namespace

TEST_CASE("command line errors map to the documented exit codes, never CLI11's") {
  CHECK(cli({"run", "x", "--no-such-option", "--", "true"}) == to_int(ExitCode::usage));
  CHECK(cli({"run"}) == to_int(ExitCode::usage));
  CHECK(cli({"run", "bad name", "--", "true"}) == to_int(ExitCode::usage));
  CHECK(cli({"run", "x", "--ttl", "5x", "--", "true"}) == to_int(ExitCode::usage));
  CHECK(cli({"run", "x", "-E", "300", "--", "true"}) == to_int(ExitCode::usage));
  CHECK(cli({"run", "x", "-c", "true", "--", "true"}) == to_int(ExitCode::usage));
  CHECK(cli({"-b", "nosuch://x", "status", "x"}) == to_int(ExitCode::config));
  CHECK(cli({"-b", "redis://127.0.0.1:1", "status", "x"}) == to_int(ExitCode::unavailable)); // nothing listens
  CHECK(cli({"-b", "redis://127.0.0.1:1?nosuch=1", "status", "x"}) == to_int(ExitCode::config));
  CHECK(cli({"--config", "/nonexistent/config", "status", "x"}) == to_int(ExitCode::config));
  CHECK(cli({"no-such-command"}) == to_int(ExitCode::usage));
  CHECK(cli({"--help"}) == 0);
  CHECK(cli({"run", "--help"}) == 0);
}
