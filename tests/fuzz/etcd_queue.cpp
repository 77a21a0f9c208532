// The etcd backend's queue decisions (queue.hpp) on listings made from the
// fuzz bytes: where a contender stands, who holds the lock, and which lock
// names a listing holds. Checked against each other: a key stands as the
// lock's (ours) exactly when holding_of() names it an owner, a waiter
// watches a key before its own, a refusal takes nothing.
//
// Bytes: mode, N, which key is ours, a prefix for lock_names_in; then 3
// bytes a key: its kind (lock key, RWMutex reader or writer, semaphore
// holder), the step to its create revision, and its value (a semaphore's
// N, a wrong one or none).
#include "backend/etcd/queue.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dlock::backend;
using namespace dlock::backend::etcd;

namespace {

const std::string k_head = "dlock/";
const std::string k_prefix = "dlock/job/";

std::string value_of(std::uint8_t byte) {
  switch (byte % 4) {
  case 0:
    return "{\"limit\":" + std::to_string(byte / 4 % 6) + "}"; // 0 is no N
  case 1:
    return "";
  case 2:
    return "{\"limit\":-1}";
  default:
    return byte & 0x80 ? "{\"limit\":1001}" : "{";
  }
}

bool owns(const Holding &holding, const Contender &c) {
  return std::any_of(holding.owners.begin(), holding.owners.end(), [&](const Contender &o) { return o.key == c.key; });
}

void check_standing(const LockKeys &keys, const std::string &key, HoldMode mode, unsigned limit) {
  Standing s = standing_in(keys, key, mode, limit);
  const auto &queue = mode == HoldMode::semaphore ? keys.slots : keys.contenders;
  auto mine = std::find_if(queue.begin(), queue.end(), [&](const Contender &c) { return c.key == key; });
  if (!s.refusal.empty() && s.kind != Standing::Kind::gone) std::abort();
  if (s.semaphore_limit_unknown && s.refusal.empty()) std::abort();
  if (s.watch_holders && (mode != HoldMode::semaphore || s.kind != Standing::Kind::waiting)) std::abort();
  if (s.kind == Standing::Kind::gone) return;
  if (mine == queue.end() || s.create_revision != mine->create_revision) std::abort();
  if (s.kind == Standing::Kind::ours && s.ahead) std::abort();
  if (s.kind == Standing::Kind::waiting &&
      (!s.ahead || s.ahead->key == key || s.ahead->create_revision >= s.create_revision))
    std::abort();
}

void check_holding(const LockKeys &keys, const Holding &holding) {
  const auto &queue = keys.contenders.empty() ? keys.slots : keys.contenders;
  const LockStatus &status = holding.status;
  if (status.held != !queue.empty() || holding.owners.size() > queue.size()) std::abort();
  if (!status.held) return;
  if (holding.owners.empty() || status.waiters != static_cast<std::int64_t>(queue.size() - holding.owners.size()) ||
      status.fence != static_cast<std::uint64_t>(holding.owners.back().create_revision))
    std::abort();
  if (status.mode == HoldMode::exclusive && (holding.owners.size() != 1 || holding.owners.front().reader)) std::abort();
  if (status.mode == HoldMode::shared)
    for (const auto &owner : holding.owners)
      if (!owner.reader) std::abort();
  // A contender stands as the lock's own exactly when it is an owner.
  if (!keys.contenders.empty()) {
    if (!keys.slots.empty()) return; // every contender is refused
    for (const auto &c : keys.contenders) {
      Standing s = standing_in(keys, c.key, c.reader ? HoldMode::shared : HoldMode::exclusive, 1);
      if ((s.kind == Standing::Kind::ours) != owns(holding, c)) std::abort();
    }
    return;
  }
  auto n = limit_of(keys.slots.front());
  if (!n) return;
  for (const auto &slot : keys.slots)
    if (auto other = limit_of(slot); other && *other != *n) return; // refused, not queued
  for (const auto &slot : keys.slots) {
    Standing s = standing_in(keys, slot.key, HoldMode::semaphore, *n);
    if ((s.kind == Standing::Kind::ours) != owns(holding, slot)) std::abort();
  }
}

void check_names(const LockKeys &keys, const std::string &prefix) {
  Json range = {{"kvs", Json::array()}};
  for (const auto *list : {&keys.contenders, &keys.slots})
    for (const auto &c : *list)
      range["kvs"].push_back({{"key", base64_encode(c.key)}, {"value", base64_encode(c.value)}});
  range["kvs"].push_back({{"key", base64_encode(k_prefix + "sub/" + lease_hex(7))}});
  range["kvs"].push_back({{"key", base64_encode(k_head + "x")}});
  std::vector<std::string> names = lock_names_in(range, k_head, prefix);
  if (!std::is_sorted(names.begin(), names.end()) || std::adjacent_find(names.begin(), names.end()) != names.end())
    std::abort();
  for (const auto &name : names)
    if (name.rfind(prefix, 0) != 0) std::abort();
  bool listed = std::find(names.begin(), names.end(), "job") != names.end();
  bool any = !keys.contenders.empty() || !keys.slots.empty();
  if (listed != (any && std::string("job").rfind(prefix, 0) == 0)) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size < 4) return 0;
  auto mode = static_cast<HoldMode>(data[0] % 3);
  unsigned limit = 1 + data[1] % 8;
  std::size_t ours = data[2];
  const char *prefixes[] = {"", "j", "job", "x"};
  std::string prefix = prefixes[data[3] % 4];
  LockKeys keys;
  std::vector<std::string> all;
  std::int64_t revision = 0;
  for (std::size_t at = 4; at + 3 <= size && all.size() < 64; at += 3) {
    Contender c;
    c.create_revision = revision += 1 + data[at + 1] % 4;
    c.lease = static_cast<std::int64_t>(all.size()) + 1;
    c.value = value_of(data[at + 2]);
    switch (data[at] % 4) {
    case 0:
      c.key = k_prefix + lease_hex(c.lease);
      break;
    case 1:
      c.key = k_prefix + "read/" + lease_hex(c.lease), c.reader = true;
      break;
    case 2:
      c.key = k_prefix + "write/" + lease_hex(c.lease);
      break;
    default:
      c.key = k_prefix + "sem/" + lease_hex(c.lease);
      break;
    }
    all.push_back(c.key);
    (data[at] % 4 == 3 ? keys.slots : keys.contenders).push_back(std::move(c));
  }
  std::string key = ours < all.size() ? all[ours] : k_prefix + "gone";
  check_standing(keys, key, mode, limit);
  check_holding(keys, holding_of("job", keys));
  check_names(keys, prefix);
  return 0;
}
