#include "cli/context.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "core/name.hpp"

#include "cli/cli11.hpp"

#include "cli/streams.hpp"

namespace dlock::cli {

namespace {

struct StatusArguments {
  std::string name;
  bool json = false;
};

int run_status(const StatusArguments &args, Context &context) {
  validate_name(args.name);
  return with_json_errors(args.json, [&] {
    auto backend = open_backend(context.settings());
    backend::LockStatus status = backend->status(args.name);
    std::cout << (args.json ? status_json(status).dump(2) + "\n" : status_text(status));
    return status.held ? 0 : to_int(ExitCode::not_held);
  });
}

} // namespace

void setup_status(CLI::App &sub, Context &context) {
  auto args = std::make_shared<StatusArguments>();
  sub.add_option("name", args->name, "Lock name")->required()->type_name("NAME");
  sub.add_flag("--json", args->json, "One JSON document");
  sub.callback([args, &context] { context.action = [args, &context] { return run_status(*args, context); }; });
}

} // namespace dlock::cli
