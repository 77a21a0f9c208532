// Durations (--ttl, --wait, config values): anything is refused with a
// usage error or parsed, and what format_duration prints reads back as the
// same duration.
#include "core/duration.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  try {
    dlock::Millis value = dlock::parse_duration(text, "--ttl");
    if (value.count() < 0) std::abort();
    if (dlock::parse_duration(dlock::format_duration(value), "--ttl") != value) std::abort();
  } catch (const dlock::UsageError &) {
  }
  try {
    auto wait = dlock::parse_wait(text, "--wait");
    if (wait && wait->count() < 0) std::abort();
  } catch (const dlock::UsageError &) {
  }
  return 0;
}
