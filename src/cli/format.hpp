#pragma once

#include "backend/backend.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dlock::cli {

// The stable JSON shape of one lock, shared by status --json and list --json:
// name, held, mode (exclusive, shared, semaphore), limit, holder {host, pid,
// user, command, since}, fence, ttl_left_ms, waiters, detail, and holders:
// every holder (the exclusive one too) with its fence, ttl_left_ms and slot;
// null where the backend does not know.
nlohmann::ordered_json status_json(const backend::LockStatus &status);

// "lock: x\nstate: held\n..." for people.
std::string status_text(const backend::LockStatus &status);

// One row per lock under a header.
std::string list_table(const std::vector<backend::LockStatus> &locks);

// What --json of acquire and renew says about a lease, as the safety
// timeline sees it: the backend cannot give the lock to anyone else before
// t0 + T (t0: the send time of the request it confirmed, T: the lease it
// granted). With a keeper (file, ZooKeeper, PostgreSQL) the promise ends
// sooner if the keeper's window (--ttl) does, and no later than t0 + T
// even when the window is longer: a stopped keeper renews nothing.
struct LeaseFigures {
  Millis ttl_left;                                               // ttl_ms: the promise left when printed
  std::chrono::system_clock::time_point expires_at;              // t0 + min(T, window) on the wall clock
  std::optional<Millis> window_left;                             // keeper_window_ms: the window left when printed
  std::optional<std::chrono::system_clock::time_point> renew_by; // t0 + window: the keeper lets go then
};

// `now_wall` must be read before `now_steady`: t0 then maps to a wall time
// no later than the true one (now_wall - (now_steady - t0)).
LeaseFigures lease_figures(std::chrono::steady_clock::time_point t0, Millis granted, std::optional<Millis> window,
                           std::chrono::system_clock::time_point now_wall,
                           std::chrono::steady_clock::time_point now_steady);

// Adds ttl_ms, expires_at and, with a window, keeper_window_ms and renew_by
// to `doc`, as of now.
void add_lease_figures(nlohmann::ordered_json &doc, std::chrono::steady_clock::time_point t0, Millis granted,
                       std::optional<Millis> window);

// Runs `body`; with `as_json`, a dlock::Error it throws (backend unreachable,
// bad config) is also printed on stdout as {"error": {"code", "message"}}
// before it goes on to the one `dlock:` line on stderr and the exit code,
// so that a script reading stdout gets a document, not nothing.
int with_json_errors(bool as_json, const std::function<int()> &body);

// "3m12s ago"
std::string age(std::chrono::system_clock::time_point since);

} // namespace dlock::cli
