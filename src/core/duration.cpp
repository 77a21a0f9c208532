#include "core/duration.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>

namespace dlock {

namespace {

double unit_millis(std::string_view unit) {
  if (unit == "ms") return 1.0;
  if (unit == "s" || unit.empty()) return 1000.0;
  if (unit == "m") return 60'000.0;
  if (unit == "h") return 3'600'000.0;
  if (unit == "d") return 86'400'000.0;
  return -1.0;
}

[[noreturn]] void bad_duration(std::string_view text, std::string_view option) {
  throw UsageError(fmt::format("invalid duration '{}' for {}: use e.g. 250ms, 30s, 5m, 1h30m", text, option));
}

} // namespace

Millis parse_duration(std::string_view text, std::string_view option) {
  if (text.empty()) bad_duration(text, option);
  double total = 0.0;
  std::size_t pos = 0;
  bool bare = true;
  while (pos < text.size()) {
    std::size_t start = pos;
    bool seen_dot = false;
    while (pos < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[pos])) || (text[pos] == '.' && !seen_dot))) {
      if (text[pos] == '.') seen_dot = true;
      ++pos;
    }
    std::string number(text.substr(start, pos - start));
    if (number.empty() || number == ".") bad_duration(text, option);
    std::size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos])))
      ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    if (unit.empty() && pos < text.size()) bad_duration(text, option);
    if (unit.empty() && !bare) bad_duration(text, option); // "1h30" is ambiguous
    if (!unit.empty()) bare = false;
    double factor = unit_millis(unit);
    if (factor < 0) bad_duration(text, option);
    total += std::strtod(number.c_str(), nullptr) * factor;
    if (unit.empty() && pos < text.size()) bad_duration(text, option);
  }
  // About 292 years: anything longer is a typo, and it keeps steady_clock
  // arithmetic far from overflow.
  if (!std::isfinite(total) || total > 9.2e12) bad_duration(text, option);
  // Rounded to the nearest millisecond (total >= 0), without libm's
  // llround: a binary that needs no libm starts faster.
  return Millis(static_cast<Millis::rep>(total + 0.5));
}

std::optional<Millis> parse_wait(std::string_view text, std::string_view option) {
  if (text == "forever" || text == "inf" || text == "infinity") return std::nullopt;
  return parse_duration(text, option);
}

std::string format_duration(Millis value) {
  auto ms = value.count();
  // (fmt, not "-" + string: GCC 12 at -O3 warns falsely, -Wrestrict, on
  // the concatenation; and the most negative count has no opposite.)
  if (ms < 0) return fmt::format("-{}", format_duration(Millis(ms == Millis::min().count() ? Millis::max() : -value)));
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000)
    return ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{:g}s", static_cast<double>(ms) / 1000.0);
  std::string out;
  if (auto hours = ms / 3'600'000) out += fmt::format("{}h", hours);
  if (auto minutes = ms / 60'000 % 60) out += fmt::format("{}m", minutes);
  // Milliseconds are kept ("1m0.5s"): what is printed reads back the same.
  if (auto seconds = ms % 60'000; seconds % 1000)
    out += fmt::format("{:g}s", static_cast<double>(seconds) / 1000.0);
  else if (seconds)
    out += fmt::format("{}s", seconds / 1000);
  return out;
}

std::string errno_message(const std::string &what, int error_number) {
  return fmt::format("{}: {}", what, std::strerror(error_number));
}

} // namespace dlock
