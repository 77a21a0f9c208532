#include "backend/etcd/queue.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlock::backend::etcd {

namespace {

// Whom a contender waits for: an exclusive one (a writer) for the key just
// before its own, a reader for the last writer before it; nullopt when the
// lock is its.
std::optional<Contender> ahead_of(const std::vector<Contender> &contenders, std::vector<Contender>::const_iterator mine,
                                  bool reader) {
  for (auto it = mine; it != contenders.begin();) {
    --it;
    if (!reader || !it->reader) return *it;
  }
  return std::nullopt;
}

std::string semaphore_of(unsigned n) { return fmt::format("it is held as a semaphore of {} (--limit {})", n, n); }

} // namespace

std::optional<unsigned> limit_of(const Contender &slot) {
  Json doc = Json::parse(slot.value, nullptr, false);
  if (!doc.is_object() || !doc.contains("limit") || !doc["limit"].is_number_unsigned()) return std::nullopt;
  auto n = doc["limit"].get<std::uint64_t>();
  if (n < 1 || n > max_limit) return std::nullopt;
  return static_cast<unsigned>(n);
}

Standing standing_in(const LockKeys &keys, const std::string &key, HoldMode mode, unsigned limit) {
  Standing out;
  auto is_mine = [&](const Contender &c) { return c.key == key; };
  if (mode != HoldMode::semaphore) {
    if (!keys.slots.empty()) {
      auto n = limit_of(keys.slots.front());
      out.refusal = n ? semaphore_of(*n) : "it is held as a semaphore";
      out.semaphore_limit_unknown = !n;
      return out;
    }
    auto mine = std::find_if(keys.contenders.begin(), keys.contenders.end(), is_mine);
    if (mine == keys.contenders.end()) return out;
    out.create_revision = mine->create_revision;
    out.ahead = ahead_of(keys.contenders, mine, mode == HoldMode::shared);
    out.kind = out.ahead ? Standing::Kind::waiting : Standing::Kind::ours;
    return out;
  }
  if (!keys.contenders.empty()) {
    out.refusal = fmt::format("it is held as {} lock", keys.contenders.front().reader ? "a shared" : "an exclusive");
    return out;
  }
  for (const auto &slot : keys.slots)
    if (auto n = limit_of(slot); slot.key != key && n && *n != limit) {
      out.refusal = semaphore_of(*n);
      return out;
    }
  auto mine = std::find_if(keys.slots.begin(), keys.slots.end(), is_mine);
  if (mine == keys.slots.end()) return out;
  out.create_revision = mine->create_revision;
  auto position = static_cast<std::size_t>(mine - keys.slots.begin());
  if (position < limit) {
    out.kind = Standing::Kind::ours;
    return out;
  }
  out.kind = Standing::Kind::waiting;
  out.ahead = *std::prev(mine);
  out.watch_holders = position == limit;
  return out;
}

