#include "cli/context.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/name.hpp"
#include "runner/keeper.hpp"
#include "runner/runner.hpp"

#include "cli/cli11.hpp"

#include "cli/streams.hpp"

namespace dlock::cli {

namespace {

struct ReleaseArguments {
  std::string name;
  std::optional<std::string> token;
  bool force = false;
};

int force_release(const std::string &name, const Settings &settings) {
  auto backend = open_backend(settings);
  std::optional<backend::LockStatus> broken = backend->force_release(name);
  if (!broken) {
    say("lock '{}' is not held", name);
    return to_int(ExitCode::not_held);
  }
  std::string holder = "an unknown holder";
  std::string fence = broken->fence ? fmt::format(", fence {}", *broken->fence) : "";
  if (broken->holder) {
    const HolderInfo &h = *broken->holder;
    holder = fmt::format("pid {} on {}{}{}", h.pid, h.host, h.user.empty() ? "" : " as " + h.user,
                         h.command.empty() ? "" : fmt::format(" ('{}')", h.command));
    if (h.since.time_since_epoch().count()) holder += fmt::format(" since {}", format_utc(h.since));
  } else if (std::string many = runner::holders_summary(*broken); !many.empty()) {
    holder = many;
    // The name's fence is the last one it gave, perhaps not to the first
    // holder named: the highest of theirs says which fences were broken.
    std::optional<std::uint64_t> highest;
    for (const auto &h : broken->holders)
      if (h.fence && (!highest || *h.fence > *highest)) highest = h.fence;
    if (highest) fence = fmt::format(", the highest fence {}", *highest);
  }
  std::cout << fmt::format("broke lock '{}' held by {}{}\n", name, holder, fence);
  return 0;
}

int run_release(const ReleaseArguments &args, Context &context) {
  validate_name(args.name);
  if (args.force) {
    if (args.token) throw UsageError("give either TOKEN or --force, not both");
    return force_release(args.name, context.settings());
  }
  std::string token = resolve_token(context, args.token);
  Settings settings = context.settings();
  bool released = false;
  if (held_by_keeper(token, settings)) {
    auto reply = runner::keeper_release(runner::identity_of(settings.backend, args.name), token,
                                        settings.backend.connect_timeout * 2 + Millis(1000));
    released = reply.answer == runner::KeeperAnswer::done;
  } else {
    auto backend = open_backend(settings);
    released = backend->release(backend::Lease{.name = args.name, .token = token}) == backend::ReleaseOutcome::released;
  }
  if (!released) {
    say("token no longer owns lock '{}'", args.name);
    return to_int(ExitCode::not_held);
  }
  return 0;
}

} // namespace

void setup_release(CLI::App &sub, Context &context) {
  auto args = std::make_shared<ReleaseArguments>();
  sub.add_option("name", args->name, "Lock name")->required()->type_name("NAME");
  sub.add_option("token", args->token, "Release token from acquire; '-' reads it from stdin [default $DLOCK_TOKEN]")
      ->type_name("TOKEN");
  sub.add_flag("--force", args->force, "Break the lock whoever holds it, and print who held it");
  sub.callback([args, &context] { context.action = [args, &context] { return run_release(*args, context); }; });
}

} // namespace dlock::cli
