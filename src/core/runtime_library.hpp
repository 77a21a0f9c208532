#pragma once

#include "core/error.hpp"

#include <mutex>
#include <string>

namespace dlock::runtime_library {

// Libraries dlock loads with dlopen on first use (OpenSSL for TLS, libpq
// for postgres://), so that runs that do not need them never pay for
// mapping and relocating them. A library stays loaded for good (libpq and
// OpenSSL register handlers of their own).

// Opens `soname` (RTLD_NOW | RTLD_LOCAL). Throws ConfigError (78)
// "`missing`: <dlerror>" when it cannot be loaded.
void *open(const char *soname, const std::string &missing);

// `name` resolved in `handle` into `target`, whose type comes from the
// library's own header, so a signature mismatch is a compile error. Throws
// ConfigError "`soname` lacks `name``hint`" when the symbol is missing.
void *symbol(void *handle, const char *soname, const char *name, const std::string &hint);
template <typename Function>
void bind(void *handle, const char *soname, Function &target, const char *name, const std::string &hint = {}) {
  target = reinterpret_cast<Function>(symbol(handle, soname, name, hint));
}

// The API table `load` builds, built once per process: the first call
// runs `load`, later ones return its table or rethrow its failure
// (ConfigError) without trying again.
template <typename Api> class Loaded {
public:
  explicit Loaded(Api (*load)()) : m_load(load) {}
  const Api &get() {
    std::call_once(m_once, [this] {
      try {
        m_api = m_load();
      } catch (const Error &error) {
        m_failure = error.what();
      }
    });
    if (!m_failure.empty()) throw ConfigError(m_failure);
    return m_api;
  }

private:
  Api (*m_load)();
  std::once_flag m_once;
  Api m_api{};
  std::string m_failure;
};

} // namespace dlock::runtime_library
