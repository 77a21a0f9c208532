// The ZooKeeper backend's naming: where a lock lives, which children queue
// for it and in what order. The recipe itself is tested on a real server
// (tests/conformance, tests/e2e/zk_*).
#include "backend/zookeeper/paths.hpp"
#include "core/error.hpp"

#include <catch2/catch.hpp>

#include <regex>
#include <set>

using namespace dlock;
using namespace dlock::backend::zookeeper;

TEST_CASE("zookeeper: a lock lives at <chroot>/NS/NAME, a '/' being a level") {
  CHECK(base_path("", "dlock") == "/dlock");
  CHECK(base_path("/apps/cron", "dlock") == "/apps/cron/dlock");
  CHECK(base_path("/apps/", "team/a") == "/apps/team/a");
  CHECK(lock_path("/dlock", "nightly-report") == "/dlock/nightly-report");
  CHECK(lock_path("/dlock", "reports/daily") == "/dlock/reports/daily");
  CHECK_THROWS_AS(base_path("/a//b", "dlock"), ConfigError);
  CHECK_THROWS_AS(base_path("/a/..", "dlock"), ConfigError);
  CHECK_THROWS_AS(base_path("", "zookeeper"), ConfigError);
  CHECK(base_path("/x", "zookeeper") == "/x/zookeeper");
}

TEST_CASE("zookeeper: every valid name maps to its own path, with no level ZooKeeper refuses") {
  const char *names[] = {"a",
                         "a/",
                         "a//",
                         "/a",
                         "a/.",
                         "a/..",
                         "..",
                         ".",
                         "a/b",
                         "a.b",
                         "a/b/.",
                         "x-lock-0000000001",
                         "a/x-lock-0000000001",
                         "a_",
                         "q__lock__0000000042"};
  std::set<std::string> paths;
  for (const char *name : names) {
    std::string path = lock_path("/dlock", name);
    CAPTURE(name, path);
    CHECK(paths.insert(path).second);
    // No empty, "." or ".." level, and no level that reads as a contender.
    std::string rest = path.substr(1);
    std::size_t start = 0;
    for (;;) {
      auto slash = rest.find('/', start);
      std::string level = rest.substr(start, slash == std::string::npos ? slash : slash - start);
      CHECK(!level.empty());
      CHECK(level != ".");
      CHECK(level != "..");
      CHECK_FALSE(contender_sequence(level));
      CHECK(decode_level(level) == std::string(level).substr(0, level.size() - (level.back() == '%' ? 1 : 0)));
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
  }
  CHECK(encode_level("") == "%");
  CHECK(decode_level(encode_level("..")) == "..");
  CHECK(decode_level(encode_level("job-lock-0000000001")) == "job-lock-0000000001");
  CHECK(decode_level("plain") == "plain");
}

TEST_CASE("zookeeper: Curator's, kazoo's and dlock's nodes queue together by sequence") {
  CHECK(contender_sequence("_c_0b0ab024-a7ab-46ad-8fde-5a29728bad2a-lock-0000000007") == 7u);
  CHECK(contender_sequence("3f1e2c__lock__0000000003") == 3u);
  CHECK(contender_sequence("3f1e2c__rlock__0000000004") == 4u);
  CHECK(contender_sequence("_c_x-__WRIT__0000000005") == 5u);
  CHECK(contender_sequence("_c_x-__READ__0000000006") == 6u);
  CHECK_FALSE(contender_sequence("sub"));
  CHECK_FALSE(contender_sequence("lease-0000000001"));
  CHECK_FALSE(contender_sequence("x-lock-000000001"));  // nine digits
  CHECK_FALSE(contender_sequence("x-lock-00000000a1")); // not digits
  CHECK_FALSE(contender_sequence("-lock-"));

  auto queue = contenders({"_c_b-lock-0000000010", "sub", "k__lock__0000000002", "_c_a-lock-0000000009"});
  REQUIRE(queue.size() == 3);
  CHECK(queue[0].node == "k__lock__0000000002");
  CHECK(queue[1].node == "_c_a-lock-0000000009");
  CHECK(queue[2].sequence == 10u);
}

TEST_CASE("zookeeper: a new node is named like Curator's protected lock nodes") {
  std::regex curator("_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-");
  std::string first = new_node_prefix();
  CHECK(std::regex_match(first, curator));
  CHECK(new_node_prefix() != first);
}

TEST_CASE("zookeeper: holder data round-trips; other clients' data is not taken for a holder") {
  HolderInfo holder;
  holder.host = "web1";
  holder.pid = 42;
  holder.user = "cron";
  holder.command = "./job.sh --all";
  holder.since = from_unix_ms(1'700'000'000'123);
  auto decoded = decode_holder(encode_holder(holder));
  REQUIRE(decoded);
  CHECK(decoded->host == "web1");
  CHECK(decoded->pid == 42);
  CHECK(decoded->command == "./job.sh --all");
  CHECK(to_unix_ms(decoded->since) == 1'700'000'000'123);
  CHECK_FALSE(decode_holder("10.0.0.7"));
  CHECK_FALSE(decode_holder(""));
  CHECK_FALSE(decode_holder("{not json"));
  CHECK_FALSE(decode_holder("{\"pid\": \"x\"}"));
}
