#include "cli/format.hpp"
#include "core/identity.hpp"
#include "runner/keeper_protocol.hpp"
#include "runner/keeper_socket.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace dlock;
using namespace dlock::runner;
using namespace std::chrono_literals;

TEST_CASE("a keeper request survives the round trip through its line") {
  KeeperRequest request{
      KeeperOperation::renew, {"zk://h1:2181/app", "dlock", "one"}, "0123456789abcdef-secret", 2500ms};
  std::string line = format_request(request);
  REQUIRE(line.back() == '\n');
  line.pop_back();
  auto parsed = parse_request(line);
  REQUIRE(parsed);
  CHECK(parsed->operation == KeeperOperation::renew);
  CHECK(parsed->lock == request.lock);
  CHECK(parsed->token == request.token);
  CHECK(parsed->ttl == 2500ms);

  KeeperRequest release{KeeperOperation::release, {"file:", "other", "one"}, "t", 0ms};
  line = format_request(release);
  line.pop_back();
  parsed = parse_request(line);
  REQUIRE(parsed);
  CHECK(parsed->operation == KeeperOperation::release);
  CHECK(parsed->lock.lock_namespace == "other");
}

TEST_CASE("a keeper refuses malformed, oversized and partial requests") {
  CHECK_FALSE(parse_request(""));
  CHECK_FALSE(parse_request("renew\tone\ttoken\t0")); // the old tab-separated form
  CHECK_FALSE(parse_request("[]"));
  CHECK_FALSE(parse_request(R"({"op":"renew","backend":"file:","namespace":"dlock","name":"x","token":"t"})"));
  CHECK_FALSE(
      parse_request(R"({"op":"renew","backend":"file:","namespace":"dlock","name":"x","token":"t","ttl_ms":-1})"));
  CHECK_FALSE(parse_request(R"({"op":"renew","backend":"file:","namespace":"dlock","name":"x","token":7,"ttl_ms":1})"));
  CHECK_FALSE(parse_request(
      R"({"op":"renew","backend":"file:","namespace":"dlock","name":"x","token":"t","ttl_ms":9223372036854775807})"));
  CHECK_FALSE(parse_request(R"({"op":"steal","backend":"file:","namespace":"dlock","name":"x","token":"t"})"));
  CHECK_FALSE(parse_request(R"({"op":"release","backend":"file:","name":"x","token":"t"})"));
  std::string huge = R"({"op":"release","backend":"file:","namespace":"dlock","name":"x","token":")" +
                     std::string(k_keeper_line_max, 'a') + "\"}";
  CHECK_FALSE(parse_request(huge));
}

TEST_CASE("a lock identity differs by backend, namespace or name") {
  LockIdentity lock{"file:", "dlock", "one"};
  CHECK(lock == LockIdentity{"file:", "dlock", "one"});
  CHECK_FALSE(lock == LockIdentity{"redis://127.0.0.1:1", "dlock", "one"});
  CHECK_FALSE(lock == LockIdentity{"file:", "other", "one"});
  CHECK_FALSE(lock == LockIdentity{"file:", "dlock", "two"});
}

