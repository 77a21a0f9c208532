// The one suite every backend must pass against a real server (for file:, a
// real directory). The backend comes from DLOCK_CONFORMANCE_URL; each test
// case uses lock names of its own, so the suite can share a server.
#include "conformance.hpp"
#include "core/signals.hpp"
#include "core/url.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <future>
#include <poll.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dlock;
using namespace dlock::backend;
using namespace std::chrono_literals;
using namespace conformance;

TEST_CASE("a free lock is acquired with a token and a fence, and is then busy for others") {
  auto a = client(), b = client();
  auto request = request_for(unique("basic"));
  auto before = SteadyClock::now();
  Lease lease = must_acquire(*a, request);
  CHECK_FALSE(lease.token.empty());
  CHECK(lease.fence > 0);
  CHECK(lease.ttl > 0ms);
  CHECK(lease.confirmed_at >= before);
  CHECK(lease.confirmed_at <= SteadyClock::now());
  CHECK(b->try_acquire(request).outcome == AcquireOutcome::busy);
  CHECK(a->release(lease) == ReleaseOutcome::released);
  Lease next = must_acquire(*b, request);
  CHECK(b->release(next) == ReleaseOutcome::released);
}

TEST_CASE("release with a stale token leaves the new holder's lock alone") {
  auto a = client(), b = client();
  auto request = request_for(unique("stale"));
  Lease first = must_acquire(*a, request);
  REQUIRE(a->release(first) == ReleaseOutcome::released);
  Lease second = must_acquire(*b, request);
  CHECK(a->release(first) == ReleaseOutcome::not_owner);
  Lease forged = second;
  forged.token = "not-the-token";
  CHECK(b->release(forged) == ReleaseOutcome::not_owner);
  CHECK(client()->try_acquire(request).outcome == AcquireOutcome::busy);
  CHECK(b->release(second) == ReleaseOutcome::released);
}

// Issue 34 point 1: on etcd a release with lock alpha's token revoked
// alpha's lease, freeing alpha while its holder still ran.
TEST_CASE("a token of another lock or namespace frees nothing: release and renew under NAME are not its owner") {
  auto a = client(), b = client();
  auto alpha = request_for(unique("alpha")), beta = request_for(unique("beta"));
  Lease held_alpha = must_acquire(*a, alpha);
  Lease held_beta = must_acquire(*b, beta);
  // Asked by alpha's own client (a session-bound backend serves only its
  // own holders) and, where a token works in any client, by a fresh one
  // and by one of another namespace.
  auto other_namespace = config();
  other_namespace.lock_namespace = "conformance-other";
  auto fresh = client(), elsewhere = create_backend(other_namespace);
  std::vector<Backend *> askers{a.get()};
  if (lease_based()) askers.insert(askers.end(), {fresh.get(), elsewhere.get()});
  for (Backend *asker : askers) {
    Lease crossed = held_alpha;
    crossed.name = beta.name; // beta's name with alpha's token
    CHECK(asker->release(crossed) == ReleaseOutcome::not_owner);
    CHECK(asker->renew(crossed, 2000ms, std::nullopt).outcome != RenewOutcome::renewed);
  }
  // alpha's own name and token, in another namespace.
  if (lease_based()) CHECK(elsewhere->release(held_alpha) == ReleaseOutcome::not_owner);
  CHECK(client()->try_acquire(alpha).outcome == AcquireOutcome::busy);
  CHECK(client()->try_acquire(beta).outcome == AcquireOutcome::busy);
  CHECK(a->release(held_alpha) == ReleaseOutcome::released);
  CHECK(b->release(held_beta) == ReleaseOutcome::released);
}

TEST_CASE("fences strictly increase across acquisitions by different clients") {
  auto name = unique("fence");
  std::uint64_t previous = 0;
  for (int i = 0; i < 20; ++i) {
    auto backend = client();
    Lease lease = must_acquire(*backend, request_for(name));
    CHECK(lease.fence > previous);
    previous = lease.fence;
    REQUIRE(backend->release(lease) == ReleaseOutcome::released);
  }
}

