// The Redis shared lock's client side: a reader's token says what it is,
// the keys of a name hold its readers and waiting writers, and the status
// script's reply becomes one HolderStatus per live reader.
#include "backend/redis/common.hpp"
#include "backend/redis/resp.hpp"
#include "core/error.hpp"
#include "redis_replies.hpp"
#include "runner/keeper.hpp"

#include <catch2/catch.hpp>

using namespace dlock;
using namespace dlock::backend;
using namespace dlock::backend::redis;
using namespace redis_replies;

namespace {

// The status script's reply for a name no writer holds and no semaphore.
Reply readers_reply(std::vector<Reply> readers) {
  return array({integer(-2), array({}), text("41"), text(""), array({}), array(std::move(readers))});
}

} // namespace

TEST_CASE("a reader's token says so, and is no exclusive lock's, semaphore's or keeper's") {
  std::string token = new_shared_token();
  CHECK(token.rfind("rd-", 0) == 0);
  CHECK(token.size() == 3 + 32);
  CHECK(token.find_first_not_of("0123456789abcdef", 3) == std::string::npos);
  CHECK(is_shared_token(token));
  CHECK(new_shared_token() != token);
  CHECK_FALSE(is_semaphore_token(token));
  CHECK_FALSE(is_shared_token(new_semaphore_token()));
  CHECK_FALSE(is_shared_token(random_hex(16)));
  CHECK_FALSE(is_shared_token("rd-"));
  CHECK_FALSE(runner::is_keeper_token(token));
}

TEST_CASE("a name's readers and waiters and a semaphore's free slots have keys of their own under its hash tag") {
  Keys keys = keys_for("dlock", "rw");
  CHECK(keys.readers == "{dlock:rw}:readers");
  CHECK(keys.readers_info == "{dlock:rw}:readers-info");
  CHECK(keys.queue == "{dlock:rw}:queue");
  CHECK(keys.turns == "{dlock:rw}:turns");
  CHECK(keys.semaphore_free == "{dlock:rw}:sem-free");
  std::vector<std::string> command = semaphore_command("return 1", keys, {"a"});
  REQUIRE(command.size() == 3 + 10 + 1);
  CHECK(command[2] == "10");
  CHECK(command[8] == keys.readers);
  CHECK(command[9] == keys.readers_info);
  CHECK(command[10] == keys.queue);
  CHECK(command[11] == keys.turns);
  CHECK(command[12] == keys.semaphore_free);
  CHECK(command[13] == "a");
}

TEST_CASE("a shared lock's status lists each live reader with its holder, fence and time left") {
  LockStatus status = status_of("rw", readers_reply({array({text("1500"), holder_fields("10", "42")}),
                                                     array({text("900"), holder_fields("11", "43")})}));
  CHECK(status.held);
  CHECK(status.mode == HoldMode::shared);
  CHECK_FALSE(status.limit);
  // The name's last fence is no reader's: each has its own.
  CHECK_FALSE(status.fence);
  CHECK_FALSE(status.holder);
  CHECK_FALSE(status.time_left);
  CHECK(status.detail == "key {dlock:rw}:readers");
  REQUIRE(status.holders.size() == 2);
  CHECK(status.holders[0].info.pid == 10);
  CHECK(status.holders[0].info.command == "job");
  CHECK(status.holders[0].fence == 42u);
  CHECK(status.holders[0].time_left == Millis(1500));
  CHECK_FALSE(status.holders[0].slot);
  CHECK(status.holders[1].fence == 43u);
  CHECK(status.holders[1].time_left == Millis(900));
}

TEST_CASE("a name without live readers is free, with its last fence") {
  LockStatus status = status_of("rw", readers_reply({}));
  CHECK_FALSE(status.held);
  CHECK(status.mode == HoldMode::exclusive);
  CHECK(status.fence == 41u);
  CHECK(status.holders.empty());
  // A reply from before the readers' part (five elements) is free too.
  status = status_of("rw", array({integer(-2), array({}), text("41"), text(""), array({})}));
  CHECK_FALSE(status.held);
}

TEST_CASE("while a writer holds the name, its status is the exclusive lock's") {
  Reply reply = array({integer(900), holder_fields("7", "44"), text("44"), text(""), array({}), array({})});
  LockStatus status = status_of("rw", reply);
  CHECK(status.held);
  CHECK(status.mode == HoldMode::exclusive);
  REQUIRE(status.holder);
  CHECK(status.holder->pid == 7);
  CHECK(status.fence == 44u);
  CHECK(status.time_left == Millis(900));
  CHECK(status.holders.empty());
}

TEST_CASE("a garbled reader in a shared lock's status is an error, not a holder") {
  CHECK_THROWS_AS(status_of("rw", readers_reply({text("1500")})), UnavailableError);
  CHECK_THROWS_AS(status_of("rw", readers_reply({array({text("1500")})})), UnavailableError);
  CHECK_THROWS_AS(status_of("rw", readers_reply({array({text("1500"), text("pid")})})), UnavailableError);
  // A time left that is not a number is left out, the reader still listed.
  LockStatus status = status_of("rw", readers_reply({array({text("soon"), holder_fields("1", "2")})}));
  REQUIRE(status.holders.size() == 1);
  CHECK_FALSE(status.holders[0].time_left);
  CHECK(status.holders[0].fence == 2u);
}
