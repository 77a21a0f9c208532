#include "runner/timeline.hpp"

#include <algorithm>

namespace dlock::runner {

using std::chrono::duration_cast;

Millis safety_margin(Millis ttl) { return std::min(Millis(100), ttl / 20); }

Millis effective_kill_after(Millis ttl, Millis kill_after) {
  auto lease_ms = static_cast<double>(ttl.count());
  auto room = Millis(static_cast<Millis::rep>(lease_ms * (1.0 - k_drift) - lease_ms * 2.0 / 3.0)) - safety_margin(ttl);
  return std::clamp(kill_after, Millis(0), std::max(room, Millis(0)));
}

Deadlines compute_deadlines(SteadyClock::time_point t0, Millis ttl, Millis kill_after) {
  auto usable =
      std::chrono::microseconds(static_cast<std::int64_t>(static_cast<double>(ttl.count()) * 1000.0 * (1.0 - k_drift)));
  Deadlines d;
  d.kill_after = effective_kill_after(ttl, kill_after);
  d.kill_at = t0 + duration_cast<SteadyClock::duration>(usable) - safety_margin(ttl);
  d.term_at = d.kill_at - d.kill_after;
  return d;
}

SteadyClock::time_point lost_kill_at(const Deadlines &deadlines, SteadyClock::time_point now, Millis lost_kill_after) {
  Millis grace = std::clamp(lost_kill_after, Millis(0), deadlines.kill_after);
  return std::min(now + grace, deadlines.kill_at);
}

SteadyClock::time_point guard_kill_at(SteadyClock::time_point t0, Millis ttl) {
  return compute_deadlines(t0, ttl, Millis(0)).kill_at + safety_margin(ttl) / 2;
}

StopStep next_stop_step(const StopState &state, SteadyClock::time_point now, const LeaseReport &lease,
                        const StopLimits &limits) {
  StopStep step{state};
  StopState &next = step.state;
  Deadlines deadlines = compute_deadlines(lease.confirmed_at, lease.ttl, limits.kill_after);
  auto begin = [&](StopReason reason, const std::string &why, SteadyClock::time_point kill_by) {
    next.reason = reason;
    next.why = why;
    next.kill_at = kill_by;
    step.send_term = true;
  };
  if (next.reason == StopReason::none) {
    if (lease.lost)
      begin(StopReason::lost, lease.reason, lost_kill_at(deadlines, now, limits.lost_kill_after));
    else if (now >= deadlines.term_at)
      begin(StopReason::lease_deadline, lease.reason, deadlines.kill_at);
    else if (now >= limits.max_runtime_at)
      begin(StopReason::max_runtime, "", now + limits.kill_after);
  }
  // Whatever else happens, nothing of the job may run past the point where
  // the lease could lapse.
  auto kill_at = std::min(next.kill_at, deadlines.kill_at);
  if (now >= kill_at) {
    if (next.reason == StopReason::none) next.reason = StopReason::lease_deadline;
    if (!next.last_kill || now - *next.last_kill >= k_kill_repeat) {
      step.send_kill = true;
      next.last_kill = now;
    }
    step.wake_at = *next.last_kill + k_kill_repeat;
  } else {
    step.wake_at = kill_at;
  }
  if (next.reason == StopReason::none)
    step.wake_at = std::min({step.wake_at, deadlines.term_at, limits.max_runtime_at});
  return step;
}

EndVerdict judge_end(SteadyClock::time_point seen_at, const LeaseReport &lease) {
  EndVerdict verdict;
  verdict.late = seen_at >= compute_deadlines(lease.confirmed_at, lease.ttl, Millis(0)).kill_at;
  if (!lease.lost && !verdict.late) return verdict;
  verdict.clean = false;
  verdict.why = lease.lost ? lease.reason : k_unscheduled_reason;
  return verdict;
}

RenewalStart plan_renewal_start(SteadyClock::time_point now, SteadyClock::time_point first_renewal, bool started) {
  if (started || first_renewal == SteadyClock::time_point::max()) return {};
  if (now >= first_renewal) return {true, false, SteadyClock::time_point::max()};
  return {false, true, first_renewal};
}

Millis renew_interval(Millis ttl) { return std::max(Millis(1), ttl / 3); }

Millis retry_interval(Millis ttl, double jitter01) {
  Millis base = std::clamp(ttl / 15, Millis(20), Millis(1000));
  return Millis(static_cast<Millis::rep>(static_cast<double>(base.count()) * (1.0 - 0.2 * jitter01)));
}

} // namespace dlock::runner
