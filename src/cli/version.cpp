#include "backend/registry.hpp"
#include "cli/context.hpp"

#include "cli/cli11.hpp"
#include <fmt/format.h>

#include "cli/streams.hpp"

namespace dlock::cli {

int print_version() {
  std::cout << fmt::format("dlock {}\nbackends:\n", DLOCK_VERSION);
  for (const auto &info : backend::known_backends()) {
    std::cout << fmt::format("  {:<10} {}\n  {:<10} schemes {}:; built in\n", info.schemes.front(), info.summary, "",
                             fmt::join(info.schemes, ":, "));
  }
  return 0;
}

void setup_version(CLI::App &sub, Context &context) {
  sub.callback([&context] { context.action = [] { return print_version(); }; });
}

} // namespace dlock::cli
