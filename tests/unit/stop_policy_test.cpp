#include "runner/timeline.hpp"

#include <catch2/catch.hpp>

// The safety timeline's stop policy (runner/timeline.hpp next_stop_step,
// plan_renewal_start) over made-up time points: no clock, no process, no
// backend. Each test names the rule of the man page's LOCK LOSS section (or
// --max-runtime's) that it checks.

using namespace dlock;
using namespace dlock::runner;
using namespace std::chrono_literals;

namespace {

// A steady clock reading far from its epoch, so that nothing here depends
// on how a time point near zero behaves.
const SteadyClock::time_point k_t0 = SteadyClock::time_point{} + 1000s;
const SteadyClock::time_point k_never = SteadyClock::time_point::max();

// T = 30 s, K = 5 s: SIGTERM at t0 + 24.6 s, SIGKILL at t0 + 29.6 s.
constexpr Millis k_ttl = 30s;
const SteadyClock::time_point k_term_at = k_t0 + 24600ms;
const SteadyClock::time_point k_kill_at = k_t0 + 29600ms;

LeaseReport confirmed_at(SteadyClock::time_point t0, Millis ttl = k_ttl) { return {t0, ttl, false, ""}; }

LeaseReport unconfirmed_since(SteadyClock::time_point t0, std::string reason) {
  return {t0, k_ttl, false, std::move(reason)};
}

LeaseReport lost_at(SteadyClock::time_point t0, std::string reason) { return {t0, k_ttl, true, std::move(reason)}; }

StopLimits limits(SteadyClock::time_point max_runtime_at = k_never, Millis kill_after = 5s,
                  Millis lost_kill_after = 1s) {
  return {kill_after, lost_kill_after, max_runtime_at};
}

} // namespace

TEST_CASE("policy: a lease confirmed in time sends nothing and wakes at its SIGTERM deadline") {
  StopStep step = next_stop_step({}, k_t0 + 1s, confirmed_at(k_t0), limits());
  CHECK_FALSE(step.send_term);
  CHECK_FALSE(step.send_kill);
  CHECK(step.state.reason == StopReason::none);
  CHECK(step.wake_at == k_term_at);
}

TEST_CASE("policy: every confirmed renewal moves t0 and all the deadlines with it") {
  // At the first lease's SIGTERM deadline, a renewal confirmed at t0 + 10 s
  // leaves the job alone until t0 + 10 s + 24.6 s.
  StopStep step = next_stop_step({}, k_term_at, confirmed_at(k_t0 + 10s), limits());
  CHECK_FALSE(step.send_term);
  CHECK_FALSE(step.send_kill);
  CHECK(step.wake_at == k_term_at + 10s);
}

TEST_CASE("policy: unconfirmed renewals get SIGTERM at t0 + 0.99T - margin - K, not a moment before") {
  LeaseReport lease = unconfirmed_since(k_t0, "timed out");
  StopStep before = next_stop_step({}, k_term_at - 1ms, lease, limits());
  CHECK_FALSE(before.send_term);
  CHECK(before.wake_at == k_term_at);

  StopStep at = next_stop_step({}, k_term_at, lease, limits());
  CHECK(at.send_term);
  CHECK_FALSE(at.send_kill);
  CHECK(at.state.reason == StopReason::lease_deadline);
  CHECK(at.state.why == "timed out");
  CHECK(at.state.kill_at == k_kill_at);
  CHECK(at.wake_at == k_kill_at);
}

TEST_CASE("policy: after SIGTERM at the lease deadline, SIGKILL comes at t0 + 0.99T - margin") {
  LeaseReport lease = unconfirmed_since(k_t0, "timed out");
  StopState stopping = next_stop_step({}, k_term_at, lease, limits()).state;
  StopStep before = next_stop_step(stopping, k_kill_at - 1ms, lease, limits());
  CHECK_FALSE(before.send_term);
  CHECK_FALSE(before.send_kill);
  CHECK(before.wake_at == k_kill_at);

  StopStep at = next_stop_step(stopping, k_kill_at, lease, limits());
  CHECK_FALSE(at.send_term);
  CHECK(at.send_kill);
  CHECK(at.state.reason == StopReason::lease_deadline);
}

