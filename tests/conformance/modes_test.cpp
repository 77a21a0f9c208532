// Semaphores (--limit N) and shared locks (--shared) on the backend under
// test: what spec.md's "Semaphores and shared locks" promises, and the
// refusal (78, with a reason) where a backend does not offer a mode.
#include "conformance.hpp"
#include "core/error.hpp"
#include "core/signals.hpp"

#include <algorithm>
#include <fstream>
#include <future>
#include <set>
#include <string_view>

using namespace conformance;

namespace {

// What the backend under test offers. A row changes when its backend gains
// a mode; a mode a backend does not offer must be refused, never taken.
struct Offer {
  bool shared = false;
  bool semaphore = false;            // any N; Redlock only N = 1 (the exclusive lock)
  bool writer_preference = false;    // a waiting writer keeps new readers out
  bool detects_mixed_limits = false; // --limit 3 against --limit 5 or exclusive is refused (78)
  bool numbers_slots = false;        // Lease::slot (DLOCK_SLOT)
};

Offer offer() {
  std::string scheme = config().url.scheme;
  auto is = [&](std::initializer_list<std::string_view> schemes) {
    return std::find(schemes.begin(), schemes.end(), scheme) != schemes.end();
  };
  if (is({"etcd", "etcds"}))
    return {.shared = true, .semaphore = true, .writer_preference = true, .detects_mixed_limits = true};
  if (is({"file"})) return {.shared = true, .semaphore = true, .detects_mixed_limits = true, .numbers_slots = true};
  if (is({"redis", "rediss", "redis+unix", "redis-sentinel"}))
    return {.shared = true,
            .semaphore = true,
            .writer_preference = true,
            .detects_mixed_limits = true,
            .numbers_slots = true};
  // PostgreSQL: pg_advisory_lock_shared on the name's key; slots are keys
  // of their own. Its lock manager queues a new shared request behind a
  // waiting exclusive one.
  if (is({"postgres", "postgresql"}))
    return {.shared = true,
            .semaphore = true,
            .writer_preference = true,
            .detects_mixed_limits = true,
            .numbers_slots = true};
  if (is({"zk"})) return {.shared = true, .semaphore = true, .writer_preference = true, .detects_mixed_limits = true};
  // Redlock: readers and the writer each on a majority of the nodes; a
  // stream of readers can starve a writer (no writer preference).
  if (is({"redlock", "redlocks"})) return {.shared = true};
  return {};
}

bool is_redlock() {
  std::string scheme = config().url.scheme;
  return scheme == "redlock" || scheme == "redlocks";
}

LockRequest shared_request(const std::string &name) {
  LockRequest request = request_for(name);
  request.mode = HoldMode::shared;
  return request;
}

LockRequest semaphore_request(const std::string &name, unsigned limit) {
  LockRequest request = request_for(name);
  request.mode = HoldMode::semaphore;
  request.limit = limit;
  return request;
}

// The exit code a refusal carries, or 0 if the attempt was not refused.
int refusal_of(Backend &backend, const LockRequest &request, std::string *message = nullptr) {
  try {
    AcquireResult result = backend.try_acquire(request);
    if (result.lease) backend.release(*result.lease);
    return 0;
  } catch (const Error &failure) {
    if (message) *message = failure.what();
    return static_cast<int>(failure.code());
  }
}

} // namespace

TEST_CASE("a mode the backend does not offer is refused with 78 and the reason, never taken") {
  auto a = client();
  std::string message;
  if (!offer().shared) {
    CHECK(refusal_of(*a, shared_request(unique("no-shared")), &message) == 78);
    CHECK(message.find("shared") != std::string::npos);
  }
  if (!offer().semaphore) {
    CHECK(refusal_of(*a, semaphore_request(unique("no-semaphore"), 3), &message) == 78);
    CHECK(message.find("--limit 3") != std::string::npos);
  }
  if (is_redlock()) {
    // Two slots over three nodes: A+B, B+C and A+C would each win a majority.
    CHECK(refusal_of(*a, semaphore_request(unique("redlock-slots"), 2), &message) == 78);
    CHECK(message.find("majority") != std::string::npos);
    // --limit 1 is the exclusive lock, and excludes it.
    auto name = unique("redlock-one");
    Lease one = must_acquire(*a, semaphore_request(name, 1));
    CHECK(client()->try_acquire(request_for(name)).outcome == AcquireOutcome::busy);
    CHECK(a->release(one) == ReleaseOutcome::released);
  }
}

