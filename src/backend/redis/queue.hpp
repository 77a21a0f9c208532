#pragma once

#include "backend/backend.hpp"
#include "backend/redis/common.hpp"
#include "backend/redis/resp.hpp"

#include <string>
#include <string_view>

// The single-server backend's requests to take a lock, and what its waiters
// need of the queue (server_scripts.hpp).
namespace dlock::backend::redis {

// One acquire request, formatted once per acquire() so that a waiter that
// is woken only has to send it. Every attempt of one call uses the same
// token: at most one of them can take the lock.
struct AcquireCommand {
  std::string token;
  std::string bytes;
};

// `id`: the waiter's id in the queue, "" for a try that does not wait.
// `token`: the token of the call's earlier attempts (a new one if empty).
AcquireCommand acquire_command(const LockRequest &request, const Keys &keys, const std::string &id,
                               const std::string &token = {});

// How long a waiter sleeps at most unless woken: well within the 90 s
// that keep its place in the queue.
inline constexpr Millis k_longest_sleep{30'000};
// How long a waiter woken in the queue has to come.
inline constexpr Millis k_turn{2000};

// The waiter `id`'s member of the queue: its kind and id ("x:ID", "r:ID",
// "sN:ID").
std::string queue_member(const LockRequest &request, const std::string &id);

// What a message on a waiter's channel says: "turn", "next" or "ping";
// empty for anything else.
std::string_view message_text(const Reply &message);

} // namespace dlock::backend::redis
