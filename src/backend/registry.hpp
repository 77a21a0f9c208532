#pragma once

#include "backend/backend.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::backend {

using Factory = std::unique_ptr<Backend> (*)(const BackendConfig &);

// What a loadable backend module exports under the C symbol
// `dlock_backend_module`. Heavy client libraries (libpq, libcurl) live in
// such modules so that they are loaded only when their backend is used.
struct ModuleEntry {
  int abi_version;
  const char *scheme;
  Factory factory;
};
// Raised whenever the Backend class changes its virtual functions or their
// contract: a module built against another layout is refused instead of
// calling the wrong one (4: renew with ttl 0 keeps the lock's own length).
inline constexpr int k_module_abi_version = 4;

struct BackendInfo {
  std::vector<std::string_view> schemes; // the first is the canonical one
  std::string_view module;               // empty: built into the binary
  // The lock lives only as long as the client's session (a process holding
  // a descriptor or connection): `acquire` then leaves a keeper process.
  bool session_bound = false;
  std::string_view summary;
  Factory builtin = nullptr;
  bool hidden = false; // for tests only: not listed to users
};

// Every backend dlock knows, built in or as a module, in the order shown to users.
const std::vector<BackendInfo> &known_backends();

// The entry for a URL scheme; throws ConfigError (78) listing the known
// schemes when there is none.
const BackendInfo &find_backend(std::string_view scheme);

// Whether the backend can be used by this installation (built in, or its
// module found); `where` receives the module path or the reason.
bool backend_available(const BackendInfo &info, std::string *where = nullptr);

// Builds the backend for config.url, loading its module if needed.
std::unique_ptr<Backend> create_backend(const BackendConfig &config);

} // namespace dlock::backend
