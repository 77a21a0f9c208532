// etcd: the lock recipe of etcd's own concurrency package (Go's
// concurrency.Mutex, which `etcdctl lock` uses), through the JSON gateway.
//
// Lock NAME of namespace NS is the prefix "NS/NAME/". A contender grants a
// lease of T = --ttl (whole seconds), puts "NS/NAME/<lease id in hex>"
// under it if absent, and holds the lock when its key has the lowest
// create revision under the prefix. Otherwise it watches the key with the
// next lower create revision until it is deleted, and looks again (which
// also checks that its own key, and so its lease, still exist), keeping
// its lease alive every T/3 meanwhile. The fence is the key's create
// revision. Renewal = a lease keep-alive plus a check that the key is
// still there; release = revoking the lease, which deletes the key.
//
// A shared holder (--shared) is a reader of etcd's RWMutex recipe
// (client/v3/experimental/recipes): its key is "NS/NAME/read/<lease id>",
// and it holds the lock when no writer has a lower create revision; a
// writer is any other key of the lock (a dlock or concurrency.Mutex key
// "NS/NAME/<lease>", or an RWMutex writer's "NS/NAME/write/<x>"), and
// waits, as an exclusive holder always has, for every key before its own,
// readers included. A waiting reader watches the last writer before it. So
// a queued writer keeps later readers out, and a Go service's RWMutex
// readers and writers share the lock with dlock's.
//
// A semaphore of N (--limit N): the keys "NS/NAME/sem/<lease id>", waited
// for herd-free in order (queue.hpp says how).
#include "backend/etcd/etcd_backend.hpp"

#include "backend/etcd/diagnose.hpp"
#include "backend/etcd/gateway.hpp"
#include "backend/etcd/leases.hpp"
#include "backend/etcd/queue.hpp"
#include "backend/etcd/watch.hpp"
#include "core/holder_json.hpp"
#include "core/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace dlock::backend::etcd {

namespace {

constexpr const char *k_key_deleted = "the lock's key is gone (its lease ran out, or it was deleted or revoked)";

class EtcdBackend : public TakingBackend {
public:
  explicit EtcdBackend(const BackendConfig &config) : m_config(config), m_gateway(gateway_options(config)) {}

  RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point> answer_by) override {
    auto held = held_by(lease);
    if (!held) return lost("that is not a token of this backend");
    const std::string key = held->key;
    const bool watched = m_held && m_held->key == key;
    RenewResult result;
    auto sent = SteadyClock::now();
    try {
      if (watched && deleted_in(m_watch.poll(), key)) return lost(k_key_deleted);
      // The key first: deleted by hand, it frees the lock for the next
      // contender even though its lease lives on. Its lease is the token's
      // unless a renewal with another ttl moved it to a new one.
      auto current = lease_of_key(key, answer_by);
      if (!current) return lost(k_key_deleted);
      auto alive = m_gateway.call("/v3/lease/keepalive", {{"ID", std::to_string(*current)}}, answer_by);
      if (!alive) return result;
      std::int64_t granted = number_in(object_in(*alive, "result"), "TTL");
      if (granted <= 0) return lost("etcd no longer has the lock's lease (it expired or was revoked)");
      if (needs_new_lease(*current, granted, ttl)) {
        sent = SteadyClock::now();
        LeaseMove move = move_to_new_lease(key, *current, ttl, answer_by);
        if (move.outcome == LeaseMove::Outcome::unanswered) return result;
        if (move.outcome == LeaseMove::Outcome::changed_hands)
          return lost("the lock's key changed hands while its lease was being replaced");
        granted = move.granted_seconds;
      }
      result.outcome = RenewOutcome::renewed;
      result.ttl = Millis(granted * 1000);
      result.sent_at = sent;
      if (watched) watch_held_key(key, result.ttl, answer_by);
    } catch (const Error &failure) {
      if (failure.code() == ExitCode::auth) throw;
      result.reason = failure.what();
    }
    return result;
  }