TEST_CASE("a semaphore of 3 lets three holders in, each with its own fence; a fourth waits for a slot") {
  if (!offer().semaphore || is_redlock()) return;
  auto name = unique("sem");
  std::vector<std::unique_ptr<Backend>> clients;
  std::vector<Lease> held;
  std::set<unsigned> slots;
  std::uint64_t previous = 0;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(client());
    Lease lease = must_acquire(*clients.back(), semaphore_request(name, 3));
    CHECK(lease.mode == HoldMode::semaphore);
    CHECK(lease.limit == 3);
    CHECK(lease.fence > previous);
    previous = lease.fence;
    if (offer().numbers_slots) {
      REQUIRE(lease.slot);
      CHECK(*lease.slot < 3);
      slots.insert(*lease.slot);
    }
    held.push_back(lease);
  }
  if (offer().numbers_slots) CHECK(slots.size() == 3);
  auto fourth = client();
  CHECK(fourth->try_acquire(semaphore_request(name, 3)).outcome == AcquireOutcome::busy);

  LockStatus status = fourth->status(name);
  CHECK(status.held);
  CHECK(status.mode == HoldMode::semaphore);
  CHECK(status.holders.size() == 3);
  if (status.limit) CHECK(*status.limit == 3);
  for (const auto &holder : status.holders)
    CHECK(holder.info.command == "conformance");

  // The fourth waits; the release of one slot lets it in at once (woken by
  // the backend, not at a look of its own: etcd's waiter looks at every
  // keep-alive, T/3, which a lease of 9 s puts far off), with a fence above
  // every earlier one.
  LockRequest long_lease = semaphore_request(name, 3);
  long_lease.ttl = 9000ms;
  auto waiting = std::async(std::launch::async, [&] {
    return fourth->acquire(long_lease, SteadyClock::now() + 10s, Signals::interrupt());
  });
  CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
  auto released_at = SteadyClock::now();
  REQUIRE(clients[1]->release(held[1]) == ReleaseOutcome::released);
  AcquireResult result = waiting.get();
  REQUIRE(result.outcome == AcquireOutcome::acquired);
  CHECK(SteadyClock::now() - released_at < 500ms);
  CHECK(result.lease->fence > previous);
  if (offer().numbers_slots) CHECK(result.lease->slot == held[1].slot);

  CHECK(clients[1]->release(held[1]) == ReleaseOutcome::not_owner);
  for (int i : {0, 2}) {
    RenewResult renewed = clients[i]->renew(held[i], 3000ms, std::nullopt);
    CHECK(renewed.outcome == RenewOutcome::renewed);
    CHECK(clients[i]->release(held[i]) == ReleaseOutcome::released);
  }
  CHECK(fourth->release(*result.lease) == ReleaseOutcome::released);
  CHECK_FALSE(client()->status(name).held);
}

TEST_CASE("a semaphore holder is listed, and a stale token renews nothing") {
  if (!offer().semaphore || is_redlock()) return;
  auto name = unique("sem-list");
  auto a = client();
  Lease lease = must_acquire(*a, semaphore_request(name, 2));
  std::vector<LockStatus> listed = client()->list(name);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].mode == HoldMode::semaphore);
  CHECK(listed[0].holders.size() == 1);
  Lease forged = lease;
  forged.token = "not-the-token";
  CHECK(a->release(forged) == ReleaseOutcome::not_owner);
  CHECK(a->renew(forged, 2000ms, std::nullopt).outcome != RenewOutcome::renewed);
  CHECK(a->release(lease) == ReleaseOutcome::released);
  CHECK(client()->list(name).empty());
}

TEST_CASE("a name held with one limit refuses another limit and an exclusive lock") {
  if (!offer().semaphore || is_redlock()) return;
  auto name = unique("sem-mixed");
  auto a = client();
  Lease lease = must_acquire(*a, semaphore_request(name, 3));
  auto b = client();
  if (offer().detects_mixed_limits) {
    std::string message;
    CHECK(refusal_of(*b, semaphore_request(name, 5), &message) == 78);
    CHECK(message.find("3") != std::string::npos);
    CHECK(refusal_of(*b, request_for(name)) == 78);
  } else {
    // Where the backend cannot tell, the other kind still never gets in
    // beside a holder: it is busy.
    CHECK(b->try_acquire(request_for(name)).outcome == AcquireOutcome::busy);
  }
  CHECK(a->release(lease) == ReleaseOutcome::released);
}