TEST_CASE("policy: SIGKILL is resent every 20 ms until the job is gone") {
  LeaseReport lease = unconfirmed_since(k_t0, "timed out");
  StopState state = next_stop_step({}, k_term_at, lease, limits()).state;
  StopStep first = next_stop_step(state, k_kill_at, lease, limits());
  REQUIRE(first.send_kill);
  CHECK(first.wake_at == k_kill_at + 20ms);

  // Woken early (a signal, a renewal): no SIGKILL before 20 ms have passed.
  StopStep early = next_stop_step(first.state, k_kill_at + 5ms, lease, limits());
  CHECK_FALSE(early.send_kill);
  CHECK(early.wake_at == k_kill_at + 20ms);

  StopStep second = next_stop_step(early.state, k_kill_at + 20ms, lease, limits());
  CHECK(second.send_kill);
  CHECK(second.wake_at == k_kill_at + 40ms);

  // Woken late: SIGKILL at once, the next 20 ms after that one.
  StopStep late = next_stop_step(second.state, k_kill_at + 75ms, lease, limits());
  CHECK(late.send_kill);
  CHECK_FALSE(late.send_term);
  CHECK(late.wake_at == k_kill_at + 95ms);
}

TEST_CASE("policy: a lease deadline seen late (dlock paused) sends SIGTERM and SIGKILL at once") {
  StopStep step = next_stop_step({}, k_kill_at + 3s, unconfirmed_since(k_t0, ""), limits());
  CHECK(step.send_term);
  CHECK(step.send_kill);
  CHECK(step.state.reason == StopReason::lease_deadline);
  CHECK(step.wake_at == k_kill_at + 3s + 20ms);
}

TEST_CASE("policy: a confirmed loss sends SIGTERM at once and SIGKILL --lost-kill-after later") {
  auto seen = k_t0 + 5s;
  LeaseReport lease = lost_at(k_t0, "someone else owns the lock");
  StopStep step = next_stop_step({}, seen, lease, limits());
  CHECK(step.send_term);
  CHECK_FALSE(step.send_kill);
  CHECK(step.state.reason == StopReason::lost);
  CHECK(step.state.why == "someone else owns the lock");
  CHECK(step.state.kill_at == seen + 1s);
  CHECK(step.wake_at == seen + 1s);

  StopStep before = next_stop_step(step.state, seen + 999ms, lease, limits());
  CHECK_FALSE(before.send_term);
  CHECK_FALSE(before.send_kill);
  StopStep at = next_stop_step(before.state, seen + 1s, lease, limits());
  CHECK_FALSE(at.send_term);
  CHECK(at.send_kill);
  CHECK(at.state.reason == StopReason::lost);
}

TEST_CASE("policy: after a confirmed loss the grace is at most K and never past the lease's kill deadline") {
  // --lost-kill-after 20s with K = 5 s: SIGKILL 5 s after the loss.
  auto seen = k_t0 + 5s;
  StopStep capped = next_stop_step({}, seen, lost_at(k_t0, ""), limits(k_never, 5s, 20s));
  CHECK(capped.state.kill_at == seen + 5s);
  // A loss seen 300 ms before the kill deadline: SIGKILL at the deadline.
  StopStep near = next_stop_step({}, k_kill_at - 300ms, lost_at(k_t0, ""), limits());
  CHECK(near.state.kill_at == k_kill_at);
  CHECK(near.wake_at == k_kill_at);
  // One seen after it: SIGTERM and SIGKILL together.
  StopStep after = next_stop_step({}, k_kill_at + 1s, lost_at(k_t0, ""), limits());
  CHECK(after.send_term);
  CHECK(after.send_kill);
}