  ReleaseOutcome release(const Lease &lease) override {
    auto held = held_by(lease);
    if (!held) return ReleaseOutcome::not_owner;
    if (m_held && m_held->key == held->key) {
      m_held.reset();
      m_watch.stop();
    }
    // Compare-and-delete on NAME's own key: the one the token names under
    // NAME's prefix in this namespace (its name holds the lease the key was
    // created on, unique in the cluster, so no other contender's key has
    // it). A token of another lock or namespace names no key here and frees
    // nothing: revoking the token's lease first would free whatever it
    // holds. The waiters' watches fire on the delete; the lease (the token's,
    // or the one a renew with another ttl moved the key to) goes after.
    auto deleted = delete_key(m_gateway, held->key);
    if (!deleted) return ReleaseOutcome::not_owner;
    if (m_asked.count(*deleted))
      revoke_quietly(m_gateway, *deleted);
    else
      revoke_if_bare(m_gateway, *deleted);
    return ReleaseOutcome::released;
  }

  std::optional<LockStatus> force_release(const std::string &name) override {
    auto [status, owners] = inspect(name);
    if (owners.empty()) return std::nullopt;
    // Each holder's key, not its lease: a lease of another client (a Go
    // session) may hold other locks too, which only a bare lease's revoke
    // would leave alone.
    for (const Contender &owner : owners)
      if (auto lease = delete_key(m_gateway, owner.key); lease && *lease != 0) revoke_if_bare(m_gateway, *lease);
    return status;
  }

  LockStatus status(const std::string &name) override { return inspect(name).first; }

  std::vector<LockStatus> list(const std::string &prefix) override {
    std::string head = m_config.lock_namespace + "/";
    auto answer = m_gateway.call("/v3/kv/range", range_request(head + prefix, true));
    std::vector<std::string> names = lock_names_in(*answer, head, prefix);
    std::vector<LockStatus> out;
    for (const auto &name : names)
      if (auto found = inspect(name).first; found.held) out.push_back(std::move(found));
    return out;
  }

  // The watch on the held key (see watch_held_key()), once the first
  // renewal opened it.
  int event_fd() const override { return m_held ? m_watch.fd() : -1; }
  PingResult ping() override { return ping_members(m_gateway); }
  std::vector<Finding> diagnose(const DiagnoseOptions &) override { return diagnose_members(m_gateway); }

private:
  std::string prefix_of(const std::string &name) const { return m_config.lock_namespace + "/" + name + "/"; }
  std::string semaphore_prefix_of(const std::string &name) const { return prefix_of(name) + "sem/"; }
  std::string key_of(const std::string &name, std::int64_t lease, HoldMode mode) const {
    return (mode == HoldMode::semaphore ? semaphore_prefix_of(name) : prefix_of(name)) +
           (mode == HoldMode::shared ? "read/" : "") + lease_hex(lease);
  }
  static std::string token_of(HoldMode mode, std::int64_t lease) {
    std::string_view head = mode == HoldMode::shared ? k_reader_token : mode == HoldMode::semaphore ? k_slot_token : "";
    return std::string(head) + lease_hex(lease);
  }

  // The key and lease a token names: "<lease>" an exclusive holder's,
  // "read-<lease>" a shared one's.
  struct TokenKey {
    std::string key;
    std::int64_t lease = 0;
  };
  std::optional<TokenKey> held_by(const Lease &lease) const {
    std::string_view token = lease.token;
    HoldMode mode = HoldMode::exclusive;
    for (auto [head, kind] :
         {std::pair{k_reader_token, HoldMode::shared}, std::pair{k_slot_token, HoldMode::semaphore}})
      if (token.substr(0, head.size()) == head) {
        token.remove_prefix(head.size());
        mode = kind;
      }
    auto id = lease_from_token(std::string(token));
    if (!id) return std::nullopt;
    return TokenKey{key_of(lease.name, *id, mode), *id};
  }

