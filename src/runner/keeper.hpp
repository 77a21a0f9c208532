#pragma once

#include "backend/backend.hpp"

#include <optional>
#include <string>

namespace dlock::runner {

// `dlock acquire` on a session-bound backend (file, ZooKeeper, PostgreSQL):
// the lock lives only as long as the session, so a small detached keeper
// process takes the lock and holds it after the command returns. It renews
// the session every T/3, serves `renew` and `release` from later commands
// on an abstract unix socket, and exits (releasing) on `release` or once
// --ttl passes with no `renew`: it never outlives the lease. It keeps none
// of the caller's descriptors open, so `token=$(dlock acquire x)` returns.
//
// The token handed to scripts is "<keeper id>-<secret>": the id names the
// keeper's socket, the secret is compared in constant time.
struct KeeperResult {
  std::optional<backend::Lease> lease; // token is the keeper token
  int exit_status = 0;                 // when no lease: busy, interrupted or error
  std::string message;                 // when no lease: what to print (may be empty)
};

KeeperResult acquire_with_keeper(const backend::BackendConfig &config, const backend::LockRequest &request,
                                 std::optional<Millis> wait, int conflict_exit_code);

bool is_keeper_token(const std::string &token);

enum class KeeperAnswer { done, not_owner };

struct KeeperReply {
  KeeperAnswer answer = KeeperAnswer::not_owner;
  Millis ttl{};
  std::uint64_t fence = 0;
};

// Ask the keeper behind `token` to renew for `ttl` or to release. A token
// whose keeper is gone no longer owns the lock: not_owner.
KeeperReply keeper_renew(const std::string &name, const std::string &token, Millis ttl, Millis timeout);
KeeperReply keeper_release(const std::string &name, const std::string &token, Millis timeout);

} // namespace dlock::runner
