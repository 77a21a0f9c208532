#include "cli/context.hpp"

#include "cli/cli11.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/streams.hpp"
#include <algorithm>

namespace dlock::cli {

namespace {

// Every setting, its effective value (no secret: a password shows where it
// comes from) and where it came from. Resolving the settings checks every
// value of the config file, so a file with an error exits 78 naming it.
int run_config(bool json, Context &context) {
  Settings settings = context.settings();
  if (json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::object();
    for (const auto &[key, source] : settings.sources)
      doc[key] = {{"value", source.text}, {"from", source.from}};
    std::cout << doc.dump() << std::endl;
    return 0;
  }
  std::size_t key_width = 0, value_width = 0;
  for (const auto &[key, source] : settings.sources) {
    key_width = std::max(key_width, key.size());
    if (source.text.size() <= 40) value_width = std::max(value_width, source.text.size());
  }
  for (const auto &[key, source] : settings.sources)
    std::cout << fmt::format("{:<{}}  {:<{}}  {}\n", key, key_width, source.text, value_width, source.from);
  return 0;
}

} // namespace

void setup_config(CLI::App &sub, Context &context) {
  auto json = std::make_shared<bool>(false);
  sub.add_flag("--json", *json, "Print {setting: {value, from}} as JSON");
  sub.callback([json, &context] { context.action = [json, &context] { return run_config(*json, context); }; });
}

} // namespace dlock::cli
