#include "backend/zookeeper/paths.hpp"

#include "core/error.hpp"
#include "core/holder_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace dlock::backend::zookeeper {

namespace {

constexpr std::size_t k_sequence_digits = 10;
constexpr std::string_view k_contender_markers[] = {"-lock-", "__lock__", "__rlock__", "__READ__", "__WRIT__"};

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
  if (child.size() <= k_sequence_digits) return std::nullopt;
  std::string_view digits = child.substr(child.size() - k_sequence_digits);
  std::uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  std::string_view head = child.substr(0, child.size() - k_sequence_digits);
  for (auto marker : k_contender_markers) {
    if (head.size() >= marker.size() && head.substr(head.size() - marker.size()) == marker) return value;
  }
  return std::nullopt;
}

std::vector<Contender> contenders(const std::vector<std::string> &children) {
  std::vector<Contender> out;
  for (const auto &child : children)
    if (auto sequence = contender_sequence(child)) out.push_back({child, *sequence});
  std::sort(out.begin(), out.end(), [](const Contender &a, const Contender &b) {
    return a.sequence != b.sequence ? a.sequence < b.sequence : a.node < b.node;
  });
  return out;
}

std::string new_node_prefix() {
  // A version 4 UUID, as java.util.UUID.randomUUID() prints it.
  std::string hex = random_hex(16);
  hex[12] = '4';
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];
  return fmt::format("_c_{}-{}-{}-{}-{}-lock-", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                     hex.substr(16, 4), hex.substr(20));
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

} // namespace dlock::backend::zookeeper