TEST_CASE("the owner renews; a stale token's renewal is refused as lost") {
  auto a = client(), b = client();
  auto request = request_for(unique("renew"));
  Lease lease = must_acquire(*a, request);
  auto before = SteadyClock::now();
  RenewResult renewed = a->renew(lease, 3000ms, std::nullopt);
  CHECK(renewed.outcome == RenewOutcome::renewed);
  CHECK(renewed.ttl > 0ms);
  CHECK(renewed.sent_at >= before);
  CHECK(renewed.sent_at <= SteadyClock::now());
  REQUIRE(a->release(lease) == ReleaseOutcome::released);
  Lease other = must_acquire(*b, request);
  CHECK(a->renew(lease, 3000ms, std::nullopt).outcome == RenewOutcome::lost);
  CHECK(b->release(other) == ReleaseOutcome::released);
}

TEST_CASE("a waiter gives up at its deadline, busy") {
  auto a = client(), b = client();
  auto request = request_for(unique("deadline"));
  Lease lease = must_acquire(*a, request);
  auto start = SteadyClock::now();
  AcquireResult result = b->acquire(request, start + 300ms, Signals::interrupt());
  auto waited = SteadyClock::now() - start;
  CHECK(result.outcome == AcquireOutcome::busy);
  CHECK(waited >= 290ms);
  CHECK(waited < 1500ms);
  CHECK(a->release(lease) == ReleaseOutcome::released);
}

TEST_CASE("a waiter is woken by the release, not by its deadline") {
  auto a = client(), b = client();
  auto request = request_for(unique("handover"));
  Lease lease = must_acquire(*a, request);
  auto waiter = std::async(std::launch::async, [&] {
    AcquireResult result = b->acquire(request, SteadyClock::now() + 10s, Signals::interrupt());
    return std::make_pair(result.outcome, SteadyClock::now());
  });
  // The waiter is blocked (it cannot take a held lock); then release.
  REQUIRE(waiter.wait_for(200ms) == std::future_status::timeout);
  auto released_at = SteadyClock::now();
  REQUIRE(a->release(lease) == ReleaseOutcome::released);
  auto [outcome, acquired_at] = waiter.get();
  CHECK(outcome == AcquireOutcome::acquired);
  CHECK(acquired_at - released_at < 500ms);
}

// The waiter whose predecessor in the queue gives up must look again and
// wait for the holder, not take the lock (etcd and ZooKeeper waiters each
// watch only the contender before them).
TEST_CASE("a waiter behind one that gives up keeps waiting for the holder, then takes the lock at its release") {
  auto a = client(), b = client(), c = client(), observer = client();
  auto request = request_for(unique("behind"));
  Lease lease = must_acquire(*a, request);
  auto waiters_reach = [&](unsigned n) {
    for (auto until = SteadyClock::now() + 2s; SteadyClock::now() < until; std::this_thread::sleep_for(5ms)) {
      auto waiters = observer->status(request.name).waiters;
      if (!waiters || *waiters >= n) return;
    }
  };
  auto quitter = std::async(std::launch::async, [&] {
    return b->acquire(request, SteadyClock::now() + 600ms, Signals::interrupt()).outcome;
  });
  waiters_reach(1);
  auto waiter = std::async(std::launch::async, [&] {
    AcquireResult result = c->acquire(request, SteadyClock::now() + 10s, Signals::interrupt());
    return std::make_pair(std::move(result), SteadyClock::now());
  });
  CHECK(quitter.get() == AcquireOutcome::busy);
  REQUIRE(waiter.wait_for(300ms) == std::future_status::timeout);
  auto released_at = SteadyClock::now();
  REQUIRE(a->release(lease) == ReleaseOutcome::released);
  auto [result, acquired_at] = waiter.get();
  REQUIRE(result.outcome == AcquireOutcome::acquired);
  CHECK(acquired_at - released_at < 500ms);
  CHECK(result.lease->fence > lease.fence);
  CHECK(c->release(*result.lease) == ReleaseOutcome::released);
}

