#pragma once

#include "core/duration.hpp"
#include "core/identity.hpp"
#include "core/signals.hpp"
#include "core/url.hpp"

#include <chrono>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dlock::backend {

using SteadyClock = std::chrono::steady_clock;

// Everything a backend is built from. The password, when given, comes from
// DLOCK_PASSWORD or --password-file and takes precedence over the URL's.
struct BackendConfig {
  Url url;
  std::string lock_namespace = "dlock";
  Millis connect_timeout{2000};
  std::optional<std::string> password;
  int verbose = 0;
};

// How a lock is held (spec.md, "Semaphores and shared locks").
//   exclusive: one holder at a time (a writer, against shared holders).
//   shared:    any number of holders at once (readers), none while an
//              exclusive holder has the name.
//   semaphore: at most `limit` holders at once (--limit N, also N = 1,
//              which uses the semaphore's layout, not the exclusive one).
// A backend that cannot keep a mode refuses it with ConfigError (78) and
// the reason, through refuse_mode(); so does one that finds the name held
// in another mode or with another limit, where it can tell.
enum class HoldMode { exclusive, shared, semaphore };

// "exclusive", "shared", "semaphore": the words of status --json.
const char *to_string(HoldMode mode);

// The largest --limit: every backend can lay out this many slots.
inline constexpr unsigned max_limit = 1000;

