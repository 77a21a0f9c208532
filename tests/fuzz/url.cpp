// Backend URLs of every scheme: the generic parser, then each backend's
// own reading of hosts, path and options (its constructor, which parses
// but connects to nothing), then every host as an address.
#include "core/url.hpp"
#include "backend/registry.hpp"
#include "core/error.hpp"
#include "net/net.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

// Schemes whose backend only parses when it is created. The file backend
// creates its directory and etcd is a module: their URL checks run here
// only through parse_url and parse_address.
bool constructs_without_side_effects(const std::string &scheme) {
  for (const char *name :
       {"redis", "rediss", "redis+unix", "redis-sentinel", "redlock", "redlocks", "zk", "postgres", "postgresql"})
    if (scheme == name) return true;
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  dlock::Url url;
  try {
    url = dlock::parse_url(text);
  } catch (const dlock::ConfigError &) {
    return 0;
  }
  (void)url.redacted();
  (void)url.without_credentials();
  for (const auto &host : url.hosts) {
    try {
      dlock::net::Address address = dlock::net::parse_address(host, 6379);
      if (address.port < 0 || address.port > 65535) std::abort();
      (void)address.display();
    } catch (const dlock::ConfigError &) {
    }
  }
  try {
    (void)dlock::backend::find_backend(url.scheme);
    if (constructs_without_side_effects(url.scheme)) {
      dlock::backend::BackendConfig config;
      config.url = url;
      (void)dlock::backend::create_backend(config);
    }
  } catch (const dlock::Error &) {
  }
  return 0;
}
