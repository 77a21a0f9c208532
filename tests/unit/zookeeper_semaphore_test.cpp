// The ZooKeeper semaphore's naming and reading (Curator's
// InterProcessSemaphoreV2 layout): which children of leases/ are leases, in
// what order, who holds, and what a dlock lease record says. The recipe
// itself is tested on a real server (tests/conformance,
// tests/e2e/zk_curator_semaphore_interop_test.sh).
#include "backend/zookeeper/paths.hpp"
#include "backend/zookeeper/semaphore.hpp"

#include <catch2/catch.hpp>

#include <regex>

using namespace dlock;
using namespace dlock::backend;
using namespace dlock::backend::zookeeper;

namespace {

HolderInfo someone() {
  return {"build-7", 4242, "ci", "make release",
          std::chrono::system_clock::time_point(std::chrono::seconds(1700000000))};
}

} // namespace

TEST_CASE("zookeeper semaphore: lease nodes are '...lease-<10 digits>', ordered by sequence") {
  CHECK(lease_sequence("_c_0f2d3c4b-5a69-4788-9aab-bccddeeff001-lease-0000000042") == 42u);
  CHECK(lease_sequence("lease-0000000007") == 7u);
  CHECK_FALSE(lease_sequence("_c_0f2d3c4b-5a69-4788-9aab-bccddeeff001-lock-0000000042"));
  CHECK_FALSE(lease_sequence("lease-00000000x7"));
  CHECK_FALSE(lease_sequence("lease-123"));
  CHECK_FALSE(lease_sequence("locks"));
  auto nodes = lease_nodes({"_c_b-lease-0000000003", "junk", "lease-0000000001", "_c_a-lease-0000000002"});
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0].node == "lease-0000000001");
  CHECK(nodes[1].node == "_c_a-lease-0000000002");
  CHECK(nodes[2].sequence == 3);
}

TEST_CASE("zookeeper semaphore: a new lease node has Curator's protected name") {
  std::regex curator("_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lease-");
  std::string prefix = new_lease_prefix();
  CHECK(std::regex_match(prefix, curator));
  CHECK(new_lease_prefix() != prefix);
  CHECK(lease_sequence(prefix + "0000000001") == 1u);
}

TEST_CASE("zookeeper semaphore: dlock's lease record carries the holder and N, another client's data no N") {
  std::string record = encode_lease_record(someone(), 3);
  CHECK(record_limit(record) == 3u);
  auto holder = decode_holder(record);
  REQUIRE(holder);
  CHECK(holder->command == "make release");
  CHECK_FALSE(record_limit("10.0.0.7"));       // Curator's default data: an address
  CHECK_FALSE(record_limit(""));               // no data
  CHECK_FALSE(record_limit("{\"limit\": 3}")); // not dlock's
  CHECK_FALSE(record_limit("{\"dlock\": 1, \"limit\": 0}"));
  CHECK_FALSE(record_limit("{\"dlock\": 1, \"limit\": \"3\"}"));
  CHECK_FALSE(record_limit("{\"dlock\": 1, \"limit\": 100000}"));
  CHECK_FALSE(record_limit("{broken"));
}

TEST_CASE("zookeeper semaphore: a lease is held while at most N lease nodes exist (Curator's rule)") {
  auto nodes = lease_nodes({"lease-0000000001", "lease-0000000002", "lease-0000000003"});
  CHECK(holds_lease(nodes, "lease-0000000003", 3));
  CHECK_FALSE(holds_lease(nodes, "lease-0000000003", 2));
  CHECK_FALSE(holds_lease(nodes, "lease-0000000001", 2));
  CHECK_FALSE(holds_lease(nodes, "lease-0000000009", 5)); // not there: not held
}

TEST_CASE("zookeeper semaphore: status shows the first N lease nodes as holders, the rest as waiters") {
  auto nodes = lease_nodes({"lease-0000000001", "lease-0000000002", "lease-0000000003"});
  std::vector<LeaseData> data = {{"10.0.0.7", 11, 1700000000000},
                                 {encode_lease_record(someone(), 2), 12, 0},
                                 {encode_lease_record(someone(), 2), 13, 0}};
  LockStatus status = semaphore_status("jobs", nodes, data);
  CHECK(status.held);
  CHECK(status.mode == HoldMode::semaphore);
  CHECK(status.limit == 2u);
  REQUIRE(status.holders.size() == 2);
  CHECK(status.holders[0].fence == 11u);
  CHECK(status.holders[0].info.host == "10.0.0.7");
  CHECK(status.holders[0].info.command.find("another client") != std::string::npos);
  CHECK(status.holders[1].info.command == "make release");
  CHECK(status.waiters == 1);

  // Curator's nodes only: N is unknown, every node is counted a holder.
  LockStatus curator = semaphore_status("jobs", nodes, {{"a", 1, 0}, {"b", 2, 0}, {"c", 3, 0}});
  CHECK_FALSE(curator.limit);
  CHECK(curator.holders.size() == 3);
  CHECK(curator.waiters == 0);

  LockStatus free = semaphore_status("jobs", {}, {});
  CHECK_FALSE(free.held);
  CHECK(free.mode == HoldMode::exclusive); // a free name is shown as any free name
}
