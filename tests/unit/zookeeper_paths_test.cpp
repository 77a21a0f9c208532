// The ZooKeeper backend's naming: where a lock lives, which children queue
// for it and in what order. The recipe itself is tested on a real server
// (tests/conformance, tests/e2e/zk_*).
#include "backend/zookeeper/paths.hpp"
#include "core/error.hpp"

#include <catch2/catch.hpp>

#include <regex>
#include <set>

using namespace dlock;
using namespace dlock::backend;
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

// The shared lock (Curator's InterProcessReadWriteLock layout): which node
// holds, which one a waiting node watches, and what `status` shows.
namespace {

// Where node `own` stands in the queue the lock node's `children` make.
QueuePlace place(const std::vector<std::string> &children, const std::string &own,
                 const std::vector<std::string> &own_writers = {}) {
  return place_in(contenders(children), own, own_writers);
}

// The name of the node a waiting `own` watches.
std::string watched(const std::vector<std::string> &children, const std::string &own) {
  auto queue = contenders(children);
  QueuePlace at = place_in(queue, own);
  REQUIRE(at.queued);
  REQUIRE_FALSE(at.holds);
  REQUIRE(at.watch < queue.size());
  return queue[at.watch].node;
}

} // namespace

TEST_CASE("zookeeper: the shared lock's queue is ordered by sequence, not by the uuid before it") {
  const std::string w1 = "_c_ffffffff-ffff-4fff-bfff-ffffffffffff-__WRIT__0000000001";
  const std::string r2 = "_c_00000000-0000-4000-8000-000000000000-__READ__0000000002";
  const std::string x3 = "_c_00000000-0000-4000-8000-000000000001-lock-0000000003";
  const std::string r4 = "0000000000000000__rlock__0000000004";
  auto queue = contenders({r4, x3, r2, w1});
  REQUIRE(queue.size() == 4);
  CHECK(queue[0].node == w1);
  CHECK(queue[1].node == r2);
  CHECK(queue[2].node == x3);
  CHECK(queue[3].node == r4);
  CHECK_FALSE(queue[0].reader);
  CHECK(queue[1].reader);
  CHECK_FALSE(queue[2].reader);
  CHECK(queue[3].reader);
  // The writer with the "highest" uuid holds: it was first.
  CHECK(place({r4, x3, r2, w1}, w1).holds);
  CHECK_FALSE(place({r4, x3, r2, w1}, r2).holds);
  CHECK(holder_count(queue) == 1);
  // A reader with the lowest uuid but the highest sequence waits for the
  // writer just before it, not for the one first in name order.
  CHECK(watched({r4, x3, r2, w1}, r4) == x3);
}

TEST_CASE("zookeeper: a reader behind readers only holds the shared lock with them") {
  const std::vector<std::string> children = {"_c_a-__READ__0000000003", "_c_b-__READ__0000000001",
                                             "_c_c-__READ__0000000002"};
  for (const auto &own : children) {
    CAPTURE(own);
    QueuePlace at = place(children, own);
    CHECK(at.queued);
    CHECK(at.holds);
  }
  CHECK(holder_count(contenders(children)) == 3);
  // Not our node: not queued, and so not holding.
  QueuePlace gone = place(children, "_c_d-__READ__0000000004");
  CHECK_FALSE(gone.queued);
  CHECK_FALSE(gone.holds);
}

TEST_CASE("zookeeper: a reader behind a writer waits and watches the nearest writer before it") {
  const std::string r1 = "_c_a-__READ__0000000001";
  const std::string w2 = "_c_b-__WRIT__0000000002";
  const std::string r3 = "_c_c-__READ__0000000003";
  const std::string x4 = "_c_d-lock-0000000004";
  const std::string r5 = "_c_e-__READ__0000000005";
  const std::string r6 = "_c_f-__READ__0000000006";

  // One writer ahead: once it goes, nothing keeps the reader out.
  QueuePlace behind_one = place({r1, w2, r3}, r3);
  CHECK(behind_one.queued);
  CHECK_FALSE(behind_one.holds);
  CHECK(watched({r1, w2, r3}, r3) == w2);
  CHECK(behind_one.watch_is_last);
  // The readers before the writer hold; a waiting writer keeps later
  // readers out (writer preference).
  CHECK(place({r1, w2, r3}, r1).holds);
  CHECK(holder_count(contenders({r1, w2, r3})) == 1);

  // Several writers ahead: the nearest one (here dlock's exclusive node),
  // and there is another behind that.
  std::vector<std::string> queue = {r6, r5, x4, r3, w2, r1};
  QueuePlace behind_two = place(queue, r5);
  CHECK_FALSE(behind_two.holds);
  CHECK(watched(queue, r5) == x4);
  CHECK_FALSE(behind_two.watch_is_last);
  CHECK(watched(queue, r6) == x4);
  CHECK(watched(queue, r3) == w2);
  CHECK(place(queue, r3).watch_is_last);
}