// What the caller wants to hold.
struct LockRequest {
  std::string name; // already validated by validate_name()
  Millis ttl{30'000};
  HolderInfo holder; // stored with the lock for status and list
  HoldMode mode = HoldMode::exclusive;
  unsigned limit = 1; // semaphore: 1..max_limit; 1 otherwise
};

// The ConfigError (78) of a backend that does not offer `request.mode`:
// "BACKEND cannot hold a MODE lock: WHY".
[[noreturn]] void refuse_mode(const LockRequest &request, const std::string &backend, const std::string &why);

// A held lock. `confirmed_at` is t0 of the safety timeline: the moment the
// request that granted (or last renewed) the lease was *sent*, so that
// t0 + ttl is never later than the backend's own view of the expiry.
struct Lease {
  std::string name;
  std::string token;       // secret release token; never printed by status/list/logs
  std::uint64_t fence = 0; // strictly increasing per name; 0 when unknown (lease rebuilt from a token)
  Millis ttl{};            // T: the lease the backend granted
  SteadyClock::time_point confirmed_at{};
  HoldMode mode = HoldMode::exclusive;
  unsigned limit = 1;             // semaphore: N
  std::optional<unsigned> slot{}; // semaphore: 0..N-1 where the backend numbers slots (DLOCK_SLOT)
};

// What a session-bound backend files the locks it holds in this process
// under: NAME and the release token together, never the token alone, so
// that a token given with another name finds nothing, and release and
// renew stay compare-and-delete on NAME's own lock.
struct LeaseKey {
  std::string name;
  std::string token;
  auto operator<=>(const LeaseKey &) const = default;
};
inline LeaseKey lease_key(const Lease &lease) { return {lease.name, lease.token}; }

enum class AcquireOutcome { acquired, busy, interrupted };

struct AcquireResult {
  AcquireOutcome outcome = AcquireOutcome::busy;
  std::optional<Lease> lease; // set when acquired
  int signal = 0;             // set when interrupted
};

enum class RenewOutcome {
  renewed, // the backend confirmed the lease: new t0 and T
  lost,    // the backend says someone else owns the lock (or nobody): stop now
  unknown, // no answer (timeout, connection lost): the old deadline stands
};

struct RenewResult {
  RenewOutcome outcome = RenewOutcome::unknown;
  Millis ttl{};                      // renewed: the T the backend granted (also when asked for 0)
  SteadyClock::time_point sent_at{}; // renewed: when the request was sent, the new t0
  std::string reason;                // lost / unknown: why, for the user's message
};

enum class ReleaseOutcome { released, not_owner };

// One holder of a shared lock or semaphore.
struct HolderStatus {
  HolderInfo info;
  std::optional<std::uint64_t> fence;
  std::optional<Millis> time_left;
  std::optional<unsigned> slot;
};

// A lock as status and list show it. An exclusive lock's one holder is in
// holder, fence and time_left (fence also when free: the last holder's);
// a shared lock or a semaphore fills `holders` instead, one entry each,
// and sets holder/fence/time_left only while a writer holds a shared lock.
struct LockStatus {
  std::string name;
  bool held = false;
  std::optional<HolderInfo> holder;
  std::optional<std::uint64_t> fence;
  std::optional<Millis> time_left; // lease left, where the backend knows it
  std::optional<std::int64_t> waiters;
  std::string detail; // backend specific, one line
  HoldMode mode = HoldMode::exclusive;
  std::optional<unsigned> limit{}; // semaphore: N, where the backend stores it
  std::vector<HolderStatus> holders{};
};

struct NodeHealth {
  std::string address;
  bool reachable = false;
  std::string version;
  std::chrono::microseconds round_trip{}; // a LAN round trip is well under a millisecond
  std::string error;                      // non-empty: the node cannot serve locks (unreachable, replica, ...)
};

struct PingResult {
  std::vector<NodeHealth> nodes;
  std::optional<bool> quorum; // multi-node backends
  std::string detail;
};

// What `dlock doctor` found about one check: whether the backend, as
// configured, can keep dlock's guarantees (spec.md), and what to change.
//   ok:      the guarantee holds (or the check does not apply)
//   warning: it holds, but something close to it deserves a look
//   unsafe:  it does not hold: a lock can have two holders, or be lost
enum class Severity { ok, warning, unsafe };

struct Finding {
  std::string check; // stable id, "<backend>.<what>": "redis.maxmemory-policy"
  Severity severity = Severity::ok;
  std::string found; // what was found, one line, no secret
  std::string fix;   // what to change; empty when there is nothing to change
};

struct DiagnoseOptions {
  Millis ttl{30'000}; // T to judge the backend for: --ttl, else the config's ttl
};

// The one interface every backend implements. Real failures (cannot connect,
// round trip timed out, authentication refused) are thrown as dlock::Error
// with the exit code of spec.md and a sentence naming the backend (its URL
// redacted); "busy" and "not the owner" are ordinary results. Every network
// round trip is bounded by BackendConfig::connect_timeout. A backend object is
// used by one thread at a time; the runner hands it from the main thread to
// the heartbeat thread and back, never to both at once.
class Backend {
public:
  virtual ~Backend() = default;

  // One attempt; returns busy at once if someone else holds the lock.
  virtual AcquireResult try_acquire(const LockRequest &request) = 0;

  // Waits until the lock is ours, `deadline` passes (busy; nullopt = wait
  // forever) or `interrupt` requests a stop (interrupted). Waiters are woken
  // by the backend's own notification, not by polling; any fallback poll
  // uses jitter. An interrupted or timed-out wait leaves nothing behind.
  virtual AcquireResult acquire(const LockRequest &request, std::optional<SteadyClock::time_point> deadline,
                                const Interrupt &interrupt) = 0;

  // Extends the lease to `ttl` from now if `lease.token` still owns it.
  // `ttl` == 0 renews the lock for its own current length: the length it
  // was acquired with, or given by the last renewal with an explicit ttl
  // (a renewal with one makes it the lock's length). That length is known
  // where the lock lives, not taken from `lease.ttl`, so a lease rebuilt
  // from (name, token) in another process renews for it too. On success
  // RenewResult::ttl is always the T actually granted, never 0 (what the
  // server made of the length: etcd's whole seconds, ZooKeeper's
  // negotiated session, Redlock's validity). `lost` only when the backend
  // positively says the token does not own the lock; anything uncertain is
  // `unknown`, and the caller's deadline applies. Works on a lease rebuilt
  // from (name, token) in another process for backends that are not
  // session bound. `answer_by`, when set, is when an answer stops being
  // useful (the run's SIGTERM deadline: a stop, once begun, is never called
  // off): a round trip still unanswered
  // then ends as `unknown` (or throws) instead of holding the caller up
  // for the whole connect timeout.
  virtual RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point> answer_by) = 0;