TEST_CASE("a signal ends a wait cleanly and leaves nothing behind") {
  Signals::install();
  Signals::clear_stop();
  auto a = client(), b = client();
  auto request = request_for(unique("interrupt"));
  Lease lease = must_acquire(*a, request);
  // The signal is sent once the waiter is blocked, where the backend can
  // tell (waiters), so that the blocked path is what is tested.
  std::thread signaller([&] {
    auto observer = client();
    auto until = SteadyClock::now() + 2s;
    while (SteadyClock::now() < until) {
      auto waiters = observer->status(request.name).waiters;
      if (!waiters || *waiters >= 1) break;
      std::this_thread::sleep_for(5ms);
    }
    kill(getpid(), SIGUSR1);
  });
  auto start = SteadyClock::now();
  AcquireResult result = b->acquire(request, std::nullopt, Signals::interrupt());
  signaller.join();
  CHECK(result.outcome == AcquireOutcome::interrupted);
  CHECK(result.signal == SIGUSR1);
  CHECK(SteadyClock::now() - start < 2s);
  Signals::clear_stop();
  Signals::drain();
  CHECK(a->release(lease) == ReleaseOutcome::released);
  // The interrupted waiter left no claim: the lock is free for anyone.
  Lease next = must_acquire(*client(), request);
  (void)next;
}

TEST_CASE("status shows the holder and fence, never the token; free after release") {
  auto a = client();
  auto name = unique("status");
  Lease lease = must_acquire(*a, request_for(name));
  LockStatus held = client()->status(name);
  CHECK(held.held);
  REQUIRE(held.holder);
  CHECK(held.holder->command == "conformance");
  CHECK(held.holder->host == host_name());
  REQUIRE(held.fence);
  CHECK(*held.fence == lease.fence);
  CHECK(held.detail.find(lease.token) == std::string::npos);
  REQUIRE(a->release(lease) == ReleaseOutcome::released);
  CHECK_FALSE(client()->status(name).held);
}

TEST_CASE("list shows held locks under a prefix, and no free ones") {
  auto a = client();
  auto prefix = unique("list");
  Lease one = must_acquire(*a, request_for(prefix + "/one"));
  Lease two = must_acquire(*a, request_for(prefix + "/two"));
  Lease gone = must_acquire(*a, request_for(prefix + "/gone"));
  REQUIRE(a->release(gone) == ReleaseOutcome::released);
  auto locks = client()->list(prefix + "/");
  REQUIRE(locks.size() == 2);
  CHECK(locks[0].name == prefix + "/one");
  CHECK(locks[1].name == prefix + "/two");
  CHECK(client()->list(prefix + "/t").size() == 1);
  a->release(one);
  a->release(two);
}

TEST_CASE("names that differ only in punctuation are different locks") {
  auto a = client();
  auto base = unique("names");
  Lease slash = must_acquire(*a, request_for(base + "/a/b"));
  Lease colon = must_acquire(*a, request_for(base + "/a:b"));
  Lease under = must_acquire(*a, request_for(base + "/a_b"));
  Lease dots = must_acquire(*a, request_for(base + "/.."));
  for (auto *lease : {&slash, &colon, &under, &dots})
    CHECK(a->release(*lease) == ReleaseOutcome::released);
}

TEST_CASE("force release breaks the holder's lock; its next renewal is lost") {
  auto a = client(), b = client();
  auto name = unique("force");
  Lease lease = must_acquire(*a, request_for(name));
  auto broken = b->force_release(name);
  REQUIRE(broken);
  REQUIRE(broken->holder);
  CHECK(broken->holder->pid == getpid());
  Lease next = must_acquire(*b, request_for(name));
  CHECK(next.fence > lease.fence);
  CHECK(a->renew(lease, 2000ms, std::nullopt).outcome == RenewOutcome::lost);
  CHECK(a->release(lease) == ReleaseOutcome::not_owner);
  CHECK(client()->status(name).held);
  CHECK(b->release(next) == ReleaseOutcome::released);
  CHECK_FALSE(b->force_release(name));
}