TEST_CASE("zookeeper: a writer behind readers waits and watches the node just before it") {
  const std::string r1 = "_c_a-__READ__0000000001";
  const std::string r2 = "_c_b-__READ__0000000002";
  const std::string w3 = "_c_c-__WRIT__0000000003";
  const std::string x4 = "_c_d-lock-0000000004";

  QueuePlace writer = place({r1, r2, w3}, w3);
  CHECK(writer.queued);
  CHECK_FALSE(writer.holds);
  CHECK(watched({r1, r2, w3}, w3) == r2);
  CHECK_FALSE(writer.watch_is_last); // r1 still holds when r2 goes
  QueuePlace second = place({r2, w3}, w3);
  CHECK_FALSE(second.holds);
  CHECK(second.watch_is_last);
  // dlock's exclusive lock is a writer too, behind a writer or a reader.
  CHECK(watched({r1, r2, w3, x4}, x4) == w3);
  CHECK(watched({r2, x4}, x4) == r2);
  // First of all: it holds.
  CHECK(place({w3, x4}, w3).holds);
  CHECK(place({x4}, x4).holds);
}

TEST_CASE("zookeeper: a reader is not kept out by a write lock its own session holds") {
  const std::string w1 = "_c_a-__WRIT__0000000001";
  const std::string w2 = "_c_b-__WRIT__0000000002";
  const std::string r3 = "_c_c-__READ__0000000003";
  CHECK(place({w1, r3}, r3, {w1}).holds);
  CHECK_FALSE(place({w1, r3}, r3, {"_c_z-__WRIT__0000000009"}).holds);
  // Another session's writer still does, and is the one to watch.
  auto queue = contenders({w1, w2, r3});
  QueuePlace at = place_in(queue, r3, {w2});
  CHECK_FALSE(at.holds);
  CHECK(queue[at.watch].node == w1);
  CHECK(at.watch_is_last);
  // A writer gets nothing from it: only the first node of all holds.
  CHECK_FALSE(place({w1, w2}, w2, {w1}).holds);
}

TEST_CASE("zookeeper: kazoo's Lock and ReadLock nodes are a writer and a reader in the same queue") {
  const std::string k1 = "6a1f0c9e4b2d4e8f9a7b3c5d1e2f3a4b__rlock__0000000001";
  const std::string k2 = "0b9a8c7d6e5f4a3b2c1d0e9f8a7b6c5d__rlock__0000000002";
  const std::string k3 = "1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f__lock__0000000003";
  const std::string c4 = "_c_0b0ab024-a7ab-46ad-8fde-5a29728bad2a-__READ__0000000004";
  auto queue = contenders({c4, k3, k2, k1});
  REQUIRE(queue.size() == 4);
  CHECK(queue[0].reader);
  CHECK(queue[1].reader);
  CHECK_FALSE(queue[2].reader);
  CHECK(queue[3].reader);
  CHECK(queue[2].sequence == 3u);
  CHECK(place({c4, k3, k2, k1}, k2).holds);
  CHECK(holder_count(queue) == 2);
  // Kazoo's writer waits for the reader just before it, Curator's reader
  // for kazoo's writer.
  CHECK(watched({c4, k3, k2, k1}, k3) == k2);
  CHECK(watched({c4, k3, k2, k1}, c4) == k3);
  // Kazoo's reader behind dlock's exclusive node waits for it too.
  CHECK(watched({"_c_x-lock-0000000007", "f__rlock__0000000008"}, "f__rlock__0000000008") == "_c_x-lock-0000000007");
}

