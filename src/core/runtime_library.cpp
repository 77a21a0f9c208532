#include "core/runtime_library.hpp"

#include <fmt/format.h>

#include <dlfcn.h>

namespace dlock::runtime_library {

// Lazy binding, as the dynamic loader gives a program linked with the
// library: libpq's own calls into its two dozen dependencies (Kerberos,
// LDAP, GnuTLS...) are resolved when first made, not all at load, which
// cost a run on PostgreSQL some 3 million instructions. The symbols dlock
// calls are still looked up at once, by symbol().
void *open(const char *soname, const std::string &missing) {
  void *handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (!handle) throw ConfigError(fmt::format("{}: {}", missing, dlerror()));
  return handle;
}

void *symbol(void *handle, const char *soname, const char *name, const std::string &hint) {
  void *address = dlsym(handle, name);
  if (!address) throw ConfigError(fmt::format("{} lacks {}{}", soname, name, hint));
  return address;
}

} // namespace dlock::runtime_library
