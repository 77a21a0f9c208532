// A renewal without a length (ttl 0) renews the lock for its own length:
// how the Redis backends read what the servers applied, and that the
// runner itself always asks for an explicit length.
#include "backend/redis/common.hpp"
#include "backend/redis/resp.hpp"
#include "fake_backend.hpp"
#include "redis_replies.hpp"
#include "runner/runner.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace dlock;
using namespace dlock::backend::redis;
using namespace redis_replies;
using namespace std::chrono_literals;

TEST_CASE("the renew script's reply gives the length the server renewed for, or that the token lost") {
  auto renewed = read_renew_reply(array({integer(1), text("5000")}));
  REQUIRE(renewed);
  CHECK(renewed->renewed_for == Millis(5000));
  CHECK(read_renew_reply(array({integer(1), integer(1500)}))->renewed_for == Millis(1500));
  auto lost = read_renew_reply(integer(0));
  REQUIRE(lost);
  CHECK_FALSE(lost->renewed_for);
}

TEST_CASE("a reply that is not the renew script's is not taken for a renewal") {
  CHECK_FALSE(read_renew_reply(integer(1))); // the old script's answer: no length
  CHECK_FALSE(read_renew_reply(integer(2)));
  CHECK_FALSE(read_renew_reply(array({integer(0)})));
  CHECK_FALSE(read_renew_reply(array({})));
  CHECK_FALSE(read_renew_reply(array({integer(1)})));
  CHECK_FALSE(read_renew_reply(array({integer(1), text("")})));
  CHECK_FALSE(read_renew_reply(array({integer(1), text("30s")})));
  CHECK_FALSE(read_renew_reply(array({integer(1), integer(0)})));
  CHECK_FALSE(read_renew_reply(array({integer(1), integer(-2)})));
  CHECK_FALSE(read_renew_reply(array({integer(0), integer(5000)})));
  CHECK_FALSE(read_renew_reply(array({integer(2), integer(5000)})));
  CHECK_FALSE(read_renew_reply(array({text("1"), integer(5000)})));
  CHECK_FALSE(read_renew_reply(text("OK")));
}

TEST_CASE("Redlock's renewed length is the one a majority of the nodes holds") {
  CHECK(quorum_length({5000ms, 5000ms, 5000ms}, 3) == Millis(5000));
  // Five confirmed, majority 3: three nodes hold it at least 30 s.
  CHECK(quorum_length({5000ms, 30000ms, 30000ms, 40000ms, 30000ms}, 3) == Millis(30000));
  CHECK(quorum_length({5000ms, 30000ms, 4000ms}, 3) == Millis(4000));
  CHECK(quorum_length({5000ms, 30000ms, 4000ms, 6000ms}, 3) == Millis(5000));
  CHECK_FALSE(quorum_length({5000ms, 5000ms}, 3));
  CHECK_FALSE(quorum_length({}, 1));
}

TEST_CASE("run renews for its own --ttl, never for the lock's own length") {
  test::FakeBackend backend;
  runner::RunOptions options;
  options.request.name = "unit";
  options.request.ttl = 300ms;
  options.command = {"/bin/sh", "-c", "sleep 0.5"};
  options.quiet = true;
  options.public_backend_url = "fake:";
  CHECK(runner::run_locked(backend, options) == 0);
  REQUIRE_FALSE(backend.renew_asked.empty());
  CHECK(
      std::all_of(backend.renew_asked.begin(), backend.renew_asked.end(), [](Millis asked) { return asked == 300ms; }));
}
