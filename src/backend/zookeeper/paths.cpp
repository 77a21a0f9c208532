#include "backend/zookeeper/paths.hpp"

#include "core/error.hpp"
#include "core/holder_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace dlock::backend::zookeeper {

namespace {

constexpr std::size_t k_sequence_digits = 10;
constexpr std::string_view k_contender_markers[] = {"-lock-", "__lock__", "__rlock__", "__READ__", "__WRIT__"};
constexpr std::string_view k_reader_markers[] = {"__rlock__", "__READ__"};

// The marker before the sequence digits of a contender's node, if any.
std::optional<std::string_view> marker_of(std::string_view child) {
  if (child.size() <= k_sequence_digits) return std::nullopt;
  std::string_view head = child.substr(0, child.size() - k_sequence_digits);
  for (auto marker : k_contender_markers)
    if (head.size() >= marker.size() && head.substr(head.size() - marker.size()) == marker) return marker;
  return std::nullopt;
}

// Empty when every level of a chroot ("a/b/c") can be a znode name.
std::string bad_level(std::string_view text) {
  std::size_t start = 0;
  for (;;) {
    auto slash = text.find('/', start);
    std::string_view level = text.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (level.empty()) return "an empty level (trailing or double '/')";
    if (level == "." || level == "..") return fmt::format("the level '{}'", level);
    if (slash == std::string_view::npos) return {};
    start = slash + 1;
  }
}

// Every level of a valid name or namespace ("a//b/..") as a znode path
// ("/a/%/b/..%"): see encode_level().
std::string encode_levels(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  for (;;) {
    auto slash = text.find('/', start);
    out += '/';
    out += encode_level(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

// What the node data of another client says, for `status`: printable and short.
std::string printable(const std::string &data) {
  std::string out;
  for (char c : data.substr(0, 64))
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

} // namespace

std::string encode_level(std::string_view level) {
  std::string out(level);
  if (level.empty() || level == "." || level == ".." || contender_sequence(level)) out += '%';
  return out;
}

std::string decode_level(std::string_view node) {
  if (!node.empty() && node.back() == '%') node.remove_suffix(1);
  return std::string(node);
}

std::string base_path(const std::string &chroot, const std::string &lock_namespace) {
  std::string root = chroot;
  while (!root.empty() && root.back() == '/')
    root.pop_back();
  if (!root.empty()) {
    if (auto bad = bad_level(std::string_view(root).substr(1)); !bad.empty())
      throw ConfigError(fmt::format("the chroot '{}' has {}", chroot, bad));
  }
  std::string path = root + encode_levels(lock_namespace);
  if (path == "/zookeeper" || path.rfind("/zookeeper/", 0) == 0)
    throw ConfigError("/zookeeper is ZooKeeper's own tree: choose another namespace or chroot");
  return path;
}

std::string lock_path(const std::string &base, const std::string &name) { return base + encode_levels(name); }

std::vector<std::string> ancestors(const std::string &path) {
  std::vector<std::string> out;
  for (auto slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    out.push_back(path.substr(0, slash));
  return out;
}

std::optional<std::uint64_t> contender_sequence(std::string_view child) {
  if (!marker_of(child)) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : child.substr(child.size() - k_sequence_digits)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::string protected_id(std::string_view child) {
  auto marker = marker_of(child);
  if (!marker || child.rfind("_c_", 0) != 0) return {};
  auto head = child.size() - k_sequence_digits - marker->size();
  // "_c_<id>-lock-": the '-' before "lock-" belongs to the id, as Curator writes it.
  if (*marker == "-lock-") ++head;
  return std::string(child.substr(0, head));
}

std::vector<Contender> contenders(const std::vector<std::string> &children) {
  std::vector<Contender> nodes;
  for (const auto &child : children) {
    auto sequence = contender_sequence(child);
    if (!sequence) continue;
    auto marker = *marker_of(child);
    bool reader =
        std::find(std::begin(k_reader_markers), std::end(k_reader_markers), marker) != std::end(k_reader_markers);
    nodes.push_back({child, *sequence, reader, {child}});
  }
  auto by_sequence = [](const Contender &a, const Contender &b) {
    return a.sequence != b.sequence ? a.sequence < b.sequence : a.node < b.node;
  };
  std::sort(nodes.begin(), nodes.end(), by_sequence);
  // The nodes of one protected id are one contender, at its lowest node.
  std::vector<Contender> out;
  std::map<std::string, std::size_t> by_id; // protected id -> index in out
  for (auto &node : nodes) {
    std::string id = protected_id(node.node);
    auto known = id.empty() ? by_id.end() : by_id.find(id);
    if (known == by_id.end()) {
      if (!id.empty()) by_id[id] = out.size();
      out.push_back(std::move(node));
      continue;
    }
    Contender &contender = out[known->second];
    contender.nodes.push_back(node.node);
    contender.reader = contender.reader || node.reader;
  }
  return out;
}

QueuePlace place_in(const std::vector<Contender> &queue, std::string_view own,
                    const std::vector<std::string> &own_writers) {
  QueuePlace place;
  auto has = [](const Contender &c, std::string_view node) {
    return std::find(c.nodes.begin(), c.nodes.end(), node) != c.nodes.end();
  };
  auto mine = std::find_if(queue.begin(), queue.end(), [&](const Contender &c) { return has(c, own); });
  if (mine == queue.end()) return place;
  place.queued = true;
  auto index = static_cast<std::size_t>(mine - queue.begin());
  if (!mine->reader) {
    place.holds = index == 0;
    place.watch = index - (index > 0 ? 1 : 0);
    place.watch_is_last = index == 1;
    return place;
  }
  // The writers before our node that keep us out, nearest last.
  std::vector<std::size_t> blockers;
  for (std::size_t i = 0; i < index; ++i)
    if (!queue[i].reader && std::none_of(own_writers.begin(), own_writers.end(),
                                         [&](const std::string &node) { return has(queue[i], node); }))
      blockers.push_back(i);
  place.holds = blockers.empty();
  if (!place.holds) {
    place.watch = blockers.back();
    place.watch_is_last = blockers.size() == 1;
  }
  return place;
}

std::size_t holder_count(const std::vector<Contender> &queue) {
  if (queue.empty()) return 0;
  if (!queue.front().reader) return 1;
  auto writer = std::find_if(queue.begin(), queue.end(), [](const Contender &c) { return !c.reader; });
  return static_cast<std::size_t>(writer - queue.begin());
}

std::string new_node_prefix(HoldMode mode) { return new_node_prefixes(mode).front(); }

std::vector<std::string> new_node_prefixes(HoldMode mode) {
  // A version 4 UUID, as java.util.UUID.randomUUID() prints it.
  std::string hex = random_hex(16);
  hex[12] = '4';
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];
  std::string id = fmt::format("_c_{}-{}-{}-{}-{}-", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                               hex.substr(16, 4), hex.substr(20));
  if (mode == HoldMode::shared) return {id + "__READ__", id + "lock-"};
  return {id + "lock-", id + "__WRIT__"};
}

std::string encode_holder(const HolderInfo &holder) {
  nlohmann::json doc;
  doc["dlock"] = 1;
  add_holder(doc, holder);
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<HolderInfo> decode_holder(const std::string &data) {
  if (data.empty() || data.front() != '{') return std::nullopt;
  auto doc = nlohmann::json::parse(data, nullptr, false);
  if (doc.is_discarded()) return std::nullopt;
  return holder_in(doc);
}

LockStatus queue_status(const std::string &name, const std::vector<Contender> &queue,
                        const std::vector<HolderNode> &holders) {
  LockStatus status;
  status.name = name;
  status.held = true;
  status.waiters = static_cast<std::int64_t>(queue.size() - holders.size());
  if (queue.front().reader) {
    status.mode = HoldMode::shared;
    for (std::size_t i = 0; i < holders.size(); ++i) {
      HolderStatus holder;
      holder.fence = static_cast<std::uint64_t>(holders[i].czxid);
      if (auto info = decode_holder(holders[i].data)) {
        holder.info = *info;
      } else {
        // Another client's reader: its data (Curator's is an address) and its node.
        holder.info.host = holders[i].data.empty() ? "?" : printable(holders[i].data);
        holder.info.command = fmt::format("node {} of another client", queue[i].node);
        holder.info.since = std::chrono::system_clock::time_point(std::chrono::milliseconds(holders[i].ctime_ms));
      }
      status.holders.push_back(std::move(holder));
    }
    status.detail =
        fmt::format("{} reader node{} from {}", holders.size(), holders.size() == 1 ? "" : "s", queue.front().node);
    return status;
  }
  const HolderNode &head = holders.front();
  status.fence = static_cast<std::uint64_t>(head.czxid);
  status.holder = decode_holder(head.data);
  if (status.holder) {
    status.detail = fmt::format("node {}, session 0x{:x}", queue.front().node, head.session);
  } else {
    // Curator stores an address, kazoo an identifier: shown as data, not
    // dressed up as a holder with a pid.
    status.detail = fmt::format("node {} of another client (data '{}'), session 0x{:x}", queue.front().node,
                                printable(head.data), head.session);
  }
  return status;
}

} // namespace dlock::backend::zookeeper