TEST_CASE("a holder with news learns of a forced release before its next renewal") {
  auto a = client(), b = client();
  auto name = unique("news");
  Lease lease = must_acquire(*a, request_for(name, 6000ms));
  // Backends that learn of losses on their own do so once a renewal has
  // run (etcd opens its watch then); the others say -1 and renew at T/3.
  REQUIRE(a->renew(lease, 6000ms, std::nullopt).outcome == RenewOutcome::renewed);
  int news = a->event_fd();
  if (news < 0) {
    CHECK(b->force_release(name));
    CHECK(a->renew(lease, 6000ms, std::nullopt).outcome == RenewOutcome::lost);
    return;
  }
  pollfd quiet{news, POLLIN, 0};
  CHECK(::poll(&quiet, 1, 100) == 0);
  REQUIRE(b->force_release(name));
  pollfd item{news, POLLIN, 0};
  CHECK(::poll(&item, 1, 2000) == 1);
  CHECK(a->renew(lease, 6000ms, std::nullopt).outcome == RenewOutcome::lost);
}

TEST_CASE("ping reaches the backend") {
  PingResult result = client()->ping();
  REQUIRE_FALSE(result.nodes.empty());
  for (const auto &node : result.nodes)
    CHECK(node.reachable);
}

// Backends whose lock is a lease (not a session) must honour the ttl by
// themselves and must accept a lease rebuilt from (name, token) by another
// process: that is how `dlock renew` and `dlock release` work on them.
TEST_CASE("a lease that is not renewed runs out, and a waiter takes the lock soon after") {
  if (!lease_based()) return;
  auto a = client(), b = client();
  auto request = request_for(unique("expiry"), 1000ms);
  Lease lease = must_acquire(*a, request);
  auto started = SteadyClock::now();
  // The holder vanishes without releasing; nobody publishes anything.
  a.reset();
  AcquireResult result = b->acquire(request, SteadyClock::now() + 5s, Signals::interrupt());
  auto waited = SteadyClock::now() - started;
  REQUIRE(result.outcome == AcquireOutcome::acquired);
  CHECK(waited >= 900ms); // not before the lease ran out
  CHECK(waited < 2000ms); // and soon after it did (fallback wake-up)
  CHECK(result.lease->fence > lease.fence);
  auto c = client();
  CHECK(c->renew(lease, 1000ms, std::nullopt).outcome == RenewOutcome::lost);
  CHECK(b->release(*result.lease) == ReleaseOutcome::released);
}

TEST_CASE("a lease rebuilt from name and token in another client renews and releases") {
  if (!lease_based()) return;
  auto a = client();
  auto request = request_for(unique("rebuilt"), 2000ms);
  Lease held = must_acquire(*a, request);
  Lease rebuilt;
  rebuilt.name = held.name;
  rebuilt.token = held.token;
  auto other = client();
  RenewResult renewed = other->renew(rebuilt, 5000ms, std::nullopt);
  REQUIRE(renewed.outcome == RenewOutcome::renewed);
  // T is what the backend granted: the ttl asked for, or (Redlock) a
  // validity a little below it.
  CHECK(renewed.ttl <= 5000ms);
  CHECK(renewed.ttl >= 4500ms);
  LockStatus status = other->status(request.name);
  REQUIRE(status.held);
  if (status.time_left) CHECK(*status.time_left > 2000ms);
  CHECK(other->release(rebuilt) == ReleaseOutcome::released);
  CHECK_FALSE(client()->status(request.name).held);
}

