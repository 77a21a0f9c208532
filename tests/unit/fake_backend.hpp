#pragma once

#include "backend/backend.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace dlock::test {

// An in-memory backend for the runner's unit tests. Its renewals can be
// made to succeed, report loss, go unanswered, hang, or (silent) go
// unanswered until the caller's answer_by, as a frozen server's do.
class FakeBackend final : public backend::Backend {
public:
  enum class RenewMode { confirm, refuse, fail, hang, silent };

  RenewMode renew_mode = RenewMode::confirm;
  int confirm_first = 0; // renewals confirmed before renew_mode applies
  Millis granted_ttl{0}; // 0: grant what was asked
  bool held_by_other = false;
  std::uint64_t next_fence = 100;
  int news_fd = -1;      // what event_fd() returns
  int expected_news = 0; // how many times news_was_expected() drains news_fd and says true
  std::atomic<int> news_taken{0};
  mutable std::atomic<int> calls_during_release{0};
  Millis granted_long_ago{0}; // t0 of a grant this long before it is returned (a long server-side wait)
  Millis renew_latency{0};    // a confirmed renewal's answer comes this long after it was sent
  std::vector<int> lock_fds;  // what lifetime_fds() returns

  backend::AcquireResult try_acquire(const backend::LockRequest &request) override {
    std::lock_guard lock(m_mutex);
    if (held_by_other || m_held) return {backend::AcquireOutcome::busy, std::nullopt, 0};
    m_held = true;
    m_length = request.ttl;
    backend::Lease lease{.name = request.name,
                         .token = "fake-token",
                         .fence = next_fence++,
                         .ttl = grant(request.ttl),
                         .confirmed_at = backend::SteadyClock::now() - granted_long_ago};
    acquired_at = lease.confirmed_at;
    return {backend::AcquireOutcome::acquired, lease, 0};
  }

  backend::AcquireResult acquire(const backend::LockRequest &request, std::optional<backend::SteadyClock::time_point>,
                                 const Interrupt &) override {
    return try_acquire(request);
  }

  backend::RenewResult renew(const backend::Lease &, Millis ttl,
                             std::optional<backend::SteadyClock::time_point> answer_by) override {
    backend::RenewResult result;
    auto sent_at = backend::SteadyClock::now();
    if (renew_latency > Millis(0)) std::this_thread::sleep_for(renew_latency); // a slow network
    std::unique_lock lock(m_mutex);
    renew_times.push_back(sent_at);
    renew_asked.push_back(ttl);
    RenewMode mode = static_cast<int>(renew_times.size()) <= confirm_first ? RenewMode::confirm : renew_mode;
    switch (mode) {
    case RenewMode::confirm:
      // 0: the lock's own length; a length given becomes it.
      if (ttl > Millis(0)) m_length = ttl;
      result = {backend::RenewOutcome::renewed, grant(m_length), sent_at, ""};
      confirmed.push_back(sent_at);
      break;
    case RenewMode::refuse:
      result = {backend::RenewOutcome::lost, {}, sent_at, "someone else holds the lock"};
      break;
    case RenewMode::fail:
      result = {backend::RenewOutcome::unknown, {}, sent_at, "connection refused"};
      break;
    case RenewMode::silent:
      lock.unlock();
      std::this_thread::sleep_until(answer_by.value_or(sent_at + std::chrono::seconds(3)));
      lock.lock();
      result = {backend::RenewOutcome::unknown, {}, sent_at, "no answer in time"};
      break;
    case RenewMode::hang:
      m_unhang.wait_for(lock, std::chrono::seconds(3), [this] { return m_unhung; });
      result = {backend::RenewOutcome::unknown, {}, sent_at, "timed out"};
      break;
    }
    return result;
  }

  void unhang() {
    std::lock_guard lock(m_mutex);
    m_unhung = true;
    m_unhang.notify_all();
  }

  backend::ReleaseOutcome release(const backend::Lease &) override {
    // The runner must have the backend to itself while it releases: any
    // call from the heartbeat thread meanwhile is counted. The release
    // takes a moment, as a round trip would.
    m_releasing = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    m_releasing = false;
    std::lock_guard lock(m_mutex);
    ++releases;
    bool was = m_held;
    m_held = false;
    return was ? backend::ReleaseOutcome::released : backend::ReleaseOutcome::not_owner;
  }

  bool news_was_expected(const backend::Lease &) override {
    if (m_releasing) ++calls_during_release;
    ++news_taken;
    std::lock_guard lock(m_mutex);
    if (expected_news == 0) return false;
    --expected_news;
    std::uint64_t count = 0;
    return ::read(news_fd, &count, sizeof count) == static_cast<ssize_t>(sizeof count);
  }

  int event_fd() const override {
    if (m_releasing) ++calls_during_release;
    return news_fd;
  }

  std::vector<int> lifetime_fds(const backend::Lease &) const override { return lock_fds; }

  std::optional<backend::LockStatus> force_release(const std::string &) override { return std::nullopt; }
  backend::LockStatus status(const std::string &name) override {
    backend::LockStatus status;
    status.name = name;
    status.held = m_held || held_by_other;
    return status;
  }
  std::vector<backend::LockStatus> list(const std::string &) override { return {}; }
  backend::PingResult ping() override { return {}; }

  std::vector<backend::SteadyClock::time_point> renew_times;
  std::vector<Millis> renew_asked; // the ttl of each renewal (0: the lock's own length)
  std::vector<backend::SteadyClock::time_point> confirmed;
  backend::SteadyClock::time_point acquired_at;
  int releases = 0;

private:
  Millis grant(Millis asked) const { return granted_ttl.count() ? granted_ttl : asked; }

  std::mutex m_mutex;
  std::condition_variable m_unhang;
  bool m_unhung = false;
  bool m_held = false;
  Millis m_length{}; // the lock's own length: from acquire or the last renewal with one
  std::atomic<bool> m_releasing{false};
};

} // namespace dlock::test
