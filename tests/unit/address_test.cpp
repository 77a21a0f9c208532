#include "core/error.hpp"
#include "net/net.hpp"

#include <catch2/catch.hpp>

using namespace dlock;
using namespace dlock::net;

TEST_CASE("addresses: host, host:port, [v6] and [v6]:port, with the default port when none is given") {
  Address address = parse_address("redis.example", 6379);
  CHECK(address.host == "redis.example");
  CHECK(address.port == 6379);
  CHECK(address.display() == "redis.example:6379");

  address = parse_address("10.0.0.7:7000", 6379);
  CHECK(address.host == "10.0.0.7");
  CHECK(address.port == 7000);

  address = parse_address("[::1]", 2181);
  CHECK(address.host == "::1");
  CHECK(address.port == 2181);
  CHECK(address.display() == "[::1]:2181");

  address = parse_address("[fe80::1%eth0]:65535", 2181);
  CHECK(address.host == "fe80::1%eth0");
  CHECK(address.port == 65535);

  CHECK(parse_address("h:1", 80).port == 1);
}

TEST_CASE("malformed addresses are config errors") {
  for (const char *bad : {"", ":6379", "[::1", "[]:1", "[::1]x", "h:0", "h:65536", "h:99999999999", "h:-1", "h:12a",
                          "h: 1", "[::1]:+5", "::1", "::1:6379", "fe80::1%eth0"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_address(bad, 6379), ConfigError);
  }
}

TEST_CASE("a unix socket address displays as its path") {
  Address address;
  address.socket_path = "/run/redis.sock";
  CHECK(address.display() == "/run/redis.sock");
}