TEST_CASE("policy: --max-runtime sends SIGTERM at the limit and SIGKILL --kill-after later, uncapped") {
  // K = 12 s would be capped to 9.6 s for the lease (T = 30 s); not for
  // --max-runtime. The lease is confirmed just before, so its own
  // deadlines are far.
  auto limit = k_t0 + 1s;
  StopLimits max_runtime = limits(limit, 12s);
  StopStep before = next_stop_step({}, limit - 1ms, confirmed_at(k_t0), max_runtime);
  CHECK_FALSE(before.send_term);
  CHECK(before.wake_at == limit);

  StopStep at = next_stop_step({}, limit, confirmed_at(k_t0), max_runtime);
  CHECK(at.send_term);
  CHECK_FALSE(at.send_kill);
  CHECK(at.state.reason == StopReason::max_runtime);
  CHECK(at.state.why.empty());
  CHECK(at.state.kill_at == limit + 12s);
  CHECK(at.wake_at == limit + 12s);

  StopStep kill = next_stop_step(at.state, limit + 12s, confirmed_at(k_t0 + 10s), max_runtime);
  CHECK(kill.send_kill);
  CHECK_FALSE(kill.send_term);
  CHECK(kill.state.reason == StopReason::max_runtime);
}

TEST_CASE("policy: the lease's kill deadline still applies during --max-runtime's grace") {
  // K = 12 s: the lease's SIGTERM deadline of an unrenewed lease is
  // t0 + 20 s (K capped to 9.6 s), its SIGKILL t0 + 29.6 s. --max-runtime
  // reached at t0 + 19 s would kill at t0 + 31 s: the lease's comes first.
  StopLimits max_runtime = limits(k_t0 + 19s, 12s);
  LeaseReport lease = unconfirmed_since(k_t0, "timed out");
  StopStep step = next_stop_step({}, k_t0 + 19s, lease, max_runtime);
  CHECK(step.send_term);
  CHECK(step.state.reason == StopReason::max_runtime);
  CHECK(step.state.kill_at == k_t0 + 31s);
  CHECK(step.wake_at == k_kill_at);
  StopStep at = next_stop_step(step.state, k_kill_at, lease, max_runtime);
  CHECK(at.send_kill);
  CHECK_FALSE(at.send_term);
  CHECK(at.state.reason == StopReason::max_runtime);
}

TEST_CASE("policy: a confirmed loss comes before the lease deadline, which comes before --max-runtime") {
  auto late = k_kill_at - 1s; // past the SIGTERM deadline and the --max-runtime limit
  CHECK(next_stop_step({}, late, lost_at(k_t0, "gone"), limits(k_t0)).state.reason == StopReason::lost);
  CHECK(next_stop_step({}, late, unconfirmed_since(k_t0, ""), limits(k_t0)).state.reason == StopReason::lease_deadline);
  CHECK(next_stop_step({}, late, confirmed_at(k_t0 + 20s), limits(k_t0)).state.reason == StopReason::max_runtime);
}

TEST_CASE("policy: SIGTERM goes out once per run, however many causes follow") {
  StopState state = next_stop_step({}, k_t0 + 1s, confirmed_at(k_t0), limits(k_t0 + 1s)).state;
  REQUIRE(state.reason == StopReason::max_runtime);
  StopStep lost = next_stop_step(state, k_t0 + 2s, lost_at(k_t0, "gone"), limits(k_t0 + 1s));
  CHECK_FALSE(lost.send_term);
  CHECK(lost.state.reason == StopReason::max_runtime);
  StopStep deadline = next_stop_step(state, k_term_at, unconfirmed_since(k_t0, ""), limits(k_t0 + 1s));
  CHECK_FALSE(deadline.send_term);
}

TEST_CASE("policy: a renewal confirmed after SIGTERM does not call the stop off") {
  LeaseReport lease = unconfirmed_since(k_t0, "timed out");
  StopState stopping = next_stop_step({}, k_term_at, lease, limits()).state;
  StopStep step = next_stop_step(stopping, k_kill_at, confirmed_at(k_kill_at - 10ms), limits());
  CHECK(step.send_kill);
  CHECK(step.state.reason == StopReason::lease_deadline);
}

TEST_CASE("policy: without --max-runtime and with a fresh lease nothing is due but the SIGTERM deadline") {
  StopStep step = next_stop_step({}, k_t0, confirmed_at(k_t0), limits());
  CHECK(step.wake_at == k_term_at);
  StopStep with_limit = next_stop_step({}, k_t0, confirmed_at(k_t0), limits(k_t0 + 3s));
  CHECK(with_limit.wake_at == k_t0 + 3s);
}