TEST_CASE("readers share a lock; a writer waits for every reader, and readers for a writer") {
  if (!offer().shared) return;
  auto name = unique("rw");
  auto r1 = client(), r2 = client(), w = client();
  Lease first = must_acquire(*r1, shared_request(name));
  Lease second = must_acquire(*r2, shared_request(name));
  CHECK(first.mode == HoldMode::shared);
  CHECK(second.fence > first.fence);
  CHECK(w->try_acquire(request_for(name)).outcome == AcquireOutcome::busy);

  LockStatus status = w->status(name);
  CHECK(status.held);
  CHECK(status.mode == HoldMode::shared);
  CHECK(status.holders.size() == 2);

  REQUIRE(r1->release(first) == ReleaseOutcome::released);
  auto waiting = std::async(std::launch::async, [&] {
    return w->acquire(request_for(name), SteadyClock::now() + 10s, Signals::interrupt());
  });
  CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
  CHECK(r2->renew(second, 3000ms, std::nullopt).outcome == RenewOutcome::renewed);
  REQUIRE(r2->release(second) == ReleaseOutcome::released);
  AcquireResult writer = waiting.get();
  REQUIRE(writer.outcome == AcquireOutcome::acquired);
  // A writer's fence exceeds every earlier one.
  CHECK(writer.lease->fence > second.fence);
  CHECK(client()->try_acquire(shared_request(name)).outcome == AcquireOutcome::busy);
  CHECK(client()->status(name).holder);
  REQUIRE(w->release(*writer.lease) == ReleaseOutcome::released);

  // A reader's fence is at least the latest writer's.
  Lease after = must_acquire(*r1, shared_request(name));
  CHECK(after.fence >= writer.lease->fence);
  CHECK(r1->release(after) == ReleaseOutcome::released);
  CHECK_FALSE(client()->status(name).held);
}

TEST_CASE("a waiting writer keeps new readers out, where the backend prefers writers") {
  if (!offer().shared || !offer().writer_preference) return;
  auto name = unique("rw-pref");
  auto r1 = client(), w = client();
  Lease reader = must_acquire(*r1, shared_request(name));
  auto waiting = std::async(std::launch::async, [&] {
    return w->acquire(request_for(name), SteadyClock::now() + 10s, Signals::interrupt());
  });
  CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
  CHECK(client()->try_acquire(shared_request(name)).outcome == AcquireOutcome::busy);
  REQUIRE(r1->release(reader) == ReleaseOutcome::released);
  AcquireResult writer = waiting.get();
  REQUIRE(writer.outcome == AcquireOutcome::acquired);
  CHECK(w->release(*writer.lease) == ReleaseOutcome::released);
}

// The file backend watches each lock file it holds (inotify, event_fd());
// a take refused after the watch was made leaves none behind, and takes
// none away from a lease of the same client on the same file.
TEST_CASE("file: a refused reader or semaphore holder leaves no watch behind and takes none away") {
  if (config().url.scheme != "file") return;
  auto watches = [](Backend &backend) {
    std::ifstream info("/proc/self/fdinfo/" + std::to_string(backend.event_fd()));
    int count = 0;
    for (std::string line; std::getline(info, line);)
      count += line.rfind("inotify wd:", 0) == 0;
    return count;
  };
  auto readers = unique("watch-readers"), slots = unique("watch-slots");
  auto a = client(), b = client();
  Lease reader = must_acquire(*a, shared_request(readers));
  Lease slot = must_acquire(*a, semaphore_request(slots, 2));
  Lease mine = must_acquire(*b, request_for(unique("watch-mine")));
  REQUIRE(watches(*b) == 1);
  CHECK(refusal_of(*b, semaphore_request(readers, 2)) == 78);
  CHECK(refusal_of(*b, shared_request(slots)) == 78);
  CHECK(watches(*b) == 1);
  // inotify's one watch per file is shared with the reader a holds there:
  // a's own refused take keeps it. (a watches three files: the readers'
  // lock file, the semaphore's and the slot file it holds.)
  REQUIRE(watches(*a) == 3);
  CHECK(refusal_of(*a, semaphore_request(readers, 2)) == 78);
  CHECK(watches(*a) == 3);
  CHECK(b->release(mine) == ReleaseOutcome::released);
  CHECK(a->release(reader) == ReleaseOutcome::released);
  CHECK(a->release(slot) == ReleaseOutcome::released);
}
