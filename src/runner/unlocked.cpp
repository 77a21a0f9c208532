// --if-unavailable: what a run does when its backend cannot be reached.
#include "core/log.hpp"
#include "runner/runner.hpp"
#include "runner/supervisor.hpp"

#include <fmt/format.h>

#include <optional>

namespace dlock::runner {

namespace {

// Stands in for the backend that could not be reached, so that a job run
// without the lock is supervised like any other (signals, descendants,
// --max-runtime), with a lease that never needs renewing and nothing to
// release. No guard: there is no lease to outlive.
class NoLock final : public backend::Backend {
public:
  static constexpr Millis k_forever = std::chrono::hours(24 * 365 * 10);

  backend::AcquireResult try_acquire(const backend::LockRequest &) override { return {}; }
  backend::AcquireResult acquire(const backend::LockRequest &, std::optional<SteadyClock::time_point>,
                                 const Interrupt &) override {
    return {};
  }
  backend::RenewResult renew(const backend::Lease &, Millis, std::optional<SteadyClock::time_point>) override {
    backend::RenewResult result;
    result.outcome = backend::RenewOutcome::renewed;
    result.sent_at = SteadyClock::now();
    result.ttl = k_forever;
    return result;
  }
  backend::ReleaseOutcome release(const backend::Lease &) override { return backend::ReleaseOutcome::released; }
  std::optional<backend::LockStatus> force_release(const std::string &) override { return std::nullopt; }
  backend::LockStatus status(const std::string &) override { return {}; }
  std::vector<backend::LockStatus> list(const std::string &) override { return {}; }
  backend::PingResult ping() override { return {}; }
  bool lock_follows_job() const override { return true; }
};

} // namespace

int run_unavailable(const RunOptions &options, const Error &failure, std::optional<Millis> waited) {
  using Policy = RunOptions::IfUnavailable;
  const std::string &name = options.request.name;
  RunEvent event;
  event.kind = EventKind::unavailable;
  event.name = name;
  event.wait = waited;
  event.cause = failure.what();
  // A backend that answered (a full lock directory, a server's error
  // reply) is not out of reach: someone may hold the lock right now, so
  // the job never runs without it. Skipping it stays safe.
  Policy policy = options.if_unavailable;
  std::optional<Error> refused;
  if (policy == Policy::run && failure.answered()) {
    policy = Policy::fail;
    refused.emplace(ExitCode::unavailable,
                    fmt::format("{}; --if-unavailable run does not apply: the backend answered, and someone may hold "
                                "the lock",
                                failure.what()));
    event.cause = refused->what();
  }
  event.action = policy == Policy::run ? "run" : policy == Policy::skip ? "skip" : "fail";
  switch (policy) {
  case Policy::fail:
    event.exit_status = to_int(ExitCode::unavailable);
    if (options.events) options.events->record(event);
    if (refused) throw *refused;
    throw failure;
  case Policy::skip:
    // Even with -q: a job that did not run must never go unnoticed.
    say("{}; --if-unavailable skip: the job did not run", failure.what());
    event.exit_status = options.conflict_exit_code;
    if (options.events) options.events->record(event);
    return options.conflict_exit_code;
  case Policy::run:
    break;
  }
  say("{}; --if-unavailable run: running the job WITHOUT the lock (no other run is kept out, no fence)",
      failure.what());
  if (options.events) options.events->record(event);
  NoLock none;
  backend::Lease lease;
  lease.name = name;
  lease.ttl = NoLock::k_forever;
  lease.confirmed_at = SteadyClock::now();
  Guard guard;
  return supervise_job(none, options, lease, guard, nullptr, JobLock::unlocked, waited);
}

} // namespace dlock::runner
