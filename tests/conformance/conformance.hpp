#pragma once
// What every conformance test file uses: the backend under test (from
// DLOCK_CONFORMANCE_URL), fresh clients, names of its own per test case.
#include "backend/registry.hpp"
#include "core/url.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <unistd.h>

namespace conformance {

using namespace dlock;
using namespace dlock::backend;
using namespace std::chrono_literals;

inline BackendConfig config() {
  const char *url = std::getenv("DLOCK_CONFORMANCE_URL");
  REQUIRE(url);
  BackendConfig config;
  config.url = parse_url(url);
  config.lock_namespace = "conformance";
  config.connect_timeout = 2000ms;
  if (const char *password = std::getenv("DLOCK_PASSWORD")) config.password = password;
  return config;
}

// A fresh client, as a second process would have.
inline std::unique_ptr<Backend> client() { return create_backend(config()); }

inline std::string unique(const std::string &base) {
  static int counter = 0;
  return base + "/" + std::to_string(getpid()) + "-" + std::to_string(++counter);
}

inline LockRequest request_for(const std::string &name, Millis ttl = 2000ms) {
  LockRequest request;
  request.name = name;
  request.ttl = ttl;
  request.holder = {host_name(), getpid(), user_name(), "conformance", std::chrono::system_clock::now()};
  return request;
}

inline Lease must_acquire(Backend &backend, const LockRequest &request) {
  AcquireResult result = backend.try_acquire(request);
  REQUIRE(result.outcome == AcquireOutcome::acquired);
  REQUIRE(result.lease);
  return *result.lease;
}

inline bool lease_based() { return !find_backend(config().url.scheme).session_bound; }

} // namespace conformance
