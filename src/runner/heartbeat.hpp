#pragma once

#include "backend/backend.hpp"
#include "core/unique_fd.hpp"
#include "runner/timeline.hpp"

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace dlock::runner {

// backend.renew(), with a failed round trip (an exception) reported as an
// unconfirmed renewal: the caller's deadline then applies.
backend::RenewResult renew_or_unknown(backend::Backend &backend, const backend::Lease &lease, Millis ttl,
                                      std::optional<SteadyClock::time_point> answer_by = std::nullopt);

// Renews the lease every T/3 on its own thread, and quickly again after a
// renewal nobody confirmed. It only reports; the thread that owns the child
// enforces the deadlines from snapshot() (timeline.hpp next_stop_step), so
// a renewal that hangs cannot delay the stop of the child.
class Heartbeat {
public:
  struct State {
    SteadyClock::time_point confirmed_at; // t0
    Millis ttl{};                         // T
    bool lost = false;                    // refused, or one fell due past the kill deadline
    std::string reason;                   // why lost, or the last failure
    int renewals = 0;
    int failures_in_row = 0;
  };

  // `wake_fd` (an eventfd, or -1) is incremented after every renewal attempt so that a
  // poll() loop re-reads the state. `kill_after` is --kill-after, as the
  // owner's stop policy gets it: no renewal outlasts the lease's SIGTERM
  // deadline.
  Heartbeat(backend::Backend &backend, backend::Lease lease, Millis requested_ttl, Millis kill_after, int wake_fd);
  ~Heartbeat();
  Heartbeat(const Heartbeat &) = delete;
  Heartbeat &operator=(const Heartbeat &) = delete;

  void start();
  bool started() const { return m_thread.joinable(); }
  // Ends renewing without waiting for the thread to be scheduled: returns
  // once no renewal is in flight (waiting for one, bounded by the backend's
  // round-trip timeout) and none will start. The backend is the caller's
  // after this, so the release is not delayed by the thread's exit.
  void quiesce();
  // quiesce() and join.
  void stop();
  State snapshot() const;

private:
  void loop();
  void notify_owner();
  // Sleeps until `next`, a stop, or news from the backend (event_fd());
  // true when stopping.
  bool sleep_until(std::unique_lock<std::mutex> &lock, SteadyClock::time_point next);

  backend::Backend &m_backend;
  backend::Lease m_lease;
  Millis m_requested_ttl;
  Millis m_kill_after;
  int m_wake_fd;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  bool m_renewing = false;
  std::condition_variable m_idle;
  UniqueFd m_stop_fd; // readable once stopping, for a poll() on the backend's event_fd()
  SteadyClock::time_point m_last_news{};
  bool m_news = false; // the last wake-up was news (event_fd), not the time
  State m_state;
  std::thread m_thread;
};

} // namespace dlock::runner
