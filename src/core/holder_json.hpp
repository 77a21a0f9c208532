#pragma once

#include "core/identity.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>

namespace dlock {

// The holder fields as stored with a lock by backends that keep JSON
// (file records, ZooKeeper node data): host, pid, user, command, since_ms.
void add_holder(nlohmann::json &doc, const HolderInfo &holder);
// The holder stored in `doc`, or nullopt if it has none (no "pid") or the
// fields have the wrong types.
std::optional<HolderInfo> holder_in(const nlohmann::json &doc);

} // namespace dlock
