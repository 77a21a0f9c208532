#include "cli/context.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/name.hpp"
#include "runner/keeper.hpp"

#include "cli/cli11.hpp"
#include <nlohmann/json.hpp>

#include "cli/streams.hpp"

namespace dlock::cli {

namespace {

struct RenewArguments {
  std::string name;
  std::optional<std::string> token;
  std::optional<std::string> ttl;
  bool json = false;
};

int run_renew(const RenewArguments &args, Context &context) {
  validate_name(args.name);
  std::string token = resolve_token(context, args.token);
  Settings settings = context.settings();
  // Without --ttl the lock is renewed for its own length (the one given to
  // acquire or to the last renew --ttl), on every backend: 0 asks for that.
  // The ttl setting of the config file is acquire's and run's, not renew's.
  Millis ttl = args.ttl ? resolve_ttl(args.ttl, settings) : Millis(0);
  std::chrono::steady_clock::time_point confirmed_at{};
  Millis granted{};
  std::optional<Millis> window; // the keeper's: how long it waits for the next renew
  std::uint64_t fence = 0;
  bool owned = false;
  if (held_by_keeper(token, settings)) {
    runner::KeeperReply reply = runner::keeper_renew(runner::identity_of(settings.backend, args.name), token, ttl,
                                                     settings.backend.connect_timeout * 2 + Millis(1000));
    owned = reply.answer == runner::KeeperAnswer::done;
    confirmed_at = reply.confirmed_at;
    granted = reply.ttl;
    window = reply.window;
    fence = reply.fence;
  } else {
    auto backend = open_backend(settings);
    backend::Lease lease{.name = args.name, .token = token, .ttl = ttl};
    backend::RenewResult result = backend->renew(lease, ttl, std::nullopt);
    if (result.outcome == backend::RenewOutcome::unknown)
      throw UnavailableError(fmt::format("could not renew lock '{}': {}", args.name, result.reason));
    owned = result.outcome == backend::RenewOutcome::renewed;
    confirmed_at = result.sent_at;
    granted = result.ttl;
  }
  if (!owned) {
    say("token no longer owns lock '{}'", args.name);
    return to_int(ExitCode::not_held);
  }
  if (args.json) {
    nlohmann::ordered_json doc = {{"name", args.name}};
    add_lease_figures(doc, confirmed_at, granted, window);
    if (fence) doc["fence"] = fence;
    std::cout << doc.dump() << std::endl;
  }
  detail(1, "renewed '{}' for {}", args.name, format_duration(granted));
  return 0;
}

} // namespace

void setup_renew(CLI::App &sub, Context &context) {
  auto args = std::make_shared<RenewArguments>();
  sub.add_option("name", args->name, "Lock name")->required()->type_name("NAME");
  sub.add_option("token", args->token, "Release token from acquire; '-' reads it from stdin [default $DLOCK_TOKEN]")
      ->type_name("TOKEN");
  sub.add_option("-t,--ttl", args->ttl,
                 "New lease length from now, kept by later renewals [default: the lock's own length, the one given to "
                 "acquire or to the last renew --ttl; the ttl setting is not used]")
      ->type_name("D");
  sub.add_flag("--json", args->json,
               "Print name, ttl_ms, expires_at (and a keeper's keeper_window_ms and renew_by) and fence as JSON");
  sub.callback([args, &context] { context.action = [args, &context] { return run_renew(*args, context); }; });
}

} // namespace dlock::cli
