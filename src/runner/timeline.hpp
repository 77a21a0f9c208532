#pragma once

#include "core/duration.hpp"

#include <chrono>

namespace dlock::runner {

using SteadyClock = std::chrono::steady_clock;

// The lock-loss safety timeline of spec.md. With t0 the send time of the
// last renewal the backend confirmed and T the lease it granted, nobody else
// can get the lock before t0 + T. Allowing 1% clock drift and a fixed
// margin for signal delivery and scheduling, the child's process group must
// be gone by
//     kill_at = t0 + 0.99*T - margin          (SIGKILL)
//     term_at = kill_at - K                    (SIGTERM)
// K is --kill-after, capped so that SIGTERM never comes before t0 + 2T/3:
// the renewal due at t0 + T/3 and its quick retries get a whole third of the
// lease (a slow network's round trips included) before the job is stopped.
struct Deadlines {
  SteadyClock::time_point term_at;
  SteadyClock::time_point kill_at;
  Millis kill_after; // K as applied
};

inline constexpr double k_drift = 0.01;

// min(100 ms, T/20): covers SIGKILL delivery and reaping.
Millis safety_margin(Millis ttl);
Millis effective_kill_after(Millis ttl, Millis kill_after);
Deadlines compute_deadlines(SteadyClock::time_point t0, Millis ttl, Millis kill_after);

// SIGKILL after a confirmed loss seen at `now` (the backend says someone
// else owns the lock, or a watch reports it deleted): the overlap with the
// next holder has begun, so the grace is --lost-kill-after (default 1s),
// never more than the K of `deadlines`, and SIGKILL never after its kill_at.
SteadyClock::time_point lost_kill_at(const Deadlines &deadlines, SteadyClock::time_point now, Millis lost_kill_after);

// The kill deadline dlock sends its guard (runner/guard.hpp) for a lease
// confirmed at t0: the guard kills the job's group then if dlock has not
// sent a later one. Half the margin after kill_at, so that the guard never
// races dlock's own SIGKILL or a renewal confirmed just before kill_at that
// dlock has not passed on yet, and the job is still gone, with half the
// margin and the drift allowance to spare, before t0 + T.
SteadyClock::time_point guard_kill_at(SteadyClock::time_point t0, Millis ttl);

// Why the lock counts as lost when dlock itself ran again only after the
// SIGKILL deadline (SIGSTOP, a VM pause, a starved machine).
inline constexpr char k_unscheduled_reason[] =
    "the lease could have run out while dlock was not running (paused or starved)";

// Renew every T/3.
Millis renew_interval(Millis ttl);
// After an unconfirmed renewal: retry soon (T/15, between 20 ms and 1 s),
// with up to 20% jitter so that many clients do not retry in step.
Millis retry_interval(Millis ttl, double jitter01);

} // namespace dlock::runner