TEST_CASE("policy: the renewal thread starts only when the first renewal is due") {
  auto first_renewal = k_t0 + 10s;
  RenewalStart early = plan_renewal_start(k_t0 + 1s, first_renewal, false);
  CHECK_FALSE(early.start_now);
  CHECK(early.wake_at == first_renewal);
  RenewalStart due = plan_renewal_start(first_renewal, first_renewal, false);
  CHECK(due.start_now);
  CHECK(due.wake_at == k_never);
  RenewalStart late = plan_renewal_start(first_renewal + 5s, first_renewal, false);
  CHECK(late.start_now);
}

TEST_CASE("policy: news from the backend is watched for only until the renewal thread runs") {
  auto first_renewal = k_t0 + 10s;
  CHECK(plan_renewal_start(k_t0, first_renewal, false).watch_news);
  CHECK_FALSE(plan_renewal_start(first_renewal, first_renewal, false).watch_news);
  RenewalStart running = plan_renewal_start(k_t0, first_renewal, true);
  CHECK_FALSE(running.start_now);
  CHECK_FALSE(running.watch_news);
  CHECK(running.wake_at == k_never);
}

TEST_CASE("policy: a renewal thread that could not start is neither retried nor waited for") {
  RenewalStart failed = plan_renewal_start(k_t0 + 20s, k_never, false);
  CHECK_FALSE(failed.start_now);
  CHECK_FALSE(failed.watch_news);
  CHECK(failed.wake_at == k_never);
  // The stop then follows the lease's deadlines, with the thread's failure
  // as the reason.
  StopStep step =
      next_stop_step({}, k_term_at, unconfirmed_since(k_t0, "cannot start the renewal thread: x"), limits());
  CHECK(step.send_term);
  CHECK(step.state.why == "cannot start the renewal thread: x");
}

TEST_CASE("policy: the guard's deadline is half the margin after dlock's SIGKILL, before t0 + T") {
  CHECK(guard_kill_at(k_t0, k_ttl) == k_kill_at + 50ms);
  CHECK(guard_kill_at(k_t0, k_ttl) < k_t0 + k_ttl);
  // T = 1 s: margin 50 ms, SIGKILL at t0 + 940 ms, the guard at t0 + 965 ms.
  CHECK(guard_kill_at(k_t0, 1s) == k_t0 + 965ms);
}

TEST_CASE("policy: with --ttl 3s SIGTERM comes at t0 + 2T/3 and SIGKILL at t0 + 2.87 s") {
  Deadlines d = compute_deadlines(k_t0, 3s, 5s);
  CHECK(d.kill_at == k_t0 + 2870ms);
  CHECK(d.kill_after == 870ms);
  CHECK(d.term_at == k_t0 + 2s);
  // --ttl 2s: K is capped to the man page's 0.55 s.
  CHECK(compute_deadlines(k_t0, 2s, 5s).kill_after == 546ms);
}

TEST_CASE("policy: a job's end seen before the kill deadline is a clean run") {
  EndVerdict verdict = judge_end(k_kill_at - 1ms, unconfirmed_since(k_t0, "timed out"));
  CHECK(verdict.clean);
  CHECK_FALSE(verdict.late);
}

TEST_CASE("policy: a job's end seen only from the kill deadline on (dlock paused) is not a clean run") {
  EndVerdict verdict = judge_end(k_kill_at, confirmed_at(k_t0));
  CHECK_FALSE(verdict.clean);
  CHECK(verdict.late);
  CHECK(verdict.why == k_unscheduled_reason);
  // A renewal confirmed later dates the lease anew.
  CHECK(judge_end(k_kill_at, confirmed_at(k_t0 + 1s)).clean);
}

TEST_CASE("policy: a job that ended after a loss the heartbeat reported is not a clean run") {
  EndVerdict verdict = judge_end(k_t0 + 5s, lost_at(k_t0, "the lock's key was deleted"));
  CHECK_FALSE(verdict.clean);
  CHECK_FALSE(verdict.late);
  CHECK(verdict.why == "the lock's key was deleted");
}
