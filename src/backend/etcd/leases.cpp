#include "backend/etcd/leases.hpp"

#include "core/log.hpp"

namespace dlock::backend::etcd {

std::optional<std::int64_t> delete_key(Gateway &gateway, const std::string &key) {
  auto answer = gateway.call("/v3/kv/deleterange", {{"key", base64_encode(key)}, {"prev_kv", true}});
  if (!answer) throw UnavailableError("interrupted");
  const Json &deleted = array_in(*answer, "prev_kvs");
  if (deleted.empty()) return std::nullopt;
  return number_in(deleted.front(), "lease");
}

void revoke_quietly(Gateway &gateway, std::int64_t lease) {
  try {
    gateway.call("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
  } catch (const std::exception &failure) {
    detail(1, "could not revoke lease: {} (it ends by itself)", failure.what());
  }
}

void revoke_if_bare(Gateway &gateway, std::int64_t lease) {
  try {
    auto left = gateway.call("/v3/lease/timetolive", {{"ID", std::to_string(lease)}, {"keys", true}});
    if (left && !array_in(*left, "keys").empty()) return;
  } catch (const std::exception &failure) {
    detail(1, "could not look at lease {}: {} (it ends by itself)", lease_hex(lease), failure.what());
    return;
  }
  revoke_quietly(gateway, lease);
}

std::optional<Millis> time_left_of(Gateway &gateway, std::int64_t lease) {
  if (lease == 0) return std::nullopt;
  try {
    auto left = gateway.call("/v3/lease/timetolive", {{"ID", std::to_string(lease)}});
    Millis left_for = seconds_in(*left, "TTL");
    if (left_for.count() >= 0) return left_for;
  } catch (const EtcdError &) {
    // The lease ended between the two requests.
  }
  return std::nullopt;
}

} // namespace dlock::backend::etcd
