#include "core/name.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

namespace dlock {

bool is_name_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
  case '.':
  case '_':
  case '-':
  case ':':
  case '/':
  case '@':
  case '+':
  case '=':
    return true;
  default:
    return false;
  }
}

namespace {

// The name as it can be shown in one line of a message.
std::string printable(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 60))
    out += (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) ? c : '?';
  if (name.size() > 60) out += "...";
  return out;
}

std::string describe_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u == ' ') return "' ' (space)";
  if (u >= 0x21 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

} // namespace

void validate_name(std::string_view name, std::string_view what) {
  if (name.empty()) throw UsageError(fmt::format("{} must not be empty", what));
  if (name.size() > k_max_name_bytes)
    throw UsageError(fmt::format("{} is {} bytes long; the limit is {}", what, name.size(), k_max_name_bytes));
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!is_name_char(name[i]))
      throw UsageError(fmt::format(
          "{} '{}' has a bad character {} at position {}; allowed: letters, digits and . _ - : / @ + =", what,
          printable(name), describe_char(name[i]), i + 1));
  }
  // "." and ".." are directory entries on the file backend (one escapes the
  // lock directory, the other collides with a sibling) and path levels on
  // ZooKeeper and etcd: no backend can keep such a name apart.
  if (what != "prefix" && name.find_first_not_of('.') == std::string_view::npos)
    throw UsageError(
        fmt::format("{} '{}' is made only of dots: such names are refused on every backend", what, printable(name)));
}

} // namespace dlock
