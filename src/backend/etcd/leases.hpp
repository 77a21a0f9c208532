#pragma once
// What the etcd backend does to a key and its lease once it lets go, and
// what it reads of a lease: one request each through the gateway.
#include "backend/etcd/gateway.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace dlock::backend::etcd {

// Deletes `key`; the lease it was on (0 for none), or nullopt if there was
// no such key. A key's name holds the lease it was created on, unique in
// the cluster: deleting it is compare-and-delete on that contender's key.
std::optional<std::int64_t> delete_key(Gateway &gateway, const std::string &key);

// Revokes `lease`, which deletes its keys; a failure is only logged (-v):
// the lease ends by itself.
void revoke_quietly(Gateway &gateway, std::int64_t lease);

// Revokes `lease` only if it holds no key any more: a lease dlock did not
// grant here may be another client's session (a Go program's, etcdctl's),
// with other locks on it.
void revoke_if_bare(Gateway &gateway, std::int64_t lease);

// What is left of `lease`, or nullopt for none (0) or one that has ended.
std::optional<Millis> time_left_of(Gateway &gateway, std::int64_t lease);

} // namespace dlock::backend::etcd
