// The Redis semaphore's client side: its tokens say what they are, and the
// status script's reply becomes one HolderStatus per live slot, numbered.
#include "backend/redis/common.hpp"
#include "backend/redis/resp.hpp"
#include "backend/redis/server_scripts.hpp"
#include "core/error.hpp"
#include "redis_replies.hpp"
#include "runner/keeper.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace dlock;
using namespace dlock::backend;
using namespace dlock::backend::redis;
using namespace redis_replies;

namespace {

// The status script's reply for a name nobody holds exclusively.
Reply semaphore_reply(std::vector<Reply> holders) {
  return array({integer(-2), array({}), text("41"), text("3"), array(std::move(holders))});
}

} // namespace

TEST_CASE("a semaphore token says so, and is neither an exclusive lock's nor a keeper's") {
  std::string token = new_semaphore_token();
  CHECK(token.rfind("sem-", 0) == 0);
  CHECK(token.size() == 4 + 32);
  CHECK(is_semaphore_token(token));
  CHECK(new_semaphore_token() != token);
  CHECK_FALSE(is_semaphore_token(random_hex(16)));
  CHECK_FALSE(is_semaphore_token("sem-"));
  CHECK_FALSE(is_semaphore_token("not-the-token"));
  CHECK_FALSE(runner::is_keeper_token(token));
}

TEST_CASE("a semaphore's status lists each live slot with its number, holder, fence and time left") {
  LockStatus status = status_of("sem", semaphore_reply({array({text("1500"), holder_fields("10", "42", "2")}),
                                                        array({text("29000"), holder_fields("11", "43", "0")})}));
  CHECK(status.held);
  CHECK(status.mode == HoldMode::semaphore);
  REQUIRE(status.limit);
  CHECK(*status.limit == 3);
  // The name's last fence is no holder's: each has its own.
  CHECK_FALSE(status.fence);
  CHECK_FALSE(status.holder);
  CHECK_FALSE(status.time_left);
  CHECK(status.detail == "key {dlock:sem}:sem");
  REQUIRE(status.holders.size() == 2);
  CHECK(status.holders[0].info.pid == 10);
  CHECK(status.holders[0].info.command == "job");
  CHECK(status.holders[0].fence == 42u);
  CHECK(status.holders[0].time_left == Millis(1500));
  CHECK(status.holders[0].slot == 2u);
  CHECK(status.holders[1].fence == 43u);
  CHECK(status.holders[1].slot == 0u);
}

TEST_CASE("a semaphore without live slots is free, with the name's last fence") {
  LockStatus status = status_of("sem", semaphore_reply({}));
  CHECK_FALSE(status.held);
  CHECK(status.mode == HoldMode::exclusive);
  CHECK(status.fence == 41u);
  CHECK(status.holders.empty());
}

TEST_CASE("an exclusive holder's status is not mistaken for a semaphore's") {
  Reply reply = array({integer(900), holder_fields("7", "44", ""), text("44"), text(""), array({})});
  LockStatus status = status_of("sem", reply);
  CHECK(status.held);
  CHECK(status.mode == HoldMode::exclusive);
  REQUIRE(status.holder);
  CHECK(status.holder->pid == 7);
  CHECK(status.time_left == Millis(900));
}

TEST_CASE("a garbled slot in a semaphore's status is an error, not a holder") {
  CHECK_THROWS_AS(status_of("sem", semaphore_reply({text("1500")})), UnavailableError);
  CHECK_THROWS_AS(status_of("sem", semaphore_reply({array({text("1500")})})), UnavailableError);
  // A limit that is not one is left out, the holders still listed.
  Reply reply =
      array({integer(-2), array({}), text(""), text("many"), array({array({text("5"), holder_fields("1", "2", "")})})});
  LockStatus status = status_of("sem", reply);
  CHECK(status.held);
  CHECK_FALSE(status.limit);
  REQUIRE(status.holders.size() == 1);
  // So is a slot that is not a number.
  CHECK_FALSE(status.holders[0].slot);
}

namespace {
int g_builds = 0;
} // namespace

TEST_CASE("a Lua script is put together on first use, once, whichever thread asks") {
  static const lua::Lazy script{[] {
    ++g_builds;
    return std::string("return ") + "1";
  }};
  CHECK(g_builds == 0); // nothing at start-up
  std::vector<std::thread> threads;
  std::vector<const std::string *> seen(4);
  for (std::size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&seen, i] { seen[i] = &script.text(); });
  for (auto &thread : threads)
    thread.join();
  CHECK(g_builds == 1);
  for (const std::string *text : seen)
    CHECK(text == seen.front());
  const std::string &converted = script;
  CHECK(converted == "return 1");
  CHECK(lua::server::acquire.text().rfind(lua::server::prelude.text(), 0) == 0);
}
