#pragma once

#include "core/duration.hpp"

#include <chrono>
#include <optional>
#include <string>

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

// Why the job was stopped, or why its end does not count as a clean run.
// ended_unguarded: the job ended on its own, but dlock saw it only after
// the lease could have lapsed (dlock was paused or starved meanwhile).
// guard_killed: dlock was not running when the lease's kill deadline came,
// and its guard killed the job's process group.
enum class StopReason { none, lost, lease_deadline, max_runtime, ended_unguarded, guard_killed };

// The heartbeat's latest report on the lease, as the supervision sees it
// when it wakes.
struct LeaseReport {
  SteadyClock::time_point confirmed_at; // t0
  Millis ttl{};                         // T
  bool lost = false;                    // a confirmed loss
  std::string reason;                   // why lost, or why renewals go unconfirmed
};

// What bounds a stop, fixed when the job starts.
struct StopLimits {
  Millis kill_after{};      // --kill-after, before compute_deadlines caps it
  Millis lost_kill_after{}; // --lost-kill-after
  // The job's start plus --max-runtime; max() without one.
  SteadyClock::time_point max_runtime_at = SteadyClock::time_point::max();
};

// The stop decided so far, carried from one wake-up to the next.
struct StopState {
  StopReason reason = StopReason::none;
  std::string why;                                                  // the lease's reason when the stop began
  SteadyClock::time_point kill_at = SteadyClock::time_point::max(); // the stop's own SIGKILL deadline
  std::optional<SteadyClock::time_point> last_kill;                 // when SIGKILL was last sent
};

// SIGKILL is sent again this often until no process of the job is left
// (one that was being forked, or that left the group, when it was sent).
inline constexpr Millis k_kill_repeat{20};

struct StopStep {
  StopState state;
  bool send_term = false; // SIGTERM now: the stop begins (once per run)
  bool send_kill = false; // SIGKILL now
  // When to look again if nothing happens meanwhile (a renewal, a signal,
  // the job's end).
  SteadyClock::time_point wake_at = SteadyClock::time_point::max();
};

// The stop policy of the safety timeline and --max-runtime, at `now`: the
// first of a confirmed loss (SIGTERM at once, SIGKILL lost_kill_at later),
// the lease's SIGTERM deadline (SIGKILL at its kill_at) and --max-runtime
// (SIGKILL --kill-after later, uncapped) begins the stop; a stop, once
// begun, is never called off or replaced. Whatever else happens, SIGKILL
// goes out from the lease's kill_at on, every k_kill_repeat. The
// supervision loop only carries the step out, and calls again with the
// returned state.
StopStep next_stop_step(const StopState &state, SteadyClock::time_point now, const LeaseReport &lease,
                        const StopLimits &limits);

// How the end of a job is judged when no stop was under way. If dlock was
// not running when the lease could lapse (SIGSTOP, a VM pause, a starved
// machine) and the job ended meanwhile, its end is seen only from the
// lease's kill deadline on (`late`): nobody can say the job finished under
// the lock, so the run must not report the job's status as if it had; nor
// after a loss that the heartbeat reported as the job ended. Only a late
// end can be the guard's kill (runner/guard.hpp).
struct EndVerdict {
  bool clean = true;
  bool late = false;
  std::string why; // why the end is not clean
};
EndVerdict judge_end(SteadyClock::time_point seen_at, const LeaseReport &lease);

// The renewal thread starts when the first renewal falls due, so a short
// job never pays for a thread; news from the backend (its session ended,
// the lock's node was deleted) starts it early, so the loss is seen at
// once, and is watched for until then.
struct RenewalStart {
  bool start_now = false;
  bool watch_news = false;
  SteadyClock::time_point wake_at = SteadyClock::time_point::max();
};

// `first_renewal` is max() once the thread could not be started: then
// nothing renews, and nothing is waited for on its account.
RenewalStart plan_renewal_start(SteadyClock::time_point now, SteadyClock::time_point first_renewal, bool started);

// Renew every T/3.
Millis renew_interval(Millis ttl);
// After an unconfirmed renewal: retry soon (T/15, between 20 ms and 1 s),
// with up to 20% jitter so that many clients do not retry in step.
Millis retry_interval(Millis ttl, double jitter01);

} // namespace dlock::runner
