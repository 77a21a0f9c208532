#include "backend/backend.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

namespace dlock::backend {

const char *to_string(HoldMode mode) {
  switch (mode) {
  case HoldMode::exclusive:
    return "exclusive";
  case HoldMode::shared:
    return "shared";
  case HoldMode::semaphore:
    return "semaphore";
  }
  return "exclusive";
}

void refuse_mode(const LockRequest &request, const std::string &backend, const std::string &why) {
  std::string what = request.mode == HoldMode::shared      ? "a shared lock (--shared)"
                     : request.mode == HoldMode::semaphore ? fmt::format("a semaphore (--limit {})", request.limit)
                                                           : std::string("an exclusive lock");
  throw ConfigError(fmt::format("the {} backend cannot hold {} on '{}': {}", backend, what, request.name, why));
}

} // namespace dlock::backend
