#include "cli/context.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/name.hpp"
#include "runner/keeper.hpp"
#include "runner/runner.hpp"

#include "cli/cli11.hpp"
#include <nlohmann/json.hpp>

#include "cli/streams.hpp"
#include <unistd.h>

namespace dlock::cli {

namespace {

struct AcquireArguments {
  std::string name;
  std::optional<std::string> ttl;
  std::optional<std::string> wait;
  std::optional<std::string> conflict_exit_code;
  HoldOptions hold;
  bool json = false;
};

int run_acquire(const AcquireArguments &args, Context &context) {
  validate_name(args.name);
  Settings settings = context.settings();
  backend::LockRequest request;
  request.name = args.name;
  request.ttl = resolve_ttl(args.ttl, settings);
  apply_hold_options(args.hold, request);
  std::optional<Millis> wait = resolve_wait(args.wait, settings);
  int conflict = parse_exit_code(args.conflict_exit_code, settings.conflict_exit_code, "--conflict-exit-code");
  // The holder shown by status is the script that asked, not dlock itself.
  std::string caller = command_line_of(getppid());
  request.holder = {host_name(), 0, user_name(), caller.empty() ? "dlock acquire" : caller,
                    std::chrono::system_clock::now()};

  std::optional<backend::Lease> lease;
  std::optional<Millis> window; // the keeper's: how long it waits for a renew
  if (session_bound(settings)) {
    runner::KeeperResult kept = runner::acquire_with_keeper(settings.backend, request, wait, conflict);
    if (!kept.lease) {
      if (!kept.message.empty() && !settings.quiet) say("{}", kept.message);
      return kept.exit_status;
    }
    lease = kept.lease;
    window = kept.window;
  } else {
    request.holder.pid = getpid();
    auto backend = open_backend(settings);
    runner::Acquisition taken = runner::acquire_for(*backend, request, wait, conflict, settings.quiet);
    if (!taken.lease) return taken.exit_status;
    lease = taken.lease;
  }
  if (args.json) {
    nlohmann::ordered_json doc = {{"name", lease->name},
                                  {"token", lease->token},
                                  {"fence", lease->fence},
                                  {"mode", backend::to_string(lease->mode)}};
    if (lease->mode == backend::HoldMode::semaphore) {
      doc["limit"] = lease->limit;
      doc["slot"] = lease->slot ? nlohmann::ordered_json(*lease->slot) : nlohmann::ordered_json(nullptr);
    }
    add_lease_figures(doc, lease->confirmed_at, lease->ttl, window);
    std::cout << doc.dump() << std::endl;
  } else {
    std::cout << lease->token << std::endl;
  }
  return 0;
}

} // namespace

void setup_acquire(CLI::App &sub, Context &context) {
  auto args = std::make_shared<AcquireArguments>();
  sub.add_option("name", args->name, "Lock name")->required()->type_name("NAME");
  sub.add_option("-t,--ttl", args->ttl, "Lease length; renew before it passes [default 30s]")->type_name("D");
  sub.add_option("-w,--wait", args->wait, "How long to wait for the lock: 0 = one attempt, or 'forever' [default 0]")
      ->type_name("D");
  sub.add_option("-E,--conflict-exit-code", args->conflict_exit_code, "Exit status when the lock is busy [default 75]")
      ->type_name("N");
  add_hold_options(sub, args->hold);
  sub.add_flag(
      "--json", args->json,
      "Print name, token, fence, ttl_ms and expires_at (and a keeper's keeper_window_ms and renew_by) as JSON");
  sub.callback([args, &context] { context.action = [args, &context] { return run_acquire(*args, context); }; });
}

} // namespace dlock::cli
