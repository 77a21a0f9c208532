#include "runner/runner.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "runner/child.hpp"
#include "runner/guard.hpp"
#include "runner/supervisor.hpp"
#include "runner/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sys/prctl.h>

namespace dlock::runner {

std::string holders_summary(const backend::LockStatus &status, bool with_first) {
  if (status.holder || status.holders.empty()) return {};
  std::size_t n = status.holders.size();
  std::string text = status.mode == backend::HoldMode::shared ? fmt::format("{} reader{}", n, n == 1 ? "" : "s")
                                                              : fmt::format("{} holder{}", n, n == 1 ? "" : "s");
  if (status.mode != backend::HoldMode::shared && status.limit)
    text += fmt::format(" of {} slot{}", *status.limit, *status.limit == 1 ? "" : "s");
  if (!with_first) return text;
  // An undated holder (since 0) is no earlier than a dated one.
  auto first = std::min_element(status.holders.begin(), status.holders.end(), [](const auto &a, const auto &b) {
    bool a_dated = a.info.since.time_since_epoch().count() != 0, b_dated = b.info.since.time_since_epoch().count() != 0;
    return a_dated && (!b_dated || a.info.since < b.info.since);
  });
  return text + fmt::format(", the first pid {} on {}", first->info.pid, first->info.host);
}

std::string describe_holder(backend::Backend &backend, const std::string &name) {
  try {
    backend::LockStatus status = backend.status(name);
    if (std::string many = holders_summary(status); !many.empty()) return fmt::format(" (held by {})", many);
    if (!status.holder) return {};
    const auto &h = *status.holder;
    std::string text = fmt::format(" (held by pid {} on {}", h.pid, h.host);
    if (!h.user.empty()) text += fmt::format(" as {}", h.user);
    if (!h.command.empty()) text += fmt::format(", '{}'", h.command);
    return text + ")";
  } catch (const std::exception &) {
    return {};
  }
}

std::string busy_message(const std::string &name, const std::string &holder, std::optional<Millis> wait) {
  return fmt::format("lock '{}' is busy{}{}", name, holder,
                     wait && wait->count() > 0 ? fmt::format("; gave up after {}", format_duration(*wait)) : "");
}

namespace {

// A lease is dated by the request that granted it (t0). A grant at the end
// of a long server-side wait (flock, pg_advisory_lock) may carry a t0 so old
// that its first renewal is already due, or its kill deadline past: it is
// renewed once before anything runs under it, which dates it anew.
void confirm_fresh(backend::Backend &backend, const backend::LockRequest &request, backend::Lease &lease) {
  if (SteadyClock::now() - lease.confirmed_at < renew_interval(lease.ttl)) return;
  backend::RenewResult renewed = backend.renew(lease, request.ttl, std::nullopt);
  if (renewed.outcome == backend::RenewOutcome::renewed) {
    detail(2, "'{}' was granted after a long wait; renewed before use", request.name);
    lease.confirmed_at = renewed.sent_at;
    lease.ttl = renewed.ttl;
    return;
  }
  try {
    backend.release(lease);
  } catch (const std::exception &) {
    // It ends with its lease.
  }
  throw Error(ExitCode::lost, fmt::format("lock '{}' was granted after a long wait but could not be confirmed: {}",
                                          request.name, renewed.reason));
}

} // namespace

backend::AcquireResult take_lock(backend::Backend &backend, const backend::LockRequest &request,
                                 std::optional<Millis> wait) {
  Signals::install();
  backend::AcquireResult result;
  if (wait && wait->count() == 0) {
    result = backend.try_acquire(request);
  } else {
    std::optional<SteadyClock::time_point> deadline;
    if (wait) deadline = SteadyClock::now() + *wait;
    // With -v, whom the wait is for: a look (status) only, never an extra
    // attempt, which would join and leave a queue and wake other waiters.
    if (verbosity() >= 1)
      if (std::string holder = describe_holder(backend, request.name); !holder.empty())
        detail(1, "waiting for '{}' ({}){}", request.name,
               wait ? "up to " + format_duration(*wait) : std::string("forever"), holder);
    result = backend.acquire(request, deadline, Signals::interrupt());
  }
  if (result.outcome == backend::AcquireOutcome::acquired) confirm_fresh(backend, request, *result.lease);
  return result;
}

Acquisition acquire_for(backend::Backend &backend, const backend::LockRequest &request, std::optional<Millis> wait,
                        int conflict_exit_code, bool quiet) {
  auto started = SteadyClock::now();
  backend::AcquireResult result = take_lock(backend, request, wait);
  if (result.outcome == backend::AcquireOutcome::acquired && Signals::interrupt().requested()) {
    // A stop signal raced with the grant: honour the signal, leave nothing behind.
    backend.release(*result.lease);
    result = {backend::AcquireOutcome::interrupted, std::nullopt, Signals::interrupt().requested()};
  }
  switch (result.outcome) {
  case backend::AcquireOutcome::acquired:
    detail(1, "acquired '{}' (fence {}) in {:.1f} ms", request.name, result.lease->fence,
           std::chrono::duration<double, std::milli>(SteadyClock::now() - started).count());
    return {result.lease, 0, result.outcome, 0};
  case backend::AcquireOutcome::busy:
    if (!quiet) say("{}", busy_message(request.name, describe_holder(backend, request.name), wait));
    return {std::nullopt, conflict_exit_code, result.outcome, 0};
  case backend::AcquireOutcome::interrupted:
    detail(1, "wait for '{}' interrupted by signal {}", request.name, result.signal);
    return {std::nullopt, 128 + result.signal, result.outcome, result.signal};
  }
  return {std::nullopt, to_int(ExitCode::internal)};
}

int run_locked(backend::Backend &backend, const RunOptions &options, RunObserver *observer) {
  Signals::install();
  // Before the lock: the guard is a copy of this process, and must hold none
  // of its descriptors even for a moment; and a waiter must not pay for it
  // between the grant and the start of its job. Where the lock passes to the
  // job's processes (file, PostgreSQL) there is no lease to outlive: they
  // keep it until the last of them ends, as under flock(1).
  Guard guard = backend.lock_follows_job() ? Guard() : Guard::start();
  // Orphaned descendants (a job that daemonized a helper) are re-parented
  // to us, so they can be stopped on lock loss and waited for.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const auto started = SteadyClock::now();
  auto waited = [&] { return std::chrono::duration_cast<Millis>(SteadyClock::now() - started); };
  Acquisition taken;
  try {
    taken = acquire_for(backend, options.request, options.wait, options.conflict_exit_code, options.quiet);
  } catch (const Error &failure) {
    if (failure.code() != ExitCode::unavailable) throw;
    return run_unavailable(options, failure, waited());
  }
  if (!taken.lease) {
    if (options.events) {
      RunEvent event;
      event.kind = taken.outcome == backend::AcquireOutcome::interrupted ? EventKind::interrupted : EventKind::busy;
      event.name = options.request.name;
      event.wait = waited();
      event.exit_status = taken.exit_status;
      if (taken.signal) event.cause = fmt::format("signal {}", taken.signal);
      options.events->record(event);
    }
    return taken.exit_status;
  }
  if (observer) observer->on_acquired(*taken.lease);
  return supervise_job(backend, options, *taken.lease, guard, observer, JobLock::locked, waited());
}

} // namespace dlock::runner
