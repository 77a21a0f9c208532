#include "cli/context.hpp"
#include "cli/format.hpp"
#include "core/name.hpp"

#include "cli/cli11.hpp"

#include "cli/streams.hpp"

namespace dlock::cli {

namespace {

struct ListArguments {
  std::string prefix;
  bool json = false;
};

int run_list(const ListArguments &args, Context &context) {
  if (!args.prefix.empty()) validate_name(args.prefix, "prefix");
  std::vector<backend::LockStatus> locks;
  with_json_errors(args.json, [&] {
    locks = open_backend(context.settings())->list(args.prefix);
    return 0;
  });
  if (args.json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::array();
    for (const auto &lock : locks)
      doc.push_back(status_json(lock));
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << list_table(locks);
  }
  return 0;
}

} // namespace

void setup_list(CLI::App &sub, Context &context) {
  auto args = std::make_shared<ListArguments>();
  sub.add_option("prefix", args->prefix, "Name prefix")->type_name("PREFIX");
  sub.add_flag("--json", args->json, "A JSON array");
  sub.callback([args, &context] { context.action = [args, &context] { return run_list(*args, context); }; });
}

} // namespace dlock::cli
