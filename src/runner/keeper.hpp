#pragma once

#include "backend/backend.hpp"
#include "runner/keeper_protocol.hpp"

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
// keeper's socket, the secret is compared in constant time. The keeper
// answers only its own user and root (runner/keeper_socket.hpp), and only
// for the lock it holds (LockIdentity).
struct KeeperResult {
  std::optional<backend::Lease> lease; // token is the keeper token; confirmed_at and ttl as the keeper got them
  Millis window{};                     // with a lease: how long from t0 the keeper waits for a `renew` (--ttl)
  int exit_status = 0;                 // when no lease: busy, interrupted or error
  std::string message;                 // when no lease: what to print (may be empty)
};

KeeperResult acquire_with_keeper(const backend::BackendConfig &config, const backend::LockRequest &request,
                                 std::optional<Millis> wait, int conflict_exit_code);

bool is_keeper_token(const std::string &token);

// Ask the keeper behind `token` to renew for `ttl` (0: the window it was
// last given) or to release. A token whose keeper is gone, or that belongs
// to another lock (backend, namespace or name), no longer owns the lock:
// not_owner. A keeper of another user refuses (77); a failed round trip of
// the keeper to its backend is thrown with the keeper's code and message.
KeeperReply keeper_renew(const LockIdentity &lock, const std::string &token, Millis ttl, Millis timeout);
KeeperReply keeper_release(const LockIdentity &lock, const std::string &token, Millis timeout);

} // namespace dlock::runner
