#include "backend/etcd/gateway.hpp"
#include "core/error.hpp"
#include "core/url.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace dlock;
using namespace dlock::backend::etcd;

namespace {

backend::BackendConfig config_for(const std::string &url) {
  backend::BackendConfig config;
  config.url = parse_url(url);
  return config;
}

} // namespace

TEST_CASE("an etcd URL gives one endpoint per host, 2379 unless a port is given, https for etcds") {
  GatewayOptions plain = gateway_options(config_for("etcd://127.0.0.1,[::1]:2380"));
  CHECK(plain.endpoints == std::vector<std::string>{"http://127.0.0.1:2379", "http://[::1]:2380"});
  CHECK_FALSE(plain.user);
  GatewayOptions tls = gateway_options(config_for("etcds://alice:secret@localhost:2381?cacert=/ca.pem"));
  CHECK(tls.endpoints == std::vector<std::string>{"https://localhost:2381"});
  CHECK(tls.cacert == "/ca.pem");
  CHECK(tls.user == "alice");
  CHECK(tls.password == "secret");
  CHECK(tls.label.find("secret") == std::string::npos);
}

TEST_CASE("an etcd URL with a path, TLS files on etcd://, a lone cert or a password without a user is refused") {
  for (const char *url : {"etcd://127.0.0.1/some/path", "etcd://127.0.0.1?cacert=/ca.pem",
                          "etcds://127.0.0.1?cert=/c.pem", "etcds://127.0.0.1?verify=no"}) {
    INFO(url);
    CHECK_THROWS_AS(gateway_options(config_for(url)), ConfigError);
  }
  backend::BackendConfig password_only = config_for("etcd://127.0.0.1");
  password_only.password = "secret";
  CHECK_THROWS_AS(gateway_options(password_only), ConfigError);
}
