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

Millis renew_interval(Millis ttl) { return std::max(Millis(1), ttl / 3); }

Millis retry_interval(Millis ttl, double jitter01) {
  Millis base = std::clamp(ttl / 15, Millis(20), Millis(1000));
  return Millis(static_cast<Millis::rep>(static_cast<double>(base.count()) * (1.0 - 0.2 * jitter01)));
}

} // namespace dlock::runner
