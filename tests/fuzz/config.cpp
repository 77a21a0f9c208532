// Configuration files (~/.config/dlock/config, /etc/dlock/config,
// --config): `key = value` lines.
#include "core/config.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    dlock::ConfigFile config = dlock::parse_config(text, "/fuzz/config");
    for (const char *key : dlock::k_config_keys)
      if (auto value = config.get(key); value && (value->empty() || config.where(key).empty())) std::abort();
  } catch (const dlock::ConfigError &) {
  }
  return 0;
}