  // Compare-and-delete: releases only if `lease.token` still owns the lock;
  // never removes somebody else's.
  virtual ReleaseOutcome release(const Lease &lease) = 0;

  // Breaks the lock whoever holds it. Returns the holder it broke, or
  // nullopt if the lock was free.
  virtual std::optional<LockStatus> force_release(const std::string &name) = 0;

  // One lock as seen now. Never reveals the release token.
  virtual LockStatus status(const std::string &name) = 0;

  // Held locks whose names start with `prefix`, sorted by name.
  virtual std::vector<LockStatus> list(const std::string &prefix) = 0;

  // Reachability, server version and round-trip time of each node.
  virtual PingResult ping() = 0;

  // The checks of `dlock doctor`, one Finding each, in a stable order.
  // Throws UnavailableError (69) only when no server of the backend can be
  // reached at all; a check that cannot be made (a command refused, a
  // member unreachable) is a finding that says so. Every round trip is
  // bounded by connect_timeout and every answer in size. The default,
  // nothing to check, is for test doubles: every backend overrides it.
  virtual std::vector<Finding> diagnose(const DiagnoseOptions & /*options*/) { return {}; }

  // A descriptor that becomes readable when the backend learns something
  // about the leases it holds between renewals (ZooKeeper: the session
  // expired or the lock node was deleted), or -1 if it learns nothing on
  // its own. The heartbeat then renews at once instead of at the next T/3,
  // so a loss stops the child without delay. renew() consumes the event.
  virtual int event_fd() const { return -1; }
  // Called by the heartbeat when event_fd() became readable, before it
  // renews: takes in what arrived, without a round trip, and says whether
  // it was only an answer the backend expected that tells nothing of the
  // leases now (PostgreSQL: the answer to the note sent at acquisition).
  // true: the heartbeat sleeps on; false, the default: it renews at once.
  virtual bool news_was_expected(const Lease & /*lease*/) { return false; }

  // Descriptors whose lifetime is the lock's: the job that `run` starts
  // inherits them, at the same numbers, so that if dlock dies without
  // releasing (SIGKILL) the lock ends only once the job and every
  // descendant that inherited them have closed them too, not while they
  // still run. A flock on an open file (file) or a session on a connection
  // (PostgreSQL) ends when its last descriptor closes, whoever holds it.
  // Empty for lease-based backends, whose lock lapses on its own. release()
  // must end the lock at once even while a copy is still open elsewhere.
  virtual std::vector<int> lifetime_fds(const Lease & /*lease*/) const { return {}; }
  // True when every lock of this backend has lifetime_fds(), asked before
  // any is taken. If dlock dies, the lock then stays with the job's
  // processes until the last of them ends, as flock(1)'s does: `run` needs
  // no guard process (runner/guard.hpp) to kill them before a lease lapses.
  virtual bool lock_follows_job() const { return false; }
};

// A backend with one acquisition routine: try_acquire() is take() without
// waiting (and without an interrupt to watch), acquire() take() waiting.
class TakingBackend : public Backend {
public:
  AcquireResult try_acquire(const LockRequest &request) final { return take(request, false, std::nullopt, nullptr); }
  AcquireResult acquire(const LockRequest &request, std::optional<SteadyClock::time_point> deadline,
                        const Interrupt &interrupt) final {
    return take(request, true, deadline, &interrupt);
  }

protected:
  virtual AcquireResult take(const LockRequest &request, bool wait, std::optional<SteadyClock::time_point> deadline,
                             const Interrupt *interrupt) = 0;
};

} // namespace dlock::backend