TEST_CASE("zookeeper: a child with no sequence or a garbled one is no contender of the shared lock") {
  const std::string w5 = "_c_w-__WRIT__0000000005";
  const std::string r6 = "_c_r-__READ__0000000006";
  const std::vector<std::string> noise = {
      "",
      "sub",
      "__READ__",
      "_c_x-__READ__",
      "_c_x-__WRIT__",
      "_c_x-__READ__000000001",   // nine digits
      "_c_x-__READ__00000000001", // eleven digits
      "_c_x-__WRIT__00000000x1",
      "_c_x-__WRIT__ 000000001",
      "_c_x-__read__0000000001", // the markers are case sensitive
      "_c_x-__writ__0000000001",
      "_c_x-lease-0000000001", // Curator's semaphore lease
      "_c_x-__READ__0000000001%",
      "_c_x-__READ__0000000001/x",
  };
  for (const auto &child : noise) {
    CAPTURE(child);
    CHECK_FALSE(contender_sequence(child));
  }
  std::vector<std::string> children = noise;
  children.push_back(r6);
  children.push_back(w5);
  auto queue = contenders(children);
  REQUIRE(queue.size() == 2);
  CHECK(queue[0].node == w5);
  CHECK(queue[1].node == r6);
  // The noise neither holds nor lets the reader past the writer.
  CHECK(place(children, w5).holds);
  CHECK_FALSE(place(children, r6).holds);
  CHECK(watched(children, r6) == w5);
  CHECK_FALSE(place(children, "_c_x-__READ__000000001").queued);
  // Noise alone is no queue: nobody holds.
  CHECK(holder_count(contenders(noise)) == 0);
  CHECK(holder_count({}) == 0);
  // A marker followed by ten digits is a contender whatever is before it;
  // the last marker decides what it is.
  auto odd = contenders({"__READ__0000000001", "x__READ__-lock-0000000002"});
  REQUIRE(odd.size() == 2);
  CHECK(odd[0].reader);
  CHECK_FALSE(odd[1].reader);
}

TEST_CASE("zookeeper: status of a shared lock lists its readers; of a writer, the writer") {
  HolderInfo ours;
  ours.host = "web1";
  ours.pid = 42;
  ours.command = "./report.sh";
  ours.since = from_unix_ms(1'700'000'000'000);

  const std::string r1 = "_c_a-__READ__0000000001";
  const std::string r2 = "3f1e2c__rlock__0000000002";
  const std::string w3 = "_c_b-__WRIT__0000000003";
  const std::string r4 = "_c_c-__READ__0000000004";
  auto queue = contenders({r4, w3, r2, r1});
  REQUIRE(holder_count(queue) == 2);
  LockStatus shared =
      queue_status("report", queue,
                   {{encode_holder(ours), 100, 1'700'000'000'000, 0x51}, {"10.0.0.7", 101, 1'700'000'001'500, 0x52}});
  CHECK(shared.name == "report");
  CHECK(shared.held);
  CHECK(shared.mode == HoldMode::shared);
  CHECK(shared.waiters == 2); // the writer and the reader behind it
  CHECK_FALSE(shared.holder);
  CHECK_FALSE(shared.fence);
  REQUIRE(shared.holders.size() == 2);
  CHECK(shared.holders[0].fence == 100u);
  CHECK(shared.holders[0].info.host == "web1");
  CHECK(shared.holders[0].info.pid == 42);
  CHECK(shared.holders[0].info.command == "./report.sh");
  CHECK(shared.holders[1].fence == 101u);
  CHECK(shared.holders[1].info.host == "10.0.0.7");
  CHECK(shared.holders[1].info.pid == 0);
  CHECK(shared.holders[1].info.command.find(r2) != std::string::npos);
  CHECK(to_unix_ms(shared.holders[1].info.since) == 1'700'000'001'500);
  CHECK(shared.detail.find("2 reader nodes") != std::string::npos);
  CHECK(shared.detail.find(r1) != std::string::npos);

  // Once the readers go, the writer holds alone: one holder, the rest wait.
  auto writer_first = contenders({r4, w3});
  REQUIRE(holder_count(writer_first) == 1);
  LockStatus exclusive = queue_status("report", writer_first, {{encode_holder(ours), 300, 0, 0xabc}});
  CHECK(exclusive.held);
  CHECK(exclusive.mode == HoldMode::exclusive);
  CHECK(exclusive.waiters == 1);
  CHECK(exclusive.fence == 300u);
  REQUIRE(exclusive.holder);
  CHECK(exclusive.holder->host == "web1");
  CHECK(exclusive.holders.empty());
  CHECK(exclusive.detail.find(w3) != std::string::npos);
  CHECK(exclusive.detail.find("0xabc") != std::string::npos);

  // Another client's writer: its data is shown, not taken for a holder,
  // and unprintable bytes stay out of the one-line detail.
  LockStatus foreign = queue_status("report", writer_first, {{std::string("id\n\x01x", 5), 301, 0, 0x1}});
  CHECK_FALSE(foreign.holder);
  CHECK(foreign.fence == 301u);
  CHECK(foreign.detail.find("another client") != std::string::npos);
  CHECK(foreign.detail.find("id??x") != std::string::npos);
}

