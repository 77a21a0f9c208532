#pragma once

#include "backend/backend.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlock::runner {

using SteadyClock = std::chrono::steady_clock;

// What `dlock renew` and `dlock release` say to an acquire keeper, and what
// it answers: one JSON document per line each way, at most
// k_keeper_line_max bytes. Both ends are dlock on the same host; the keeper
// still parses every request as hostile input (any local process can
// connect to an abstract socket).
inline constexpr std::size_t k_keeper_line_max = 4096;

// The whole identity of a lock. A keeper honours a token only for the lock
// it was handed out for: the same backend URL (as written, credentials
// left out), the same namespace and the same name. Anything else is
// "not the owner" (exit 3), never a release of the keeper's lock.
struct LockIdentity {
  std::string backend;
  std::string lock_namespace;
  std::string name;

  bool operator==(const LockIdentity &) const = default;
};

LockIdentity identity_of(const backend::BackendConfig &config, const std::string &name);

enum class KeeperOperation { renew, release };

struct KeeperRequest {
  KeeperOperation operation = KeeperOperation::renew;
  LockIdentity lock;
  std::string token;
  Millis ttl{0}; // renew: the new window; 0 keeps the last one
};

enum class KeeperAnswer {
  done,      // renewed or released
  not_owner, // the token does not own this lock (or the keeper is gone)
  refused,   // the keeper serves only its own user and root
  error,     // the backend could not be asked: code and message say why
};

// A keeper's answer. The lease figures are those of the safety timeline:
// `confirmed_at` is t0 (the send time of the request the backend last
// confirmed) on the steady clock, which on Linux is CLOCK_MONOTONIC and so
// the same in every process of the host; `ttl` is the T the backend
// granted (ZooKeeper: the negotiated session timeout); `window` is how long
// the keeper waits for the next `renew` from t0 before it lets go (--ttl).
struct KeeperReply {
  KeeperAnswer answer = KeeperAnswer::not_owner;
  std::uint64_t fence = 0;
  SteadyClock::time_point confirmed_at{};
  Millis ttl{};
  Millis window{};
  int code = 0;        // error: the exit code
  std::string message; // error: what failed
};

std::string format_request(const KeeperRequest &request);
// nullopt for anything that is not one well-formed request.
std::optional<KeeperRequest> parse_request(std::string_view line);

std::string format_reply(const KeeperReply &reply);
// nullopt for anything that is not one well-formed reply.
std::optional<KeeperReply> parse_reply(std::string_view line);

} // namespace dlock::runner