TEST_CASE("a keeper's reply carries t0, the granted lease and the window") {
  KeeperReply reply;
  reply.answer = KeeperAnswer::done;
  reply.fence = 18446744073709551615ull;
  reply.confirmed_at = std::chrono::steady_clock::time_point(123456789012345ns);
  reply.ttl = 60'000ms;
  reply.window = 300'000ms;
  std::string line = format_reply(reply);
  line.pop_back();
  auto parsed = parse_reply(line);
  REQUIRE(parsed);
  CHECK(parsed->answer == KeeperAnswer::done);
  CHECK(parsed->fence == reply.fence);
  CHECK(parsed->confirmed_at == reply.confirmed_at);
  CHECK(parsed->ttl == 60'000ms);
  CHECK(parsed->window == 300'000ms);

  KeeperReply refused;
  refused.answer = KeeperAnswer::refused;
  line = format_reply(refused);
  line.pop_back();
  REQUIRE(parse_reply(line));
  CHECK(parse_reply(line)->answer == KeeperAnswer::refused);

  CHECK_FALSE(parse_reply(R"({"answer":"done","fence":1,"ttl_ms":1,"window_ms":1})"));
  CHECK_FALSE(parse_reply("ok\t30000\t5"));
  // An exit code that no backend failure has is an internal error.
  auto odd = parse_reply(R"({"answer":"error","code":0,"message":"m"})");
  REQUIRE(odd);
  CHECK(odd->code == 70);
}

TEST_CASE("only the keeper's own user and root may talk to it") {
  CHECK(peer_allowed(1000, 1000));
  CHECK(peer_allowed(0, 1000));
  CHECK(peer_allowed(0, 0));
  CHECK_FALSE(peer_allowed(65534, 1000));
  CHECK_FALSE(peer_allowed(1000, 0));
}

TEST_CASE("printed lease figures count from t0, not from when they are printed") {
  auto t0 = std::chrono::steady_clock::time_point(1000s);
  auto now_steady = t0 + 2800ms; // granted after a 2.8 s wait
  auto now_wall = from_unix_ms(1'700'000'000'000);
  cli::LeaseFigures figures = cli::lease_figures(t0, 2000ms, std::nullopt, now_wall, now_steady);
  CHECK(figures.ttl_left == 0ms);
  CHECK(figures.expires_at == now_wall - 800ms);
  CHECK_FALSE(figures.renew_by);

  figures = cli::lease_figures(t0, 2000ms, std::nullopt, now_wall, t0 + 500ms);
  CHECK(figures.ttl_left == 1500ms);
  CHECK(figures.expires_at == now_wall + 1500ms);
}

TEST_CASE("a keeper's printed expiry is the session's lease when the window is longer") {
  auto t0 = std::chrono::steady_clock::time_point(1000s);
  auto now_wall = from_unix_ms(1'700'000'000'000);
  // ZooKeeper: --ttl 5m, a 60 s session.
  cli::LeaseFigures figures = cli::lease_figures(t0, 60'000ms, 300'000ms, now_wall, t0 + 100ms);
  CHECK(figures.ttl_left == 59'900ms);
  CHECK(figures.expires_at == now_wall + 59'900ms);
  REQUIRE(figures.window_left);
  CHECK(*figures.window_left == 299'900ms);
  CHECK(*figures.renew_by == now_wall + 299'900ms);
  // --ttl 1s with a 4 s session: the keeper lets go after the window.
  figures = cli::lease_figures(t0, 4000ms, 1000ms, now_wall, t0);
  CHECK(figures.ttl_left == 1000ms);
  CHECK(figures.expires_at == now_wall + 1000ms);
}

TEST_CASE("a keeper's line carries bytes that are not UTF-8 without throwing") {
  // Found by tests/fuzz/keeper_protocol: an error message quoting a
  // server's bytes made format_reply throw json's type_error in the keeper.
  KeeperReply reply;
  reply.answer = KeeperAnswer::error;
  reply.code = 69;
  reply.message = "redis at h:6379: \xff\xfe garbled";
  std::string line = format_reply(reply);
  line.pop_back();
  auto parsed = parse_reply(line);
  REQUIRE(parsed);
  CHECK(parsed->answer == KeeperAnswer::error);
  CHECK(parsed->message.find("garbled") != std::string::npos);

  KeeperRequest request{KeeperOperation::release, {"file:", "dlock", "one"}, "\xc3(", 0ms};
  line = format_request(request);
  line.pop_back();
  CHECK(parse_request(line));
}

TEST_CASE("keeper replies with numbers out of range or of the wrong type are refused") {
  for (const char *bad : {R"({"answer":"done","fence":-1,"confirmed_at_ns":1,"ttl_ms":1,"window_ms":1})",
                          R"({"answer":"done","fence":1,"confirmed_at_ns":1,"ttl_ms":1e3,"window_ms":1})",
                          R"({"answer":"done","fence":1,"confirmed_at_ns":1,"ttl_ms":1000000000001,"window_ms":1})",
                          R"({"answer":"done","fence":1,"confirmed_at_ns":1,"ttl_ms":1})",
                          R"({"answer":"error","code":"69","message":"x"})", R"({"answer":"error","code":69})",
                          R"({"answer":5})", R"({"answer":"maybe"})", "[]", "", "{\"answer\":\"refused\"}\n"}) {
    INFO(bad);
    CHECK_FALSE(parse_reply(bad));
  }
  auto error = parse_reply(R"({"answer":"error","code":2,"message":"x"})");
  REQUIRE(error);
  CHECK(error->code == 70); // not a code a keeper may pass on: internal
}

TEST_CASE("a backend's error message of any length and bytes fits the keeper's reply line") {
  KeeperReply reply;
  reply.answer = KeeperAnswer::error;
  reply.code = 69;
  for (std::string message : {std::string(10000, '\x1c'), std::string(5000, '"'), std::string(3000, '\xf4'),
                              std::string(1021, 'a') + "\xc3\xa9" + std::string(100, 'b')}) {
    reply.message = message;
    std::string line = format_reply(reply);
    REQUIRE(line.size() <= k_keeper_line_max);
    line.pop_back();
    auto parsed = parse_reply(line);
    REQUIRE(parsed);
    CHECK(parsed->code == 69);
    CHECK(parsed->message.size() <= 1024 * 3);
    CHECK(parsed->message.find('\x1c') == std::string::npos);
  }
}
