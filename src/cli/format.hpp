#pragma once

#include "backend/backend.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dlock::cli {

// The stable JSON shape of one lock, shared by status --json and list --json:
// name, held, holder {host, pid, user, command, since}, fence, ttl_left_ms,
// waiters, detail; null where the backend does not know.
nlohmann::ordered_json status_json(const backend::LockStatus &status);

// "lock: x\nstate: held\n..." for people.
std::string status_text(const backend::LockStatus &status);

// One row per lock under a header.
std::string list_table(const std::vector<backend::LockStatus> &locks);

// "3m12s ago"
std::string age(std::chrono::system_clock::time_point since);

} // namespace dlock::cli