Holding holding_of(const std::string &name, const LockKeys &keys) {
  Holding out;
  out.status.name = name;
  bool semaphore = keys.contenders.empty();
  const std::vector<Contender> &queue = semaphore ? keys.slots : keys.contenders;
  if (queue.empty()) return out;
  out.status.held = true;
  if (semaphore) {
    // The first N hold it, N from the first holder's value.
    out.status.mode = HoldMode::semaphore;
    out.status.limit = limit_of(queue.front());
    std::size_t n = std::min<std::size_t>(out.status.limit.value_or(1), queue.size());
    out.owners.assign(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
  } else if (!queue.front().reader) {
    out.owners.push_back(queue.front());
  } else {
    out.status.mode = HoldMode::shared;
    for (const auto &c : queue) {
      if (!c.reader) break;
      out.owners.push_back(c);
    }
  }
  out.status.waiters = static_cast<std::int64_t>(queue.size() - out.owners.size());
  out.status.fence = static_cast<std::uint64_t>(out.owners.back().create_revision);
  return out;
}

std::vector<std::string> lock_names_in(const Json &range, const std::string &head, const std::string &prefix) {
  std::vector<std::string> names;
  for (const auto &kv : array_in(range, "kvs")) {
    std::string key = base64_decode(string_in(kv, "key"));
    auto slash = key.rfind('/');
    if (slash == std::string::npos || slash <= head.size()) continue;
    std::string last = key.substr(slash + 1);
    std::string name = key.substr(head.size(), slash - head.size());
    bool grouped = false;
    for (std::string group : {"/read", "/write", "/sem"})
      if (name.size() > group.size() && name.compare(name.size() - group.size(), group.size(), group) == 0) {
        name.resize(name.size() - group.size());
        grouped = true;
        break;
      }
    if (!grouped && !lease_from_token(last)) continue; // not a lock key
    // "NS/app/<lease>" lies in the range of prefix "app/" too.
    if (name.rfind(prefix, 0) == 0) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// The end of the key range of everything that starts with `prefix`.
std::string range_end(std::string prefix) {
  while (!prefix.empty()) {
    auto &last = reinterpret_cast<unsigned char &>(prefix.back());
    if (last < 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0'); // every key
}

Json range_request(const std::string &prefix, bool keys_only) {
  Json request = {{"key", base64_encode(prefix)}, {"range_end", base64_encode(range_end(prefix))}};
  if (keys_only) request["keys_only"] = true;
  return request;
}

Json range_request_of_key(const std::string &key) { return {{"key", base64_encode(key)}, {"keys_only", true}}; }

Json last_before_request(const std::string &prefix, std::int64_t create_revision) {
  Json request = range_request(prefix, true);
  request.update({{"max_create_revision", std::to_string(create_revision - 1)},
                  {"sort_order", "DESCEND"},
                  {"sort_target", "CREATE"},
                  {"limit", "1"}});
  return request;
}

Json wake_reads(const std::string &prefix, const std::string &key, std::int64_t create_revision, unsigned limit) {
  Json reads = {{{"request_range", range_request_of_key(key)}},
                {{"request_range", last_before_request(prefix, create_revision)}}};
  // etcd counts a range before it filters it by create revision: the
  // slots before ours are counted by reading up to N + 1 of their keys.
  if (limit > 0) {
    Json slots = last_before_request(prefix, create_revision);
    slots["limit"] = std::to_string(limit + 1);
    reads.push_back({{"request_range", slots}});
  }
  return {{"success", reads}};
}

std::optional<Standing> standing_on_wake(const Json &answer, const std::string &prefix, const std::string &key,
                                         HoldMode mode, unsigned limit) {
  const Json &responses = array_in(answer, "responses");
  if (responses.size() < (mode == HoldMode::semaphore ? 3U : 2U)) return std::nullopt;
  const Json &own = object_in(responses[0], "response_range"), &last = object_in(responses[1], "response_range");
  auto mine = contenders_in(own, prefix), before = contenders_in(last, prefix);
  if (mine.size() != array_in(own, "kvs").size() || before.size() != array_in(last, "kvs").size()) return std::nullopt;
  if (mode != HoldMode::semaphore) {
    std::vector<Contender> queue = before;
    queue.insert(queue.end(), mine.begin(), mine.end());
    return standing_in({queue, {}}, key, mode, limit);
  }
  Standing out;
  auto slots_before = static_cast<std::int64_t>(array_in(object_in(responses[2], "response_range"), "kvs").size());
  if (mine.empty()) return out;
  if (slots_before > 0 && before.empty()) return std::nullopt;
  out.create_revision = mine.front().create_revision;
  if (slots_before < static_cast<std::int64_t>(limit)) {
    out.kind = Standing::Kind::ours;
    return out;
  }
  out.kind = Standing::Kind::waiting;
  out.ahead = before.front();
  out.watch_holders = slots_before == static_cast<std::int64_t>(limit);
  return out;
}

} // namespace dlock::backend::etcd