namespace {
// A renewal for the lock's own length (ttl 0) grants what the lock was
// acquired with: `acquired`, as the backend reported it, or (ZooKeeper,
// whose T is what is left of the session when the renewal was sent) a
// little less.
void check_own_length(const RenewResult &renewed, const Lease &acquired) {
  REQUIRE(renewed.outcome == RenewOutcome::renewed);
  CHECK(renewed.ttl <= acquired.ttl);
  CHECK(renewed.ttl >= acquired.ttl - 500ms);
}
} // namespace

TEST_CASE("renew without a length keeps the lock's own length") {
  auto a = client();
  auto request = request_for(unique("own-length"), 1500ms);
  Lease held = must_acquire(*a, request);
  // What the backend made of 1500 ms: itself (file, Redis, PostgreSQL), a
  // validity a little below it (Redlock), whole seconds at etcd's minimum,
  // ZooKeeper's negotiated session.
  INFO("acquired for " << held.ttl.count() << " ms");
  RenewResult renewed = a->renew(held, 0ms, std::nullopt);
  check_own_length(renewed, held);
  // A renewal with a length makes it the lock's, on this object...
  REQUIRE(a->renew(held, 2500ms, std::nullopt).outcome == RenewOutcome::renewed);
  RenewResult longer = a->renew(held, 0ms, std::nullopt);
  REQUIRE(longer.outcome == RenewOutcome::renewed);
  // 2.5 s (etcd: 3 s; ZooKeeper: still the session's), never a default.
  CHECK(longer.ttl >= renewed.ttl - 500ms);
  CHECK(longer.ttl <= std::max(held.ttl, 3000ms));
  if (lease_based()) CHECK(longer.ttl >= 2400ms);
  // ...and back again.
  REQUIRE(a->renew(held, request.ttl, std::nullopt).outcome == RenewOutcome::renewed);
  check_own_length(a->renew(held, 0ms, std::nullopt), held);
  LockStatus status = a->status(request.name);
  REQUIRE(status.held);
  if (status.time_left) CHECK(*status.time_left <= std::max(held.ttl, request.ttl));
  CHECK(a->release(held) == ReleaseOutcome::released);
}

TEST_CASE("renew without a length from another client keeps the lock's own length, and the lock ends then") {
  if (!lease_based()) return;
  auto a = client();
  auto request = request_for(unique("own-length-rebuilt"), 1500ms);
  Lease held = must_acquire(*a, request);
  Lease rebuilt;
  rebuilt.name = held.name;
  rebuilt.token = held.token;
  auto other = client();
  RenewResult renewed = other->renew(rebuilt, 0ms, std::nullopt);
  check_own_length(renewed, held);
  LockStatus status = other->status(request.name);
  REQUIRE(status.held);
  if (status.time_left) CHECK(*status.time_left <= std::max(held.ttl, request.ttl));
  // A length given from there becomes the lock's, for the next client too.
  REQUIRE(other->renew(rebuilt, 2500ms, std::nullopt).outcome == RenewOutcome::renewed);
  RenewResult kept = client()->renew(rebuilt, 0ms, std::nullopt);
  REQUIRE(kept.outcome == RenewOutcome::renewed);
  CHECK(kept.ttl <= 3000ms); // etcd: 3 s, whole seconds
  CHECK(kept.ttl >= 2400ms); // Redlock: the validity of 2.5 s
  REQUIRE(client()->renew(rebuilt, request.ttl, std::nullopt).outcome == RenewOutcome::renewed);
  RenewResult last = client()->renew(rebuilt, 0ms, std::nullopt);
  check_own_length(last, held);
  // Nobody renews now: the lock ends about its own length after the last
  // renewal, not a default 30 s later.
  a.reset();
  auto waiter = client();
  AcquireResult next = waiter->acquire(request, SteadyClock::now() + 10s, Signals::interrupt());
  auto waited = SteadyClock::now() - last.sent_at;
  REQUIRE(next.outcome == AcquireOutcome::acquired);
  CHECK(waited >= last.ttl);
  CHECK(waited < last.ttl + 2000ms);
  CHECK(waiter->release(*next.lease) == ReleaseOutcome::released);
}
