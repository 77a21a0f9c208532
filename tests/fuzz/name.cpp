// Lock names, namespaces and list prefixes (command line, environment,
// config file): a name is accepted only if every byte is allowed.
#include "core/name.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  for (std::string_view what : {"lock name", "namespace", "prefix"}) {
    try {
      dlock::validate_name(text, what);
    } catch (const dlock::UsageError &) {
      continue;
    }
    if (text.empty() || text.size() > dlock::k_max_name_bytes) std::abort();
    for (char c : text)
      if (!dlock::is_name_char(c)) std::abort();
  }
  return 0;
}
