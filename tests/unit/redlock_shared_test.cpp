// The Redlock shared lock's client side: a reader holds the name when a
// majority of the nodes list it live; its time left is the majority-th
// longest of its copies, its fence the largest recorded; a writer on a
// majority leaves the readers out of the status.
#include "backend/redis/redlock_shared.hpp"
#include "redis_replies.hpp"

#include <catch2/catch.hpp>

using namespace dlock;
using namespace dlock::backend;
using namespace dlock::backend::redis;
using namespace redis_replies;

namespace {

Reply reader(const std::string &member, long long left, const std::string &fence) {
  return array({text(member), text(std::to_string(left)), holder_fields("7", fence)});
}

// One node's answer to the Redlock status script: no writer, these readers.
NodeAnswer node(std::vector<Reply> readers) {
  NodeAnswer answer;
  answer.done = true;
  answer.replies.push_back(array({integer(-2), array({}), text("41"), text(""), array(std::move(readers))}));
  return answer;
}

NodeAnswer silent() {
  NodeAnswer answer;
  answer.done = true;
  answer.error = "no answer in time";
  return answer;
}

} // namespace

TEST_CASE("a reader listed live on a majority of the nodes holds the name, one on a minority does not") {
  // 5 nodes, majority 3: reader a on 3 nodes, reader b on 2.
  std::vector<NodeAnswer> answers = {
      node({reader("a", 900, "10"), reader("b", 500, "11")}),
      node({reader("a", 800, "12"), reader("b", 400, "11")}),
      node({reader("a", 700, "")}),
      node({}),
      silent(),
  };
  LockStatus status;
  status.fence = 41;
  std::size_t most = add_majority_readers(status, answers, 3);
  CHECK(most == 3);
  REQUIRE(status.held);
  CHECK(status.mode == HoldMode::shared);
  CHECK_FALSE(status.fence);
  REQUIRE(status.holders.size() == 1);
  CHECK(status.holders[0].fence == 12u);
  // It reads until fewer than 3 of its copies are left: the third longest.
  CHECK(status.holders[0].time_left == Millis(700));
  CHECK(status.holders[0].info.pid == 7);
}

TEST_CASE("readers on no majority leave the name free, and a writer's majority keeps them out of the status") {
  std::vector<NodeAnswer> answers = {node({reader("a", 900, "10")}), node({reader("a", 900, "10")}), node({}), node({}),
                                     node({})};
  LockStatus free;
  CHECK(add_majority_readers(free, answers, 3) == 2);
  CHECK_FALSE(free.held);
  CHECK(free.holders.empty());

  std::vector<NodeAnswer> three = {node({reader("a", 900, "10")}), node({reader("a", 900, "10")}),
                                   node({reader("a", 900, "10")})};
  LockStatus written;
  written.held = true; // a writer holds it on a majority
  add_majority_readers(written, three, 2);
  CHECK(written.mode == HoldMode::exclusive);
  CHECK(written.holders.empty());
}
