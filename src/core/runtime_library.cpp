#include "core/runtime_library.hpp"

#include <fmt/format.h>

#include <dlfcn.h>

namespace dlock::runtime_library {

void *open(const char *soname, const std::string &missing) {
  void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw ConfigError(fmt::format("{}: {}", missing, dlerror()));
  return handle;
}

void *symbol(void *handle, const char *soname, const char *name, const std::string &hint) {
  void *address = dlsym(handle, name);
  if (!address) throw ConfigError(fmt::format("{} lacks {}{}", soname, name, hint));
  return address;
}

} // namespace dlock::runtime_library
