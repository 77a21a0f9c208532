#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace dlock {

using Millis = std::chrono::milliseconds;

// Parses "250ms", "30s", "5m", "2h", "1h30m", "1.5s" or a bare number of
// seconds. Throws UsageError naming the option on anything else, including
// negative values and values that overflow.
Millis parse_duration(std::string_view text, std::string_view option);

// Like parse_duration, but also accepts "forever" (returned as nullopt).
std::optional<Millis> parse_wait(std::string_view text, std::string_view option);

// Renders a duration for people, in a form parse_duration reads back:
// "250ms", "1.5s", "3m12s", "1h30m".
std::string format_duration(Millis value);

} // namespace dlock
