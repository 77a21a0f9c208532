#include "runner/heartbeat.hpp"

#include "core/error.hpp"
#include "core/log.hpp"

#include <cerrno>
#include <poll.h>
#include <random>
#include <sys/eventfd.h>
#include <unistd.h>
#include <utility>

namespace dlock::runner {

backend::RenewResult renew_or_unknown(backend::Backend &backend, const backend::Lease &lease, Millis ttl,
                                      std::optional<SteadyClock::time_point> answer_by) {
  try {
    return backend.renew(lease, ttl, answer_by);
  } catch (const std::exception &failure) {
    backend::RenewResult result;
    result.outcome = backend::RenewOutcome::unknown;
    result.reason = failure.what();
    return result;
  }
}

Heartbeat::Heartbeat(backend::Backend &backend, backend::Lease lease, Millis requested_ttl, Millis kill_after,
                     int wake_fd)
    : m_backend(backend), m_lease(std::move(lease)), m_requested_ttl(requested_ttl), m_kill_after(kill_after),
      m_wake_fd(wake_fd), m_stop_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  m_state.confirmed_at = m_lease.confirmed_at;
  m_state.ttl = m_lease.ttl;
}

Heartbeat::~Heartbeat() { stop(); }

void Heartbeat::start() {
  m_thread = std::thread([this] { loop(); });
}

void Heartbeat::quiesce() {
  std::unique_lock lock(m_mutex);
  m_stopping = true;
  m_wake.notify_all();
  if (m_stop_fd) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto ignored = ::write(m_stop_fd.get(), &one, sizeof one);
  }
  m_idle.wait(lock, [this] { return !m_renewing; });
}

void Heartbeat::stop() {
  quiesce();
  if (m_thread.joinable()) m_thread.join();
}

Heartbeat::State Heartbeat::snapshot() const {
  std::lock_guard lock(m_mutex);
  return m_state;
}

void Heartbeat::notify_owner() {
  if (m_wake_fd < 0) return;
  std::uint64_t one = 1;
  while (::write(m_wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

bool Heartbeat::sleep_until(std::unique_lock<std::mutex> &lock, SteadyClock::time_point next) {
  // After quiesce() the backend is the owner's again (it may be releasing
  // the lease right now): not even event_fd() may be asked.
  if (m_stopping) return true;
  int news = m_backend.event_fd();
  if (news < 0 || !m_stop_fd) return m_wake.wait_until(lock, next, [this] { return m_stopping; });
  for (;;) {
    if (m_stopping) return true;
    auto now = SteadyClock::now();
    if (now >= next) return false;
    // News is acted on at once, but at most every 20ms: renew() consumes
    // it, and a backend that keeps signalling must not make us spin.
    bool heed = now - m_last_news >= Millis(20);
    auto until = heed ? next : std::min(next, m_last_news + Millis(20));
    pollfd items[2] = {{m_stop_fd.get(), POLLIN, 0}, {news, POLLIN, 0}};
    lock.unlock();
    auto left = std::chrono::ceil<Millis>(until - now).count();
    int ready = ::poll(items, heed ? 2 : 1, static_cast<int>(std::min<Millis::rep>(left, 600'000)));
    lock.lock();
    if (m_stopping) return true;
    if (ready > 0 && heed && (items[1].revents & POLLIN)) {
      m_last_news = SteadyClock::now();
      m_news = true;
      detail(2, "news about '{}' from the backend: checking the lease now", m_lease.name);
      return false;
    }
  }
}

void Heartbeat::loop() {
  std::minstd_rand jitter(static_cast<unsigned>(getpid()) ^
                          static_cast<unsigned>(SteadyClock::now().time_since_epoch().count()));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::unique_lock lock(m_mutex);
  auto next = m_state.confirmed_at + renew_interval(m_state.ttl);
  for (;;) {
    if (sleep_until(lock, next)) return;
    if (std::exchange(m_news, false)) {
      m_renewing = true;
      lock.unlock();
      bool expected = m_backend.news_was_expected(m_lease);
      lock.lock();
      m_renewing = false;
      m_idle.notify_all();
      if (expected) continue;
    }
    // Past the kill deadline the lease may already be someone else's (we
    // were paused or starved): a renewal now must not revive it, or a job
    // that was frozen past its lease would carry on as if nothing happened.
    Deadlines deadlines = compute_deadlines(m_state.confirmed_at, m_state.ttl, m_kill_after);
    auto now = SteadyClock::now();
    if (now >= deadlines.kill_at) {
      m_state.lost = true;
      m_state.reason = k_unscheduled_reason;
      notify_owner();
      return;
    }
    // From the lease's SIGTERM deadline on, the owner is stopping the job,
    // and a stop is never called off (timeline.hpp): an answer would come
    // too late to matter, and a round trip still waiting for one would
    // hold up dlock's exit once the job has ended. So no renewal is sent
    // then, and none waits for its answer past that deadline.
    if (now >= deadlines.term_at) {
      next = deadlines.kill_at;
      continue;
    }
    m_renewing = true;
    lock.unlock();
    backend::RenewResult result = renew_or_unknown(m_backend, m_lease, m_requested_ttl, deadlines.term_at);
    lock.lock();
    m_renewing = false;
    m_idle.notify_all();
    switch (result.outcome) {
    case backend::RenewOutcome::renewed:
      m_state.confirmed_at = result.sent_at;
      m_state.ttl = result.ttl;
      m_state.failures_in_row = 0;
      ++m_state.renewals;
      next = result.sent_at + renew_interval(result.ttl);
      detail(2, "renewed '{}': lease {} from now", m_lease.name, format_duration(result.ttl));
      break;
    case backend::RenewOutcome::lost:
      m_state.lost = true;
      m_state.reason = result.reason;
      break;
    case backend::RenewOutcome::unknown:
      ++m_state.failures_in_row;
      m_state.reason = result.reason;
      next = SteadyClock::now() + retry_interval(m_state.ttl, unit(jitter));
      detail(1, "renewal of '{}' unconfirmed ({}); retrying", m_lease.name, result.reason);
      break;
    }
    notify_owner();
    if (m_state.lost) return;
  }
}

} // namespace dlock::runner