  static long ttl_seconds(Millis ttl) {
    return std::max<long>(1, static_cast<long>(std::chrono::ceil<std::chrono::seconds>(ttl).count()));
  }

  struct Granted {
    std::int64_t id = 0;
    Millis ttl{};
  };
  // A lease of `ttl` in whole seconds (etcd may grant more: its minimum
  // depends on the election timeout).
  Granted grant(Millis ttl) {
    auto answer = m_gateway.call("/v3/lease/grant", {{"TTL", std::to_string(ttl_seconds(ttl))}});
    Granted out{number_in(*answer, "ID"), seconds_in(*answer, "TTL")};
    if (out.id == 0 || out.ttl.count() <= 0)
      throw UnavailableError(fmt::format("{}: etcd granted no lease", m_config.url.redacted()));
    m_asked[out.id] = ttl_seconds(ttl);
    return out;
  }

  // The lease `key` is attached to, or nullopt if the key does not exist.
  std::optional<std::int64_t> lease_of_key(const std::string &key, std::optional<SteadyClock::time_point> answer_by) {
    auto answer = m_gateway.call("/v3/kv/range", range_request_of_key(key), answer_by);
    if (!answer) throw UnavailableError("interrupted");
    const Json &kvs = array_in(*answer, "kvs");
    if (kvs.empty()) return std::nullopt;
    return number_in(kvs.front(), "lease");
  }

  static RenewResult lost(std::string reason) {
    RenewResult result;
    result.outcome = RenewOutcome::lost;
    result.reason = std::move(reason);
    return result;
  }

  // etcd cannot change a lease's TTL: another ttl means a new lease. etcd
  // raises a TTL below its minimum: a lease granted here for the same ttl
  // is what etcd gives for it, and stays. Asked for 0 (the lock's own
  // length), the keep-alive is the whole renewal.
  bool needs_new_lease(std::int64_t lease, std::int64_t granted_seconds, Millis ttl) const {
    if (ttl <= Millis(0) || granted_seconds == ttl_seconds(ttl)) return false;
    auto asked = m_asked.find(lease);
    return !(asked != m_asked.end() && asked->second == ttl_seconds(ttl));
  }

  struct LeaseMove {
    enum class Outcome { moved, unanswered, changed_hands } outcome = Outcome::unanswered;
    std::int64_t granted_seconds = 0; // moved: the new lease's TTL
  };
  // Moves `key` from lease `current` to a new lease of `ttl`, keeping its
  // create revision (the fence), if it is still on `current`; revokes
  // whichever lease is left over.
  LeaseMove move_to_new_lease(const std::string &key, std::int64_t current, Millis ttl,
                              std::optional<SteadyClock::time_point> answer_by) {
    auto fresh = grant(ttl);
    Json txn = {{"compare", {{{"key", base64_encode(key)}, {"target", "LEASE"}, {"lease", std::to_string(current)}}}},
                {"success",
                 {{{"request_put",
                    {{"key", base64_encode(key)}, {"ignore_value", true}, {"lease", std::to_string(fresh.id)}}}}}}};
    auto moved = m_gateway.call("/v3/kv/txn", txn, answer_by);
    if (!moved || !moved->value("succeeded", false)) {
      revoke_quietly(m_gateway, fresh.id);
      return {moved ? LeaseMove::Outcome::changed_hands : LeaseMove::Outcome::unanswered, 0};
    }
    // The old lease goes if it was granted here or holds nothing else (a
    // forged token's key may have been on another client's session).
    if (m_asked.count(current))
      revoke_quietly(m_gateway, current);
    else
      revoke_if_bare(m_gateway, current);
    return {LeaseMove::Outcome::moved, fresh.ttl.count() / 1000};
  }

  AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                     const Interrupt *interrupt) override {
    Json holder = Json::object();
    add_holder(holder, request.holder);
    if (request.mode == HoldMode::semaphore) holder["limit"] = request.limit;
    const std::string value = base64_encode(holder.dump());
    for (bool again = false;; again = true) {
      if (again && deadline && SteadyClock::now() >= *deadline) return {AcquireOutcome::busy, std::nullopt, 0};
      auto place = join_queue(request, value);
      if (!place) continue;
      if (!place->ahead) return acquired(request, *place);
      if (!wait) {
        revoke_quietly(m_gateway, place->lease);
        return {AcquireOutcome::busy, std::nullopt, 0};
      }
      auto outcome = wait_turn(request, std::move(*place), deadline, *interrupt);
      if (outcome) return *outcome;
      // Our key or lease vanished while we waited (dlock was paused for
      // longer than T, or someone deleted the key): start over.
      detail(1, "our place in the queue for '{}' was lost while waiting; joining again", request.name);
    }
  }

  enum class Turn { ours, waiting, gone };

  // Where a contender stands in a lock's queue.
  struct QueuePlace {
    std::string key; // ours: NS/NAME/<lease id in hex> (a reader's NS/NAME/read/<lease>, a slot's NS/NAME/sem/<lease>)
    std::int64_t lease = 0;
    Millis ttl{};                           // the lease's, as etcd granted it
    std::int64_t create_revision = 0;       // our key's: the fence once we hold the lock
    SteadyClock::time_point confirmed_at{}; // when the last keep-alive that etcd answered was sent
    HoldMode mode = HoldMode::exclusive;
    unsigned limit = 1;             // a semaphore's N
    std::optional<Contender> ahead; // the key we wait for, which we watch; none: the lock is ours
    bool watch_holders = false;     // a semaphore's first waiter: watch every holder's deletion
    std::int64_t listed_at = 0;     // the revision of the listing that showed it
  };

  // Joins the lock's queue: a new lease, our key under it, and a listing
  // of the queue, in one transaction. nullopt when the lease ran out
  // before the key was written: start over.
  std::optional<QueuePlace> join_queue(const LockRequest &request, const std::string &value) {
    const std::string prefix = prefix_of(request.name);
    QueuePlace place;
    place.confirmed_at = SteadyClock::now();
    auto granted = grant(request.ttl);
    place.lease = granted.id;
    place.ttl = granted.ttl;
    place.mode = request.mode;
    place.limit = request.limit;
    place.key = key_of(request.name, place.lease, place.mode);
    const bool values = place.mode == HoldMode::semaphore; // the holders' N
    Json txn = {
        {"compare", {{{"key", base64_encode(place.key)}, {"target", "CREATE"}, {"create_revision", "0"}}}},
        {"success",
         {{{"request_put",
            {{"key", base64_encode(place.key)}, {"value", value}, {"lease", std::to_string(place.lease)}}}},
          {{"request_range", range_request(prefix, !values)}}}},
        {"failure", {{{"request_range", range_request(prefix, !values)}}}},
    };
    std::optional<Json> answer;
    try {
      answer = m_gateway.call("/v3/kv/txn", txn);
    } catch (const EtcdError &refused) {
      // The lease granted a moment ago has already run out: dlock was
      // paused (or starved) for longer than T in between. Start over.
      if (refused.grpc_code() == k_grpc_not_found) {
        detail(1, "the lease for '{}' ran out before its key was written; starting over", request.name);
        return std::nullopt;
      }
      revoke_quietly(m_gateway, place.lease);
      throw;
    } catch (...) {
      revoke_quietly(m_gateway, place.lease);
      throw;
    }
    const Json &responses = array_in(*answer, "responses");
    if (responses.empty()) throw UnavailableError(fmt::format("{}: empty answer to the lock transaction", place.key));
    place.listed_at = number_in(object_in(*answer, "header"), "revision");
    Turn turn = Turn::gone;
    try {
      turn = find_place(request, object_in(responses.back(), "response_range"), place);
    } catch (...) {
      revoke_quietly(m_gateway, place.lease);
      throw;
    }
    if (turn == Turn::gone) {
      revoke_quietly(m_gateway, place.lease);
      throw UnavailableError(fmt::format("{}: the lock key was not written", m_config.url.redacted()));
    }
    return place;
  }

  // Where our key stands in a listing of the lock's prefix: ours, waiting
  // (behind place.ahead) or gone. Refuses (78) a name held another way.
  Turn find_place(const LockRequest &request, const Json &range, QueuePlace &place) {
    Standing standing = standing_in(keys_in(range, request.name), place.key, place.mode, place.limit);
    if (!standing.refusal.empty()) {
      // An exclusive or shared listing has no values: read the holders' N.
      if (standing.semaphore_limit_unknown) {
        auto answer = m_gateway.call("/v3/kv/range", range_request(semaphore_prefix_of(request.name), false));
        auto again = standing_in(keys_in(*answer, request.name), place.key, place.mode, place.limit);
        if (!again.refusal.empty()) standing.refusal = again.refusal;
      }
      refuse_mode(request, "etcd", standing.refusal);
    }
    return take_standing(standing, place);
  }

  static Turn take_standing(const Standing &standing, QueuePlace &place) {
    place.create_revision = standing.create_revision;
    place.ahead = standing.ahead;
    place.watch_holders = standing.watch_holders;
    switch (standing.kind) {
    case Standing::Kind::ours:
      return Turn::ours;
    case Standing::Kind::waiting:
      return Turn::waiting;
    case Standing::Kind::gone:
      break;
    }
    return Turn::gone;
  }

  LockKeys keys_in(const Json &range, const std::string &name) const {
    return {contenders_in(range, prefix_of(name)), contenders_in(range, semaphore_prefix_of(name))};
  }

  AcquireResult acquired(const LockRequest &request, const QueuePlace &place) {
    m_held = HeldKey{place.key, place.create_revision + 1};
    Lease out;
    out.name = request.name;
    out.mode = request.mode;
    out.limit = request.mode == HoldMode::semaphore ? request.limit : 1;
    out.token = token_of(place.mode, place.lease);
    out.fence = static_cast<std::uint64_t>(place.create_revision);
    out.ttl = place.ttl;
    out.confirmed_at = place.confirmed_at;
    return {AcquireOutcome::acquired, std::move(out), 0};
  }

  // Waits for our turn; nullopt when our key is gone and we must start over.
  std::optional<AcquireResult> wait_turn(const LockRequest &request, QueuePlace place,
                                         std::optional<SteadyClock::time_point> deadline, const Interrupt &interrupt) {
    // However the wait ends, the watch on the key ahead goes, and so does
    // our lease unless we got the lock.
    struct Leave {
      EtcdBackend &self;
      std::int64_t lease;
      bool revoke = true;
      ~Leave() {
        self.m_watch.stop();
        if (revoke) revoke_quietly(self.m_gateway, lease);
      }
    } leave{*this, place.lease};
    watch_ahead(request.name, place);
    auto next_keepalive = place.confirmed_at + place.ttl / 3;
    const bool semaphore = place.mode == HoldMode::semaphore;
    for (;;) {
      auto until = std::min(next_keepalive, deadline.value_or(SteadyClock::time_point::max()));
      auto events = m_watch.wait(until, interrupt.fd());
      if (interrupt.requested()) return AcquireResult{AcquireOutcome::interrupted, std::nullopt, interrupt.requested()};
      bool look = std::any_of(events.begin(), events.end(), [&](const WatchEvent &e) {
        if (e.kind == WatchEvent::Kind::compacted) return true;
        if (place.watch_holders) return e.kind == WatchEvent::Kind::deleted;
        return e.key == place.ahead->key && (e.kind == WatchEvent::Kind::deleted || semaphore);
      });
      auto now = SteadyClock::now();
      // A semaphore's waiter also looks at each keep-alive: a wake-up
      // missed (a touch that failed) then costs T/3, never the lock.
      bool keepalive_due = now >= next_keepalive;
      if (keepalive_due && !keep_waiting(request.name, place, next_keepalive, interrupt.fd())) return std::nullopt;
      if (look || (semaphore && keepalive_due)) {
        switch (look_at_queue(request, place, !look)) {
        case Turn::ours:
          leave.revoke = false;
          if (semaphore) touch(place.key);
          return acquired(request, place);
        case Turn::gone:
          return std::nullopt;
        case Turn::waiting:
          watch_ahead(request.name, place);
          continue;
        }
      }
      if (deadline && SteadyClock::now() >= *deadline) return AcquireResult{AcquireOutcome::busy, std::nullopt, 0};
    }
  }

  // A put that changes nothing but the key's revision: the news, for the
  // waiter that watches our key, that we moved from waiting to holding.
  void touch(const std::string &key) {
    try {
      m_gateway.call("/v3/kv/put", {{"key", base64_encode(key)}, {"ignore_value", true}, {"ignore_lease", true}});
    } catch (const Error &failure) {
      if (failure.code() == ExitCode::auth) throw;
      detail(1, "could not tell the next waiter that a slot was taken: {} (it looks again within T/3)", failure.what());
    }
  }

  // Lists the queue again: our key first (ours), behind another one (now
  // place.ahead, as of place.listed_at), or no longer there (gone). Woken
  // by its watch, an exclusive or semaphore waiter reads a few keys only
  // (wake_reads(), as concurrency.Mutex does), so that the work of a
  // hand-over does not grow with the number of waiters; the whole listing
  // serves a reader, a semaphore's look at each keep-alive, and an answer
  // that proves nothing (a lock named NAME/x keeps its keys under NAME's).
  Turn look_at_queue(const LockRequest &request, QueuePlace &place, bool whole = false) {
    const bool semaphore = place.mode == HoldMode::semaphore;
    if (!whole && place.mode != HoldMode::shared) {
      const std::string prefix = semaphore ? semaphore_prefix_of(request.name) : prefix_of(request.name);
      auto answer = m_gateway.call("/v3/kv/txn",
                                   wake_reads(prefix, place.key, place.create_revision, semaphore ? place.limit : 0));
      if (auto standing = standing_on_wake(*answer, prefix, place.key, place.mode, place.limit)) {
        place.listed_at = number_in(object_in(*answer, "header"), "revision");
        return take_standing(*standing, place);
      }
    }
    auto listing = m_gateway.call("/v3/kv/range", range_request(prefix_of(request.name), !semaphore));
    place.listed_at = number_in(object_in(*listing, "header"), "revision");
    return find_place(request, *listing, place);
  }

  // Opens the watch a waiter waits on: the key ahead, or (a semaphore's
  // first waiter) every holder's deletion.
  void watch_ahead(const std::string &name, const QueuePlace &place) {
    if (place.watch_holders) {
      std::string holders = semaphore_prefix_of(name);
      m_watch.open_deletions(holders, range_end(holders), place.listed_at + 1);
    } else {
      m_watch.open(place.ahead->key, place.listed_at + 1);
    }
  }

  // Keeps a waiter's lease alive and sets when to do it next; false when
  // the lease (and with it our key) is gone.
  bool keep_waiting(const std::string &name, QueuePlace &place, SteadyClock::time_point &next_keepalive,
                    int interrupt_fd) {
    auto sent = SteadyClock::now();
    try {
      auto alive =
          m_gateway.call("/v3/lease/keepalive", {{"ID", std::to_string(place.lease)}}, std::nullopt, interrupt_fd);
      if (!alive) return true; // interrupted: the wait sees it next
      if (number_in(object_in(*alive, "result"), "TTL") <= 0) return false;
      place.confirmed_at = sent;
      next_keepalive = sent + place.ttl / 3;
    } catch (const EtcdError &refused) {
      // Our lease ran out while we were not running (paused longer than
      // T): its key went with it. Join the queue again.
      if (refused.grpc_code() != k_grpc_not_found) throw;
      return false;
    } catch (const UnavailableError &failure) {
      // etcd is away for now; the lease may outlive it. Try again soon.
      detail(1, "keep-alive while waiting for '{}' failed: {}", name, failure.what());
      next_keepalive = SteadyClock::now() + std::min<Millis>(place.ttl / 3, Millis(500));
    }
    return true;
  }

  // A lock as seen now, and the keys that hold it: the first key, or the
  // readers before the first writer.
  std::pair<LockStatus, std::vector<Contender>> inspect(const std::string &name) {
    std::string prefix = prefix_of(name);
    auto answer = m_gateway.call("/v3/kv/range", range_request(prefix, false));
    auto [status, owners] = holding_of(name, keys_in(*answer, name));
    if (!status.held) return {status, {}};
    for (const Contender &owner : owners) {
      HolderStatus holder;
      Json doc = Json::parse(owner.value, nullptr, false);
      if (doc.is_object())
        if (auto info = holder_in(doc)) holder.info = *info;
      holder.fence = static_cast<std::uint64_t>(owner.create_revision);
      holder.time_left = time_left_of(m_gateway, owner.lease);
      if (holder.info.pid == 0 && holder.info.host.empty())
        status.detail = "held by a client that is not dlock (etcdctl lock or a Go concurrency.Mutex or RWMutex: no "
                        "holder record)";
      if (status.mode == HoldMode::exclusive) {
        if (doc.is_object()) status.holder = holder_in(doc);
        status.time_left = holder.time_left;
      } else {
        status.holders.push_back(std::move(holder));
      }
    }
    return {status, owners};
  }

  // The held-key watch: a holder watches its own key, so that a lease
  // revoked between two renewals (release --force, a key deleted by hand,
  // or an etcd 3.4 leader that was paused and, on resuming, revokes the
  // leases it takes for expired although the new leader kept them alive:
  // etcd issue #15247) stops the job within milliseconds, not at the next
  // renewal. The watch is opened by the first renewal, on the member that
  // answered it, so a short job never pays for it; from the key's creation
  // on, so nothing that happened before is missed. It follows the renewals
  // to another member after a fail-over. One watch per backend: the lock
  // taken last.
  // Opening it holds up the news of the renewal that just succeeded, which
  // must reach the runner before the job's SIGTERM deadline (answer_by):
  // it gets at most T/6, ends T/15 before that deadline, and is skipped
  // when the renewal came late (the next one tries).
  void watch_held_key(const std::string &key, Millis ttl, std::optional<SteadyClock::time_point> answer_by) {
    auto by = SteadyClock::now() + ttl / 6;
    if (answer_by) by = std::min(by, *answer_by - ttl / 15);
    if (SteadyClock::now() >= by) return;
    try {
      m_watch.follow(key, m_held->from_revision, by);
    } catch (const Error &failure) {
      if (failure.code() == ExitCode::auth) throw;
      detail(2, "could not watch '{}': {}", key, failure.what());
    }
  }

  static bool deleted_in(const std::vector<WatchEvent> &events, const std::string &key) {
    return std::any_of(events.begin(), events.end(),
                       [&](const WatchEvent &e) { return e.kind == WatchEvent::Kind::deleted && e.key == key; });
  }

  // The key of the lock taken last, and the revision its watch starts from.
  struct HeldKey {
    std::string key;
    std::int64_t from_revision = 0;
  };

  BackendConfig m_config;
  Gateway m_gateway;
  Watch m_watch{m_gateway}; // the held key's, or while waiting the key ahead
  std::optional<HeldKey> m_held;
  std::map<std::int64_t, long> m_asked; // lease granted here -> the TTL asked for (s)
};

} // namespace

std::unique_ptr<Backend> create_etcd_backend(const BackendConfig &config) {
  return std::make_unique<EtcdBackend>(config);
}

} // namespace dlock::backend::etcd
