#pragma once

#include "backend/backend.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace dlock::backend {

using Factory = std::unique_ptr<Backend> (*)(const BackendConfig &);

// Every backend is built into the binary. Client libraries that are costly
// to load (libpq, OpenSSL) are opened with dlopen only when a URL needs
// them (core/runtime_library.hpp), so that the file backend's start-up
// maps nothing it does not use.
struct BackendInfo {
  std::vector<std::string_view> schemes; // the first is the canonical one
  // The lock lives only as long as the client's session (a process holding
  // a descriptor or connection): `acquire` then leaves a keeper process.
  bool session_bound = false;
  std::string_view summary;
  Factory create = nullptr;
};

// Every backend dlock knows, in the order shown to users.
const std::vector<BackendInfo> &known_backends();

// The entry for a URL scheme; throws ConfigError (78) listing the known
// schemes when there is none.
const BackendInfo &find_backend(std::string_view scheme);

// Builds the backend for config.url.
std::unique_ptr<Backend> create_backend(const BackendConfig &config);

} // namespace dlock::backend