TEST_CASE("zookeeper: a new contender's two nodes share one protected id, the first in Curator's own layout") {
  std::regex id("_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-");
  auto exclusive = new_node_prefixes(HoldMode::exclusive);
  REQUIRE(exclusive.size() == 2);
  std::string stem = exclusive[0].substr(0, exclusive[0].size() - std::string("lock-").size());
  CHECK(std::regex_match(stem, id));
  CHECK(exclusive[0] == stem + "lock-");
  CHECK(exclusive[1] == stem + "__WRIT__");
  auto shared = new_node_prefixes(HoldMode::shared);
  REQUIRE(shared.size() == 2);
  CHECK(shared[0].substr(shared[0].size() - 8) == "__READ__");
  CHECK(shared[1] == shared[0].substr(0, shared[0].size() - 8) + "lock-");
  CHECK(shared[0].substr(0, 40) != stem);
  CHECK(protected_id(exclusive[0] + "0000000001") == stem);
  CHECK(protected_id(exclusive[1] + "0000000002") == stem);
  CHECK(protected_id("0123abcd__lock__0000000003").empty());
}

TEST_CASE("zookeeper: the nodes of one protected id are one contender, a reader if one is a reader's node") {
  const std::string a = "_c_aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa-";
  const std::string b = "_c_bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb-";
  const std::string c = "_c_cccccccc-cccc-4ccc-8ccc-cccccccccccc-";
  // a: a dlock exclusive lock (-lock- and __WRIT__), b: a dlock reader
  // (__READ__ and -lock-), c: Curator's mutex alone, k: kazoo's Lock.
  std::vector<std::string> children = {b + "lock-0000000004", a + "__WRIT__0000000002", c + "lock-0000000005",
                                       a + "lock-0000000001", b + "__READ__0000000003", "0f__lock__0000000006"};
  auto queue = contenders(children);
  REQUIRE(queue.size() == 4);
  CHECK(queue[0].node == a + "lock-0000000001");
  CHECK(queue[0].nodes == std::vector<std::string>{a + "lock-0000000001", a + "__WRIT__0000000002"});
  CHECK_FALSE(queue[0].reader);
  CHECK(queue[1].node == b + "__READ__0000000003");
  CHECK(queue[1].nodes.size() == 2);
  CHECK(queue[1].reader);
  CHECK(queue[2].node == c + "lock-0000000005");
  CHECK(queue[3].node == "0f__lock__0000000006");
  CHECK(holder_count(queue) == 1);
  // The exclusive holder holds by either of its nodes; the reader waits for
  // it (not for its own -lock- node), the mutex for the reader.
  CHECK(place(children, a + "__WRIT__0000000002").holds);
  QueuePlace reader = place(children, b + "__READ__0000000003");
  CHECK_FALSE(reader.holds);
  CHECK(reader.watch == 0);
  CHECK(reader.watch_is_last);
  CHECK(watched(children, c + "lock-0000000005") == b + "__READ__0000000003");
  // Without the writer, the reader holds, and its -lock- node does not make it a writer.
  std::vector<std::string> readers = {b + "lock-0000000004", b + "__READ__0000000003",
                                      "_c_dddddddd-dddd-4ddd-8ddd-dddddddddddd-__READ__0000000007"};
  CHECK(place(readers, b + "__READ__0000000003").holds);
  CHECK(place(readers, "_c_dddddddd-dddd-4ddd-8ddd-dddddddddddd-__READ__0000000007").holds);
  CHECK(holder_count(contenders(readers)) == 2);
}
